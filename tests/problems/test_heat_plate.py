"""The heat-plate problem and its three benchmark cases (docs/algorithms.md, "The heat plate")."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from pinnbo.problem import PROBLEM_FACTORIES, ProblemError
from pinnbo.oracles.heat_plate import HeatPlate
from problems.heat_plate import heat_plate, plate_supremum

CASES = Path(__file__).resolve().parents[2] / "cases"
L = 2 * math.pi


def case_boundary(name: str) -> dict:
    case = yaml.safe_load((CASES / f"{name}.yaml").read_text())
    assert case["problem"] == "heat_plate" and case["name"] == name
    return case["params"]["boundary"]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.getbasetemp() / "pinnbo-cache"
    monkeypatch.setenv("PINNBO_CACHE", str(path))
    return path


# f* is the supremum of the boundary data (maximum principle), independent of the grid: a coarse
# solve is enough. Values: limits along the edge that rises into the corner.
@pytest.mark.parametrize(
    ("name", "f_star", "corner", "edge"),
    [
        ("heat_bc1", 3374.5932759, (L, 0.0), "bottom"),
        ("heat_bc2", 880.3151090, (L, L), "right"),
        ("heat_bc3", 885.5782970, (0.0, L), "left"),
    ],
)
def test_case_optimum(name, f_star, corner, edge):
    plate = HeatPlate(case_boundary(name), grid=32)
    value, location = plate_supremum(plate)
    assert value == pytest.approx(f_star, rel=1e-8)
    np.testing.assert_allclose(location, corner, atol=1e-7)
    assert plate(location) == value
    # the supremum is approached along `edge`; the corner itself returns the mean of both edges
    along = corner[0] if edge in ("bottom", "top") else corner[1]
    limit = plate.edge_data(edge, along)
    assert limit == pytest.approx(f_star, rel=1e-8)
    assert plate(np.array(corner)) < 0.6 * value
    assert plate.cells.max() < value


def test_problem(cache_dir):
    assert PROBLEM_FACTORIES["heat_plate"] is heat_plate
    problem = heat_plate(case_boundary("heat_bc1"), grid=16)
    assert problem.sense == "maximize" and problem.name == "heat_plate"
    assert problem.domain.names == ("x", "y")
    np.testing.assert_allclose(problem.domain.upper, (L, L))
    assert problem.optimum == pytest.approx(3374.5932759, rel=1e-8)
    assert problem.objective(np.asarray(problem.optimum_location)) == problem.optimum
    assert problem.noise_std == 0.0
    assert problem.pde is not None
    xs, ys, values = problem.field_plot(5)
    assert values.shape == (5, 5)
    assert Path(problem.metadata["cache"]).parent == cache_dir


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"grid": 8}, "params.grid"),
        ({"grid": 32.0}, "params.grid"),
        ({"grid": True}, "params.grid"),
        ({"bounds": [[0, 1]]}, "params.bounds"),
        ({"bounds": [[1, 0], [0, 1]]}, "params.bounds"),
        ({"bounds": [[0, float("nan")], [0, 1]]}, "params.bounds"),
        ({"bounds": "0 1 0 1"}, "params.bounds"),
        ({"boundary": {"left": "1", "right": "2", "bottom": "3"}}, "params.boundary.top"),
    ],
)
def test_bad_params(params, field):
    params = {"boundary": {"left": "1", "right": "2", "bottom": "3", "top": "4"}, "grid": 16, **params}
    with pytest.raises(ProblemError, match=field.replace(".", r"\.")):
        heat_plate(**params)


# -- heat_bc1_gradient: maximise T subject to |grad T| <= G_max (a thermal-stress limit) ------------


@pytest.fixture(scope="module")
def bc1_gradient():
    """The case's problem at the case's grid (256²: one solve, ≈ 8 s, in the session's private cache)."""
    case = yaml.safe_load((CASES / "heat_bc1_gradient.yaml").read_text())
    assert case["problem"] == "heat_plate" and case["params"]["max_gradient"] == 150
    return heat_plate(**case["params"])


def test_gradient_case_file():
    case = yaml.safe_load((CASES / "heat_bc1_gradient.yaml").read_text())
    base = yaml.safe_load((CASES / "heat_bc1.yaml").read_text())
    assert case["params"]["boundary"] == base["params"]["boundary"]
    assert case["method"] == "neural-cbo" and case["method_params"] == {"physics": True}
    assert case["budget"] == 100 and case["initial_points"] == 10 and case["seed"] == 0 and case["noise"] == 0


def test_gradient_constrained_optimum(bc1_gradient):
    problem = bc1_gradient
    assert problem.sense == "maximize" and problem.pde is not None
    assert problem.constraint_names == ("gradient",) and not problem.constraints[0].known
    # the declared constrained optimum: well inside the plate, on the constraint
    assert problem.optimum == pytest.approx(205.8947, abs=1e-3)
    location = np.asarray(problem.optimum_location)
    np.testing.assert_allclose(location, (4.2727, 1.3087), atol=1e-3)
    assert min(location.min(), (L - location).min()) > 1.0
    value, (c,) = problem.objective(location)
    assert value == problem.optimum and -1e-6 < c <= 0
    value, constraints = problem.split_outcome(problem.objective(location))
    assert value == problem.optimum and list(constraints) == ["gradient"]
    # the unconstrained optimum (next to the corner (2π, 0)) is far infeasible
    assert problem.metadata["unconstrained_optimum"] == pytest.approx(3374.5932759, rel=1e-8)
    corner_value, (corner_c,) = problem.objective(np.array([L - 1e-9 * L, 0.0]))
    assert corner_value > 3000 and corner_c > 1e4
    assert problem.metadata["max_gradient"] == 150.0


def test_gradient_constraint_is_active(bc1_gradient):
    """No feasible point beats f*, and hotter points exist just past the limit (the constraint
    decides the optimum: without it T goes on rising towards the corner)."""
    problem = bc1_gradient
    plate = problem.objective.plate
    rng = np.random.default_rng(11)
    near = np.asarray(problem.optimum_location) + rng.uniform(-0.2, 0.2, size=(300_000, 2))
    points = np.concatenate([rng.uniform(0, L, size=(300_000, 2)), np.clip(near, 0, L)])
    values = plate.temperature(points)
    feasible = problem.objective.constraint(points) <= 0
    assert values[feasible].max() <= problem.optimum
    assert 0.85 < feasible[:300_000].mean() < 0.93  # ≈ 89 % of the plate is feasible
    assert (values[~feasible] > problem.optimum).sum() > 1000


def test_unconstrained_plate_is_unchanged(cache_dir):
    problem = heat_plate(case_boundary("heat_bc1"), grid=16)
    assert problem.constraints == () and isinstance(problem.objective, HeatPlate)
    assert isinstance(problem.objective(np.array([1.0, 1.0])), float)
    assert "max_gradient" not in problem.metadata
    same = heat_plate(case_boundary("heat_bc1"), grid=16, max_gradient=None)
    assert same.optimum == problem.optimum and same.constraints == ()


def test_small_grid_gradient_problem(cache_dir):
    problem = heat_plate(case_boundary("heat_bc1"), grid=32, max_gradient=150)
    assert problem.constraint_names == ("gradient",)
    value, (c,) = problem.objective(np.asarray(problem.optimum_location))
    assert value == problem.optimum and c <= 0
    assert 150 < problem.optimum < 300  # the coarse field: same region, within ~10 %


@pytest.mark.parametrize("bad", [0, -5, float("nan"), float("inf"), True, "150"])
def test_bad_max_gradient_is_refused_before_the_solve(bad, monkeypatch):
    from pinnbo.oracles import heat_plate as laplace

    def no_solve(*args, **kwargs):
        raise AssertionError("solved")

    monkeypatch.setattr(laplace, "solve_dirichlet_laplace", no_solve)
    with pytest.raises(ProblemError, match=r"params\.max_gradient"):
        heat_plate({"left": "1", "right": "2", "bottom": "3", "top": "4"}, grid=17, max_gradient=bad)


def test_the_plate_declares_whether_its_edges_meet_continuously():
    """BC1's edges disagree at the corners (so method: auto runs pde-gp with the corners' angle
    functions on it); x + y on every edge agrees at each corner."""
    from pinnbo.optimizers import choice_for

    jumps = heat_plate(case_boundary("heat_bc1"), grid=16)
    assert jumps.boundary_continuous is False and choice_for(jumps).method == "pde-gp"
    assert "angle functions" in choice_for(jumps).reason
    smooth = heat_plate({edge: "x + y" for edge in ("left", "right", "bottom", "top")}, grid=16)
    assert smooth.boundary_continuous is True and choice_for(smooth).method == "pde-gp"


def test_a_graded_composite_enters_the_pde_in_divergence_form_and_carries_the_graded_corners(cache_dir):
    """∇·(K∇T) with K = (1 + 3x) A: x − 4y has residual ∂k/∂x (A∇T)_x = 3 (2 − 2) = 0 and x alone
    3 · 2 = 6 (by hand); the PDE reads back as k A, and the model carries the graded plate's sheared
    corner functions."""
    import torch

    from pinnbo.models.corners import CornerShape, GradedShape, jump_shape

    A = [[2.0, 0.5], [0.5, 1.0]]
    K = [[f"{a}*(1 + 3*x)" for a in row] for row in A]
    problem = heat_plate({"left": "y", "right": "1", "bottom": "x", "top": "2 - x"}, bounds=[[0, 2], [0, 1]],
                         grid=16, conductivity=K)
    residual = problem.pde.compile()
    points = torch.rand(20, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    assert float(residual(lambda p: p[:, 0] - 4 * p[:, 1], points).abs().max()) < 1e-12
    torch.testing.assert_close(residual(lambda p: p[:, 0], points).reshape(-1), torch.full((20,), 6.0).double())
    k, tensor, flow, reaction = problem.pde.divergence_form()
    np.testing.assert_allclose(np.array(tensor) * float(k.subs({s: 0 for s in k.free_symbols})), np.array(A),
                               rtol=1e-12)
    assert flow == (0.0, 0.0) and reaction == 0.0
    shape = jump_shape(problem.domain, problem.minimised_pde, problem.boundary_continuous)
    assert isinstance(shape, GradedShape) and isinstance(shape.shape, CornerShape) and shape.shape.shear != 0.0
    assert problem.metadata["conductivity"] == K and "∇·(K∇T) = 0 (K = [['2.0*(1 + 3*x)'" in problem.description


@pytest.mark.parametrize("conductivity", ["(1 + x)**2", [["(1 + x)**2", "0.5*(1 + x)**2"], ["0.5*(1 + x)**2", "(1 + x)**2"]]])
def test_a_reaction_in_a_graded_plate_enters_its_divergence_form(cache_dir, conductivity):
    """∇·(k∇T) + 2T with k = (1 + x)² (or k A, A_xx = 1): (1 + x)^{−1/2} cos(ω ln(1 + x)), ω = √7/2,
    has zero residual (Euler's equation, by hand) and x alone 2(1 + x) + 2x; the PDE reads back as
    the graded conductor's with c = 2, and the model carries the operator frozen at each corner."""
    import torch

    from pinnbo.models.corners import jump_shape

    problem = heat_plate({"left": "y", "right": "1", "bottom": "x", "top": "2 - x"}, bounds=[[0, 1], [0, 1]],
                         grid=16, conductivity=conductivity, reaction=2)
    residual = problem.pde.compile()
    points = torch.rand(20, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    omega = math.sqrt(7) / 2
    euler = lambda p: (1 + p[:, 0]) ** -0.5 * torch.cos(omega * torch.log(1 + p[:, 0]))  # noqa: E731
    assert float(residual(euler, points).abs().max()) < 1e-12
    torch.testing.assert_close(residual(lambda p: p[:, 0], points).reshape(-1), 2 * (1 + points[:, 0]) + 2 * points[:, 0])
    assert problem.pde.divergence_form()[3] == 2.0 and problem.metadata["reaction"] == 2.0
    shape = jump_shape(problem.domain, problem.minimised_pde, problem.boundary_continuous)
    assert isinstance(shape, tuple) and all(one.wavenumber > 0 for one in shape)
    assert " + 2 T = 0 (" in problem.description


@pytest.mark.parametrize("name, f_star, location", [
    ("heat_reaction", 3 + math.cos(5), (0.0, 1.0)),      # the left edge's limit at (0, 1), as without the gain
    ("heat_reaction_inside", None, (0.863, 0.486)),      # the field's own maximum, above every edge's data
])
def test_a_reaction_enters_the_pde_and_the_corners_carry_its_bessel_functions(name, f_star, location):
    """T_xx + T_yy + qT = 0: the PDE has the zero-order term (so no maximum principle), the model's
    corner functions are θ J₀(√q ρ), auto runs pde-gp with them, and the supremum is where the
    case's comment puts it."""
    from pinnbo.models.corners import CornerShape, jump_shape
    from pinnbo.optimizers import choice_for

    case = yaml.safe_load((Path(__file__).resolve().parents[2] / "benchmarks" / "kinds" / f"{name}.yaml").read_text())
    params = {**case["params"], "grid": 128}
    problem = heat_plate(**params)
    q = float(params["reaction"])
    assert problem.metadata["reaction"] == q and f"+ {q:g} T = 0" in problem.description
    assert not problem.pde.minimum_on_boundary(problem.domain.named_bounds)
    shape = jump_shape(problem.domain, problem.minimised_pde, problem.boundary_continuous)
    assert shape == CornerShape(wavenumber=math.sqrt(q))
    choice = choice_for(problem)
    assert choice.method == "pde-gp" and "corners' functions" in choice.reason
    np.testing.assert_allclose(problem.optimum_location, location, atol=0.01)
    if f_star is not None:
        assert problem.optimum == pytest.approx(f_star, rel=1e-8)
    else:
        edges = max(problem.objective.edge_data(e, np.linspace(0, 2 if e in ("bottom", "top") else 1, 2001)).max()
                    for e in ("left", "right", "bottom", "top"))
        assert problem.optimum > 1.8 * edges


def test_a_bad_reaction_is_refused_before_the_solve(monkeypatch):
    from pinnbo.oracles import heat_plate as oracle

    monkeypatch.setattr(oracle, "_solve_sparse", lambda *a, **k: pytest.fail("solved"))
    with pytest.raises(ProblemError, match=r"params\.reaction: expected a number below 19\.7392"):
        heat_plate({"left": "1", "right": "2", "bottom": "3", "top": "4"}, bounds=[[0, 1], [0, 1]], grid=16,
                   reaction=20)
