"""The Python API mirrors the CLI: optimize() returns the history, ask/tell works without a runner."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pinnbo
from pinnbo.case import CaseError


def test_optimize_returns_the_history_and_writes_results(tmp_path):
    problem = pinnbo.load_problem("dropwave", dim=2)
    history = pinnbo.optimize(problem, method="random", budget=12, initial_points=4, seed=2, output=tmp_path / "dw")
    assert len(history) == 12
    assert history.best().true == pytest.approx(min(r.true for r in history.evaluations))
    summary = json.loads((tmp_path / "dw" / "summary.json").read_text())
    assert summary["evaluations"] == 12 and summary["best_value"] == history.best().true
    again = pinnbo.optimize(problem, method="random", budget=12, initial_points=4, seed=2)
    np.testing.assert_array_equal(again.X(), history.X())


def test_ask_tell_without_the_runner_improves_on_its_start():
    import sympy as sp

    x, y = sp.symbols("x y")
    u = sp.Function("u")(x, y)
    domain = pinnbo.Box((-1, -1), (1, 1), ("x", "y"))

    def bowl(p):
        return float((p[0] - 0.3) ** 2 + (p[1] + 0.2) ** 2)

    opt = pinnbo.make_optimizer("pinn-bo", domain, seed=0, pde=pinnbo.PDE(u.diff(x, 2) + u.diff(y, 2), rhs=4),
                                params={"hidden": [32], "initial_steps": 300, "steps_per_iteration": 30,
                                        "collocation_points": 256, "collocation_batch": 128, "n_pool": 512})
    start = domain.from_unit(np.random.default_rng(0).random((6, 2)))
    for p in start:
        opt.tell(p, bowl(p))
    values = []
    for _ in range(10):
        p = opt.ask()
        assert domain.contains(p)
        values.append(bowl(p))
        opt.tell(p, values[-1])
    assert min(values) < 0.5 * min(bowl(p) for p in start)


def test_api_errors_name_the_field():
    with pytest.raises(CaseError, match="params.size"):
        pinnbo.load_problem("dropwave", size=3)
    with pytest.raises(CaseError, match="budget"):
        pinnbo.optimize(pinnbo.load_problem("dropwave"), budget=3, initial_points=5)
