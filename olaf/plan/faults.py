"""Faults a run plan may inject (``RunPlan.faults``; ``olaf run --fault``): their syntax and parse.

The injector lives with the backend that can apply them (:mod:`olaf.topologies.faults`:
real kills of BMv2 switches and the PS in Mininet); a backend that cannot refuses a plan
with faults by the field's name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

FAULT_RE = re.compile(r"^(?:switch-restart:(?P<switch>[A-Za-z0-9_-]+)|(?P<ps>ps-kill))@(?P<at>\d+(?:\.\d+)?)$")
FAULT_FORMS = "switch-restart:<switch>@<seconds> or ps-kill@<seconds>"


@dataclass(frozen=True)
class Fault:
    """One fault: ``kind`` (``switch-restart`` or ``ps-kill``), its ``switch`` and the time ``at_s``
    after t0 (s)."""

    kind: str
    at_s: float
    switch: Optional[str] = None


def parse_fault(text: str) -> Fault:
    """A :class:`Fault` from ``switch-restart:s1@5`` or ``ps-kill@3``.

    Raises:
        ValueError: another form (the message gives the accepted ones).
    """
    m = FAULT_RE.match(text.strip())
    if m is None:
        raise ValueError(f"{text!r}: use {FAULT_FORMS}")
    if m["ps"]:
        return Fault("ps-kill", float(m["at"]))
    return Fault("switch-restart", float(m["at"]), m["switch"])
