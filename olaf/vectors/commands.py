"""``olaf vectors generate|check``: write the corpus, replay vector files through the model."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from olaf.vectors.corpus import all_traces, write_traces
from olaf.vectors.format import VectorFormatError, load, replay


@click.group("vectors")
def vectors_cmd() -> None:
    """OlafQueue test vectors (format: docs/vectors.md)."""


@vectors_cmd.command("generate")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("tests/vectors"), show_default=True,
              help="Directory to write <name>.json files into.")
@click.option("--random", "n_random", type=click.IntRange(min=0), default=0, show_default=True,
              help="Extra seeded random traces beyond the committed set.")
@click.option("--seed", type=int, default=1000, show_default=True,
              help="Seed of the first extra random trace (trace i uses seed+i).")
def generate(out_dir: Path, n_random: int, seed: int) -> None:
    """Write the curated and random vectors, computed by the reference model (fuzz findings
    already in the output directory are kept and recomputed)."""
    paths = write_traces(all_traces(n_random, seed, found_dir=out_dir), out_dir)
    click.echo(f"wrote {len(paths)} vector files to {out_dir}")


@vectors_cmd.command("check")
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=True, path_type=Path))
def check(paths: tuple[Path, ...]) -> None:
    """Replay vector files (or directories of them) through the reference model."""
    files = [f for p in paths for f in (sorted(p.glob("*.json")) if p.is_dir() else [p])]
    failed = 0
    for f in files:
        try:
            bad = replay(load(f))
        except (VectorFormatError, ValueError) as e:
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


@vectors_cmd.command("differential")
@click.option("--tool", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=Path("build/fuzz_queue_trace"), show_default=True,
              help="The fuzzer's trace program (make build/fuzz_queue_trace).")
@click.option("--found-dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("tests/vectors"), show_default=True,
              help="Where findings are written as vector files (fuzz_<kind>_<hash>.json).")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
def differential_cmd(tool: Path, found_dir: Path, inputs: tuple[Path, ...]) -> None:
    """Replay fuzz inputs (files or directories of them) through the C++ core and the model;
    every divergence, failed check or crash becomes a vector file. Exit status 1 if any."""
    from olaf.vectors.differential import differential, save_finding  # noqa: PLC0415

    files = [f for p in inputs for f in (sorted(x for x in p.iterdir() if x.is_file()) if p.is_dir() else [p])]
    findings, n, events = differential(tool, files)
    for f in findings:
        click.echo(f"{f.kind.upper():10} {f.trace.name}: {f.detail} -> {save_finding(f, found_dir)}", err=True)
    click.echo(f"{n} fuzz inputs, {events} events: C++ core and reference model "
               + ("agree" if not findings else f"disagree on {len(findings)} input(s)"))
    sys.exit(1 if findings else 0)
