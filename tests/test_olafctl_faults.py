"""olafctl under faults: a hypothesis state machine of regrouping commands against three
in-process P4Runtime servers (a multi-hop deployment), with UNAVAILABLE, PERMISSION_DENIED
(mastership lost) and stalls injected into the switches' Writes.

After every command: no traceback; on success every switch holds exactly what the
network file now says; on failure the network file is unchanged and every switch holds
what it held before (regroups are all or nothing across switches).
"""

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from p4rt_servicer import FakeSwitchServer, RecordingTM

from olaf.controller import cli as olafctl
from olaf.controller import config as cfgmod
from olaf.controller import controller as ctlmod
from olaf.controller.controller import OlafController
from olaf.controller.state import desired_state
from olaf.topologies.build import multihop

P4INFO = Path(__file__).parent / "data" / "olaf.p4info.txt"
FAULTS = ["unavailable", "permission_denied", "stall"]
RPC_TIMEOUT_S = 1.5
"""Long enough that an unfaulted Write never times out on a loaded machine; a stalled Write
is held until the command has returned (``release``), far past this timeout."""


def deployment(addrs: dict[str, str]) -> cfgmod.Deployment:
    d = multihop(clusters_per_edge=2, workers_per_cluster=2)
    clusters = dict(d.clusters)
    clusters[3] = clusters[3][:1]            # w8 starts in no cluster
    return cfgmod.validate(replace(d, clusters=clusters,
                                   switches={n: replace(s, grpc=addrs[n]) for n, s in d.switches.items()}))


class OlafctlUnderFaults(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self._tm = ctlmod.TrafficManager
        ctlmod.TrafficManager = RecordingTM  # BMv2 Thrift calls are recorded, P4Runtime is real
        self.servers = {n: FakeSwitchServer() for n in ("s1", "s2", "s3")}
        for srv in self.servers.values():
            srv.__enter__()
            srv.servicer.stall_s = 60.0       # only a hang guard: the test releases every stall
        self.dir = Path(tempfile.mkdtemp())
        self.net = self.dir / "network.yaml"
        (self.dir / "olaf.json").write_text("{}")
        d = deployment({n: s.addr for n, s in self.servers.items()})
        cfgmod.save(d, self.net)
        ctl = OlafController(d, P4INFO, self.dir / "olaf.json")
        ctl.deploy()
        ctl.close()
        self.reader = OlafController(d, P4INFO, self.dir / "olaf.json", election_id=(0, 9))
        for sc in self.reader.switches.values():
            sc.connect(push_pipeline=False)
        self.workers = sorted(d.hosts[w].name for w in d.hosts if d.hosts[w].worker_id is not None)

    def teardown(self):
        self.reader.close()
        for srv in self.servers.values():
            srv.__exit__(None, None, None)
        ctlmod.TrafficManager = self._tm
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- running a command ------------------------------------------------------------

    def olafctl(self, args: list[str], fault: tuple[str, str] | None) -> None:
        before_file = self.net.read_text()
        before = {n: sc.read_state() for n, sc in self.reader.switches.items()}
        if fault is not None:
            self.servers[fault[0]].servicer.faults = [fault[1]]
        r = CliRunner().invoke(olafctl.main, ["--network", str(self.net), "--p4info", str(P4INFO),
                                              "--bmv2-json", str(self.dir / "olaf.json"),
                                              "--rpc-timeout", str(RPC_TIMEOUT_S), *args])
        for srv in self.servers.values():
            srv.servicer.faults = []
            srv.servicer.release.set()       # a Write still stalled ends now, unapplied
            srv.servicer.release.clear()
        assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
        assert "Traceback" not in r.output, r.output
        if r.exit_code == 0:
            d = cfgmod.load(self.net)
            for n, sc in self.reader.switches.items():
                assert sc.read_state() == desired_state(d, n), f"{n} differs from network.yaml after {args}"
        else:
            assert r.exit_code in (1, 2), (r.exit_code, r.output)
            assert self.net.read_text() == before_file, f"network.yaml changed by a failed {args}"
            for n, sc in self.reader.switches.items():
                assert sc.read_state() == before[n], f"{n} changed by a failed {args}: {r.output}"

    faults = st.none() | st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(FAULTS))

    @initialize()
    def start(self):
        pass

    @rule(w=st.integers(1, 8), to=st.integers(0, 4), fault=faults)
    def move(self, w, to, fault):
        self.olafctl(["move", f"w{w}", "--to", str(to)], fault)

    @rule(w=st.integers(1, 8), fault=faults)
    def remove_worker(self, w, fault):
        self.olafctl(["remove-worker", f"w{w}"], fault)

    @rule(w=st.integers(1, 8), c=st.integers(0, 4), fault=faults)
    def add_worker(self, w, c, fault):
        self.olafctl(["add-worker", f"w{w}", "--cluster", str(c)], fault)

    @rule(c=st.integers(3, 6), ws=st.lists(st.integers(1, 8), max_size=2, unique=True), fault=faults)
    def create_cluster(self, c, ws, fault):
        self.olafctl(["create-cluster", str(c), *[f"w{w}" for w in ws]], fault)

    @rule(c=st.integers(0, 6), force=st.booleans(), fault=faults)
    def delete_cluster(self, c, force, fault):
        self.olafctl(["delete-cluster", str(c), *(["--force"] if force else [])], fault)

    @invariant()
    def switches_agree(self):
        """Every switch holds the membership the network file records."""
        d = cfgmod.load(self.net)
        for n, sc in self.reader.switches.items():
            assert sc.read_state() == desired_state(d, n)


TestOlafctlUnderFaults = OlafctlUnderFaults.TestCase
TestOlafctlUnderFaults.settings = settings(max_examples=12, stateful_step_count=6, deadline=None,
                                          suppress_health_check=list(HealthCheck))


def test_failure_on_a_later_switch_is_rolled_back_and_said():
    m = OlafctlUnderFaults()
    try:
        before = m.net.read_text()
        m.servers["s3"].servicer.faults = ["unavailable"]
        r = CliRunner().invoke(olafctl.main, ["--network", str(m.net), "--p4info", str(P4INFO),
                                              "--bmv2-json", str(m.dir / "olaf.json"), "move", "w1", "--to", "1"])
        assert r.exit_code == 1
        assert "regroup failed, membership unchanged: s3" in r.output and "rolled back s1, s2, s3" in r.output
        assert m.net.read_text() == before
        m.switches_agree()
    finally:
        m.teardown()
