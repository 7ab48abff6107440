"""Boundary conditions: declared with the PDE and checked there, carried through the PDE's sign and
its inputs' order, placed in the box, and what pde-gp makes of them: with Laplace's equation and
its Dirichlet data on the four edges the GP's mean is the one harmonic function that fits them,
with no observation; conditions hold on their planes to rounding, through a linearisation too;
where a condition declares the value, pde-gp spends no proposal on it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch

from pinnbo.models.pde_gp import PDEGP
from pinnbo.optimizers import make_optimizer
from pinnbo.pde import PDE, PDEError
from pinnbo.pde.boundary import ConditionedForm, declared_values
from pinnbo.problem import Box, Problem, ProblemError
from pinnbo.streams import sobol_unit

x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACIAN = T.diff(x, 2) + T.diff(y, 2)
# e^x sin y on [0, 2] × [0, 3]: harmonic, and its values on each edge
EDGES = [(x, 0, sp.sin(y)), (x, 2, sp.exp(2) * sp.sin(y)), (y, 0, 0), (y, 3, sp.exp(x) * sp.sin(3))]
LOWER = torch.tensor([0.0, 0.0], dtype=torch.float64)
WIDTHS = torch.tensor([2.0, 3.0], dtype=torch.float64)


def harmonic(unit: torch.Tensor) -> torch.Tensor:
    p = LOWER + unit * WIDTHS
    return torch.exp(p[:, 0]) * torch.sin(p[:, 1])


# ---------------------------------------------------------------------------------- the declaration
def test_conditions_are_read_and_shown():
    pde = PDE(LAPLACIAN, rhs=0, boundary=[("x", 0, 1), (y, sp.pi / 2, sp.Eq(T.diff(y) + T, x))])
    (dirichlet, robin) = pde.boundary
    assert (dirichlet.input, dirichlet.at) == ("x", 0.0)
    assert (dirichlet.pde.lhs[0], dirichlet.pde.rhs[0]) == (T, 1)
    assert (robin.input, robin.at) == ("y", pytest.approx(math.pi / 2))
    assert robin.pde.linear_form().multi_indices == ((0, 0), (0, 1))
    assert "T(x, y) = 1 at x = 0" in repr(pde)


def test_params_reach_the_conditions():
    pde = PDE(LAPLACIAN, rhs=0, params={"a": 2.0, "b": 3.0}, boundary=[(x, sp.Symbol("a"), sp.Symbol("b") * y)])
    assert pde.boundary[0].at == 2.0 and pde.boundary[0].pde.rhs[0] == 3.0 * y


@pytest.mark.parametrize("boundary, message", [
    (5, "boundary: expected a list of (input, at, condition)"),
    ([(x, 0)], "boundary[0]: expected (input, at, condition)"),
    ([("z", 0, 0)], "boundary[0]: 'z' is not an input of T(x, y); expected one of x, y"),
    ([(x, y, 0)], "boundary[0]: at: expected a number, got y"),
    ([(x, sp.oo, 0)], "boundary[0]: at: expected a finite number"),
    ([(x, 0, T.diff(x))], "boundary[0]: condition Derivative(T(x, y), x) holds the unknown: write a condition on "
                          "it as sp.Eq(lhs, rhs)"),
    ([(x, 0, sp.Eq(T ** 2, 1))], "boundary[0]: T(x, y)**2 = 1 is not linear in the unknown T(x, y)"),
    ([(x, 0, sp.Symbol("k"))], "boundary[0]: symbol k is not an input of T(x, y)"),
    ([(x, 0, 0), (y, 1, sp.Eq(sp.Function("S")(x, y), 0))], "boundary[1]: the condition's unknown S(x, y) is not "
                                                            "the PDE's T(x, y)"),
])
def test_a_bad_condition_is_one_line_naming_it(boundary, message):
    with pytest.raises(PDEError) as info:
        PDE(LAPLACIAN, rhs=0, boundary=boundary)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_conditions_need_one_equation_and_a_pde_the_gp_can_condition_on():
    with pytest.raises(PDEError, match="boundary: conditions take a PDE of one equation; this one has 2"):
        PDE([T.diff(x), T.diff(y)], rhs=0, boundary=[(x, 0, 0)])
    with pytest.raises(PDEError, match="boundary: pde-gp, the method that conditions on them, cannot linearise"):
        PDE(sp.sign(T.diff(x)) + T.diff(y, 2), rhs=1, boundary=[(x, 0, 0)])


def test_conditions_follow_the_sign_and_the_order_of_the_inputs():
    pde = PDE(LAPLACIAN, rhs=0, boundary=[(x, 0, 1 + y)])
    negated = pde.negated().boundary[0]
    assert sp.expand(negated.pde.lhs[0] - negated.pde.rhs[0]) == -T - 1 - y     # −T = 1 + y in T' = −T
    swapped = pde.for_variables(["y", "x"]).boundary[0]
    assert swapped.input == "x" and swapped.pde.inputs == ("y", "x")


def test_a_plane_outside_the_box_is_refused_when_the_problem_is_built():
    pde = PDE(LAPLACIAN, rhs=0, boundary=[(x, 0, 0), (y, 4, 0)])
    with pytest.raises(ProblemError, match=r"^pde: boundary\[1\]: the plane y = 4 is outside the box's y range "
                                           r"\[0, 3\]$"):
        Problem("p", Box((0.0, 0.0), (2.0, 3.0), ("x", "y")), lambda p: 0.0, "minimize", pde=pde)
    # π on a box that ends at math.pi: the same plane to rounding
    Problem("p", Box((0.0, 0.0), (2.0, math.pi), ("x", "y")), lambda p: 0.0, "minimize",
            pde=PDE(LAPLACIAN, rhs=0, boundary=[(y, sp.pi, 0)]))


# -------------------------------------------------------------------------------- what pde-gp makes of them
def stacked_points(n_interior: int, n_edge: int) -> tuple[torch.Tensor, list[int]]:
    blocks = [sobol_unit(n_interior, 2, 0, "interior")]
    for k, (symbol, at, _) in enumerate(EDGES):
        axis = 0 if symbol == x else 1
        points = sobol_unit(n_edge, 2, 0, "edge", k)
        points[:, axis] = float(at) / float(WIDTHS[axis])
        blocks.append(points)
    return torch.as_tensor(np.concatenate(blocks)), [len(b) for b in blocks]


def test_laplaces_equation_and_its_dirichlet_data_alone_give_the_harmonic_function():
    """The Dirichlet problem has one solution: conditioned on ∇²f = 0 at 128 points and on f's
    edge values at 32 points per edge, with no observation, the GP's mean is e^x sin y to 1 % of
    its spread (RMS); without the edges it is the prior's zero."""
    pde = PDE(LAPLACIAN, rhs=0, boundary=EDGES)
    Z, sizes = stacked_points(128, 32)
    form = ConditionedForm(pde.linear_form(), [c.pde.linear_form() for c in pde.boundary], sizes)
    start = {"lengthscale": 0.5 * WIDTHS, "outputscale": 10.0, "pde_noise": 1e-6}
    none = (torch.zeros(0, 2, dtype=torch.float64), torch.zeros(0, dtype=torch.float64))
    conditioned = PDEGP(*none, Z, form, LOWER, WIDTHS, start=start)
    interior_only = PDEGP(*none, Z[:sizes[0]], pde.linear_form(), LOWER, WIDTHS, start=start)
    test = torch.rand(400, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    truth = harmonic(test)
    errors = []
    for model in (conditioned, interior_only):
        with torch.no_grad():
            mean, _ = model.mean_and_variance(test)
        errors.append(float((mean - truth).pow(2).mean().sqrt() / truth.std()))
    assert errors[0] < 0.01 and errors[1] > 0.9


def test_a_stacked_form_has_each_blocks_coefficients_and_zeros_elsewhere():
    pde = PDE(LAPLACIAN, rhs=0, boundary=[(x, 0, sp.Eq(T.diff(x), y))])
    Z, _ = stacked_points(3, 2)
    form = ConditionedForm(pde.linear_form(), [pde.boundary[0].pde.linear_form()], [3, 2])
    terms = dict(form.terms(Z[:5])[0])
    assert list(terms) == [(1, 0), (0, 2), (2, 0)]          # by order, as the kernel blocks add them
    assert terms[(2, 0)].tolist() == [1, 1, 1, 0, 0] and terms[(1, 0)].tolist() == [0, 0, 0, 1, 1]
    assert form.source(Z[:5])[:, 0].tolist() == [0, 0, 0] + (Z[3:5, 1]).tolist()
    with pytest.raises(ValueError, match="4 points for blocks of"):
        form.terms(Z[:4])


def posterior_on(model, unit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        mean, variance = model.mean_and_variance(torch.as_tensor(unit))
    return mean.numpy(), variance.sqrt().numpy()


def standing_waves(p: np.ndarray) -> np.ndarray:
    return np.sin(p[:, 0]) * np.cos(p[:, 1] - 1) + 0.5 * np.sin(2 * p[:, 0]) * np.cos(2 * p[:, 1])


@pytest.mark.parametrize("fixed", [True, False])
def test_a_strings_fixed_ends_and_ten_values_give_its_standing_waves(fixed):
    """u_tt = u_xx on [0, π] × [0, 2π], ten values of two standing waves: with u = 0 at both ends
    declared, the mean is 0 on the ends (2 % of the values' spread between the planes' points)
    and the waves within 1 % over the box; with the PDE alone it is off by a third (the wave
    equation has every travelling wave among its solutions)."""
    s, t = sp.symbols("s t")
    u = sp.Function("u")(s, t)
    pde = PDE(u.diff(t, 2) - u.diff(s, 2), rhs=0, boundary=[(s, 0, 0), (s, sp.pi, 0)] if fixed else None)
    box = Box((0.0, 0.0), (math.pi, 2 * math.pi), ("s", "t"))
    opt = make_optimizer("pde-gp", box, 0, params={"collocation_points": 64, "num_restarts": 2, "raw_samples": 64,
                                                   "maxiter": 20}, pde=pde)
    if fixed:   # the interior's points, then each end's: a quarter of the interior's, shared
        assert len(opt.collocation) == 64 + 2 * 16
        assert np.all(opt.collocation[64:80, 0].numpy() == 0) and np.all(opt.collocation[80:, 0].numpy() == 1)
    rng = np.random.default_rng(0)
    X = box.from_unit(rng.uniform(size=(10, 2)))
    for p, value in zip(X, standing_waves(X)):
        opt.tell(p, float(value))
    opt.ask()
    ends = np.column_stack([np.repeat([0.0, 1.0], 50), np.tile(np.linspace(0, 1, 50), 2)])
    inside = rng.uniform(size=(400, 2))
    on_ends, _ = posterior_on(opt.model, ends)
    mean, _ = posterior_on(opt.model, inside)
    error = np.sqrt(np.mean((mean - standing_waves(box.from_unit(inside))) ** 2))
    if fixed:
        assert np.abs(on_ends).max() < 0.02 * 2.4 and error < 0.01
    else:
        assert np.abs(on_ends).max() > 0.2 and error > 0.1


def test_a_nonlinear_pde_keeps_its_conditions_through_the_linearisation():
    """u'' + u³ = sin³x − sin x on [0, π] (solution sin x) with u = 0 at both ends, one point each:
    from three values the Gauss–Newton mean is sin x within 1 % and 0 at the ends."""
    s = sp.Symbol("s")
    u = sp.Function("u")(s)
    pde = PDE(u.diff(s, 2) + u ** 3, rhs=sp.sin(s) ** 3 - sp.sin(s), boundary=[(s, 0, 0), (s, sp.pi, 0)])
    box = Box((0.0,), (math.pi,), ("s",))
    opt = make_optimizer("pde-gp", box, 0, params={"collocation_points": 64, "num_restarts": 2, "raw_samples": 64,
                                                   "maxiter": 20}, pde=pde)
    assert opt.collocation[64:, 0].tolist() == [0.0, 1.0]
    for p in (0.7, 1.9, 2.6):
        opt.tell(np.array([p]), math.sin(p))
    opt.ask()
    grid = np.linspace(0, 1, 101)[:, None]
    mean, _ = posterior_on(opt.model, grid)
    assert np.abs(mean - np.sin(math.pi * grid[:, 0])).max() < 0.01
    assert abs(mean[0]) < 1e-4 and abs(mean[-1]) < 1e-4


def test_a_case_file_declares_them_as_text():
    from problems.external import external

    problem = external(variables={"x": [0, 1], "y": [0, 2]}, pde="diff(u, x, 2) + diff(u, y, 2) = 0",
                       pde_boundary=["u = 0 at x = 0", "diff(u, y) = sin(x) at y = pi/2"])
    first, second = problem.pde.boundary
    assert (first.input, first.at, first.pde.rhs[0]) == ("x", 0.0, 0)
    assert (second.input, second.at) == ("y", pytest.approx(math.pi / 2))
    assert second.pde.linear_form().multi_indices == ((0, 1),) and str(second.pde.rhs[0]) == "sin(x)"


def test_each_objectives_pde_brings_its_own_conditions():
    """Two objectives, one with a PDE and a condition: its PDE-GP conditions on both (its own
    collocation points, then the plane's), the other is a plain GP."""
    pde = PDE(LAPLACIAN, rhs=0, boundary=[(x, 0, 0)])
    box = Box((0.0, 0.0), (2.0, 3.0), ("x", "y"))
    opt = make_optimizer("pde-gp", box, 0, params={"collocation_points": 32, "num_restarts": 2, "raw_samples": 32,
                                                   "maxiter": 10}, pde={"a": pde}, objectives={"a": "minimize",
                                                                                              "b": "minimize"})
    assert set(opt.forms) == {"a"} and opt.forms["a"].sizes == (32, 16)
    assert np.all(opt.collocations["a"][32:, 0].numpy() == 0)
    rng = np.random.default_rng(1)
    for p in box.from_unit(rng.uniform(size=(6, 2))):
        opt.tell(p, np.array([math.sinh(p[0]) * math.sin(p[1]), p[0] + p[1]]))     # a: harmonic, 0 at x = 0
    assert box.contains(opt.ask())


# ------------------------------------------------------------------- what the declarations make known
def test_a_condition_on_the_value_reads_it_off_and_one_on_a_derivative_does_not():
    """h = b gives b, c·h = b gives b/c, through the sign of a maximised objective too; a condition
    on ∂h leaves the value unknown."""
    pde = PDE(LAPLACIAN, rhs=0, boundary=[(x, 0, 3 * y + 1), (y, 1, sp.Eq(T.diff(y), 0)), (x, 1, sp.Eq(2 * T, y))])
    points = torch.tensor([[0.0, 0.5], [1.0, 2.0]], dtype=torch.float64)
    values = [declared_values(c) for c in pde.boundary]
    assert values[1] is None
    assert values[0](points).tolist() == [2.5, 7.0] and values[2](points).tolist() == [0.25, 1.0]
    negated = [declared_values(c) for c in pde.negated().boundary]
    assert negated[0](points).tolist() == [-2.5, -7.0] and negated[2](points).tolist() == [-0.25, -1.0]


def test_pde_gp_rules_out_a_plane_whose_declared_value_does_not_improve_the_best():
    """The known-constraint violation of the designs where a condition declares the value: 1 on the
    plane where that value is no better than the least observed (minimised: the optimiser's sign),
    0 where it is better, off the plane and on a plane whose condition is on a derivative."""
    box = Box((0.0, 0.0), (2.0, 3.0), ("x", "y"))
    pde = PDE(LAPLACIAN, rhs=0, boundary=[(x, 0, y - 1), (y, 3, sp.Eq(T.diff(y), 0))])
    opt = make_optimizer("pde-gp", box, 0, pde=pde)
    violation = opt._known_elsewhere(0.5)       # the least value observed: 0.5
    # on x = 0 the value is y − 1: 0.5 at y = 1.5 (no better), −0.5 at y = 0.5 (better)
    unit = np.array([[0.0, 0.5], [0.0, 0.5 / 3], [0.0, 1.0], [1e-6, 0.5], [0.5, 1.0], [1.0, 0.9]])
    assert violation(unit).tolist() == [1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert make_optimizer("pde-gp", box, 0, pde=PDE(LAPLACIAN, rhs=0))._known_elsewhere(0.5) is None


def test_pde_gp_never_spends_a_proposal_where_a_fixed_face_declares_the_value():
    """Standing waves in a membrane fixed on its four edges (declared u = 0), seed 3: the bound's
    search took the corners (π, 0, 2π) and (π, π, 0), where the declaration gives 0, for its first
    two proposals; with them ruled out its proposals measure the membrane inside."""
    from pinnbo.runner.build import build_optimizer, build_problem
    from pinnbo.runner.case import load_case
    from pinnbo.streams import initial_design

    case = load_case(Path(__file__).resolve().parents[1] / "benchmarks" / "dimensions" / "wave_3d.yaml")
    case = case.model_copy(update={"seed": 3, "method": "pde-gp"})
    problem = build_problem(case)
    opt = build_optimizer(case, problem)
    for design in initial_design(problem.domain, 10, case.seed):
        opt.tell(design, problem.sign * problem.objective(design))
    for _ in range(2):
        design = opt.ask()
        space = design[:-1]
        assert np.all(space > 1e-9) and np.all(space < math.pi - 1e-9)
        opt.tell(design, problem.sign * problem.objective(design))
