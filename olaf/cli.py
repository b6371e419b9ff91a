"""The ``olaf`` command. Each subcommand lives next to its component and is loaded only
when it runs, so ``olaf --help`` and the light commands work on a base install (without
the ``p4``, ``verify``, ``train`` or ``ns3`` extras).

Common options: ``-v`` (repeat for more) or ``--log-level LEVEL`` set the logging level
of every ``olaf.*`` logger (default WARNING).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from olaf.clitypes import logging_options, setup_logging

# name -> (module, attribute, one-line help shown by `olaf --help` without importing the module)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("olaf.backends.commands", "run_cmd",
            "Run Olaf end to end on a backend: Mininet + BMv2 (root, the default), local, ns3 or ray."),
    "compare": ("olaf.backends.commands", "compare_cmd",
                "FIFO then Olaf on the same topology, load and backend (mininet: root)."),
    "experiment": ("olaf.experiments.commands", "experiment_cmd",
                   "Run an experiment spec (sweeps x seeds) on any backend (ns3 by default); tables beside the paper's."),
    "train": ("olaf.experiments.train_cmd", "train_cmd",
              "Distributed PPO until a reward target: through BMv2 (mininet, ray: root) or over loopback "
              "(local); `train compare FIG`."),
    "evaluate": ("olaf.training.evaluate_cmd", "evaluate_cmd",
                 "Score a training run's final global model on deterministic episodes."),
    "report": ("olaf.report.commands", "report_cmd", "Per-cluster accounting, AoM and plots of a run directory."),
    "trace": ("olaf.report.traces", "trace_cmd", "Update-generation traces of a run directory, for a plan's trace "
              "replay."),
    "launch": ("olaf.launch", "launch_cmd", "Start a PS and N copies of a training script over loopback (torchrun's "
               "shape)."),
    "worker": ("olaf.hosts.commands", "worker_cmd", "One DRL worker (transmission control, paper §5)."),
    "ps": ("olaf.hosts.commands", "ps_cmd", "The asynchronous parameter server (paper §2.1)."),
    "verify": ("olaf.verifier.commands", "verify_cmd", "Check AoM fairness of cluster parameters with Z3 (paper §6)."),
    "vectors": ("olaf.vectors.commands", "vectors_cmd", "OlafQueue test vectors: generate, check."),
    "codegen": ("olaf.codegen", "codegen_cmd", "Generated files: P4/C++ constants, config JSON Schemas."),
    "wireshark": ("olaf.wireshark", "wireshark_cmd", "Wireshark dissector (Lua) for updates and ACKs."),
}

class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use (click's lazy-loading
    pattern); ``olaf --help`` lists them from :data:`COMMANDS` without importing any."""

    def __init__(self, *args, lazy: dict[str, tuple[str, str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.lazy:
            return super().get_command(ctx, name)
        module, attr, _ = self.lazy[name]
        try:
            return getattr(importlib.import_module(module), attr)
        except ImportError as e:
            missing = e.name or str(e)
            raise click.ClickException(
                f"`olaf {name}` needs the Python package {missing!r}, which is not installed. "
                f"Install Olaf with its extras: `make setup` (or `pip install -e '.[p4,verify,train,ns3]'`).") from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; a run that failed or was interrupted (a backend's ``RunFailed``,
        :mod:`olaf.backends.base`) ends with its message — exit 1, or 130 when interrupted —
        not with a traceback: what it collected is in the run directory the message names."""
        try:
            return super().invoke(ctx)
        except Exception as e:
            from olaf.harness import RunFailed, RunInterrupted  # noqa: PLC0415

            if isinstance(e, RunInterrupted):
                click.echo(f"Stopped: {e}", err=True)
                ctx.exit(130)
            if isinstance(e, RunFailed):
                raise click.ClickException(str(e)) from None
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, self.lazy[n][2]) for n in sorted(self.lazy)]
        rows += [(n, c.get_short_help_str()) for n, c in sorted(self.commands.items()) if n not in self.lazy]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="olaf-drl")
@logging_options
def main(verbose: int, log_level: str | None) -> None:
    """Olaf: in-network acceleration for asynchronous distributed RL."""
    setup_logging(verbose, log_level)


if __name__ == "__main__":
    main()
