"""RLlib's PPO on CartPole-v1 trained through Olaf: every EnvRunner an asynchronous Olaf worker (docs/rllib.md).

Start a PS for the model's size (this script prints it with --print-num-params), then this:
    python examples/rllib_olaf.py --print-num-params                      # -> P
    olaf ps --bind 127.0.0.1 --num-params P --mtu 1500 --step paper --lr 1 --no-reward-gate &
    python examples/rllib_olaf.py --ps 127.0.0.1 --bind 127.0.0.2 127.0.0.3 --iterations 10
One JSON line per training iteration: RLlib's mean episode return and Olaf's counters.
"""

import argparse
import json

import ray
from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

from olaf.rl.rllib import OlafPPOConfig

ap = argparse.ArgumentParser(description="RLlib PPO through an Olaf PS (and switch)")
ap.add_argument("--ps", help="the Olaf parameter server, IP[:PORT]")
ap.add_argument("--bind", nargs="+", default=[], help="one address (IP[:PORT]) per EnvRunner: its Olaf identity")
ap.add_argument("--iterations", type=int, default=10)
ap.add_argument("--print-num-params", action="store_true", help="print the model's parameter count P and exit")
args = ap.parse_args()

config = (OlafPPOConfig()
          .environment("CartPole-v1")
          .env_runners(num_env_runners=max(1, len(args.bind)), num_cpus_per_env_runner=0.5,
                       rollout_fragment_length=256)
          .training(lr=3e-4, minibatch_size=64, num_epochs=4, train_batch_size_per_learner=256)
          .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=[64, 64])))
if args.print_num_params:
    print(config.olaf_num_params())
    raise SystemExit(0)
if not args.ps or not args.bind:
    ap.error("--ps and --bind are required to train")

ray.init(address="local", include_dashboard=False, log_to_driver=False)  # a new cluster of this machine
algo = config.olaf(ps=args.ps, endpoints=args.bind).build_algo()
try:
    for i in range(args.iterations):
        result = algo.train()
        olaf = result["olaf"]
        print(json.dumps({"iteration": i, "episode_return_mean": result["env_runners"].get("episode_return_mean"),
                          "updates_sent": olaf["updates_sent"], "olaf_steps": olaf["olaf_steps"]}), flush=True)
finally:
    algo.stop()
    ray.shutdown()
