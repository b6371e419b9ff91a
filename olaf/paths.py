"""Where Olaf finds its checkout and its build directory: the one module that knows.

* :func:`source_root` — the repository checkout this package was imported from (the
  directory with ``pyproject.toml`` beside ``olaf/``), or None in a non-editable install
  (``pip install olaf-drl``), where the package lives in ``site-packages``.
* :func:`build_dir` — where ``make build`` puts the compiled P4 program and the
  OlafQueue extern (``olaf.json``, ``olaf.p4info.txt``, ``olaf_queue.so``): the
  environment variable ``OLAF_BUILD`` if set, else ``<checkout>/build``, else
  ``./build`` of the working directory (a non-editable install run from a checkout).

Every ``--build`` option defaults to :func:`build_dir`; nothing else derives paths
from ``__file__``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Optional

BUILD_ENV = "OLAF_BUILD"
"""Environment variable that overrides the build directory."""

_PACKAGE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def source_root() -> Optional[Path]:
    """The checkout holding this package (``pyproject.toml`` and ``p4src/`` beside ``olaf/``),
    None when the package is installed without its sources."""
    root = _PACKAGE.parent
    if (root / "pyproject.toml").is_file() and (root / "p4src").is_dir():
        return root
    return None


def build_dir() -> Path:
    """The build directory: ``$OLAF_BUILD``, else ``<checkout>/build``, else ``./build``."""
    env = os.environ.get(BUILD_ENV)
    if env:
        return Path(env)
    root = source_root()
    return (root if root is not None else Path.cwd()) / "build"


def require_source_root(what: str) -> Path:
    """:func:`source_root`, for a feature that needs the repository's sources (``what`` names it).

    Raises:
        FileNotFoundError: installed without the sources (the message says to use a checkout).
    """
    root = source_root()
    if root is None:
        raise FileNotFoundError(f"{what} needs Olaf's source checkout (p4src/, tests/ ...); this olaf is installed "
                                f"from {_PACKAGE} without it: run it from a git clone installed with `pip install -e .`")
    return root
