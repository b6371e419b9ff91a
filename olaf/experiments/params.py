"""Experiment parameters: names for the fields of a :class:`~olaf.plan.plan.RunPlan` that a
spec may set or sweep, and two derived ones.

Names (the allowed set depends on the topology and the groups of the base scenario;
:func:`parameters` lists them):

* top-level scalars: ``queue``, ``grads``, ``duration_s``, ``updates_per_worker``,
  ``activity_window_ms``, ``reward_threshold``, ``segments``, ``device_queue_packets``,
  ``linger_ms``;
* ``queue_size.<switch>`` (segments), ``uplinks.<switch>.pps|gbps|delay_us``,
  ``access.pps|gbps|delay_us``, ``tc.delta_t_ms|v_per_s|q_max|enabled|reading``;
* ``job.<field>`` of a training job (``mode``, ``ps_step``, ``ps_lr``, ``ps_gate``, ``ack_wait_ms``,
  ``aggr_k``, ``aggr_t_ms``, ``round_timeout_ms``, ``target``, ``stop_at_target``, ``window``);
* ``groups.<name>.<field>`` for one group, ``groups.*.<field>`` for every group, with
  ``<field>`` one of ``clusters``, ``workers_per_cluster``, ``period_ms``, ``jitter_ms``,
  ``start_ms``, ``start_phase``, ``arrivals``, ``burst`` (:mod:`olaf.plan.arrivals`);
* derived: ``load.<switch>`` — offered load through the switch over its uplink capacity
  (sets ``uplinks.<switch>.pps = offered / load``, :meth:`RunPlan.offered_pps`: the paper's
  "offered load / capacity", e.g. Table 1's 60 Gbit/s into 40, 20, 5 Gbit/s = 1.5, 3, 12; for a
  training workload, whose offered rate is the machine's, ``uplinks.<switch>.load``: measured
  during the run, :mod:`olaf.plan.bottleneck`);
  ``alpha`` (multihop) — paper Fig. 10's α = x1/x2: sets s1's uplink to α times s2's
  (in s2's unit, pps or Gbit/s).

A derived parameter is computed from the scenario as it is when it is applied, so the
order of ``set`` entries matters (e.g. set the loads, then change a group's period, to keep
the capacities of the original load).
"""

from __future__ import annotations

from typing import Any

from olaf.configfile import ConfigError, validate
from olaf.plan.plan import PPOWorkload, RunPlan
from olaf.plan.topology import SWITCHES

SCALARS = ("queue", "grads", "duration_s", "updates_per_worker", "activity_window_ms", "reward_threshold", "segments",
           "device_queue_packets", "linger_ms")
LINK_FIELDS = ("pps", "gbps", "load", "delay_us")
RATE_FIELDS = ("pps", "gbps", "load")
"""A link's capacity: one of them (:class:`~olaf.plan.plan.Link`)."""
GROUP_FIELDS = ("clusters", "workers_per_cluster", "period_ms", "jitter_ms", "start_ms", "start_phase", "arrivals", "burst")
TC_FIELDS = ("delta_t_ms", "v_per_s", "q_max", "enabled", "reading")
JOB_FIELDS = ("mode", "ps_step", "ps_lr", "ps_gate", "ack_wait_ms", "aggr_k", "aggr_t_ms", "round_timeout_ms", "target",
              "stop_at_target", "window")
"""Parameters ``job.<field>`` of a plan whose workload is a training job (:class:`~olaf.plan.workload.TrainJob`)."""
Value = Any


def parameters(base: RunPlan) -> list[str]:
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
    if isinstance(base.workload, PPOWorkload):
        names += [f"job.{f}" for f in JOB_FIELDS]
    return names


def check_names(base: RunPlan, names: list[str]) -> None:
    """Raise ValueError naming the first unknown parameter and listing the allowed ones."""
    allowed = parameters(base)
    for n in names:
        if n not in allowed:
            raise ValueError(f"unknown parameter {n!r}; allowed for this {base.topology} scenario: {', '.join(allowed)}")


def _set_link(link: dict[str, Any], field: str, value: Value) -> None:
    link[field] = value
    if field in RATE_FIELDS:  # a capacity replaces the other forms
        for other in RATE_FIELDS:
            if other != field:
                link.pop(other, None)


def _uplink(raw: dict[str, Any], s: RunPlan, switch: str) -> dict[str, Any]:
    ups = raw.setdefault("uplinks", {})
    if switch not in ups:  # the access link's: its capacity, and its delay only where the plan sets one
        ups[switch] = s.uplink(switch).model_dump(exclude_unset=True)
    return ups[switch]


def apply(raw: dict[str, Any], name: str, value: Value) -> dict[str, Any]:
    """``raw`` (a RunPlan as a dict, changed in place and returned) with parameter ``name`` set.

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
        _set_link(_uplink(raw, validate(RunPlan, raw), sw), field, value)
    elif head == "access":
        _set_link(raw.setdefault("access", {}), rest, value)
    elif head == "tc":
        raw.setdefault("tc", {})[rest] = value
    elif head == "job":
        wl = raw.get("workload")
        if not isinstance(wl, dict) or wl.get("kind") != "ppo":
            raise ConfigError(name, "only a plan with a training workload (workload.kind: ppo) has job parameters")
        wl["job"] = {**wl.get("job", {}), rest: value}
    elif head == "groups":
        gname, _, field = rest.partition(".")
        for g in raw["groups"]:
            if gname == "*" or g.get("name", "S1") == gname:
                g[field] = value
    elif head in ("load", "alpha"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ConfigError(name, f"must be a number > 0, got {value!r}")
        s = validate(RunPlan, raw)
        if head == "load" and isinstance(s.workload, PPOWorkload):  # workers send as fast as they iterate
            _set_link(_uplink(raw, s, rest), "load", value)
        elif head == "load":
            _set_link(_uplink(raw, s, rest), "pps", s.offered_pps(rest) / value)
        else:
            x2 = s.uplink("s2")
            if x2.load is not None:
                raise ConfigError(name, f"s2's uplink has a measured capacity (load {x2.load:g}): α needs a fixed "
                                  "one; set uplinks.s2.pps or uplinks.s2.gbps first")
            unit = "pps" if x2.pps is not None else "gbps"
            _set_link(_uplink(raw, s, "s1"), unit, value * getattr(x2, unit))
    else:
        raise ConfigError(name, "unknown parameter")
    return raw


def _unset(raw: dict[str, Any], path: str) -> None:
    """Delete ``path`` from ``raw``, and every mapping it leaves empty (so that is not set either)."""
    keys = path.split(".")
    chain: list[dict[str, Any]] = [raw]
    for key in keys[:-1]:
        nxt = chain[-1].get(key)
        if not isinstance(nxt, dict):
            break
        chain.append(nxt)
    if len(chain) != len(keys) or keys[-1] not in chain[-1]:
        raise ConfigError(path, "is not set in the plan (nothing to leave out)")
    del chain[-1][keys[-1]]
    for node, key in zip(reversed(chain[:-1]), reversed(keys[:-1])):
        if node[key]:
            break
        del node[key]


def plan_with(base: RunPlan, settings: list[tuple[str, Value]], unset: tuple[str, ...] = ()) -> RunPlan:
    """``base`` without the fields ``unset`` (dotted paths, e.g. ``access`` or ``uplinks.s1.delay_us``:
    they return to their defaults), then with every ``(name, value)`` applied in order, validated.
    Only the fields set in ``base`` and by ``settings`` are set in the result (``model_fields_set``),
    so a backend refuses exactly what the plan asks for.

    Raises:
        ConfigError: an ``unset`` path that is not set, or a result that is not a valid plan (the
            message names the field, e.g. ``queue_size.s1``).
    """
    raw = base.model_dump(mode="python", exclude_unset=True)
    for path in unset:
        _unset(raw, path)
    for name, value in settings:
        apply(raw, name, value)
    return validate(RunPlan, raw)

