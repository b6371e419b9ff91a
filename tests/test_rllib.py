"""RLlib through Olaf (olaf/rl/rllib.py, docs/rllib.md): OlafPPO's EnvRunners train CartPole against a
real `olaf ps` over loopback, each pushing its own updates; an EnvRunner that dies is restarted by
RLlib with the same Olaf identity and INITs again; RLlib's network shape matches the job's parameter
count; bad configurations name the field. Checked per update and per step, never against a reward
or a time; HANG_S only guards against a hang."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hostnet import guard, loopback_net
from tiers import require

require("train")
pytestmark = pytest.mark.train
ray = pytest.importorskip("ray", reason="the rllib extra is not installed: pip install -e '.[train,rllib]'")
pytest.importorskip("ray.rllib", reason="the rllib extra is not installed: pip install -e '.[train,rllib]'")

import torch  # noqa: E402
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig  # noqa: E402
from torch.nn.utils import parameters_to_vector  # noqa: E402

from olaf.backends.ray.cluster import LocalRayHead  # noqa: E402
from olaf.chunks import Chunking  # noqa: E402
from olaf.constants import MTU  # noqa: E402
from olaf.plan.workload import ARCHS, PPOConfig, PPOTaskSpec  # noqa: E402
from olaf.rl.network import param_count  # noqa: E402
from olaf.rl.rllib import OlafEnvRunner, OlafPPOConfig, RLlibPPOTask, rllib_ppo_config  # noqa: E402

HANG_S = 240.0
RUNNERS = 2
STEPS = 4


def small_config() -> OlafPPOConfig:
    return (OlafPPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=RUNNERS, num_cpus_per_env_runner=0.5, rollout_fragment_length=128)
            .training(lr=3e-4, minibatch_size=64, num_epochs=2, train_batch_size_per_learner=128)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32, 32]))
            .fault_tolerance(restart_failed_env_runners=True)
            .debugging(seed=3))


class Ps:
    """An `olaf ps` on a loopback address for small_config()'s model."""

    def __init__(self, out_dir):
        self.num_params = small_config().olaf_num_params()
        self.ip = loopback_net()(1)
        self.out = out_dir
        self.proc = subprocess.Popen([sys.executable, "-m", "olaf.cli", "ps", "--bind", self.ip, "--out-dir",
                                      str(out_dir), "--num-params", str(self.num_params), "--mtu", str(MTU),
                                      "--step", "paper", "--lr", "0.3", "--no-reward-gate", "--flush-ms", "0"],
                                     stderr=subprocess.PIPE, text=True)
        log = out_dir / "ps.jsonl"
        deadline = time.monotonic() + HANG_S
        while not (log.exists() and log.read_text().strip()):
            assert self.proc.poll() is None, self.proc.stderr.read()
            assert time.monotonic() < deadline, "hang guard: the PS did not start"
            time.sleep(0.05)

    def stop(self) -> dict:
        """Stop it; its summary."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(guard(60)) == 0, self.proc.stderr.read()
        return json.loads((self.out / "ps.summary.json").read_text())


@pytest.fixture
def ps(tmp_path):
    p = Ps(tmp_path)
    try:
        yield p
    finally:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """One Ray head for the module's tests: a second head started in the same process after the
    first one's shutdown is refused by Ray 2.60 (its auth token state stays with the process)."""
    head = LocalRayHead(ray, tmp_path_factory.mktemp("ray") / "ray-head.out", num_cpus=2,
                        env_vars={"OMP_NUM_THREADS": "1"})
    try:
        yield ray
    finally:
        head.close()


def train_until(algo, done) -> dict:
    """algo.train() until done(result) holds; the last result."""
    deadline = time.monotonic() + HANG_S
    result = algo.train()
    while not done(result):
        assert time.monotonic() < deadline, f"hang guard: {result['olaf']}"
        result = algo.train()
    return result


@pytest.mark.timeout(HANG_S * 2 + 120)
def test_olaf_ppo_env_runners_train_against_a_real_ps_and_a_restarted_one_rejoins(ps, ray_cluster):
    k = Chunking.for_model(ps.num_params, MTU).num_chunks
    ip = ps.ip.rsplit(".", 1)[0]
    endpoints = [f"{ip}.2", f"{ip}.3"]
    algo = small_config().olaf(ps=ps.ip, endpoints=endpoints, log_dir=ps.out / "runners").build_algo()
    try:
        first = train_until(algo, lambda r: all(r["olaf"].get(f"runner_{i}", {}).get("pushes", 0) >= STEPS
                                                for i in range(1, RUNNERS + 1)))
        # RLlib's own metrics, aggregated from the EnvRunners
        assert first["env_runners"]["num_env_steps_sampled_lifetime"] >= RUNNERS * STEPS * 128
        assert np.isfinite(first["env_runners"]["episode_return_mean"])
        for i in range(1, RUNNERS + 1):
            c = first["olaf"][f"runner_{i}"]
            # no switch, so no status: every push with an ended episode is sent, as all K chunks, and answered
            assert c["sent"] >= STEPS - 1 and c["chunks_sent"] == k * c["sent"] and c["send_errors"] == 0, c
            assert c["ack_events"] >= 1 and c["inits"] == 1 and c["bind"] == endpoints[i - 1], c
        # the algorithm's module is the global model as last heard (not a learner's own)
        module = parameters_to_vector(algo.get_module().parameters()).detach().numpy()
        assert np.isfinite(module).all() and module.size > 0

        # EnvRunner 1's process dies: RLlib restarts it with worker_index 1, i.e. the same endpoint
        # (Olaf identity); it INITs again and the PS answers with the global model
        old = first["olaf"]["runner_1"]
        subprocess.run(["kill", "-9", str(old["pid"])], check=True)
        again = train_until(algo, lambda r: r["olaf"]["runner_1"]["pid"] != old["pid"]
                            and r["olaf"]["runner_1"]["sent"] >= 1)
        new = again["olaf"]["runner_1"]
        assert algo.env_runner_group.num_remote_worker_restarts() >= 1
        assert new["bind"] == old["bind"] and new["inits"] == 1 and new["init_sent"] >= 1 and new["ack_events"] >= 1
        reported = again["olaf"]
    finally:
        algo.stop()
    summary = ps.stop()
    # every chunk the PS got was applied (no gate); it got at least what the EnvRunners reported sending
    # (the killed one may have sent more after its last report), and the second INIT was answered, not applied
    assert summary["accepted"] == summary["updates"] and summary["malformed"] == 0 and summary["untrusted"] == 0
    assert summary["updates"] >= k * (old["sent"] + new["sent"] + reported["runner_2"]["sent"])
    assert summary["initialised"] == k and summary["init_ignored"] >= 2 * k
    # each EnvRunner incarnation wrote an Olaf worker log and, when RLlib stopped it, its summary
    runner2 = json.loads((ps.out / "runners" / "runner2.summary.json").read_text())
    assert runner2["learner"] == "rllib" and runner2["sent"] >= reported["runner_2"]["sent"]
    assert runner2["chunks_sent"] == k * runner2["sent"] and runner2["model_acked"]


def test_rllib_learner_has_the_jobs_parameter_count():
    """rllib_ppo_config maps the job's network onto RLlib's default PPO module with the same shape,
    so the switch, the PS and the chunking see the same P (olaf.rl.network.param_count)."""
    for arch in ARCHS:
        spec = PPOTaskSpec(env_id="CartPole-v1", ppo=PPOConfig(hidden=(16, 8), arch=arch, n_envs=1, n_steps=32,
                                                               batch_size=16), learner="rllib")
        task = RLlibPPOTask(spec, seed=0)
        try:
            assert task.num_weights == param_count(4, 2, (16, 8), arch)
            gen = task.generate(None)
            assert gen.samples >= 32 and gen.direction.shape == (task.num_weights,)
            assert np.abs(gen.direction).max() > 0  # the Learner moved the weights
            assert set(gen.info) >= {"steps", "episodes", "env_steps", "policy_loss", "value_loss"}
        finally:
            task.close()
    cfg = rllib_ppo_config(PPOTaskSpec(env_id="CartPole-v1", learner="rllib"), seed=0)
    assert cfg.model_config["fcnet_activation"] == "tanh" and cfg.use_kl_loss is False


def test_bad_rllib_configurations_name_the_field():
    with pytest.raises(ValueError, match="learner=rllib.*update=delta"):
        PPOTaskSpec(learner="rllib", update="grad")
    with pytest.raises(ValueError, match="learner='tf'"):
        PPOTaskSpec(learner="tf")
    with pytest.raises(ValueError, match=r"call \.olaf\(ps="):
        small_config().validate()
    with pytest.raises(ValueError, match="1 endpoint.*num_env_runners=2"):
        small_config().olaf(ps="127.0.0.1", endpoints=["127.0.0.2"]).validate()
    with pytest.raises(ValueError, match="num_env_runners=0"):
        small_config().env_runners(num_env_runners=0).olaf(ps="127.0.0.1", endpoints=["127.0.0.2"]).validate()
    with pytest.raises(ValueError, match="minibatch_size=512.*rollout"):
        small_config().training(minibatch_size=512).olaf(ps="127.0.0.1", endpoints=["a", "b"]).validate()
    with pytest.raises(ValueError, match="endpoints"):
        small_config().olaf(ps="127.0.0.1", endpoints=[])


def test_an_env_runner_whose_ps_does_not_answer_says_so_naming_it(tmp_path):
    """No PS at the address: the first olaf_step's INIT gets no global model within init_wait_s,
    and the step returns the error (not raised: RLlib's fault tolerance would swallow it) naming
    the EnvRunner's endpoint, the PS and the model size to start it with."""
    import re

    ip = loopback_net()
    cfg = small_config().olaf(ps=ip(1), endpoints=[ip(2), ip(3)], init_wait_s=0.5, log_dir=tmp_path)
    torch.set_num_threads(1)
    runner = OlafEnvRunner(config=cfg, worker_index=1)
    try:
        got = runner.olaf_step()
    finally:
        runner.stop()
    assert got["worker_index"] == 1 and re.match(
        rf"TimeoutError: EnvRunner 1 at {ip(2)}: no global model from the Olaf PS {ip(1)}.*--num-params \d+", got["error"])
    summary = json.loads((tmp_path / "runner1.summary.json").read_text())
    assert summary["stop_reason"] == "no_global_model" and summary["init_sent"] >= 1 and summary["sent"] == 0


@pytest.mark.timeout(HANG_S + 120)
def test_olaf_ppo_with_no_ps_raises_on_the_driver(tmp_path, ray_cluster):
    """A job whose PS does not answer: algo.train() raises OlafJobError on the driver, naming each
    EnvRunner, its endpoint and the PS, instead of RLlib restarting EnvRunners and the result
    lacking its "olaf" entry."""
    from olaf.rl.rllib import OlafJobError

    ip = loopback_net()
    algo = small_config().olaf(ps=ip(1), endpoints=[ip(2), ip(3)], init_wait_s=1.0, log_dir=tmp_path).build_algo()
    try:
        with pytest.raises(OlafJobError, match=rf"EnvRunner \d: TimeoutError: EnvRunner \d at 127[.\d]+: no global "
                                                rf"model from the Olaf PS {ip(1)}"):
            train_until(algo, lambda r: False)
    finally:
        algo.stop()


NETWORK = """\
num_grads: {p}
num_chunks: {k}
ps: ps
switches:
  s1: {{grpc: 127.0.0.1:9559, device_id: 0, thrift_port: 9090, mac: 00:00:00:00:01:00}}
hosts:
  ps: {{ip: 10.0.0.100, mac: 00:00:0a:00:00:64, switch: s1, port: 0}}
  w1: {{ip: 10.0.1.1, mac: 00:00:0a:00:01:01, switch: s1, port: 1, worker_id: 1}}
  w2: {{ip: 10.0.1.2, mac: 00:00:0a:00:01:02, switch: s1, port: 2, worker_id: 2}}
links: []
clusters: {{0: [w1, w2]}}
"""


def test_endpoints_outside_the_deployments_worker_table_are_refused_before_anything_starts(tmp_path):
    """With network.yaml given, validate() (run by build_algo before any EnvRunner exists) refuses
    an endpoint the switch's worker table does not have, a PS that is not the deployment's, and a
    model of another size than the one the switches were built for."""
    cfg = small_config()
    p = cfg.olaf_num_params()
    net = tmp_path / "network.yaml"
    net.write_text(NETWORK.format(p=p, k=Chunking.for_model(p, MTU).num_chunks))
    cfg.olaf(ps="10.0.0.100", endpoints=["10.0.1.1", "10.0.1.2"], network=net).validate()  # the deployment's own
    with pytest.raises(ValueError, match=r"endpoints\[1\]='10.0.1.9'\) is not a worker host .*unknown_source"):
        small_config().olaf(ps="10.0.0.100", endpoints=["10.0.1.1", "10.0.1.9"], network=net).validate()
    with pytest.raises(ValueError, match=r"endpoints\[0\]='10.0.1.1:50111'\) is not a worker host"):
        small_config().olaf(ps="10.0.0.100", endpoints=["10.0.1.1:50111", "10.0.1.2"], network=net).validate()
    with pytest.raises(ValueError, match="the PS of .* is ps at 10.0.0.100"):
        small_config().olaf(ps="10.0.0.7", endpoints=["10.0.1.1", "10.0.1.2"], network=net).validate()
    net.write_text(NETWORK.format(p=p + 1, k=Chunking.for_model(p + 1, MTU).num_chunks))
    with pytest.raises(ValueError, match=f"{p} parameters, .* num_grads {p + 1}"):
        small_config().olaf(ps="10.0.0.100", endpoints=["10.0.1.1", "10.0.1.2"], network=net).validate()
