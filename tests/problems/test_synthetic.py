"""Synthetic benchmarks: each true function satisfies its compiled PDE, each optimum is right.

Residual criterion: the true function's residual, computed by the compiled operator in float64,
must satisfy max |r| ≤ 1e-8 · max(1, scale), where scale is the largest |f| over the same points.
Only Rastrigin and Styblinski-Tang have scales ≫ 1 (terms up to ~3e3); their float64 residuals are
~1e-12, so in practice the criterion is the absolute 1e-8 for every problem but leaves room for
rounding on large-magnitude terms.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch
import yaml

from pinnbo.pde import PDE
from pinnbo.problem import PROBLEM_FACTORIES, ProblemError
from problems import synthetic
from problems.synthetic import (
    TORCH_FUNCTIONS,
    cosine_mixture,
    dropwave,
    michalewicz,
    michalewicz_collocation_filter,
    michalewicz_h,
    michalewicz_optimum,
    rastrigin,
    styblinski_tang,
)

NAMES = ["dropwave", "styblinski_tang", "rastrigin", "michalewicz", "cosine_mixture"]
CASES_DIR = Path(__file__).resolve().parents[2] / "cases"

# (factory, params): the paper's dimensions, plus small ones.
CONFIGS = [
    ("dropwave", {}),
    ("dropwave", {"dim": 3}),
    ("styblinski_tang", {}),
    ("styblinski_tang", {"dim": 1}),
    ("rastrigin", {}),
    ("rastrigin", {"dim": 3}),
    ("michalewicz", {}),
    ("michalewicz", {"dim": 5}),
    ("michalewicz", {"dim": 4, "m": 3}),
    ("cosine_mixture", {}),
    ("cosine_mixture", {"dim": 2}),
]
IDS = [f"{n}-{'-'.join(f'{k}{v}' for k, v in p.items()) or 'default'}" for n, p in CONFIGS]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


def _uniform(problem, n: int, rng: np.random.Generator) -> np.ndarray:
    return problem.domain.from_unit(rng.random((n, problem.domain.dim)))


def _collocation_points(problem, n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniform points of the domain that pass the problem's collocation filter."""
    points = _uniform(problem, 4 * n, rng)
    if problem.collocation_filter is not None:
        mask = problem.collocation_filter(points)
        assert mask.dtype == bool and mask.shape == (len(points),)
        points = points[mask]
    assert len(points) >= n
    return points[:n]


def _max_residual(problem, points: np.ndarray, pde=None) -> tuple[float, float, int]:
    residual = (pde or problem.pde).compile()
    z = torch.tensor(points, dtype=torch.float64)
    fn = problem.metadata["torch_function"]
    r = residual(fn, z).detach()
    assert r.dtype == torch.float64
    assert torch.isfinite(r).all()
    scale = float(fn(z).abs().max())
    return float(r.abs().max()), scale, r.shape[1]


@pytest.mark.parametrize("name,params", CONFIGS, ids=IDS)
def test_true_function_satisfies_its_pde(name, params, rng):
    problem = PROBLEM_FACTORIES[name](**params)
    points = _collocation_points(problem, 1000, rng)
    worst, scale, n_equations = _max_residual(problem, points)
    assert n_equations == problem.pde.n_equations
    assert worst <= 1e-8 * max(1.0, scale), (worst, scale)


def test_equation_counts():
    assert dropwave().pde.n_equations == 1
    assert dropwave(dim=4).pde.n_equations == 3
    assert styblinski_tang().pde.n_equations == 1
    assert rastrigin().pde.n_equations == 1
    assert michalewicz().pde.n_equations == 1
    assert cosine_mixture().pde.n_equations == 50
    for name in NAMES:
        problem = PROBLEM_FACTORIES[name]()
        assert problem.pde.inputs == problem.domain.names
        assert problem.domain.names[0] == "x1" and problem.sense == "minimize"


# ------------------------------------------------------------------ the paper's wrong forms fail


def _symbols(problem):
    xs = list(sp.symbols(list(problem.domain.names)))
    return xs, sp.Function("f")(*xs)


def test_paper_rastrigin_pde_does_not_hold(rng):
    problem = rastrigin(dim=20)
    xs, f = _symbols(problem)
    # Appendix A.1: x^T grad f - f = 10 sum (cos 2 pi x + pi x sin 2 pi x - 1)  (the 1/2 is missing)
    wrong = PDE(
        sum(x * f.diff(x) for x in xs) - f,
        rhs=10 * sum(sp.cos(2 * sp.pi * x) + sp.pi * x * sp.sin(2 * sp.pi * x) - 1 for x in xs),
    )
    worst, _, _ = _max_residual(problem, _uniform(problem, 200, rng), wrong)
    assert worst > 1.0


def test_paper_michalewicz_h_does_not_hold(rng):
    problem = michalewicz(dim=5)
    xs, f = _symbols(problem)
    m = 10
    # Appendix A.1: h_i = [cot x_i + 2 x_i (2m - 1) / tan(i x_i^2 / pi)]^-1
    wrong_h = [1 / (sp.cot(x) + 2 * x * (2 * m - 1) / sp.tan(i * x**2 / sp.pi)) for i, x in enumerate(xs, 1)]
    wrong = PDE(sum(h * f.diff(x) for h, x in zip(wrong_h, xs)) - f, rhs=0)
    worst, _, _ = _max_residual(problem, _collocation_points(problem, 200, rng), wrong)
    assert worst > 1e-2


def test_dropwave_other_generator_does_not_hold(rng):
    # A sign slip (x1 df/dx2 + x2 df/dx1) is not rotation invariance: the check can fail.
    problem = dropwave()
    (x1, x2), f = _symbols(problem)
    wrong = PDE(x1 * f.diff(x2) + x2 * f.diff(x1), rhs=0)
    worst, _, _ = _max_residual(problem, _uniform(problem, 200, rng), wrong)
    assert worst > 1e-2


# ------------------------------------------------------------------ optima


@pytest.mark.parametrize("name,params", CONFIGS, ids=IDS)
def test_optimum_is_attained_and_not_beaten(name, params, rng):
    problem = PROBLEM_FACTORIES[name](**params)
    x_star = np.asarray(problem.optimum_location, dtype=np.float64)
    assert x_star.shape == (problem.domain.dim,) and problem.domain.contains(x_star)
    assert problem.objective(x_star) == pytest.approx(problem.optimum, rel=1e-12, abs=1e-12)
    fn = problem.metadata["torch_function"]
    values = fn(torch.tensor(_uniform(problem, 10_000, rng), dtype=torch.float64))
    assert float(values.min()) >= problem.optimum


def test_literature_optima():
    assert styblinski_tang(dim=10).optimum == pytest.approx(-391.6617, abs=1e-4)
    assert styblinski_tang(dim=10).optimum_location[0] == pytest.approx(-2.903534, abs=1e-6)
    assert cosine_mixture(dim=50).optimum == pytest.approx(-3.1506, abs=1e-4)
    assert cosine_mixture(dim=50).optimum_location[0] == pytest.approx(0.18487, abs=1e-5)
    assert dropwave().optimum == -1.0 and rastrigin().optimum == 0.0
    for dim, value in [(2, -1.8013), (5, -4.687658), (10, -9.66015), (30, -29.6309)]:
        assert michalewicz_optimum(dim)[0] == pytest.approx(value, abs=1e-4)
    assert michalewicz().optimum == pytest.approx(-29.6309, abs=1e-4)


def _grid_minimum(phi, lo: float, hi: float, n: int = 400_001) -> float:
    return float(phi(np.linspace(lo, hi, n)).min())


def test_separable_optima_match_a_fine_grid():
    # f* = d * (per-coordinate minimum): an independent 1-D grid check of the computed values.
    st = styblinski_tang(dim=3)
    grid = _grid_minimum(lambda t: 0.5 * (t**4 - 16 * t**2 + 5 * t), -5, 5)
    assert grid - 1e-8 <= st.optimum / 3 <= grid
    cm = cosine_mixture(dim=3)
    grid = _grid_minimum(lambda t: 0.1 * np.cos(5 * np.pi * t) + t**2, -1, 1)
    assert grid - 1e-8 <= cm.optimum / 3 <= grid
    # Michalewicz: per coordinate i, min of -sin t sin^20(i t^2 / pi), grid fine enough for i <= 30.
    values, locations = [], michalewicz(dim=30).optimum_location
    for i in range(1, 31):
        grid = _grid_minimum(lambda t: -np.sin(t) * np.sin(i * t**2 / np.pi) ** 20, 0, np.pi)
        exact = -np.sin(locations[i - 1]) * np.sin(i * locations[i - 1] ** 2 / np.pi) ** 20
        assert exact <= grid + 1e-12
        assert exact == pytest.approx(grid, abs=1e-7)
        values.append(exact)
    assert michalewicz(dim=30).optimum == pytest.approx(math.fsum(values), abs=1e-12)


# ------------------------------------------------------------------ oracle vs torch


@pytest.mark.parametrize("name", NAMES)
def test_numpy_objective_matches_torch_function(name, rng):
    problem = PROBLEM_FACTORIES[name]()
    points = _uniform(problem, 50, rng)
    batched = problem.metadata["torch_function"](torch.tensor(points, dtype=torch.float64)).numpy()
    single = np.array([problem.objective(p) for p in points])
    assert isinstance(problem.objective(points[0]), float)
    np.testing.assert_allclose(single, batched, rtol=1e-14, atol=1e-12)
    # The module-level torch function is the same one.
    again = TORCH_FUNCTIONS[name](torch.tensor(points, dtype=torch.float64))
    np.testing.assert_allclose(again.numpy(), batched, rtol=0, atol=0)


def test_reference_values_by_hand():
    assert dropwave().objective(np.array([1.0, 0.0])) == pytest.approx(-(1 + math.cos(12)) / 2.5)
    assert rastrigin(dim=2).objective(np.array([0.5, 0.0])) == pytest.approx(20 + (0.25 + 10) + (0 - 10))
    assert styblinski_tang(dim=2).objective(np.array([1.0, 2.0])) == pytest.approx(0.5 * ((1 - 16 + 5) + (16 - 64 + 10)))
    assert cosine_mixture(dim=1).objective(np.array([0.2])) == pytest.approx(0.1 * math.cos(math.pi) + 0.04)
    x = np.array([1.0, 2.0])
    expected = -(math.sin(1) * math.sin(1 / math.pi) ** 20 + math.sin(2) * math.sin(8 / math.pi) ** 20)
    assert michalewicz(dim=2).objective(x) == pytest.approx(expected, rel=1e-13)
    with pytest.raises(ProblemError):
        rastrigin(dim=2).objective(np.zeros(3))


def test_dropwave_gradient_is_finite_at_the_optimum():
    x = torch.zeros(1, 2, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(TORCH_FUNCTIONS["dropwave"](x).sum(), x)
    assert torch.equal(grad, torch.zeros_like(grad))


# ------------------------------------------------------------------ Michalewicz collocation


def test_michalewicz_filter_keeps_most_points_and_bounds_h(rng):
    problem = michalewicz()
    points = _uniform(problem, 20_000, rng)
    mask = problem.collocation_filter(points)
    assert mask.dtype == bool and mask.shape == (20_000,)
    assert 0.85 < mask.mean() < 0.95
    assert np.abs(michalewicz_h(points[mask])).max() <= 1.0
    # A tighter bound keeps fewer points.
    tight = michalewicz(collocation_h_max=0.1).collocation_filter(points)
    assert tight.mean() < mask.mean() and not np.any(tight & ~mask)


def test_michalewicz_filter_rejects_a_pole_and_keeps_removable_points():
    from scipy.optimize import brentq

    m, i = 10, 1
    denominator = lambda t: (np.cos(t) * np.sin(i * t * t / np.pi)  # noqa: E731
                             + 4 * m * i * t / np.pi * np.sin(t) * np.cos(i * t * t / np.pi))
    pole = brentq(denominator, 1.5, 2.5)  # the critical point of s_1, at the maximiser 2.2029
    assert pole == pytest.approx(michalewicz_optimum(1)[1][0], abs=1e-7)
    base = np.full((1, 3), 1.0)
    near, away, zero_of_sin_u = base.copy(), base.copy(), base.copy()
    near[0, 0], away[0, 0] = pole + 1e-3, pole + 0.1
    zero_of_sin_u[0, 1] = np.pi * np.sqrt(1 / 2)  # tan(2 x^2 / pi) = 0: h_2 -> 0, harmless
    origin = base.copy()
    origin[0, 2] = 0.0  # 0/0
    mask = michalewicz_collocation_filter(np.vstack([near, away, zero_of_sin_u, origin]))
    assert mask.tolist() == [False, True, True, False]
    # The residual stays finite and ~0 at the removable point.
    problem = michalewicz(dim=3)
    worst, _, _ = _max_residual(problem, zero_of_sin_u)
    assert worst <= 1e-12


# ------------------------------------------------------------------ parameters


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dim", [0, -1, 2.5, 3.0, "3", True, None])
def test_bad_dim_is_rejected_with_its_path(name, dim):
    with pytest.raises(ProblemError, match=r"params\.dim"):
        PROBLEM_FACTORIES[name](dim=dim)


def test_other_bad_params():
    with pytest.raises(ProblemError, match=r"params\.dim: .*two variables"):
        dropwave(dim=1)
    for m in [0, 1.5, "10"]:
        with pytest.raises(ProblemError, match=r"params\.m"):
            michalewicz(m=m)
    with pytest.raises(ProblemError, match=r"params\.collocation_h_max"):
        michalewicz(collocation_h_max=0)
    assert styblinski_tang(dim=np.int64(4)).domain.dim == 4


def test_domains():
    assert dropwave().domain.lower == (-5.12,) * 2 and dropwave().domain.upper == (5.12,) * 2
    assert styblinski_tang().domain.dim == 10 and styblinski_tang().domain.lower[0] == -5.0
    assert rastrigin().domain.dim == 20 and rastrigin().domain.upper[0] == 5.12
    assert michalewicz().domain.dim == 30 and michalewicz().domain.upper[0] == math.pi
    assert cosine_mixture().domain.dim == 50 and cosine_mixture().domain.lower[0] == -1.0


# ------------------------------------------------------------------ registry and cases


@pytest.mark.parametrize("name", NAMES)
def test_registered_and_case_file_loads(name):
    assert PROBLEM_FACTORIES[name] is getattr(synthetic, name)
    case = yaml.safe_load((CASES_DIR / f"{name}.yaml").read_text())
    # DropWave's case runs the default, auto (pde-gp); the others PINN-BO, the paper's method
    assert case["name"] == name and case["problem"] == name and case["method"] == ("auto" if name == "dropwave"
                                                                                   else "pinn-bo")
    assert case["initial_points"] == 50 and case["budget"] == (200 if name == "dropwave" else 1000)
    signature = inspect.signature(PROBLEM_FACTORIES[name])
    signature.bind(**case["params"])
    problem = PROBLEM_FACTORIES[name](**case["params"])
    assert problem.optimum is not None
