"""The ``olaf`` command: vector tools, host programs (worker, PS), runs and their report,
and the AoM verifier. Each subcommand lives next to its component and is registered here."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from olaf import vectors as vec
from olaf.hosts.commands import ps_cmd, worker_cmd
from olaf.run.commands import report_cmd
from olaf.topologies.run import compare_cmd, run_cmd
from olaf.verifier.commands import verify_cmd


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


main.add_command(worker_cmd)
main.add_command(ps_cmd)
main.add_command(report_cmd)
main.add_command(verify_cmd)
main.add_command(run_cmd)
main.add_command(compare_cmd)


if __name__ == "__main__":
    main()
