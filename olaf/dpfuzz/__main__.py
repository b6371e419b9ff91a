"""``python -m olaf.dpfuzz``: fuzz a BMv2 switch running the Olaf program (root).

Sets up a network namespace with veth ports and simple_switch_grpc
(:class:`olaf.ptf_runner.PtfEnvironment`), runs :func:`olaf.dpfuzz.run.fuzz` inside it and
prints the result as JSON; exit status 1 if a check failed or the switch died.
``make fuzz`` runs 100,000 frames; the P4 test tier a few thousand (tests/test_dpfuzz.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from olaf.bmv2 import BMV2_LOG_LEVEL
from olaf.paths import build_dir, require_source_root


@click.command()
@click.option("--frames", default=100_000, show_default=True, help="Fuzz frames in all.")
@click.option("--batch", default=1000, show_default=True, help="Frames between two checks.")
@click.option("--seed", default=1, show_default=True)
@click.option("--rate", "rate_fps", default=1500.0, show_default=True, help="Frames per second sent (a limit).")
@click.option("--build", type=click.Path(file_okay=False, path_type=Path), default=build_dir(), show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON result here.")
@click.option("--family", "families", multiple=True, help="Only these frame families (repeatable; default: all).")
@click.option("--inner", is_flag=True, hidden=True)
def main(frames: int, batch: int, seed: int, rate_fps: float, build: Path, out: Path | None,
         families: tuple[str, ...], inner: bool) -> None:
    """Fuzz the Olaf data plane on BMv2 and check conservation, liveness and checksums."""
    if inner:
        from olaf.dpfuzz.run import fuzz

        with tempfile.TemporaryDirectory() as d:
            res = fuzz(build, frames, batch, seed, rate_fps, Path(d), list(families) or None)
        click.echo(json.dumps(res.to_json()))
        sys.exit(1 if res.failure else 0)
    from olaf.ptf_runner import PtfEnvironment, environment_problems

    problems = environment_problems(build)
    if problems:
        raise click.ClickException("; ".join(problems))
    ptf_dir = require_source_root("the data-plane fuzzer") / "ptf_tests"
    with PtfEnvironment(build, ptf_dir, build / "fuzz-logs", log_level=BMV2_LOG_LEVEL) as env:
        r = subprocess.run(["ip", "netns", "exec", env.ns, sys.executable, "-m", "olaf.dpfuzz", "--inner",
                            "--frames", str(frames), "--batch", str(batch), "--seed", str(seed),
                            "--rate", str(rate_fps), "--build", str(build),
                            *[a for f in families for a in ("--family", f)]], capture_output=True, text=True)
        assert env.switch is not None
        alive = env.switch.alive
    if r.stderr.strip():
        click.echo(r.stderr[-3000:], err=True)
    lines = r.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"failure": "the fuzzer printed no result"}
    result["switch_alive"] = alive
    if not alive and not result.get("failure"):
        result["failure"] = f"simple_switch_grpc died (log: {env.spec.log_file})"
    text = json.dumps(result, indent=1)
    click.echo(text)
    if out is not None:
        out.write_text(text)
    sys.exit(1 if result.get("failure") else 0)


if __name__ == "__main__":
    main()
