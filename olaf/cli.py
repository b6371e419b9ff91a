"""The ``olaf`` command: vector tools, the AoM verifier (and, as they land, runs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import click

from olaf import vectors as vec


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="olaf-drl")
def main() -> None:
    """Olaf: in-network acceleration for asynchronous distributed RL."""


@main.group()
def vectors() -> None:
    """OlafQueue test vectors (format: docs/vectors.md)."""


@vectors.command("generate")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("tests/vectors"), show_default=True,
              help="Directory to write <name>.json files into.")
@click.option("--random", "n_random", type=click.IntRange(min=0), default=0, show_default=True,
              help="Extra seeded random traces beyond the committed set.")
@click.option("--seed", type=int, default=1000, show_default=True,
              help="Seed of the first extra random trace (trace i uses seed+i).")
def generate(out_dir: Path, n_random: int, seed: int) -> None:
    """Write the curated and random vectors, computed by the reference model."""
    paths = vec.write_traces(vec.all_traces(n_random, seed), out_dir)
    click.echo(f"wrote {len(paths)} vector files to {out_dir}")


@vectors.command("check")
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=True, path_type=Path))
def check(paths: tuple[Path, ...]) -> None:
    """Replay vector files (or directories of them) through the reference model."""
    files = [f for p in paths for f in (sorted(p.glob("*.json")) if p.is_dir() else [p])]
    failed = 0
    for f in files:
        try:
            bad = vec.replay(vec.load(f))
        except (vec.VectorFormatError, ValueError) as e:
            click.echo(f"ERROR {f}: {e}", err=True)
            failed += 1
            continue
        if bad:
            failed += 1
            click.echo(f"FAIL  {f}: {len(bad)} mismatch(es); first: {bad[0]}", err=True)
        else:
            click.echo(f"ok    {f}")
    click.echo(f"{len(files) - failed}/{len(files)} vector files match the reference model")
    sys.exit(1 if failed else 0)


# Exit codes of `olaf verify` (docs/verifier.md): 2 is click's usage error.
VERIFY_EXIT = {"verified": 0, "violated": 1, "unknown": 3}
EXIT_NOT_REPRODUCED = 4


@main.command("verify")
@click.argument("config_path", metavar="CONFIG",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help='Print {"verdict", "solver_time_s", "build_time_s", "trace", "trace_path"} as JSON.')
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Solver time limit in s; when it expires the verdict is 'unknown' (exit 3).")
@click.option("--horizon", type=click.IntRange(min=2), default=None,
              help="Override the config's horizon (updates per cluster).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for a counterexample [default: results/verify/<CONFIG stem>].")
@click.option("--no-plot", is_flag=True, help="Do not draw aom.png for a counterexample.")
def verify_cmd(config_path: Path, as_json: bool, timeout_s: Optional[float], horizon: Optional[int],
               out_dir: Optional[Path], no_plot: bool) -> None:
    """Verify AoM fairness of a cluster/engine CONFIG (YAML or JSON; paper §6).

    Exit status: 0 verified, 1 violated (counterexample written and replayed),
    3 unknown (timeout), 2 bad config, 4 the replay did not reproduce the
    solver's counterexample (a bug: please report it).
    """
    try:
        from olaf.verifier import api, report
        from olaf.verifier.config import ConfigError, load
    except ImportError as e:  # the 'verify' extra is missing
        raise click.ClickException(
            f"the verifier needs z3-solver ({e}); install it with: pip install 'olaf-drl[verify]'")
    try:
        cfg = load(config_path, horizon=horizon)
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint="CONFIG") from None
    v = api.verify(cfg, timeout_s=timeout_s)
    paths = {}
    if v.trace is not None:
        out_dir = out_dir or Path("results") / "verify" / config_path.stem
        paths = report.write(v.trace, out_dir, with_plot=not no_plot)
    if as_json:
        click.echo(json.dumps({**v.to_json(), "trace_path": str(paths["json"]) if paths else None}))
    else:
        click.echo(f"{v.verdict}  ({cfg.num_clusters} clusters, horizon {cfg.horizon}, "
                   f"solver {v.solver_time_s:.3f} s, build {v.build_time_s:.3f} s)")
        if v.verdict == "unknown":
            click.echo(f"solver gave up: {v.reason}")
        if v.trace is not None:
            for x in v.trace["violations"]:
                gap = f": gap {x['gap_float']:.4g} > ε = {cfg.query.epsilon} ({cfg.query.unit})" \
                    if x["gap"] is not None else ": no peak AoM in the horizon"
                click.echo(f"  {x['kind']} {', '.join(x['clusters'])}{gap}")
            r = v.trace["replay"]
            click.echo("replay through the reference OlafQueue: "
                       + ("reproduces the violation" if r["reproduced"] else "DOES NOT reproduce it"))
            for m in r["inadmissible"] + r["mismatches"]:
                click.echo(f"  {m}")
            click.echo("trace: " + ", ".join(str(p) for p in paths.values()))
    if v.trace is not None and not v.reproduced:
        sys.exit(EXIT_NOT_REPRODUCED)
    sys.exit(VERIFY_EXIT[v.verdict])


if __name__ == "__main__":
    main()
