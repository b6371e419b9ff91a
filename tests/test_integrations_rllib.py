"""olaf.integrations.rllib.with_olaf: Olaf turned on in an existing RLlib PPOConfig keeps every
setting of it and builds the same OlafPPOConfig as one written for Olaf from the start; what
cannot run through Olaf is refused by name (tests/test_rllib.py trains such a config for real)."""

import pytest
from tiers import require

require("train")
pytestmark = pytest.mark.train
pytest.importorskip("ray.rllib", reason="the rllib extra is not installed: pip install -e '.[train,rllib]'")

from ray.rllib.algorithms.dqn import DQNConfig  # noqa: E402
from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig  # noqa: E402

from olaf.integrations.rllib import with_olaf  # noqa: E402
from olaf.rl.rllib import OlafEnvRunner, OlafPPO, OlafPPOConfig  # noqa: E402


def users_config(cls=PPOConfig):
    return (cls()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=2, rollout_fragment_length=128)
            .training(lr=1e-3, minibatch_size=64, num_epochs=3, train_batch_size_per_learner=128)
            .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[32, 32]))
            .debugging(seed=5))


def test_every_setting_is_kept_and_olaf_is_on():
    mine = users_config()
    got = with_olaf(mine, ps="127.0.0.1", endpoints=["127.0.0.2", "127.0.0.3"], ack_wait_s=0.2)
    written = users_config(OlafPPOConfig).olaf(ps="127.0.0.1", endpoints=["127.0.0.2", "127.0.0.3"], ack_wait_s=0.2)
    assert isinstance(got, OlafPPOConfig) and got.algo_class is OlafPPO and got.env_runner_cls is OlafEnvRunner
    assert got.to_dict() == written.to_dict()
    assert (got.lr, got.minibatch_size, got.num_epochs, got.num_env_runners, got.seed) == (1e-3, 64, 3, 2, 5)
    assert got.olaf_ps == "127.0.0.1" and [e.bind for e in got.olaf_endpoints] == ["127.0.0.2", "127.0.0.3"]
    assert mine.env_runner_cls is None and not hasattr(mine, "olaf_ps")  # the user's config is not changed
    got.validate()  # the driver-side checks pass


def test_what_cannot_run_through_olaf_is_refused_by_name():
    with pytest.raises(TypeError, match="DQNConfig: Olaf runs PPO"):
        with_olaf(DQNConfig(), ps="127.0.0.1", endpoints=["127.0.0.2"])
    with pytest.raises(ValueError, match="endpoint"):
        with_olaf(users_config(), ps="127.0.0.1", endpoints=[])
    short = with_olaf(users_config(), ps="127.0.0.1", endpoints=["127.0.0.2"])  # two EnvRunners, one endpoint
    with pytest.raises(ValueError, match="1 endpoint"):
        short.validate()
