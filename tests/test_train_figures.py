"""Fig. 7's table and speedup plot (olaf/experiments/train_figures.py) from jobs' training.json values: speedup
T_FIFO / T_Olaf per seed, mean over seeds, ≥ when a FIFO job ran out of budget, none when an
Olaf job did. (The jobs themselves run through BMv2 in tests/test_mininet_train.py.)"""

import click
import pytest

from olaf.experiments import train_figures as F
from olaf.rundir.training import EvalRow, TrainingResult


def result(**kw) -> TrainingResult:
    """A training.json of a job that ran 300 s, changed by ``kw``."""
    base = {"job": {}, "target": 0.0, "reached": False, "time_to_target_s": None, "elapsed_s": 300.0,
            "final_mean_worker_reward": 0.0, "workers_with_reward": 4, "env_steps": 0, "iterations": 0,
            "fewest_worker_iterations": 0, "ps_updates": 100, "ps_messages": 100, "saturated_elements": 0}
    return TrainingResult.model_validate({**base, **kw})


def evaluation(t_s, mean) -> EvalRow:
    return EvalRow(t_s=t_s, env_steps=None, ps_updates=0, episodes=100, mean=mean, std=0.0, eval_s=1.0)


def job(reached_s, elapsed_s=300.0, **kw):
    return result(reached=reached_s is not None, time_to_target_s=reached_s, elapsed_s=elapsed_s, **kw)


def table(results, rates, kind="pps"):
    bottlenecks = [F.Bottleneck(r, kind) for r in rates]
    jobs = F.arms("fig7", bottlenecks)
    return jobs, F._table("fig7", jobs, results, {k: [] for k in results}, 0.0, False, bottlenecks)


def test_fig7_speedups_bounds_and_plot(tmp_path):
    results = {("olaf-8pps", 1): job(100.0), ("fifo-8pps", 1): job(150.0),
               ("olaf-8pps", 2): job(120.0), ("fifo-8pps", 2): job(180.0),
               ("olaf-4pps", 1): job(200.0), ("fifo-4pps", 1): job(None),      # FIFO out of budget: ≥
               ("olaf-4pps", 2): job(250.0), ("fifo-4pps", 2): job(275.0)}
    jobs, rows = table(results, [8, 4])
    sp = {r["rate_pps"]: r for r in rows if "speedup" in r}
    assert sp[8]["speedup"].mean == pytest.approx(1.5) and sp[8]["bound"] == ""
    assert sp[4]["speedup"].mean == pytest.approx((300 / 200 + 275 / 250) / 2) and sp[4]["bound"] == "≥ "
    F._plot_speedup(tmp_path / "fig7-speedup.png", rows, 0.0)
    assert (tmp_path / "fig7-speedup.png").stat().st_size > 5_000
    md = F._markdown("fig7", {"env": "CartPole-v1", "clusters": 2, "workers_per_cluster": 2, "budget_s": 300.0},
                     [F.Bottleneck(8), F.Bottleneck(4)], 2, 0.0, rows)
    assert "| speedup FIFO/Olaf at 4 pps (time to target) | ≥ 1.30" in md


def test_fig7_no_speedup_when_olaf_misses_the_target(tmp_path):
    results = {("olaf-4pps", 1): job(None), ("fifo-4pps", 1): job(200.0)}
    _, rows = table(results, [4])
    (r,) = [r for r in rows if "speedup" in r]
    assert r["speedup"].mean is None
    F._plot_speedup(tmp_path / "empty.png", rows, 0.0)  # nothing to draw, still a file
    assert (tmp_path / "empty.png").exists()


def solving_job(solved_s, elapsed_s=600.0):
    return job(50.0, elapsed_s, solve_at=200.0, solved=solved_s is not None,
               solved_eval=None if solved_s is None else evaluation(solved_s, 205.0))


def test_fig7_speedup_on_time_to_solved_beside_time_to_target():
    """With --solve the table gains T_FIFO / T_Olaf on time to the confirmed solved evaluation:
    a FIFO job that never solved counts its whole time (≥); an Olaf job that never solved gives none."""
    results = {("olaf-3pps", 1): solving_job(300.0), ("fifo-3pps", 1): solving_job(450.0),
               ("olaf-3pps", 2): solving_job(400.0), ("fifo-3pps", 2): solving_job(None, elapsed_s=1200.0)}
    _, rows = table(results, [3])
    sp = {r["what"]: r for r in rows if "speedup" in r}
    assert sp["time to solved"]["speedup"].mean == pytest.approx((450 / 300 + 1200 / 400) / 2)
    assert sp["time to solved"]["bound"] == "≥ " and sp["time to target"]["speedup"].mean == pytest.approx(1.0)
    md = F._markdown("fig7", {"env": "LunarLander-v3", "clusters": 9, "workers_per_cluster": 3, "budget_s": 1200.0},
                     [F.Bottleneck(3)], 2, 0.0, rows)
    assert "| speedup FIFO/Olaf at 3 pps (time to solved) | ≥ 2.25" in md
    results[("olaf-3pps", 2)] = solving_job(None)
    _, rows = table(results, [3])
    assert next(r for r in rows if r.get("what") == "time to solved")["speedup"].mean is None


def info(evals, chunks=None, ps_updates=100):
    ev = [evaluation(t, m) for t, m in evals]
    return {"training": result(evaluations=ev, best_eval=max(ev, key=lambda e: e.mean) if ev else None,
                               final_eval=ev[-1] if ev else None, ps_updates=ps_updates), "chunks": chunks}


def chunks(k, updates, lost, fully):
    return {"k": k, "sent": updates * k, "received": updates * k - lost, "content": updates * k - lost,
            "lost": lost, "fully_alone": fully, "partially_alone": 0, "none_alone": updates - fully}


def test_eval_and_delivery_table_per_arm():
    """Evaluation times count only the seeds that got there; chunk loss and fully delivered
    updates are per cent of what was sent; a job without evaluations or chunks adds no table."""
    infos = {("olaf-6pps", 1): info([(30, -300), (90, 5), (150, 210)], chunks(28, 100, 28, 95)),
             ("olaf-6pps", 2): info([(30, -200), (120, 1)], chunks(28, 100, 0, 100)),
             ("fifo-6pps", 1): info([(30, -400), (60, -100)], chunks(28, 100, 1400, 40)),
             ("fifo-6pps", 2): info([(30, -350)], chunks(28, 100, 700, 70))}
    rows = F.eval_delivery_rows(["olaf-6pps", "fifo-6pps"], infos, 200.0)
    o, f = rows
    assert o["t_eval0_s"].mean == pytest.approx(105) and o["eval0_reached"] == 2
    assert o["t_solved_s"].mean == pytest.approx(150) and o["solved_reached"] == 1
    assert o["best_eval"].mean == pytest.approx(105.5) and o["final_eval"].mean == pytest.approx(105.5)
    assert o["chunks_lost_pct"].mean == pytest.approx(0.5) and o["fully_delivered_pct"].mean == pytest.approx(97.5)
    assert f["eval0_reached"] == 0 and f["t_eval0_s"].mean is None and f["solved_reached"] == 0
    assert f["chunks_lost_pct"].mean == pytest.approx(37.5) and f["fully_delivered_pct"].mean == pytest.approx(55)
    md = F._eval_markdown("fig8", rows, "LunarLander-v3")
    assert "| fifo-6pps | -225.0 ± " in md and "first evaluation ≥ 200 (s)" in md and "| 37.5 ± " in md
    assert F.eval_delivery_rows(["ideal"], {("ideal", 1): info([])}, 200.0) == []


@pytest.mark.parametrize(("seed", "seeds", "want"), [(1, 2, [1, 2]), (2, 1, [2]), (3, 2, [3, 4])])
def test_figure_seeds_start_at_the_jobs_seed(seed, seeds, want):
    # `olaf train --seed S compare fig8 --seeds N` runs seeds S..S+N-1: a later run adds seeds to an earlier one
    sweep, jobs = F.figure_sweep("fig8", {"env": "CartPole-v1", "target": None, "budget_s": 60.0, "seed": seed},
                                 [F.Bottleneck(6), F.Bottleneck(3)], seeds)
    assert sweep.seeds == want
    assert [a.label for a in jobs] == ["ideal", "olaf-6pps", "fifo-6pps", "olaf-3pps", "fifo-3pps"]


def test_fractional_rates_name_their_arms_and_reach_the_plan():
    # ½ and ¼ of a job that offers 5.8 updates/s: 3 and 1.5 updates/s (K chunk packets each)
    sweep, jobs = F.figure_sweep("fig8", {"env": "CartPole-v1", "target": None, "budget_s": 60.0, "seed": 1},
                                 [F.Bottleneck(3.0), F.Bottleneck(1.5)], 1)
    assert [a.label for a in jobs] == ["ideal", "olaf-3pps", "fifo-3pps", "olaf-1.5pps", "fifo-1.5pps"]
    assert [a.settings.get("uplinks.s1.pps") for a in jobs] == [None, 3.0, 3.0, 1.5, 1.5]


@pytest.mark.parametrize("rates", ["6,x", "3,0", "3,-1", "inf,3", "nan,1"])
def test_bad_rates_name_the_option(rates):
    from click.testing import CliRunner

    r = CliRunner().invoke(F.compare_cmd, ["fig8", "--rates", rates], obj={})
    assert r.exit_code == 2 and "--rates" in r.output, r.output


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_a_bad_bottleneck_rate_names_rate_pps(value):
    from click.testing import CliRunner

    from olaf.experiments.train_cmd import train_cmd

    r = CliRunner().invoke(train_cmd, ["--rate-pps", value, "compare", "fig8"])
    assert r.exit_code == 2 and "--rate-pps" in r.output, r.output


def test_a_fractional_bottleneck_rate_reaches_the_plan():
    from olaf.training.job import build_plan

    plan = build_plan(env="CartPole-v1", target=None, budget_s=60.0, rate_pps=1.5)
    assert plan.uplinks[plan.root_switch].pps == 1.5


def test_the_sync_rounds_cutoff_and_the_nesterov_step_reach_the_job():
    from olaf.training.job import build_plan

    plan = build_plan(env="CartPole-v1", target=None, budget_s=60.0, mode="sync", ps_step="nesterov",
                      round_timeout_ms=12_000)
    job = plan.workload.job
    assert (job.mode, job.ps_step, job.round_timeout_ms) == ("sync", "nesterov", 12_000)
    assert job.ack_wait_ms == 12_000  # a sync worker waits for its round's ACK


def test_fig7_at_measured_loads_names_its_arms_rows_and_axis_by_load(tmp_path):
    """--loads: each pair of arms sets uplinks.<root>.load (the capacity measured during the job), the
    rows say "load 2", and the plot orders the bottlenecks from the most capacity to the least."""
    jobs = F.arms("fig7", [F.Bottleneck(2, "load"), F.Bottleneck(4, "load")])
    assert [(a.label, a.settings) for a in jobs[:2]] == [("olaf-load2", {"uplinks.s1.load": 2, "queue": "olaf"}),
                                                         ("fifo-load2", {"uplinks.s1.load": 2, "queue": "fifo"})]
    results = {("olaf-load2", 1): job(100.0), ("fifo-load2", 1): job(160.0),
               ("olaf-load4", 1): job(150.0), ("fifo-load4", 1): job(None)}
    _, rows = table(results, [2, 4], kind="load")
    sp = {r["load"]: r for r in rows if "speedup" in r}
    assert sp[2]["arm"] == "speedup FIFO/Olaf at load 2 (time to target)" and sp[2]["speedup"].mean == pytest.approx(1.6)
    assert sp[4]["bound"] == "≥ " and sp[4]["speedup"].mean == pytest.approx(2.0)
    F._plot_speedup(tmp_path / "loads.png", rows, 0.0)
    assert (tmp_path / "loads.png").stat().st_size > 5_000
    md = F._markdown("fig7", {"env": "CartPole-v1", "clusters": 2, "workers_per_cluster": 2, "budget_s": 300.0},
                     [F.Bottleneck(2, "load"), F.Bottleneck(4, "load")], 1, 0.0, rows)
    assert "bottleneck loads 2, 4 (offered / capacity, measured)" in md


@pytest.mark.parametrize(("fig", "rates", "loads", "message"), [
    ("fig7", "6", "2", "give --rates or --loads, not both"),
    ("fig7", None, "1", "load must be a finite number > 1"),
    ("fig7", None, "two", "comma-separated numbers"),
    ("fig8", None, "4,2", "the first of more capacity"),
    ("fig8", "3,6", None, "the first of more capacity"),
    ("fig3", None, "2", "fig3 has no bottleneck"),
])
def test_compare_bottleneck_options_are_checked_before_anything_runs(fig, rates, loads, message):
    with pytest.raises(click.BadParameter, match=message):
        F.arms(fig, F._bottlenecks(fig, rates, loads))
    assert [b.value for b in F._bottlenecks("fig8", None, "2,4")] == [2, 4]
