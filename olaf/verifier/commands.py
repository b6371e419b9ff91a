"""Click command ``olaf verify`` (registered in :mod:`olaf.cli`)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Optional

import click

from olaf.clitypes import FiniteFloat
from olaf.plan.tx import READINGS

# Exit codes of `olaf verify` (docs/verifier.md): 2 is click's usage error.
VERIFY_EXIT = {"verified": 0, "violated": 1, "unknown": 3}
EXIT_NOT_REPRODUCED = 4


@click.command("verify")
@click.argument("config_path", metavar="CONFIG",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True,
              help='Print {"verdict", "solver_time_s", "build_time_s", "trace", "trace_path"} as JSON.')
@click.option("--timeout", "timeout_s", type=FiniteFloat(min=0, min_open=True), default=None,
              help="Solver time limit in s; when it expires the verdict is 'unknown' (exit 3).")
@click.option("--horizon", type=click.IntRange(min=2), default=None,
              help="Override the config's horizon (updates per cluster).")
@click.option("--reading", type=click.Choice(READINGS), default=None,
              help="Override the config's transmission.reading: probabilistic (paper §5) or backoff (§6).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for a counterexample [default: results/verify/<CONFIG stem>].")
@click.option("--no-plot", is_flag=True, help="Do not draw aom.png for a counterexample.")
def verify_cmd(config_path: Path, as_json: bool, timeout_s: Optional[float], horizon: Optional[int],
               reading: Optional[str], out_dir: Optional[Path], no_plot: bool) -> None:
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
            f"the verifier needs z3-solver ({e}); install it with: pip install 'olaf-drl[verify]'") from None
    try:
        cfg = load(config_path, horizon=horizon)
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint="CONFIG") from None
    if reading is not None:
        cfg = dataclasses.replace(cfg, transmission=dataclasses.replace(cfg.transmission, reading=reading))
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


