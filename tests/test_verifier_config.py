"""Verifier config: parsing, defaults, and errors that name the field."""

import json
from fractions import Fraction

import pytest

from olaf.verifier.config import ConfigError, from_mapping, load

BASE = {
    "horizon": 5,
    "epsilon": 0.1,
    "engine": {"q_max": 1, "p_over_c_ms": 2},
    "clusters": [
        {"name": "a", "period_ms": 100, "jitter_ms": 5, "delta_t_ms": 400, "v": "1/400"},
        {"name": "b", "period_ms": 300, "delta_t_ms": 400},
    ],
}


def cfg_with(path, value):
    d = json.loads(json.dumps(BASE))
    *head, last = path
    node = d
    for p in head:
        node = node[p]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return d


def test_defaults_and_exact_numbers():
    c = from_mapping(BASE)
    a, b = c.clusters
    assert c.query.epsilon == Fraction(1, 10) and c.query.unit == "period" and c.query.starvation
    assert a.v == Fraction(1, 400) and b.v == Fraction(1, 400)  # default v = 1/Δ̄_T
    assert b.jitter_ms == 0 and b.phase_ms == (0, 299) and b.updates == 5
    assert c.engine.ack_delay_ms == 1 and c.transmission.model == "envelope"
    assert c.congested  # N = 2 > Q_max = 1
    assert a.gen_bounds(3) == (300, 300 + 99 + 5)


@pytest.mark.parametrize("path,value,field,needle", [
    (("clusters", 0, "jitter_ms"), 100, "clusters[0].jitter_ms", "must be < period_ms=100"),
    (("clusters", 1, "period_ms"), 0, "clusters[1].period_ms", "greater than or equal to 1"),
    (("clusters", 1, "period_ms"), KeyError, "clusters[1].period_ms", "missing"),
    (("clusters", 0, "v"), -1, "clusters[0].v", "must be >= 0"),
    (("clusters", 0, "v"), "fast", "clusters[0].v", "must be a number"),
    (("clusters", 0, "phase_ms"), [5, 1], "clusters[0].phase_ms", "lo <= hi"),
    (("clusters", 0, "colour"), 1, "clusters[0].colour", "unknown field"),
    (("clusters", 1, "name"), "a", "clusters[1].name", "names must be unique"),
    (("engine", "q_max"), 0, "engine.q_max", "greater than or equal to 1"),
    (("engine", "p_over_c_ms"), 1.5, "engine.p_over_c_ms", "integer"),
    (("engine",), KeyError, "engine", "missing"),
    (("epsilon",), KeyError, "epsilon", "missing"),
    (("epsilon_unit",), "s", "epsilon_unit", "'period', 'ms' or 'relative'"),
    (("transmission",), {"model": "random"}, "transmission.model", "'envelope', 'free' or 'always'"),
    (("horizon",), 1, "horizon", "greater than or equal to 2"),
    (("clusters",), [BASE["clusters"][0]], "clusters", "at least 2"),
])
def test_errors_name_the_field(path, value, field, needle):
    with pytest.raises(ConfigError) as e:
        from_mapping(cfg_with(path, value))
    assert e.value.path == field, str(e.value)
    assert needle in str(e.value)


def test_load_yaml_json_and_horizon_override(tmp_path):
    j = tmp_path / "c.json"
    j.write_text(json.dumps(BASE))
    assert load(j).horizon == 5
    assert load(j, horizon=7).clusters[0].updates == 7
    y = tmp_path / "c.yaml"
    y.write_text("horizon: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load(y)
    with pytest.raises(ConfigError, match="cannot read"):
        load(tmp_path / "missing.yaml")


def test_examples_parse():
    from pathlib import Path
    files = sorted(Path(__file__).resolve().parents[1].glob("examples/verify-*.yaml"))
    assert len(files) >= 3
    for f in files:
        assert load(f).num_clusters >= 2
