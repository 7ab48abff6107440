"""The Python API mirrors the CLI: optimize() returns the history, ask/tell works without a runner."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pinnbo
from pinnbo.runner.case import CaseError
from tests.survival import CallLog


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


@pytest.mark.parametrize("kwargs, message", [
    ({"initial_points": 0, "budget": 5}, "initial_points: expected an integer from 1 to 10000, got 0"),
    ({"initial_points": 2.5}, "initial_points: expected an integer from 1 to 10000, got 2.5"),
    ({"device": "gpu"}, "device: expected cpu, cuda or cuda:N, got 'gpu'"),
])
def test_optimize_refuses_bad_settings_before_any_evaluation(kwargs, message, tmp_path):
    calls = CallLog(tmp_path / "calls.log")
    problem = pinnbo.load_problem("dropwave")
    counted = pinnbo.Problem(problem.name, problem.domain, lambda x: calls.append(x) or problem.objective(x))
    with pytest.raises(ValueError) as error:
        pinnbo.optimize(counted, method="random", **{"budget": 6, "initial_points": 3, **kwargs})
    assert str(error.value) == message and not len(calls)


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^device: 'cuda' requested but CUDA is not available"):
        pinnbo.make_optimizer("pinn-bo", pinnbo.load_problem("dropwave").domain, device="cuda")


def test_mps_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^device: 'mps' is not supported \(pinnbo's GPs compute in float64"):
        pinnbo.make_optimizer("pinn-bo", pinnbo.load_problem("dropwave").domain, device="mps")


def test_a_cuda_index_beyond_the_machine_is_refused(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    from pinnbo.optimizers.base import check_device
    assert check_device("cuda:1") == "cuda:1" and check_device("cuda") == "cuda"
    with pytest.raises(ValueError, match=r"^device: 'cuda:2' requested but this machine has 2 CUDA device\(s\), cuda:0..cuda:1$"):
        check_device("cuda:2")


@pytest.mark.parametrize("x, message", [
    ([1.0, 2.0, 3.0], "tell: x has 3 values; expected 2 (x1, x2)"),
    ([6.0, 0.0], "tell: x[0] (x1) = 6.0 is outside the box [-5.12, 5.12]"),
    ([0.0, -5.2], "tell: x[1] (x2) = -5.2 is outside the box [-5.12, 5.12]"),
    ([float("nan"), 0.0], "tell: x[0] (x1) = nan; expected a finite number"),
    ("ab", "tell: x: expected 2 numbers, got 'ab'"),
])
def test_tell_refuses_a_design_it_cannot_use(x, message):
    opt = pinnbo.make_optimizer("random", pinnbo.load_problem("dropwave").domain)
    with pytest.raises(ValueError) as error:
        opt.tell(x, 1.0)
    assert str(error.value) == message and opt.n_told == 0
    opt.tell([5.12, -5.12], 1.0)        # the box's corner is inside it
    assert opt.n_told == 1


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("method, problem, params", [
    *[(m, "dropwave", {}) for m in ("pinn-bo", "neural-bo", "neural-greedy", "gp-ei", "gp-ucb", "gp-ucb+",
                                    "exploit", "exploit+", "random")],
    ("pinn-bo", "cosine_mixture", {"dim": 5}),      # the PDE in the posterior, the trust region, one draw
    ("neural-cbo", "branin_constrained", {}), ("gp-cei", "branin_constrained", {}),
])
def test_every_method_runs_on_cuda(method, problem, params):
    """``device: cuda`` where a CUDA device exists: a short run of each method completes, every
    design lies in the box and every evaluation succeeds (skipped on machines without CUDA)."""
    from pinnbo.optimizers import METHODS

    prob = pinnbo.load_problem(problem, **params)
    history = pinnbo.optimize(prob, method=method, budget=8, initial_points=5, seed=0, device="cuda",
                              method_params=dict(getattr(METHODS[method], "SMOKE_PARAMS", {})))
    X = np.array([r.x for r in history.evaluations])
    assert len(X) == 8 and all(r.y is not None for r in history.evaluations)
    assert np.all(X >= prob.domain.lower) and np.all(X <= prob.domain.upper)


def test_the_guide_python_example_runs_as_written_and_maximises(tmp_path, monkeypatch):
    """The Python API guide's example, executed as it stands: the ask/tell loop, told the problem's own
    values, proposes exactly what the runner proposed (which tells minimisation values) for the same
    seed; a loop that minimised a maximised plate would go elsewhere."""
    import re

    from tests.survival import ROOT

    text = (ROOT / "docs" / "guide" / "python-api.md").read_text()
    section = text
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "python-api.md", "exec"), namespace)  # noqa: S102 -- the project's own guide
    history, opt = namespace["history"], namespace["opt"]
    assert (tmp_path / "results" / "plate" / "summary.json").exists()
    np.testing.assert_array_equal(np.stack(opt.X), history.X())
    told = [r.true for r in history.evaluations]
    assert opt.y == [-v for v in told]
