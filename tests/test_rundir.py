"""The typed run directory (olaf/rundir): record models, the JSONL reader and follower, the
manifest and its older layouts, the atomic writer, the generated JSON Schemas, and the logs
that real hosts write (a local job of real `olaf ps`/`olaf worker` processes, a PPO worker)."""

import json
import math
import threading
from pathlib import Path

import jsonschema
import pytest
from hostnet import loopback_net, running

from olaf.configfile import validate
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.hosts.schedule import ScheduleSpec
from olaf.hosts.worker import Worker, WorkerConfig
from olaf.paths import require_source_root
from olaf.plan.plan import RunPlan
from olaf.provenance import RESULTS_SCHEMA_VERSION, provenance
from olaf.rundir.atomic import write_json, write_text_atomic
from olaf.rundir.jsonl import PROBLEMS_KEPT, JsonlFollower, JsonlLog, read_jsonl
from olaf.rundir.manifest import ManifestError, RunManifest, parse_manifest, read_manifest, write_manifest
from olaf.rundir.records import (
    LOG_RECORD,
    NOT_MODELLED,
    AckRecord,
    ErrorRecord,
    FlushRecord,
    GenRecord,
    GoRecord,
    InitRecord,
    MalformedAckRecord,
    MalformedRecord,
    Outcome,
    PsStart,
    PsSummary,
    RegroupRecord,
    StopRecord,
    UntrustedRecord,
    UpdateRecord,
    WorkerStart,
    WorkersTotal,
    WorkerSummary,
)

SCHEMAS = require_source_root("the schema tests") / "docs" / "schemas"

GEN = GenRecord(ev="gen", t_ns=5, idx=0, late_ms=0.25, sent=True, seq=1, reward=-1.5, folded=2, adopted=True,
                exp_reward=-0.5, reason="draw", p_send=0.5, draw=0.25, delta_hat_ms=12.0, N=3, q_max=8, saturated=0)
LOG_RECORDS = [
    WorkerStart(ev="start", role="worker", t_ns=1, name="w1", start_at_ns=None, start_file="/run/start_ns",
                bind="10.0.0.1", ps="10.0.0.100:50100", cluster_id=0, worker_id=1, seed=3,
                schedule={"duration_s": 1.0, "max_updates": None, "kind": "periodic", "period_ms": 50.0,
                          "jitter_ms": 0.0}, task_kind="bandit", task={"num_weights": 16}, num_weights=16,
                ack_wait_ms=0.0, tx={"enabled": False, "delta_t_ms": 400.0, "v_per_s": 2.5, "q_max": None}),
    GoRecord(ev="go", t_ns=2, t0_ns=2, requested_t0_ns=1),
    InitRecord(ev="init", t_ns=3, retry=False),
    GEN,
    GenRecord(ev="gen", t_ns=6, idx=1, late_ms=0.0, sent=False, seq=None, reward=None, folded=None, adopted=False,
              exp_reward=None, reason="no_episode", p_send=1.0, draw=None, delta_hat_ms=None, N=None, q_max=None,
              steps=128, episodes=0, env_steps=256, policy_loss=-0.01, value_loss=3.5, entropy=0.69,
              clip_fraction=0.0, approx_kl=0.001, grad_norm=0.4),
    AckRecord(ev="ack", t_ns=7, cluster_id=0, worker_id=1, seq=1, count=1, gen_ts=5, global_reward=None, weights=16,
              own=True, status=(1, 2, 8)),
    MalformedAckRecord(ev="malformed_ack", t_ns=8, len=3, reason="ACK too short"),
    ErrorRecord(ev="error", t_ns=9, error="the PPO loss is NaN"),
    StopRecord(ev="stop", t_ns=10, reason="schedule_end"),
    PsStart(ev="start", role="ps", t_ns=1, bind="0.0.0.0:50100", ack_port=50101, lr=0.001, step="paper", gate=True,
            mode="async", modes={"aggr_k": 4}, duration_s=None),
    UpdateRecord(ev="update", t_ns=4, src="10.0.0.1", cluster_id=0, worker_id=1, seq=1, count=2, gen_ts=3,
                 reward_sum=-(3 << 16), reward=-1.5, init=False, outcome=Outcome.ACCEPTED, global_reward=-1.5),
    UpdateRecord(ev="update", t_ns=4, src="10.0.0.1", cluster_id=0, worker_id=1, seq=1, count=1, gen_ts=3,
                 reward_sum=0, reward=0.0, init=False, outcome=NOT_MODELLED, global_reward=None),
    FlushRecord(ev="flush", t_ns=5, updates=3, count=4, reward=1.0, outcome=Outcome.REJECTED, global_reward=2.0,
                acks=2, by="time"),
    MalformedRecord(ev="malformed", t_ns=6, src="10.0.0.9", len=7, reason="update too short: 7 bytes"),
    UntrustedRecord(ev="untrusted", t_ns=7, src="10.0.0.9", reason="source", init=False, cluster_id=1, worker_id=2,
                    seq=3, count=1),
]


@pytest.mark.parametrize("rec", LOG_RECORDS, ids=lambda r: type(r).__name__)
def test_every_log_record_round_trips_through_its_line(rec):
    line = rec.line()
    assert "\n" not in line and json.loads(line)["ev"] == rec.ev
    assert LOG_RECORD.validate_json(line, strict=True) == rec
    assert type(LOG_RECORD.validate_python(rec.dump())) is type(rec)


def test_unset_optional_fields_are_left_out_and_nan_survives():
    bandit = json.loads(GEN.line())
    assert "policy_loss" not in bandit and "steps" not in bandit and bandit["seq"] == 1
    nan = GEN.model_copy(update={"p_send": math.nan, "reward": math.inf})
    back = LOG_RECORD.validate_json(nan.line(), strict=True)
    assert math.isnan(back.p_send) and back.reward == math.inf


SUMMARIES = [
    WorkerSummary(role="worker", name="w1", task="ppo", bind="10.0.0.1", cluster_id=None, worker_id=None,
                  learned_cluster_id=2, learned_worker_id=1, t0_ns=5, gen_end_ns=9, t_stop_ns=10,
                  stop_reason="signal", generated=4, sent=3, skipped=1, init_sent=1, send_errors=0, acks=4,
                  acks_own=4, acks_malformed=0, acks_foreign=0, acks_wrong_size=0, recv_errors=0,
                  saturated_elements=0, saturated_updates=0, model_acked=True, last_seq=3, last_global_reward=1.0,
                  last_reward=2.0, error=None, env_steps=512, episodes=9, iterations=4, num_params=66),
    PsSummary(role="ps", name="ps", bind="0.0.0.0:50100", lr=0.3, step="paper", gate=False, mode="async",
              t_start_ns=1, t_stop_ns=9, stop_reason="signal", datagrams=5, updates=4, inits=1, malformed=0,
              untrusted=0, init_source=0, socket_drops=0, acks_sent=5, ack_errors=0, flushes=0, initialised=1,
              accepted=4, malformed_reasons={}, untrusted_reasons={}, trust={"allowed_sources": None},
              per_cluster={"0": {"updates": 4, "accepted": 4}}, global_reward=1.0, num_weights=2,
              weights=[0.5, -0.25]),
    WorkersTotal(workers=3, generated=30, sent=29, skipped=1, send_errors=0, acks=29, acks_own=29),
    RegroupRecord(t_ns=5, clusters={"0": ["w1"], "1": ["w2", "w3"]}),
]


@pytest.mark.parametrize("rec", SUMMARIES, ids=lambda r: type(r).__name__)
def test_summaries_round_trip(rec):
    assert type(rec).model_validate_json(json.dumps(rec.dump()), strict=True) == rec


def test_ps_summary_has_a_counter_for_every_outcome():
    assert {o.value for o in Outcome} | {NOT_MODELLED} <= set(PsSummary.model_fields)


def test_reader_counts_every_kind_of_corrupt_line_and_never_raises(tmp_path):
    good = [rec.line() for rec in LOG_RECORDS[:3]]
    lines = [good[0],
             '{"ev": "gen", "t_ns": 4',                                        # not JSON
             "[1, 2]",                                                         # not an object
             '"start"',                                                        # not an object
             "",                                                               # blank: nothing to count
             '{"ev": "teleport", "t_ns": 1}',                                  # no such record
             json.dumps({**json.loads(good[1]), "t0_ns": "soon"}),             # wrong type
             json.dumps({**json.loads(good[1]), "t0_ns": 2.0}),                # a float where an integer belongs
             json.dumps({**json.loads(good[1]), "colour": "red"}),             # unknown field
             json.dumps({**json.loads(good[2]), "t_ns": -1}),                  # out of range
             good[1], good[2]]
    path = tmp_path / "w.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe not utf-8\n" + good[2][:20].encode())
    got = read_jsonl(path)
    assert got.records == LOG_RECORDS[:3]
    assert got.corrupt_lines == 10
    assert got.corrupt.problems[:3] == ["2: not JSON", "3: not a JSON object", "4: not a JSON object"]
    assert len(got.corrupt.problems) == PROBLEMS_KEPT
    assert any("t0_ns" in p for p in got.corrupt.problems)


def test_torn_last_line_is_counted_and_a_complete_last_line_without_newline_is_not(tmp_path):
    path = tmp_path / "w.jsonl"
    whole = LOG_RECORDS[1].line()
    path.write_text(LOG_RECORDS[0].line() + "\n" + whole)
    assert read_jsonl(path).corrupt_lines == 0 and len(read_jsonl(path).records) == 2
    path.write_text(LOG_RECORDS[0].line() + "\n" + whole[:-5])
    got = read_jsonl(path)
    assert got.corrupt_lines == 1 and got.records == LOG_RECORDS[:1]


def test_reader_raises_only_for_a_file_it_cannot_read(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_jsonl(tmp_path / "missing.jsonl")


def test_follower_waits_for_the_rest_of_a_line_written_in_two_parts(tmp_path):
    path = tmp_path / "w.jsonl"
    f = JsonlFollower(path)
    assert f.poll() == [] and f.pending == 0  # not there yet
    first, second = LOG_RECORDS[0].line() + "\n", LOG_RECORDS[3].line() + "\n"
    with open(path, "ab", buffering=0) as out:
        out.write(first.encode() + second[:25].encode())
        assert f.poll() == [LOG_RECORDS[0]]
        assert f.pending == 25 and f.poll() == []
        out.write(second[25:].encode())
        assert f.poll() == [LOG_RECORDS[3]] and f.pending == 0
        out.write(b"not json\n" + (LOG_RECORDS[8].line() + "\n").encode())
        assert f.poll() == [LOG_RECORDS[8]]
    assert f.corrupt.count == 1 and f.corrupt.problems == ["3: not JSON"]


def test_writer_writes_what_the_reader_reads(tmp_path):
    log = JsonlLog(tmp_path / "d" / "ps.jsonl", flush_s=0)
    for rec in LOG_RECORDS[9:]:
        log.write(rec)
    log.close()
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.write(LOG_RECORDS[9])
    got = read_jsonl(tmp_path / "d" / "ps.jsonl")
    assert got.records == LOG_RECORDS[9:] and got.corrupt_lines == 0


def test_atomic_writer_keeps_the_old_file_when_writing_fails(tmp_path):
    path = write_json(tmp_path / "sub" / "x.json", {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1} and path.read_text().endswith("\n")
    with pytest.raises(TypeError):
        write_json(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1}
    (tmp_path / "sub" / "dir.txt").mkdir()
    with pytest.raises(OSError):
        write_text_atomic(tmp_path / "sub" / "dir.txt", "text")
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["dir.txt", "x.json"]  # no temporary left


# -- the manifest --------------------------------------------------------------------------------


def test_manifest_round_trip_and_schema_version(tmp_path):
    m = RunManifest(backend="local", t_start_ns=1, t_end_ns=2, plan={"target": 150.0}, provenance=provenance(),
                    stopped_early_s=3.5)
    write_manifest(tmp_path, m)
    raw = json.loads((tmp_path / "run.json").read_text())
    assert raw["schema_version"] == RESULTS_SCHEMA_VERSION and raw["partial"] is False and raw["faults"] == []
    assert read_manifest(tmp_path) == m


FLAT_V2 = {"t_start_ns": 10, "t_end_ns": 20, "topo": "tor", "queue": "fifo", "clusters": 9, "bmv2_log_level": "warn",
           "partial": True, "ps_died": "the PS exited with status -9 3.0 s into the run",
           "faults": [{"fault": "ps-kill", "at_s": 3.0, "killed_ns": 13}],
           "incomplete": {"updates_per_worker": 500, "deadline_s": 30.0, "generated": {"w1": 12}},
           "stopped_early_s": None, "provenance": {**provenance(), "results_schema_version": 2}}
NS3_V2 = {"t_start_ns": 0, "backend": "ns3", "topo": "multihop", "queue": "olaf",
          "scenario": {"topology": "multihop", "queue": "olaf", "seed": 4},
          "sim": {"wall_s": 0.5, "events": 10, "packets": 4, "sim_end_ns": 99, "setup_s": 0.1},
          "provenance": {**provenance(), "results_schema_version": 2}, "t_end_ns": 90,
          "network_yaml": "not written: too many clusters"}


def test_manifest_converts_the_flat_layout(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(FLAT_V2))
    m = read_manifest(tmp_path)
    assert (m.backend, m.t_start_ns, m.t_end_ns, m.label) == ("mininet", 10, 20, "fifo")
    assert m.plan == {"topo": "tor", "queue": "fifo", "clusters": 9, "bmv2_log_level": "warn"}
    assert m.partial and m.partial_reason == FLAT_V2["ps_died"] and m.faults[0].fault == "ps-kill"
    assert m.incomplete is not None and m.incomplete.generated == {"w1": 12}
    assert m.provenance is not None and m.provenance.results_schema_version == 2
    interrupted = {k: v for k, v in FLAT_V2.items() if k != "ps_died"}
    assert parse_manifest(interrupted).partial_reason == "interrupted"
    harness = parse_manifest({"t_start_ns": 0, "t_end_ns": 5})  # a hand-written window, version 1
    assert (harness.backend, harness.plan, harness.provenance) == ("external", {}, None)


def test_manifest_converts_the_ns3_layout(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps(NS3_V2))
    m = read_manifest(tmp_path)
    assert (m.backend, m.t_start_ns, m.t_end_ns, m.label) == ("ns3", 0, 90, "olaf")
    assert m.plan == NS3_V2["scenario"]
    assert m.backend_info == {"sim": NS3_V2["sim"], "network_yaml": NS3_V2["network_yaml"]}


@pytest.mark.parametrize("raw, message", [
    ({"schema_version": 99, "backend": "ns3"}, "schema_version 99 is not one this Olaf reads"),
    ({"schema_version": "3", "backend": "ns3"}, "schema_version '3'"),
    ({**FLAT_V2, "provenance": {**FLAT_V2["provenance"], "results_schema_version": 7}}, "results schema version 7"),
    ({"backend": "ray", "t_start_ns": 0}, "backend 'ray' without a schema_version"),
    ({"schema_version": RESULTS_SCHEMA_VERSION, "backend": "local", "colour": 1}, "colour"),
    ({"schema_version": RESULTS_SCHEMA_VERSION}, "backend"),
    ({**FLAT_V2, "incomplete": {"generated": {}}}, "legacy run.json does not convert: incomplete"),
    ([1, 2], "expected a JSON object"),
])
def test_manifest_errors_name_the_problem(tmp_path, raw, message):
    (tmp_path / "run.json").write_text(json.dumps(raw))
    with pytest.raises(ManifestError, match="run.json") as e:
        read_manifest(tmp_path)
    assert message in str(e.value)


def test_manifest_missing_or_not_json(tmp_path):
    with pytest.raises(ManifestError, match="missing"):
        read_manifest(tmp_path)
    (tmp_path / "run.json").write_text("{")
    with pytest.raises(ManifestError, match="not JSON"):
        read_manifest(tmp_path)


def test_generated_schemas_accept_the_models_and_refuse_foreign_records():
    log = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "host-log.schema.json").read_text()))
    for rec in LOG_RECORDS:
        log.validate(json.loads(rec.line()))
    assert not log.is_valid({"ev": "gen", "t_ns": 1})
    assert not log.is_valid({**json.loads(GEN.line()), "colour": "red"})
    man = jsonschema.Draft202012Validator(json.loads((SCHEMAS / "run-manifest.schema.json").read_text()))
    man.validate(parse_manifest(FLAT_V2).model_dump(mode="json"))
    assert not man.is_valid(FLAT_V2)  # the legacy layout is converted, not valid as it is


# -- real hosts ----------------------------------------------------------------------------------


def _validate_run_dir(run: Path) -> RunManifest:
    """Every log line, summary and the manifest of ``run`` against the models and the generated schemas."""
    schema = {n: jsonschema.Draft202012Validator(json.loads((SCHEMAS / f"{n}.schema.json").read_text()))
              for n in ("host-log", "worker-summary", "ps-summary", "run-manifest")}
    logs = sorted(run.rglob("*.jsonl"))
    assert logs
    for log in logs:
        got = read_jsonl(log)
        assert got.corrupt_lines == 0, (log.name, got.corrupt.problems)
        assert isinstance(got.records[0], (WorkerStart, PsStart)) and isinstance(got.records[-1], StopRecord)
        for line in log.read_text().splitlines():
            schema["host-log"].validate(json.loads(line))
        summary = log.with_name(log.stem + ".summary.json")
        model, name = (PsSummary, "ps-summary") if isinstance(got.records[0], PsStart) else (WorkerSummary,
                                                                                          "worker-summary")
        model.model_validate_json(summary.read_text(), strict=True)
        schema[name].validate(json.loads(summary.read_text()))
    schema["run-manifest"].validate(json.loads((run / "run.json").read_text()))
    return read_manifest(run)


def test_a_local_run_of_real_hosts_writes_a_valid_run_directory(tmp_path):
    """Real `olaf ps` and `olaf worker` processes over loopback (the local backend, bandit task) until a
    monitor says stop: the directory validates and `olaf report` reads it."""
    from olaf import backends
    from olaf.backends.base import BackendOptions
    from olaf.report.commands import report_run
    from olaf.topologies.rundir import generation_progress

    class FirstReward:
        """Stops the run at its first poll after every worker generated at least once."""

        def poll(self, elapsed_s: float) -> tuple[str, bool]:
            prog = generation_progress(tmp_path / "hosts")
            return "", len(prog) == 4 and all(p["generated"] >= 1 for p in prog.values())

    plan = validate(RunPlan, {"duration_s": 120, "updates_per_worker": 200,
                              "groups": [{"clusters": 2, "workers_per_cluster": 2, "period_ms": 20.0}]})
    res = backends.get("local", BackendOptions(report=False)).run(plan, tmp_path, FirstReward())
    assert res.status == "stopped"
    m = _validate_run_dir(tmp_path)
    assert m.backend == "local" and m.t_start_ns is not None and m.t_end_ns is not None and m.t_end_ns > m.t_start_ns
    assert m.stopped_early_s is not None and not m.partial and validate(RunPlan, m.plan) == plan
    summary = report_run(tmp_path, plots=False, quiet=True)
    assert summary["run"]["backend"] == "local" and summary["window"]["source"] == "run.json"
    assert summary["bad_records"] == {} and set(summary["clusters"]) == {"0", "1"}
    assert 0 < summary["overall"]["delivered"] <= summary["overall"]["sent"]


@pytest.mark.train
def test_a_ppo_worker_writes_valid_records(tmp_path):
    """A real PPO worker and PS (in process, loopback): the PPO task's fields of its gen records are
    fields of the model (an unknown one would stop the worker)."""
    from olaf.plan.workload import PPOConfig, PPOTaskSpec

    ip = loopback_net()
    ps = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0))
    cfg = WorkerConfig(ps_ip=ip(100), bind_ip=ip(1), task_kind="ppo", schedule=ScheduleSpec(period_ms=1, max_updates=3),
                       ppo=PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(n_steps=64, n_envs=1, hidden=(4,))),
                       out_dir=tmp_path, name="w1", linger_ms=50, ack_wait_ms=200)
    with running(ps.run):
        assert ps.ready.wait(10)
        try:
            Worker(cfg, threading.Event()).run()
        finally:
            ps.stop.set()
    logs = [read_jsonl(p) for p in (tmp_path / "w1.jsonl", tmp_path / "ps.jsonl")]
    for got in logs:
        assert got.corrupt_lines == 0, got.corrupt.problems
    gens = [r for r in logs[0].records if isinstance(r, GenRecord)]
    assert len(gens) == 3 and all(g.steps == 64 and g.policy_loss is not None and g.grad_norm is not None
                                  for g in gens)
    s = WorkerSummary.model_validate_json((tmp_path / "w1.summary.json").read_text(), strict=True)
    assert s.task == "ppo" and s.iterations == 3 and s.num_params is not None


@pytest.mark.ns3
def test_an_ns3_run_writes_a_valid_run_directory(sim, tmp_path):
    """The ns-3 backend's simulated hosts write the same records as real ones, and the same manifest."""
    from olaf.configfile import validate
    from olaf.plan.plan import RunPlan
    from olaf.sim.backend import run_ns3

    s = validate(RunPlan, {"topology": "tor", "queue": "olaf", "duration_s": 2, "seed": 1, "updates_per_worker": 30,
                            "groups": [{"clusters": 2, "workers_per_cluster": 2, "period_ms": 50}],
                            "uplinks": {"s1": {"pps": 40}}})
    out = run_ns3(s, tmp_path / "run", plots=False)
    m = _validate_run_dir(out)
    assert (m.backend, m.t_start_ns, m.plan["seed"]) == ("ns3", 0, 1)
    assert m.t_end_ns is not None and m.t_end_ns > 0 and m.backend_info["sim"]["events"] > 0
    assert m.incomplete is None  # 30 updates at 50 ms fit in 2 s
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["backend"] == "ns3" and summary["bad_records"] == {}
    assert summary["overall"]["sent"] == 4 * 30


def test_training_monitor_and_outputs_read_the_logs_through_the_follower_and_reader(tmp_path):
    """olaf train's monitor follows worker and PS logs as they grow (a line in two writes, a corrupt
    line counted, not fatal) and its outputs take t0 from the manifest."""
    from olaf.rundir.training import read_training
    from olaf.training.monitor import TrainMonitor, write_training_outputs

    hosts = tmp_path / "hosts"
    hosts.mkdir()
    write_manifest(tmp_path, RunManifest(backend="mininet", t_start_ns=0, t_end_ns=10**9))
    start = LOG_RECORDS[0].model_copy(update={"name": "w1"})

    def gen(i, reward):
        return GenRecord(ev="gen", t_ns=(i + 1) * 10**8, idx=i, late_ms=0.0, sent=True, seq=i + 1, reward=reward,
                         folded=1, exp_reward=None, reason="tc_off", p_send=1.0, draw=None, delta_hat_ms=None, N=None,
                         q_max=None, steps=32, episodes=1, env_steps=32 * (i + 1), saturated=1)

    def upd(i, gr):
        return UpdateRecord(ev="update", t_ns=(i + 1) * 10**8 + 5, src="10.0.0.1", cluster_id=0, worker_id=1, seq=i + 1,
                            count=2, gen_ts=(i + 1) * 10**8, reward_sum=0, reward=0.0, init=False,
                            outcome=Outcome.ACCEPTED, global_reward=gr)

    mon = TrainMonitor(hosts, ["w1"], target=50.0, window=2)
    w, ps = hosts / "w1.jsonl", hosts / "ps.jsonl"
    w.write_text(start.line() + "\n" + gen(0, 10.0).line() + "\n")
    ps.write_text(LOG_RECORDS[9].line() + "\n" + upd(0, 10.0).line() + "\n")
    text, stop = mon.poll(0.5)
    assert not stop and "reward 10.0" in text and "PS 2 updates" in text
    half = gen(1, 90.0).line()
    with open(w, "a") as f:
        f.write("garbage\n" + half[:30])
    assert mon.poll(1.0) == (text, False)  # the garbage counted, the half line waits for its rest
    assert mon.history[-1][1].generations == 1 and mon._tracker.corrupt == 1
    with open(w, "a") as f:
        f.write(half[30:] + "\n")
    with open(ps, "a") as f:
        f.write(upd(1, 90.0).line() + "\n")
    text, stop = mon.poll(1.5)
    assert stop and mon.reached_s == 1.5 and "reward 50.0" in text and "global 90.0" in text
    result = write_training_outputs(tmp_path, mon, {"env": "CartPole-v1"})
    assert result.reached and result.ps_updates == 4 and result.ps_messages == 2
    assert result.iterations == 2 and result.saturated_elements == 2
    assert result.corrupt_log_lines == {"w1": 1}
    rows = (tmp_path / "rewards.csv").read_text().splitlines()
    assert rows[1:] == ["w1,0.100,0,32,10.000,1,0", "w1,0.200,1,64,90.000,1,2"]
    assert json.loads((tmp_path / "training.json").read_text()) == result.model_dump(mode="json")
    assert read_training(tmp_path) == result


def test_a_training_json_that_is_not_a_training_result_is_named_with_its_fields(tmp_path):
    from olaf.rundir.training import TrainingFileError, read_training

    with pytest.raises(TrainingFileError, match="missing"):
        read_training(tmp_path)
    (tmp_path / "training.json").write_text("{not json")
    with pytest.raises(TrainingFileError, match="cannot read"):
        read_training(tmp_path)
    (tmp_path / "training.json").write_text('{"reached": "maybe"}')
    with pytest.raises(TrainingFileError, match=r"not a training result \(job: Field required"):
        read_training(tmp_path)


def test_the_solve_comparison_reads_an_olaf_run_through_the_training_and_manifest_models(tmp_path):
    from olaf.rundir.manifest import RunManifest, write_manifest
    from olaf.rundir.training import EvalRow, TrainingResult, write_training
    from olaf.training.solve import read_olaf

    job = {"ps_step": "paper", "ps_lr": 0.3, "task": {"ppo": {"n_epochs": 4}}}
    write_manifest(tmp_path, RunManifest(backend="local", plan={"seed": 11, "duration_s": 900.0,
                                                                 "workload": {"kind": "ppo", "job": job}}))
    ev = [EvalRow(t_s=t, env_steps=s, ps_updates=u, episodes=100, mean=m, std=10.0, eval_s=3.0)
          for t, s, u, m in ((60.0, 100_000, 500, 120.0), (120.0, 200_000, 1000, 201.0), (180.0, None, 1500, 210.0))]
    write_training(tmp_path, TrainingResult(
        job={"seed": 11}, target=0.0, reached=True, time_to_target_s=50.0, elapsed_s=190.0,
        final_mean_worker_reward=150.0, workers_with_reward=27, env_steps=300_000, iterations=600,
        fewest_worker_iterations=20, ps_updates=1500, ps_messages=1500, saturated_elements=0, evaluations=ev,
        final_eval=ev[-1], best_eval=ev[-1], solve_at=200.0, solved=True, solved_eval=ev[1]))
    run = read_olaf(tmp_path)
    assert (run.system, run.seed, run.solved, run.time_to_solved_s, run.env_steps_to_solved) == \
        ("olaf", 11, True, 120.0, 200_000)
    assert run.best_eval == 210.0 and run.budget_s == 900.0 and run.label == "Olaf paper γ 0.3"
    assert run.curve == [(60.0, 100_000, 120.0), (120.0, 200_000, 201.0), (180.0, 0, 210.0)]


def test_write_jsonl_writes_a_whole_log_that_read_jsonl_reads_back_and_appends(tmp_path):
    from pydantic import TypeAdapter

    from olaf.rundir.jsonl import JsonlLog, read_jsonl, write_jsonl
    from olaf.rundir.records import RegroupRecord

    recs = [RegroupRecord(t_ns=i, clusters={"1": ["w1"], "2": [f"w{i + 2}"]}) for i in range(3)]
    path = tmp_path / "sub" / "regroups.jsonl"
    assert write_jsonl(path, recs[:2]) == 2 and write_jsonl(path, recs[2:], append=True) == 1
    regroups = TypeAdapter(RegroupRecord)
    got = read_jsonl(path, regroups)
    assert got.records == recs and got.corrupt_lines == 0
    with JsonlLog(path, append=True) as log:
        log.write(recs[0])
    assert read_jsonl(path, regroups).records == [*recs, recs[0]]
