"""The run loop: determinism, failed evaluations, lossless resume, folder safety."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pinnbo.runner.history import History, HistoryError
from pinnbo.optimizers import make_optimizer
from pinnbo.problem import Box, Problem
from pinnbo.runner.evaluation import evaluate
from pinnbo.runner.loop import run
from pinnbo.runner.steps import RunSettings
from tests.survival import CallLog

SMALL_PINN = {"hidden": [16], "initial_steps": 30, "steps_per_iteration": 10, "collocation_points": 64,
              "collocation_batch": 32, "n_pool": 128, "top_k": 2, "refine_iterations": 5}


def sphere_problem(calls=None, fail_every=0):
    import sympy as sp

    from pinnbo.pde import PDE

    x, y = sp.symbols("x y")
    u = sp.Function("u")(x, y)

    def objective(p):
        if calls is not None:
            calls.append(list(p))
        n = len(calls or [])
        if fail_every and n % fail_every == 0:
            if n % (2 * fail_every) == 0:
                raise RuntimeError("simulation diverged")
            return float("nan")
        return float((p[0] - 0.3) ** 2 + (p[1] + 0.2) ** 2)

    return Problem("sphere", Box((-1, -1), (1, 1), ("x", "y")), objective, "minimize",
                   pde=PDE(u.diff(x, 2) + u.diff(y, 2), rhs=4), optimum=0.0)


def settings(tmp_path, budget=8, **kw):
    return RunSettings(budget=budget, initial_points=4, seed=3, output=tmp_path, case={"seed": 3}, **kw)


def optimizer(problem, method="pinn-bo"):
    params = SMALL_PINN if method == "pinn-bo" else None
    return make_optimizer(method, problem.domain, 3, params=params, pde=problem.pde)


def test_same_seed_gives_identical_log(tmp_path):
    problem = sphere_problem()
    run(problem, optimizer(problem), settings(tmp_path / "a"))
    run(problem, optimizer(problem), settings(tmp_path / "b"))
    a = (tmp_path / "a" / "evaluations.jsonl").read_bytes()
    assert a == (tmp_path / "b" / "evaluations.jsonl").read_bytes()
    assert len(a.splitlines()) == 8


def test_initial_design_is_shared_by_methods(tmp_path):
    problem = sphere_problem()
    h1 = run(problem, optimizer(problem, "random"), settings(tmp_path / "r"))
    h2 = run(problem, optimizer(problem), settings(tmp_path / "p"))
    np.testing.assert_array_equal(h1.X()[:4], h2.X()[:4])
    assert all(r.phase == "initial" for r in h2.evaluations[:4])
    assert all(r.phase == "optimizer" for r in h2.evaluations[4:])


def test_resume_continues_exactly(tmp_path):
    problem = sphere_problem()
    straight = run(problem, optimizer(problem), settings(tmp_path / "straight", budget=9))
    calls = CallLog(tmp_path / "calls.log")
    counted = sphere_problem(calls)
    run(counted, optimizer(counted), settings(tmp_path / "resumed", budget=6))
    resumed = run(counted, optimizer(counted), settings(tmp_path / "resumed", budget=9, resume=True))
    assert len(calls) == 9  # no oracle call repeated
    assert (tmp_path / "straight" / "evaluations.jsonl").read_bytes() == \
        (tmp_path / "resumed" / "evaluations.jsonl").read_bytes()
    assert resumed.best().true == straight.best().true


def test_resume_without_checkpoint_replays_the_log(tmp_path):
    problem = sphere_problem()
    run(problem, optimizer(problem), settings(tmp_path / "straight", budget=8))
    run(problem, optimizer(problem), settings(tmp_path / "cut", budget=6))
    (tmp_path / "cut" / "checkpoint.pt").unlink()
    run(problem, optimizer(problem), settings(tmp_path / "cut", budget=8, resume=True))
    assert (tmp_path / "straight" / "evaluations.jsonl").read_bytes() == \
        (tmp_path / "cut" / "evaluations.jsonl").read_bytes()


def test_failed_evaluations_are_recorded_and_the_run_goes_on(tmp_path):
    calls = CallLog(tmp_path / "calls.log")
    problem = sphere_problem(calls, fail_every=3)
    history = run(problem, optimizer(problem), settings(tmp_path, budget=10))
    assert len(history) == 10 and len(calls) == 10
    failed = [r for r in history.evaluations if not r.ok]
    assert len(failed) == 3
    assert any("simulation diverged" in r.error for r in failed)
    assert any("nan" in r.error for r in failed)
    lines = [json.loads(line) for line in (tmp_path / "evaluations.jsonl").read_text().splitlines()]
    assert sum(line["status"] == "failed" for line in lines) == 3
    assert all(line["y"] is None for line in lines if line["status"] == "failed")


def test_no_design_is_evaluated_twice(tmp_path):
    problem = sphere_problem()
    history = run(problem, optimizer(problem), settings(tmp_path, budget=14))
    unit = problem.domain.to_unit(history.X())
    gaps = np.max(np.abs(unit[:, None] - unit[None]), axis=2) + np.eye(len(unit))
    assert gaps.min() >= 1e-4


def test_noise_is_seeded_and_true_values_are_kept():
    problem = sphere_problem()
    problem.noise_std = 0.1
    a, _ = evaluate(problem, np.array([0.1, 0.2]), 5, seed=1, phase="initial")
    b, _ = evaluate(problem, np.array([0.1, 0.2]), 5, seed=1, phase="initial")
    c, _ = evaluate(problem, np.array([0.1, 0.2]), 6, seed=1, phase="initial")
    assert a.y == b.y and a.y != c.y
    assert math.isclose(a.true, 0.2**2 + 0.4**2)
    assert a.y != a.true


def test_non_empty_folder_needs_overwrite_or_resume(tmp_path):
    problem = sphere_problem()
    run(problem, optimizer(problem, "random"), settings(tmp_path, budget=5))
    with pytest.raises(HistoryError, match="--resume.*--overwrite"):
        run(problem, optimizer(problem, "random"), settings(tmp_path, budget=5))
    other = RunSettings(budget=6, initial_points=4, seed=4, output=tmp_path, case={"seed": 4}, resume=True)
    with pytest.raises(HistoryError, match="different seed"):
        run(problem, optimizer(problem, "random"), other)
    before = (tmp_path / "evaluations.jsonl").read_bytes()
    run(problem, optimizer(problem, "random"), settings(tmp_path, budget=5, overwrite=True))
    assert (tmp_path / "evaluations.jsonl").read_bytes() == before


def test_foreign_folder_is_never_touched(tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    problem = sphere_problem()
    with pytest.raises(HistoryError, match="no pinnbo run"):
        run(problem, optimizer(problem, "random"), settings(tmp_path, budget=5, overwrite=True))
    assert (tmp_path / "thesis.tex").read_text() == "precious"


def test_corrupted_log_is_reported_with_its_line(tmp_path):
    problem = sphere_problem()
    run(problem, optimizer(problem, "random"), settings(tmp_path, budget=5))
    lines = (tmp_path / "evaluations.jsonl").read_text().splitlines()
    lines[2] = lines[2][:20] + "#garbage"
    (tmp_path / "evaluations.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(HistoryError, match=r"evaluations.jsonl:3: corrupted record"):
        run(problem, optimizer(problem, "random"), settings(tmp_path, budget=6, resume=True))


def test_best_so_far_and_regret_follow_the_sense():
    history = History("maximize", optimum=10.0)
    from pinnbo.runner.history import Evaluation

    for i, value in enumerate([1.0, None, 5.0, 3.0]):
        history.append(Evaluation(i, [0.0], value, value, "ok" if value is not None else "failed"))
    np.testing.assert_array_equal(history.best_so_far(), [1.0, 1.0, 5.0, 5.0])
    np.testing.assert_array_equal(history.simple_regret(), [9.0, 9.0, 5.0, 5.0])
    assert history.n_failed == 1


def test_noisy_runs_log_true_values_and_regret_uses_them(tmp_path):
    problem = sphere_problem()
    problem.noise_std = 0.05
    history = run(problem, optimizer(problem, "random"), settings(tmp_path, budget=8))
    for r in history.evaluations:
        assert r.y != r.true and math.isclose(r.true, (r.x[0] - 0.3) ** 2 + (r.x[1] + 0.2) ** 2)
    best_true = min(r.true for r in history.evaluations)
    assert history.best().true == best_true
    assert history.simple_regret()[-1] == pytest.approx(best_true)


def test_random_exploration_points_are_reported_apart(tmp_path):
    """GP-UCB+ records its uniform random points as phase ``exploration``; the summary gives the best
    over every evaluation and, apart, the best without those points (Kim & Sanz-Alonso), each equal to
    the minimum recomputed from evaluations.jsonl."""
    from pinnbo.report.summary import summarize

    problem = sphere_problem()
    opt = make_optimizer("gp-ucb+", problem.domain, 3, params={"num_restarts": 2, "raw_samples": 32, "maxiter": 20})
    history = run(problem, opt, settings(tmp_path, budget=12))
    rows = [json.loads(line) for line in (tmp_path / "evaluations.jsonl").read_text().splitlines()]
    phases = [r["phase"] for r in rows]
    assert phases == ["initial"] * 4 + ["optimizer", "exploration"] * 4
    summary = summarize(history, problem)
    assert summary["exploration_evaluations"] == 4
    assert summary["best_value"] == min(r["true"] for r in rows)
    kept = [r for r in rows if r["phase"] != "exploration"]
    assert summary["best_value_without_exploration"] == min(r["true"] for r in kept)
    assert summary["best_without_exploration"]["index"] == min(kept, key=lambda r: r["true"])["index"]
    assert summary["simple_regret_without_exploration"] == pytest.approx(summary["best_value_without_exploration"])
    without = history.best_so_far(without_phase="exploration")
    assert len(without) == 12 and without[-1] == summary["best_value_without_exploration"]
    assert np.all(without >= history.best_so_far())
    assert "exploration_evaluations" not in summarize(run(problem, optimizer(problem, "random"),
                                                          settings(tmp_path / "r")), problem)
