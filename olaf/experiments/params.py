"""Experiment parameters: names for the fields of a :class:`~olaf.sim.scenario.Scenario` that a
spec may set or sweep, and two derived ones.

Names (the allowed set depends on the topology and the groups of the base scenario;
:func:`parameters` lists them):

* top-level scalars: ``queue``, ``grads``, ``duration_s``, ``updates_per_worker``,
  ``activity_window_ms``, ``reward_threshold``, ``segments``, ``device_queue_packets``,
  ``linger_ms``;
* ``queue_size.<switch>`` (segments), ``uplinks.<switch>.pps|gbps|delay_us``,
  ``access.pps|gbps|delay_us``, ``tc.delta_t_ms|v_per_s|q_max``;
* ``groups.<name>.<field>`` for one group, ``groups.*.<field>`` for every group, with
  ``<field>`` one of ``clusters``, ``workers_per_cluster``, ``period_ms``, ``jitter_ms``,
  ``start_ms``;
* derived: ``load.<switch>`` — offered load through the switch over its uplink capacity
  (sets ``uplinks.<switch>.pps = offered / load``, :meth:`Scenario.offered_pps`: the paper's
  "offered load / capacity", e.g. Table 1's 60 Gbit/s into 40, 20, 5 Gbit/s = 1.5, 3, 12);
  ``alpha`` (multihop) — paper Fig. 10's α = x1/x2: sets s1's uplink to α times s2's
  (in s2's unit, pps or Gbit/s).

A derived parameter is computed from the scenario as it is when it is applied, so the
order of ``set`` entries matters (e.g. set the loads, then change a group's period, to keep
the capacities of the original load).
"""

from __future__ import annotations

from typing import Any

from olaf.configfile import ConfigError, validate
from olaf.sim.scenario import SWITCHES, Scenario

SCALARS = ("queue", "grads", "duration_s", "updates_per_worker", "activity_window_ms", "reward_threshold", "segments",
           "device_queue_packets", "linger_ms")
LINK_FIELDS = ("pps", "gbps", "delay_us")
GROUP_FIELDS = ("clusters", "workers_per_cluster", "period_ms", "jitter_ms", "start_ms")
TC_FIELDS = ("delta_t_ms", "v_per_s", "q_max")
Value = Any


def parameters(base: Scenario) -> list[str]:
    """Every parameter name allowed for ``base`` (its topology's switches, its groups' names)."""
    sw = SWITCHES[base.topology]
    names = list(SCALARS)
    names += [f"queue_size.{s}" for s in sw]
    names += [f"uplinks.{s}.{f}" for s in sw for f in LINK_FIELDS]
    names += [f"access.{f}" for f in LINK_FIELDS]
    names += [f"tc.{f}" for f in TC_FIELDS]
    names += [f"groups.{g}.{f}" for g in ["*", *(g.name for g in base.groups)] for f in GROUP_FIELDS]
    names += [f"load.{s}" for s in sw]
    if base.topology == "multihop":
        names.append("alpha")
    return names


def check_names(base: Scenario, names: list[str]) -> None:
    """Raise ValueError naming the first unknown parameter and listing the allowed ones."""
    allowed = parameters(base)
    for n in names:
        if n not in allowed:
            raise ValueError(f"unknown parameter {n!r}; allowed for this {base.topology} scenario: {', '.join(allowed)}")


def _set_link(link: dict[str, Any], field: str, value: Value) -> None:
    link[field] = value
    if field in ("pps", "gbps"):  # a capacity replaces the other unit
        link.pop("gbps" if field == "pps" else "pps", None)


def _uplink(raw: dict[str, Any], s: Scenario, switch: str) -> dict[str, Any]:
    ups = raw.setdefault("uplinks", {})
    if switch not in ups:
        link = s.uplink(switch)
        ups[switch] = {"delay_us": link.delay_us, **({"pps": link.pps} if link.pps is not None else {"gbps": link.gbps})}
    return ups[switch]


def apply(raw: dict[str, Any], name: str, value: Value) -> dict[str, Any]:
    """``raw`` (a Scenario as a dict, changed in place and returned) with parameter ``name`` set.

    Raises:
        ConfigError: the scenario is invalid before a derived parameter can be computed, or
            ``load``/``alpha`` is not a positive number.
    """
    head, _, rest = name.partition(".")
    if name in SCALARS:
        raw[name] = value
    elif head == "queue_size":
        raw.setdefault("queue_size", {})[rest] = value
    elif head == "uplinks":
        sw, _, field = rest.partition(".")
        _set_link(_uplink(raw, validate(Scenario, raw), sw), field, value)
    elif head == "access":
        _set_link(raw.setdefault("access", {}), rest, value)
    elif head == "tc":
        raw.setdefault("tc", {})[rest] = value
    elif head == "groups":
        gname, _, field = rest.partition(".")
        for g in raw["groups"]:
            if gname == "*" or g.get("name", "S1") == gname:
                g[field] = value
    elif head in ("load", "alpha"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ConfigError(name, f"must be a number > 0, got {value!r}")
        s = validate(Scenario, raw)
        if head == "load":
            _set_link(_uplink(raw, s, rest), "pps", s.offered_pps(rest) / value)
        else:
            x2 = s.uplink("s2")
            unit = "pps" if x2.pps is not None else "gbps"
            _set_link(_uplink(raw, s, "s1"), unit, value * getattr(x2, unit))
    else:
        raise ConfigError(name, "unknown parameter")
    return raw


def scenario_with(base: Scenario, settings: list[tuple[str, Value]]) -> Scenario:
    """``base`` with every ``(name, value)`` applied in order, validated.

    Raises:
        ConfigError: the result is not a valid scenario (the message names the scenario
            field, e.g. ``queue_size.s1``).
    """
    raw = base.model_dump(mode="python", exclude_none=True)
    for name, value in settings:
        apply(raw, name, value)
    return validate(Scenario, raw)

