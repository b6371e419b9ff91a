"""The AoM formal model in Z3 (paper §6, appendix §12.2–12.3).

For F clusters with ``K_u`` updates each, :class:`Encoding` builds integer (ms)
constraints over every admissible behaviour — generation times within each
cluster's period/jitter bounds, every send decision the transmission-control
rule allows, every priority order among simultaneous arrivals — and the OlafQueue
engine that serves them. :func:`solve` asks whether some behaviour violates the
peak-AoM fairness query and, if so, reads the counterexample out of the model.
Variable names and the map from each paper constraint to the code are in
docs/verifier.md ("Encoding"); the comments below point to them.

Per update ``(u, k)`` (cluster u, k-th update):

* ``g`` generation = arrival time (Int, ms; the constant transmission delay of
  §6 is dropped as in the paper), ``snt`` sent, ``app`` appended as a new
  segment, ``d`` departure time of the segment holding the update;
* derived: ``wait`` (u has an unlocked update waiting at ``g``: the update is
  aggregated/replaced into it), ``full`` (occupancy at arrival ≥ Q_max: drop),
  ``eff`` (its generation time is the one the PS receives), ``peak``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Optional

import z3

from olaf.verifier import sendrule
from olaf.verifier.config import VerifyConfig

Expr = Any


@dataclass
class _Upd:
    """Z3 terms of one update (see the module docstring)."""

    g: Expr
    snt: Expr
    app: Expr
    d: Expr
    wait: Expr = None
    full: Expr = None
    eff: Expr = None
    is_peak: Expr = None
    peak: Expr = None
    kind: dict = field(default_factory=dict)  # name -> Bool term (fresh, stale; backoff under reading backoff)
    ack_q: Expr = None


@dataclass(frozen=True)
class Options:
    """Encoding switches, for the benchmark's ablations (defaults are the fastest measured).

    Attributes:
        symmetry: order the tie-break priorities within groups of identical clusters.
        prune: drop pairwise constraints that static time bounds make vacuous.
        query: ``disjunction`` (one check for all pairs) or ``pairs`` (one
            push/pop check per pair and per starvation candidate, incremental).
        telescope: add the redundant telescoped form of each cluster's peak sum,
            ``Σ peaks = g(last eff) − g(first eff) + Σ waits of the later eff``.
        arith_solver: Z3's ``smt.arith.solver`` (2: the older simplex-based
            solver, 6: Z3's default).
    """

    symmetry: bool = True
    prune: bool = True
    query: str = "pairs"
    telescope: bool = False
    arith_solver: int = 2


class Encoding:
    """All constraints of one :class:`VerifyConfig` (without the query)."""

    def __init__(self, cfg: VerifyConfig, opts: Options = Options()) -> None:
        self.cfg = cfg
        self.opts = opts
        self.F = cfg.num_clusters
        self.S = cfg.engine.p_over_c_ms
        self.R = cfg.engine.ack_delay_ms
        self.qmax = cfg.engine.q_max
        # Longest wait in the queue (docs/verifier.md, "Bounds"): at most
        # min(Q_max, F) - 1 segments ahead plus the residual service time.
        self.wmax = min(self.qmax, self.F) * self.S - 1
        self.rule = sendrule.Rule(cfg)
        self.c: list[Expr] = []  # constraints
        self.phase = [z3.Int(f"phi_{u}") for u in range(self.F)]
        self.prio = [z3.Int(f"prio_{u}") for u in range(self.F)]
        self.u: list[list[_Upd]] = []
        self._declare()
        self._generation()
        self._priorities()
        self._engine()
        self._transmission()
        self._ack_status()
        self._peaks()

    # -- static bounds -----------------------------------------------------------

    def gb(self, u: int, k: int) -> tuple[int, int]:
        return self.cfg.clusters[u].gen_bounds(k)

    def keys(self):
        for u in range(self.F):
            for k in range(len(self.u[u])):
                yield u, k

    # -- declarations ------------------------------------------------------------

    def _declare(self) -> None:
        for u, cl in enumerate(self.cfg.clusters):
            row = []
            for k in range(cl.updates):
                row.append(_Upd(g=z3.Int(f"g_{u}_{k}"), snt=z3.Bool(f"snt_{u}_{k}"),
                                app=z3.Bool(f"app_{u}_{k}"), d=z3.Int(f"d_{u}_{k}")))
            self.u.append(row)

    def _generation(self) -> None:
        """Admissible generation times: ``g(u,k) ∈ [φ_u + k·T_u, φ_u + k·T_u + J_u]``."""
        for u, cl in enumerate(self.cfg.clusters):
            lo, hi = cl.phase_ms
            self.c += [self.phase[u] >= lo, self.phase[u] <= hi]
            for k, x in enumerate(self.u[u]):
                base = self.phase[u] + k * cl.period_ms
                self.c += [x.g >= base, x.g <= base + cl.jitter_ms]

    def _priorities(self) -> None:
        """Simultaneous arrivals are taken in an unknown fixed priority order of clusters."""
        self.c += [z3.And(p >= 0, p < self.F) for p in self.prio]
        self.c.append(z3.Distinct(*self.prio) if self.F > 1 else z3.BoolVal(True))
        if self.opts.symmetry:
            # Identical clusters are interchangeable (the query is symmetric):
            # keep one representative per permutation (docs/verifier.md, "Symmetry").
            cls = self.cfg.clusters
            for v in range(1, self.F):
                prev = [u for u in range(v) if cls[u].same_behaviour(cls[v])]
                if prev:
                    self.c.append(self.prio[prev[-1]] < self.prio[v])

    def before(self, w: int, j: int, u: int, k: int) -> Expr:
        """Arrival (w,j) is processed before arrival (u,k) (time, then priority)."""
        if w == u:
            return z3.BoolVal(j < k)
        a, b = self.u[w][j].g, self.u[u][k].g
        return z3.Or(a < b, z3.And(a == b, self.prio[w] < self.prio[u]))

    # -- engine (§12.2 bullets 1-3, §12.3) -----------------------------------------

    def _may_precede(self, w: int, j: int, u: int, k: int) -> bool:
        """Statically possible: (w,j) arrives no later than (u,k)."""
        return self.gb(w, j)[0] <= self.gb(u, k)[1]

    def _engine(self) -> None:
        S, W = self.S, self.wmax
        for u in range(self.F):
            has_seg: Expr = z3.BoolVal(False)
            cur_d: Expr = z3.IntVal(-1)
            for k, x in enumerate(self.u[u]):
                # u's latest segment still in the queue at g (arrivals before the
                # departure at the same instant): the update folds into it.
                x.wait = z3.And(has_seg, cur_d >= x.g)
                x.full = self._full(u, k) if self.F > self.qmax else z3.BoolVal(False)
                self.c.append(x.app == z3.And(x.snt, z3.Not(x.wait), z3.Not(x.full)))
                # Departure of the holding segment; for a folded update, its segment's.
                self.c.append(z3.Implies(z3.Not(x.app), x.d == cur_d))
                self.c += [z3.Implies(x.app, x.d >= x.g), z3.Implies(x.app, x.d <= x.g + W)]
                tight = [x.d == x.g]
                for w, j in self.keys():
                    if (w, j) == (u, k) or (w == u and j > k):
                        continue
                    if not self._may_precede(w, j, u, k):
                        continue
                    if self.opts.prune and self.gb(w, j)[1] + W + S <= self.gb(u, k)[0]:
                        continue  # d(w,j) + S <= g(u,k) <= d(u,k) always
                    y = self.u[w][j]
                    pre = z3.And(y.app, self.before(w, j, u, k))
                    # FIFO service, one update per p/C (Lindley recursion)
                    self.c.append(z3.Implies(z3.And(x.app, pre), x.d >= y.d + S))
                    tight.append(z3.And(pre, x.d == y.d + S))
                self.c.append(z3.Implies(x.app, z3.Or(*tight)))
                cur_d = z3.If(x.app, x.d, cur_d)
                has_seg = z3.Or(has_seg, x.app)
                cd = z3.Int(f"cd_{u}_{k + 1}")  # name the chain to keep terms small
                self.c.append(cd == cur_d)
                cur_d = cd

    def _full(self, u: int, k: int) -> Expr:
        """Occupancy at the arrival of (u,k) ≥ Q_max (§12.2 bullet 2, queue bound)."""
        x = self.u[u][k]
        terms = []
        for w, j in self.keys():
            if w == u or not self._may_precede(w, j, u, k):
                continue
            if self.opts.prune and self.gb(w, j)[1] + self.wmax < self.gb(u, k)[0]:
                continue  # departed before (u,k) arrives
            y = self.u[w][j]
            terms.append(z3.If(z3.And(y.app, self.before(w, j, u, k), y.d >= x.g), 1, 0))
        if len(terms) < self.qmax:
            return z3.BoolVal(False)
        return z3.Sum(*terms) >= self.qmax

    # -- transmission control (§5, §12.2 bullets 5-6) -------------------------------

    def _transmission(self) -> None:
        for u, cl in enumerate(self.cfg.clusters):
            xs = self.u[u]
            if not self.rule.active:
                self.c += [x.snt for x in xs]
                continue
            th = self.rule.stale_ms[u]
            for m, x in enumerate(xs):
                # The job starts with an ACK at t = 0 (the PS's initial model, with
                # the status N = F): Δ̂ counts from the latest ACK, or from 0.
                fresh = [x.g <= cl.delta_t_ms]
                recent = [x.g < th] if th is not None else []
                for k in range(m):
                    y = xs[k]
                    if self.gb(u, k)[0] + self.R > self.gb(u, m)[1]:
                        continue  # its ACK cannot be back yet
                    ack = y.d + self.R
                    v = z3.And(y.app, ack <= x.g)
                    fresh.append(z3.And(v, ack >= x.g - cl.delta_t_ms))
                    if th is not None:
                        recent.append(z3.And(v, ack > x.g - th))
                x.kind = {"fresh": z3.Or(*fresh),
                          "stale": z3.Not(z3.Or(*recent)) if th is not None else z3.BoolVal(False)}
                if self.rule.backoff:
                    x.kind["backoff"] = self._backoff(u, m)
                    self.c.append(z3.Implies(x.kind["backoff"], z3.Not(x.snt)))
                    self.c.append(z3.Implies(z3.And(x.kind["stale"], z3.Not(x.kind["backoff"])), x.snt))
                else:
                    self.c.append(z3.Implies(x.kind["stale"], x.snt))
                x.kind["base"] = x.kind["fresh"]
            if self.rule.backoff:
                self._draw_runs(xs)
                continue
            if self.rule.max_skip_run is not None:
                n = self.rule.max_skip_run + 1
                for i in range(len(xs) - n + 1):
                    self.c.append(z3.Or(*[x.snt for x in xs[i:i + n]]))
            if self.rule.max_send_run is not None:
                n = self.rule.max_send_run + 1
                for i in range(len(xs) - n + 1):
                    self.c.append(z3.Not(z3.And(*[z3.And(x.kind["base"], x.snt) for x in xs[i:i + n]])))

    def _backoff(self, u: int, m: int) -> Expr:
        """Reading backoff: update m of cluster u falls within the back-off of an earlier skipped draw j
        (``¬snt ∧ ¬backoff``) — ``g_m − g_j < Δ̄_T`` and no ACK received in ``(g_j, g_m]``
        (:func:`olaf.verifier.sendrule.in_backoff`)."""
        xs, dt = self.u[u], self.cfg.clusters[u].delta_t_ms
        x, terms = xs[m], []
        for j in range(m):
            if self.gb(u, m)[0] - self.gb(u, j)[1] >= dt:
                continue  # surely Δ̄_T apart
            y = xs[j]
            acked = [z3.And(xs[k].app, xs[k].d + self.R > y.g, xs[k].d + self.R <= x.g)
                     for k in range(m) if self.gb(u, k)[0] + self.R <= self.gb(u, m)[1]]
            terms.append(z3.And(z3.Not(y.snt), z3.Not(y.kind["backoff"]), x.g - y.g < dt, z3.Not(z3.Or(*acked))))
        return z3.Or(*terms) if terms else z3.BoolVal(False)

    def _draw_runs(self, xs: list[_Upd]) -> None:
        """The envelope's run bounds over draws only (reading backoff: a back-off decision neither
        extends nor ends a run of skips or of base sends), as running counters."""
        skip, send = z3.IntVal(0), z3.IntVal(0)
        for x in xs:
            bo = x.kind["backoff"]
            skip = z3.If(bo, skip, z3.If(x.snt, 0, skip + 1))
            send = z3.If(bo, send, z3.If(z3.And(x.kind["base"], x.snt), send + 1, 0))
            if self.rule.max_skip_run is not None:
                self.c.append(skip <= self.rule.max_skip_run)
            if self.rule.max_send_run is not None:
                self.c.append(send <= self.rule.max_send_run)

    # -- ACK status (§12.2 bullet 4) ------------------------------------------------

    def _ack_status(self) -> None:
        """``ACK_Q`` of each departing segment: segments left behind in the queue."""
        for u, k in self.keys():
            x = self.u[u][k]
            terms = []
            for w, j in self.keys():
                if w == u:
                    continue
                if self.opts.prune and not (self.gb(w, j)[0] <= self.gb(u, k)[1] + self.wmax
                                            and self.gb(w, j)[1] >= self.gb(u, k)[0]):
                    continue
                y = self.u[w][j]
                terms.append(z3.If(z3.And(y.app, self.before(u, k, w, j), y.g <= x.d), 1, 0))
            x.ack_q = z3.Sum(*terms) if terms else z3.IntVal(0)

    # -- peak AoM (§6, §12.3) --------------------------------------------------------

    def _peaks(self) -> None:
        self.sum_peak: list[Expr] = []
        self.n_peak: list[Expr] = []
        for u in range(self.F):
            xs = self.u[u]
            has_eff: Expr = z3.BoolVal(False)
            last_g: Expr = z3.IntVal(0)
            for k, x in enumerate(xs):
                delivered = z3.And(x.snt, z3.Or(x.app, x.wait))
                later = [z3.And(xs[m].snt, xs[m].wait, xs[m].g <= x.d)
                         for m in range(k + 1, len(xs))
                         if not self.opts.prune or self.gb(u, m)[0] <= self.gb(u, k)[1] + self.wmax]
                x.eff = z3.Bool(f"eff_{u}_{k}")
                self.c.append(x.eff == z3.And(delivered, z3.Not(z3.Or(*later)) if later else True))
                x.is_peak = z3.And(x.eff, has_eff)
                x.peak = z3.If(x.is_peak, x.d - last_g, 0)
                lg = z3.Int(f"lastg_{u}_{k + 1}")
                self.c.append(lg == z3.If(x.eff, x.g, last_g))
                last_g = lg
                he = z3.Bool(f"haseff_{u}_{k + 1}")
                self.c.append(he == z3.Or(has_eff, x.eff))
                has_eff = he
            sp, npk = z3.Int(f"sum_peak_{u}"), z3.Int(f"n_peak_{u}")
            self.c += [sp == z3.Sum(*[x.peak for x in xs]),
                       npk == z3.Sum(*[z3.If(x.is_peak, 1, 0) for x in xs]),
                       npk >= 0, npk <= len(xs) - 1]
            if self.opts.telescope:
                # Δp = (d − g) + (g − g_prev) over consecutive effective updates:
                # the second parts telescope to g(last eff) − g(first eff).
                first_g: Expr = z3.IntVal(0)
                for x in reversed(xs):
                    first_g = z3.If(x.eff, x.g, first_g)
                waits = z3.Sum(*[z3.If(x.is_peak, x.d - x.g, 0) for x in xs])
                self.c.append(sp == z3.If(npk >= 1, last_g - first_g, 0) + waits)
            self.sum_peak.append(sp)
            self.n_peak.append(npk)

    # -- the query (§6) -----------------------------------------------------------------

    def _times_n(self, e: Expr, u: int) -> Expr:
        """``e · n_peak[u]`` kept linear by a case split over the small range of n_peak."""
        n = self.n_peak[u]
        return z3.Sum(*[z3.If(n == i, e * i, 0) for i in range(1, len(self.u[u]))])

    def unfair(self, u: int, v: int) -> Expr:
        """Both have peaks and their average peak AoM differ by more than ε.

        With ε = p/q, averages ``a = s_u/n_u`` and ``b = s_v/n_v`` (``n`` = the number of
        peaks, or the constant number of updates K with ``average: update``), the three units
        of :func:`olaf.aom.peak_aom_gap` become linear after multiplying out:
        ``ms``: ``q·|s_u n_v − s_v n_u| > p·n_u n_v``; ``period``:
        ``q·|s_u n_v T_v − s_v n_u T_u| > p·n_u n_v T_u T_v``; ``relative``:
        ``2q·|s_u n_v − s_v n_u| > p·(s_u n_v + s_v n_u)``.
        """
        q = self.cfg.query
        eps = Fraction(q.epsilon)
        p_, q_ = eps.numerator, eps.denominator
        su, sv = self.sum_peak[u], self.sum_peak[v]
        if q.average == "update":  # divisors are the constant numbers of updates K_u, K_v
            ku, kv = len(self.u[u]), len(self.u[v])
            su_nv, sv_nu, nu_nv = su * kv, sv * ku, z3.IntVal(ku * kv)
        else:
            su_nv, sv_nu = self._times_n(su, v), self._times_n(sv, u)
            nu_nv = self._times_n(self.n_peak[u], v)
        if q.unit == "ms":
            diff, rhs = su_nv - sv_nu, p_ * nu_nv
            lhs_scale = q_
        elif q.unit == "period":
            tu, tv = self.cfg.clusters[u].period_ms, self.cfg.clusters[v].period_ms
            diff, rhs = su_nv * tv - sv_nu * tu, p_ * tu * tv * nu_nv
            lhs_scale = q_
        else:  # relative
            diff, rhs = su_nv - sv_nu, p_ * (su_nv + sv_nu)
            lhs_scale = 2 * q_
        both = z3.And(self.n_peak[u] >= 1, self.n_peak[v] >= 1)
        return z3.And(both, z3.Or(lhs_scale * diff > rhs, -lhs_scale * diff > rhs))

    def starved(self, u: int) -> Expr:
        return self.n_peak[u] == 0

    def violations(self) -> list[tuple[tuple[str, tuple[int, ...]], Expr]]:
        """``((kind, clusters), formula)`` for every way the query can fail."""
        out: list[tuple[tuple[str, tuple[int, ...]], Expr]] = []
        if self.cfg.query.starvation:
            out += [(("starved", (u,)), self.starved(u)) for u in range(self.F)]
        out += [(("unfair", (u, v)), self.unfair(u, v))
                for u in range(self.F) for v in range(u + 1, self.F)]
        return out


@dataclass
class SolveResult:
    """Outcome of :func:`solve`: ``verdict`` is verified | violated | unknown."""

    verdict: str
    solver_time_s: float
    build_time_s: float
    witness: Optional[dict] = None  # raw model values, see :func:`read_model`
    reason: str = ""
    stats: dict = field(default_factory=dict)


def solve(cfg: VerifyConfig, *, timeout_s: Optional[float] = None,
          opts: Options = Options()) -> SolveResult:
    """Build the encoding and ask for a violating behaviour.

    UNSAT → ``verified`` (no admissible behaviour over the horizon violates the
    query); SAT → ``violated`` with the model's values in ``witness``; a timeout
    (``timeout_s``, wall clock for all checks) → ``unknown``.
    """
    t0 = time.perf_counter()
    enc = Encoding(cfg, opts)
    s = z3.SolverFor("QF_LIA")
    s.set("arith.solver", opts.arith_solver)
    s.add(*enc.c)
    viol = enc.violations()
    build = time.perf_counter() - t0
    t1 = time.perf_counter()

    def remaining_ms() -> Optional[int]:
        if timeout_s is None:
            return None
        return max(1, int((timeout_s - (time.perf_counter() - t1)) * 1000))

    def check(extra: Expr) -> z3.CheckSatResult:
        ms = remaining_ms()
        if ms is not None:
            s.set("timeout", ms)
        return s.check(extra)

    groups: list[tuple[Any, Any]]
    if opts.query == "disjunction":
        groups = [(None, z3.Or(*[f for _, f in viol]))]
    elif opts.query == "pairs":
        groups = [(tag, f) for tag, f in viol]
    else:
        raise ValueError(f"query={opts.query!r}: expected 'disjunction' or 'pairs'")
    unknown = ""
    for _, f in groups:
        r = check(f)
        if r == z3.sat:
            m = s.model()
            w = read_model(enc, m, viol)
            return SolveResult("violated", time.perf_counter() - t1, build, w, stats=_stats(s))
        if r == z3.unknown:
            unknown = s.reason_unknown()
            if timeout_s is not None and time.perf_counter() - t1 >= timeout_s:
                break
    el = time.perf_counter() - t1
    if unknown:
        return SolveResult("unknown", el, build, reason=unknown, stats=_stats(s))
    return SolveResult("verified", el, build, stats=_stats(s))


def _stats(s: z3.Solver) -> dict:
    st = s.statistics()
    return {k: st.get_key_value(k) for k in st.keys() if k in ("conflicts", "decisions", "memory")}


def read_model(enc: Encoding, m: z3.ModelRef, viol) -> dict:
    """The witness as plain Python values.

    Returns a dict with ``priority`` (cluster indices, first served first on
    ties), ``phase`` per cluster, ``updates[u][k]`` (``gen``, ``sent``,
    ``append``, ``wait``, ``drop``, ``departure``, ``effective``, ``peak``,
    ``ack_q``, and with transmission control ``fresh`` and ``stale``, and ``backoff`` under reading
    backoff), ``sum_peak``/``n_peak`` per
    cluster and the violations that hold in the model.
    """
    def ev(e: Expr) -> Any:
        v = m.eval(e, model_completion=True)
        return z3.is_true(v) if z3.is_bool(v) else v.as_long()

    prio = [ev(p) for p in enc.prio]
    out: dict[str, Any] = {
        "priority": sorted(range(enc.F), key=lambda u: prio[u]),
        "phase": [ev(p) for p in enc.phase],
        "updates": [],
        "sum_peak": [ev(x) for x in enc.sum_peak],
        "n_peak": [ev(x) for x in enc.n_peak],
        "violations": [list(tag) for tag, f in viol if ev(f)],
    }
    for u in range(enc.F):
        rows = []
        for x in enc.u[u]:
            sent, app, wait = ev(x.snt), ev(x.app), ev(x.wait)
            rows.append({
                "gen": ev(x.g), "sent": sent, "append": app, "wait": wait,
                "drop": sent and not app and not wait,
                "departure": ev(x.d) if sent and (app or wait) else None,
                "effective": ev(x.eff), "peak": ev(x.peak) if ev(x.is_peak) else None,
                "ack_q": ev(x.ack_q) if app else None,
                **{k: ev(v) for k, v in x.kind.items() if k != "base"},
            })
        out["updates"].append(rows)
    return out
