"""``olaf evaluate RUN_DIR``: score the global model a training run left behind.

The PS writes its checkpoint when it stops (``hosts/ps.checkpoint.npz``, :mod:`olaf.hosts.checkpoint`);
this command runs its weights deterministically (:func:`olaf.rl.evaluate.evaluate_weights`) with
the run's network and environment (its ``run.json`` plan) and prints the mean return, or writes
it as JSON. Any number of episodes and any seed: the run's own evaluations
(``hosts/evaluator.jsonl``) used the run's seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from olaf.configfile import ConfigError, validate
from olaf.hosts.checkpoint import CheckpointError, read_checkpoint
from olaf.hosts.jobconfig import ps_checkpoint
from olaf.plan.plan import PPOWorkload, RunPlan
from olaf.plan.workload import SOLVED_EPISODES
from olaf.rundir.manifest import ManifestError, read_manifest


@click.command("evaluate")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--episodes", type=click.IntRange(1), default=SOLVED_EPISODES, show_default=True,
              help="Deterministic episodes (100: the environment's definition of solved).")
@click.option("--seed", type=click.IntRange(0), default=0, show_default=True, help="Seed of the first environment.")
@click.option("--checkpoint", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Another checkpoint of the same network [default: RUN_DIR/hosts/ps.checkpoint.npz].")
@click.option("--json", "as_json", is_flag=True, help="Print the result as one JSON object.")
def evaluate_cmd(run_dir: Path, episodes: int, seed: int, checkpoint: Path | None, as_json: bool) -> None:
    """Evaluate the PS's final global model of the training run RUN_DIR."""
    try:
        plan = validate(RunPlan, read_manifest(run_dir).plan)
    except (ManifestError, ConfigError) as e:
        raise click.BadParameter(f"{run_dir}: {getattr(e, 'message', e)}", param_hint="RUN_DIR") from None
    if not isinstance(plan.workload, PPOWorkload):
        raise click.BadParameter(f"{run_dir} is not a training run (its workload is {plan.workload.kind})",
                                 param_hint="RUN_DIR")
    path = checkpoint or ps_checkpoint(run_dir / "hosts")
    try:
        ck = read_checkpoint(path)
    except CheckpointError as e:
        raise click.BadParameter(f"{e} (the PS writes it when it stops)", param_hint="--checkpoint") from None
    from olaf.rl.extra import TrainExtraMissing, require_train_extra  # noqa: PLC0415

    try:
        require_train_extra()
    except TrainExtraMissing as e:
        raise click.ClickException(str(e)) from None
    from olaf.rl.evaluate import evaluate_weights  # noqa: PLC0415
    spec = plan.workload.job.task
    try:
        r = evaluate_weights(spec, ck.weights, episodes, seed)
    except ValueError as e:
        raise click.BadParameter(f"{path}: {e}", param_hint="--checkpoint") from None
    out = {"env": spec.env_id, "checkpoint": str(path), "ps_updates": ck.worker_updates, "episodes": r.episodes,
           "mean": r.mean, "std": r.std, "min": r.min, "max": r.max, "mean_length": r.mean_length}
    if as_json:
        click.echo(json.dumps(out))
    else:
        click.echo(f"{spec.env_id}: {r.mean:.1f} ± {r.std:.1f} over {r.episodes} deterministic episodes "
                   f"(min {r.min:.1f}, max {r.max:.1f}); the PS had {ck.worker_updates} worker updates")
