"""The PS's checkpoint (olaf/hosts/checkpoint.py): the global model's whole state round-trips, a
PS resumed from it continues where the first stopped (over real UDP on loopback), and a bad
checkpoint is refused with a clear error."""

import time

import numpy as np
import pytest
from click.testing import CliRunner
from hostnet import AckReceiver, loopback_net, running

from olaf.cli import main
from olaf.hosts.checkpoint import CheckpointError, read_checkpoint, write_checkpoint
from olaf.hosts.global_model import GlobalModel
from olaf.hosts.ps import ParameterServer, PsConfig
from olaf.update import Update
from olaf.wire import UPDATE_PORT, encode_update

ONE = 1 << 24


def upd(seq, grads, reward=1 << 16):
    return Update(cluster_id=0, worker_id=1, seq=seq, count=1, reward_sum=reward, gen_ts=time.time_ns(),
                  grads=tuple(grads))


@pytest.mark.parametrize("step", ["paper", "sgd", "adam", "nesterov"])
def test_a_model_loaded_from_its_state_continues_exactly_as_the_original(tmp_path, step):
    a = GlobalModel(0.1, step, gate=step == "paper")
    a.init([ONE, -ONE, 0])
    for i, g in enumerate(([ONE, 0, 2 * ONE], [0, ONE, -ONE])):
        a.apply(upd(i, g, reward=(i + 1) << 16))
    write_checkpoint(tmp_path / "c.npz", a.state(), t_ns=5, updates=2, worker_updates=2)
    ck = read_checkpoint(tmp_path / "c.npz")
    assert (ck.t_ns, ck.updates, ck.worker_updates) == (5, 2, 2)
    b = GlobalModel(0.1, step, gate=step == "paper")
    b.load_state(ck.state)
    assert b.global_reward() == a.global_reward() and b.accepted == a.accepted
    for m in (a, b):
        assert m.apply(upd(3, [ONE, ONE, ONE], reward=3 << 16)).value == "accepted"
    np.testing.assert_array_equal(a.weights, b.weights)   # same g_a / Adam moments / step count
    assert a.ack_weights() == b.ack_weights()


def test_bad_checkpoints_are_refused_with_what_is_wrong(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        read_checkpoint(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(CheckpointError, match="not a PS checkpoint"):
        read_checkpoint(tmp_path / "junk.npz")
    m = GlobalModel(0.1, "adam")
    with pytest.raises(ValueError, match="not initialised"):
        m.state()
    m.init([ONE, ONE])
    state = m.state()
    state["adam_m"] = np.zeros(3)
    write_checkpoint(tmp_path / "c.npz", state, 1, 0, 0)
    with pytest.raises(ValueError, match="adam_m has 3 elements, its weights 2"):
        GlobalModel(0.1, "adam").load_state(read_checkpoint(tmp_path / "c.npz").state)
    r = CliRunner().invoke(main, ["ps", "--bind", loopback_net()(100), "--resume", str(tmp_path / "c.npz"),
                                  "--out-dir", str(tmp_path)])
    assert r.exit_code == 2 and "--resume" in r.output and "adam_m has 3 elements" in r.output, r.output
    assert "Traceback" not in r.output


def test_a_resumed_ps_answers_inits_with_the_checkpointed_weights(tmp_path):
    """The first PS learns from one update and stops (its stop writes the checkpoint); a second PS
    resumed from it ignores a worker's INIT weights and ACKs the first PS's weights."""
    ip = loopback_net()
    worker = AckReceiver(ip(1))
    first = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path / "a", flush_s=0, lr=1.0, step="sgd"))
    with running(first.run) as r:
        assert first.ready.wait(5)
        worker.send_to(encode_update(upd(1, [ONE, ONE]), init=True), (ip(100), UPDATE_PORT))
        worker.next()
        worker.send_to(encode_update(upd(2, [ONE, -ONE])), (ip(100), UPDATE_PORT))
        assert worker.next().weights == (2 * ONE, 0)
        first.stop.set()
        assert r["done"].wait(10)
    ck = tmp_path / "a" / "ps.checkpoint.npz"
    assert read_checkpoint(ck).worker_updates == 1 and r["result"]["checkpoints"] == 1
    second = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path / "b", flush_s=0, lr=1.0, step="sgd",
                                      resume_from=ck))
    with running(second.run) as r2:
        assert second.ready.wait(5)
        worker.send_to(encode_update(upd(1, [7 * ONE, 7 * ONE]), init=True), (ip(100), UPDATE_PORT))
        a = worker.next()
        assert a.weights == (2 * ONE, 0)        # the checkpoint's, not the INIT's
        second.stop.set()
        assert r2["done"].wait(10)
    assert r2["result"]["init_ignored"] == 1 and r2["result"]["resumed_from"] == str(ck)
    worker.close()


def test_the_ps_writes_a_checkpoint_on_its_schedule_while_it_runs(tmp_path):
    ip = loopback_net()
    worker = AckReceiver(ip(1))
    ps = ParameterServer(PsConfig(bind_ip=ip(100), out_dir=tmp_path, flush_s=0, checkpoint_s=0.05))
    path = tmp_path / "ps.checkpoint.npz"
    with running(ps.run) as r:
        assert ps.ready.wait(5)
        worker.send_to(encode_update(upd(1, [ONE]), init=True), (ip(100), UPDATE_PORT))
        worker.next()
        deadline = time.monotonic() + 10     # a hang guard only
        while ps.counters["checkpoints"] < 2:
            assert time.monotonic() < deadline, "no periodic checkpoint"
            time.sleep(0.01)
        assert read_checkpoint(path).weights.tolist() == [1.0]
        ps.stop.set()
        assert r["done"].wait(10)
    worker.close()
