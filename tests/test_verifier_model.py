"""The SMT model against hand-computed runs and against exhaustive enumeration
of tiny instances through the executable replay (the reference OlafQueue)."""

import dataclasses
import itertools
from fractions import Fraction

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olaf import aom
from olaf.plan.tx import READINGS
from olaf.verifier import model, report
from olaf.verifier import replay as rp
from olaf.verifier.config import from_mapping

# -- a run computed by hand -------------------------------------------------------------
# Q_max = 1, p/C = 5 ms, no transmission control. a: updates at 0, 10, 20; b: 1, 4, 7.
#  t=0  a0 appended, departs at once (link busy until 5)
#  t=1  b0 appended, waits;  t=4  b1 folds into it (gen 4)
#  t=5  b's segment departs (gen 4, count 2); link busy until 10
#  t=7  b2 appended, waits
#  t=10 a1 arrives before the departure at the same instant: queue full -> dropped; b2 departs
#  t=20 a2 appended, departs
# Peaks: a 20 - 0 = 20; b 10 - 4 = 6. Gap 14 ms; in periods 20/10 - 6/3 = 0.
HAND = {
    "horizon": 3, "epsilon": 13, "epsilon_unit": "ms", "starvation": False,
    "engine": {"q_max": 1, "p_over_c_ms": 5, "ack_delay_ms": 1},
    "transmission": {"model": "always"},
    "clusters": [
        {"name": "a", "period_ms": 10, "jitter_ms": 0, "delta_t_ms": 0, "phase_ms": 0},
        {"name": "b", "period_ms": 3, "jitter_ms": 0, "delta_t_ms": 0, "phase_ms": 1},
    ],
}
HAND_OUTCOMES = [["append", "drop", "append"], ["append", "fold", "append"]]
HAND_DEPARTURES = [[0, None, 20], [5, 5, 10]]


def test_replay_by_hand():
    cfg = from_mapping(HAND)
    r = rp.replay(cfg, rp.Behaviour(((0, 10, 20), (1, 4, 7)), ((True,) * 3,) * 2, (0, 1)))
    assert not r.inadmissible
    assert [[report._REPLAY_OUTCOME[o.outcome] for o in c.updates] for c in r.clusters] == HAND_OUTCOMES
    assert [[o.departure_ms for o in c.updates] for c in r.clusters] == HAND_DEPARTURES
    assert [d.count for d in r.clusters[1].deliveries] == [2, 1]
    assert [(c.sum_peak_ms, c.n_peak) for c in r.clusters] == [(20, 1), (6, 1)]
    assert r.violations == [("unfair", (0, 1), Fraction(14))]


def test_solver_by_hand():
    v = model.solve(from_mapping(HAND))
    assert v.verdict == "violated"
    w = v.witness
    assert [[r["departure"] for r in rows] for rows in w["updates"]] == HAND_DEPARTURES
    assert [[report._outcome(r) for r in rows] for rows in w["updates"]] == HAND_OUTCOMES
    assert (w["sum_peak"], w["n_peak"]) == ([20, 6], [1, 1])
    # the only behaviour has gap exactly 14 ms, and 0 in units of the periods
    assert model.solve(from_mapping({**HAND, "epsilon": 14})).verdict == "verified"
    assert model.solve(from_mapping({**HAND, "epsilon": 0, "epsilon_unit": "period"})).verdict == "verified"


# -- exhaustive enumeration ------------------------------------------------------------------

def gen_choices(cl):
    out = set()
    for ph in range(cl.phase_ms[0], cl.phase_ms[1] + 1):
        for js in itertools.product(range(cl.jitter_ms + 1), repeat=cl.updates):
            out.add(tuple(ph + k * cl.period_ms + j for k, j in enumerate(js)))
    return sorted(out)


def enumerate_worst(cfg):
    """Over every admissible behaviour (by the replay): the largest gap of a pair
    with peaks, and whether some cluster can end without a peak."""
    F = cfg.num_clusters
    always = not cfg.congested or cfg.transmission.model == "always"
    sends = [[(True,) * c.updates] if always else list(itertools.product([True, False], repeat=c.updates))
             for c in cfg.clusters]
    worst, starve, admissible = None, False, 0
    for gens in itertools.product(*[gen_choices(c) for c in cfg.clusters]):
        for snd in itertools.product(*sends):
            for prio in itertools.permutations(range(F)):
                r = rp.replay(cfg, rp.Behaviour(gens, snd, prio))
                if r.inadmissible:
                    continue
                admissible += 1
                starve |= any(c.n_peak == 0 for c in r.clusters)
                for u, v in itertools.combinations(range(F), 2):
                    cu, cv = r.clusters[u], r.clusters[v]
                    a = cfg.query.mean_peak(cu.sum_peak_ms, cu.n_peak, len(cu.updates))
                    b = cfg.query.mean_peak(cv.sum_peak_ms, cv.n_peak, len(cv.updates))
                    if a is None or b is None:
                        continue
                    g = aom.peak_aom_gap(a, b, cfg.query.unit, period_a=cfg.clusters[u].period_ms,
                                         period_b=cfg.clusters[v].period_ms)
                    worst = g if worst is None else max(worst, g)
    assert admissible > 0
    return worst, starve


def tiny(clusters, model_="envelope", unit="ms", q_max=1, horizon=3, starvation=False, average="delivery",
         reading="probabilistic"):
    return from_mapping({
        "horizon": horizon, "epsilon": 0, "epsilon_unit": unit, "starvation": starvation, "peak_average": average,
        "engine": {"q_max": q_max, "p_over_c_ms": 2, "ack_delay_ms": 1},
        "transmission": {"model": model_, "reading": reading}, "clusters": clusters,
    })


def with_eps(cfg, eps, starvation=False):
    return dataclasses.replace(cfg, query=dataclasses.replace(cfg.query, epsilon=Fraction(eps),
                                                              starvation=starvation))


CL = {"period_ms": 4, "jitter_ms": 1, "delta_t_ms": 3, "v": "1/4", "phase_ms": [0, 1]}
TINY = {
    # identical clusters, envelope runs (P_s = 1/2), gap in ms
    "envelope-identical": tiny([{"name": "a", **CL}, {"name": "b", **CL}]),
    # different periods, any skip while P_s < 1, gap in periods
    "free-periods": tiny([{"name": "a", **CL, "delta_t_ms": 2, "v": "1/2"},
                          {"name": "b", **CL, "period_ms": 6, "delta_t_ms": 2, "v": "1/2"}],
                         model_="free", unit="period"),
    # as free-periods, the peaks averaged over every update (the paper's Δp(k) with its indicator)
    "free-periods-per-update": tiny([{"name": "a", **CL, "delta_t_ms": 2, "v": "1/2"},
                                     {"name": "b", **CL, "period_ms": 6, "delta_t_ms": 2, "v": "1/2"}],
                                    model_="free", unit="period", average="update"),
    # reading backoff (a skipped draw silences the cluster for Δ̄_T or until its next ACK), 4 updates each
    # (Δ̄_T = 5 ms outlasts a 4 ms period: a skip silences the next update unless an ACK comes first)
    "envelope-identical-backoff": tiny([{"name": "a", **CL, "delta_t_ms": 5}, {"name": "b", **CL, "delta_t_ms": 5}],
                                       reading="backoff"),
    "free-periods-backoff": tiny([{"name": "a", **CL, "delta_t_ms": 5, "v": "1/2"},
                                  {"name": "b", **CL, "period_ms": 6, "delta_t_ms": 5, "v": "1/2"}],
                                 model_="free", unit="period", reading="backoff"),
    # three clusters, no transmission control, relative gap
    "always-three": tiny([{"name": n, "period_ms": 3, "jitter_ms": 1, "delta_t_ms": 0,
                           "phase_ms": [0, 1]} for n in "abc"], model_="always", unit="relative",
                         horizon=3),
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_verdict_flips_exactly_at_the_enumerated_worst_gap(name):
    cfg = TINY[name]
    worst, starve = enumerate_worst(cfg)
    assert worst is not None and worst > 0
    # gap > ε is a violation: verified at ε = worst, violated just below
    assert model.solve(with_eps(cfg, worst)).verdict == "verified"
    below = model.solve(with_eps(cfg, worst - Fraction(1, 1000)))
    assert below.verdict == "violated"
    trace = report.build_trace(with_eps(cfg, worst - Fraction(1, 1000)), below.witness)
    assert report.cross_check(with_eps(cfg, worst - Fraction(1, 1000)), trace)["reproduced"]
    # starvation alone (ε too large to matter): violated iff the enumeration found it
    st_only = model.solve(with_eps(cfg, 10**6, starvation=True))
    assert (st_only.verdict == "violated") == starve


@pytest.mark.parametrize("opts", [model.Options(symmetry=False), model.Options(prune=False),
                                  model.Options(query="pairs")])
def test_encoding_options_agree(opts):
    cfg = TINY["envelope-identical"]
    for eps, expect in [(7, "verified"), (Fraction(69, 10), "violated")]:
        assert model.solve(with_eps(cfg, eps), opts=opts).verdict == expect


# -- the solver accepts exactly the behaviours the replay admits, with the same results ----

@st.composite
def instances(draw):
    F = draw(st.integers(2, 3))
    clusters = []
    for u in range(F):
        T = draw(st.integers(2, 7))
        clusters.append({"name": f"c{u}", "period_ms": T, "jitter_ms": draw(st.integers(0, T - 1)),
                         "delta_t_ms": draw(st.integers(0, 8)), "v": draw(st.sampled_from(["0", "1/4", "1"])),
                         "phase_ms": [0, draw(st.integers(0, T - 1))], "updates": draw(st.integers(2, 5))})
    cfg = from_mapping({
        "horizon": 3, "epsilon": 0, "epsilon_unit": "ms",
        "engine": {"q_max": draw(st.integers(1, F)), "p_over_c_ms": draw(st.integers(1, 6)),
                   "ack_delay_ms": draw(st.integers(1, 3))},
        "transmission": {"model": draw(st.sampled_from(["envelope", "free", "always"])),
                         "reading": draw(st.sampled_from(READINGS))},
        "clusters": clusters,
    })
    gens, sends = [], []
    for c in cfg.clusters:
        ph = draw(st.integers(*c.phase_ms))
        gens.append(tuple(ph + k * c.period_ms + draw(st.integers(0, c.jitter_ms)) for k in range(c.updates)))
        # every other draw sends everything, so that many behaviours are admissible
        sends.append(tuple(draw(st.one_of(st.just([True] * c.updates),
                                          st.lists(st.booleans(), min_size=c.updates, max_size=c.updates)))))
    prio = tuple(draw(st.permutations(range(F))))
    return cfg, rp.Behaviour(tuple(gens), tuple(sends), prio)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_solver_and_replay_agree_on_any_behaviour(inst):
    cfg, b = inst
    r = rp.replay(cfg, b)
    enc = model.Encoding(cfg, model.Options(symmetry=False))
    s = z3.Solver()
    s.add(*enc.c)
    for u in range(cfg.num_clusters):
        for k, x in enumerate(enc.u[u]):
            s.add(x.g == b.gen_ms[u][k], x.snt == b.sent[u][k])
    s.add(*[enc.prio[u] == i for i, u in enumerate(b.priority)])
    res = s.check()
    if r.inadmissible:
        assert res == z3.unsat, r.inadmissible
        return
    assert res == z3.sat
    w = model.read_model(enc, s.model(), enc.violations())
    for u, c in enumerate(r.clusters):
        rows = w["updates"][u]
        assert [report._outcome(x) for x in rows] == [report._REPLAY_OUTCOME[o.outcome] for o in c.updates]
        assert [x["departure"] for x in rows] == [o.departure_ms for o in c.updates]
        assert [x["ack_q"] for x in rows] == [o.ack_q for o in c.updates]
        assert [report._kind(enc.rule, x) for x in rows] == [o.kind for o in c.updates]
        assert (w["sum_peak"][u], w["n_peak"][u]) == (c.sum_peak_ms, c.n_peak)
