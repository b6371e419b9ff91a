"""Click parameter types and options shared by every command module (``olaf``, ``olafctl``
and the subcommands that live beside their components); depends on click alone, so any layer
may use it."""

from __future__ import annotations

import logging
import math

import click

LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]


class FiniteFloat(click.FloatRange):
    """click's FloatRange that also refuses ``nan`` and ``inf`` (which pass every range check)."""

    name = "finite float"

    def convert(self, value, param, ctx):
        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return v


def setup_logging(verbose: int, level: str | None) -> None:
    """Configure the ``olaf`` loggers: ``--log-level`` wins, else WARNING − 10·``verbose``."""
    lvl = getattr(logging, level) if level else max(logging.DEBUG, logging.WARNING - 10 * verbose)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S")
    logging.getLogger("olaf").setLevel(lvl)


def logging_options(f):
    """``-v/--verbose`` and ``--log-level`` for a group (shared by ``olaf`` and ``olafctl``)."""
    f = click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False),
                     callback=lambda c, p, v: v.upper() if v else None,
                     help="Logging level of olaf's loggers (overrides -v).")(f)
    return click.option("-v", "--verbose", count=True, help="More log output (-v INFO, -vv DEBUG).")(f)
