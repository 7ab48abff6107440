"""Finite-difference beam oracle against closed-form deflections (docs/algorithms.md, "The beam")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from pinnbo.oracles.beam import DEFAULT_INTERVALS, solve_beam
from pinnbo.problem import ProblemError
from problems.beam import PAPER_BC, PAPER_DEFLECTION, PAPER_EI, PAPER_LOAD, beam

X = sp.Symbol("x", real=True)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _exact(text: str):
    return sp.lambdify(X, sp.sympify(text.replace("^", "**"), locals={"x": X}), "numpy")


def _paper(n: int = DEFAULT_INTERVALS):
    return solve_beam(PAPER_EI, PAPER_LOAD, PAPER_BC, (0.0, 1.0), n)


def test_paper_stiffness_is_consistent_with_the_manufactured_deflection() -> None:
    # EI·w'' = eˣ, i.e. w'' = eˣ·(1/EI) = ρ: the paper's ρ is the manufactured w's second derivative.
    w = sp.sympify(PAPER_DEFLECTION.replace("^", "**"), locals={"x": X})
    solution = _paper(64)
    exact = lambda e: sp.nsimplify(e, rational=True)  # noqa: E731 (the decimals 0.4, 2.4 exactly)
    difference = exact(w.diff(X, 2)) - sp.exp(X) * exact(solution.flexibility)
    assert sp.expand(difference) == 0


def test_second_order_convergence_on_the_paper_beam() -> None:
    w = _exact(PAPER_DEFLECTION)
    errors = []
    for n in (2000, 4000, 8000):
        solution = _paper(n)
        errors.append(np.max(np.abs(solution.deflection_nodes - w(solution.nodes))))
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(3.5 < r < 4.5 for r in ratios), (errors, ratios)


def test_default_resolution_is_within_1e4_of_the_manufactured_deflection(rng) -> None:
    w = _exact(PAPER_DEFLECTION)
    solution = _paper()
    assert np.max(np.abs(solution.deflection_nodes - w(solution.nodes))) < 1e-4
    xs = rng.uniform(0.0, 1.0, 1000)
    assert np.max(np.abs(solution(xs) - w(xs))) < 1e-4
    assert solution.moment(0.5) == pytest.approx(np.exp(0.5), abs=1e-4)
    assert _paper() is solution  # cached by its strings and n


def test_paper_problem_knows_its_optimum() -> None:
    problem = beam()
    assert problem.sense == "minimize" and problem.domain.names == ("x",)
    assert problem.optimum == pytest.approx(0.057604, abs=1e-5)
    assert problem.optimum_location[0] == pytest.approx(0.88370, abs=1e-4)
    assert problem.objective(np.array(problem.optimum_location)) == pytest.approx(problem.optimum, abs=1e-12)
    assert problem.pde.max_order == 4
    # EI is singular at the 26 zeros of ρ: collocation points next to them are dropped.
    assert len(problem.metadata["singular_points"]) == 26
    near = np.array(problem.metadata["singular_points"])[:, None]
    assert not problem.collocation_filter(near).any()
    assert problem.collocation_filter(np.array([[0.5], [0.88370]])).all()

    highest = beam(sense="maximize")
    assert highest.optimum == pytest.approx(12.807, abs=1e-3)
    assert highest.optimum_location[0] == pytest.approx(0.98532, abs=1e-4)


def test_constant_stiffness_clamped_beam_has_the_quartic_deflection(rng) -> None:
    # EI = 2, q = 48: w'''' = 24, so w is x⁴ plus any cubic; clamp both ends to pick one.
    w = X**4 - 2 * X**3 + 0.5 * X**2 + 0.3 * X + 1
    slope = w.diff(X)
    bc = {
        "left": {"w": str(w.subs(X, 0)), "slope": str(slope.subs(X, 0))},
        "right": {"w": str(w.subs(X, 1)), "slope": str(slope.subs(X, 1))},
    }
    solution = solve_beam("2", "48", bc)
    exact = sp.lambdify(X, w, "numpy")
    xs = rng.uniform(0.0, 1.0, 1000)
    assert np.max(np.abs(solution.deflection_nodes - exact(solution.nodes))) < 1e-5
    assert np.max(np.abs(solution(xs) - exact(xs))) < 1e-5


SUPPORTS = {
    "cantilever": ({"w", "slope"}, {"M", "V"}),
    "free-clamped": ({"M", "V"}, {"w", "slope"}),
    "pinned": ({"w", "M"}, {"w", "M"}),
    "mixed": ({"w", "V"}, {"slope", "M"}),
    "guided-propped": ({"slope", "V"}, {"w", "M"}),
}


@pytest.mark.parametrize("support", sorted(SUPPORTS))
@pytest.mark.parametrize("given", ["EI", "flexibility"])
def test_variable_stiffness_beam_reproduces_a_chosen_deflection(support, given, rng) -> None:
    a, b = 0.5, 2.0
    stiffness = 1 + X**2
    w = sp.sin(3 * X) + sp.exp(X) / 2 + X**3
    moment = stiffness * w.diff(X, 2)
    load = sp.simplify(moment.diff(X, 2))
    quantities = {"w": w, "slope": w.diff(X), "M": moment, "V": moment.diff(X)}
    left, right = SUPPORTS[support]
    bc = {
        "left": {name: str(quantities[name].subs(X, a)) for name in left},
        "right": {name: float(quantities[name].subs(X, b)) for name in right},
    }
    if given == "EI":
        solution = solve_beam("1 + x^2", str(load), bc, (a, b))
    else:
        solution = solve_beam(None, str(load), bc, (a, b), flexibility="1/(1 + x^2)")
    exact = sp.lambdify(X, w, "numpy")
    xs = rng.uniform(a, b, 1000)
    assert np.max(np.abs(solution.deflection_nodes - exact(solution.nodes))) < 1e-5
    assert np.max(np.abs(solution(xs) - exact(xs))) < 1e-5


@pytest.mark.parametrize(
    "params, field",
    [
        ({"bc": {"left": {"w": 0, "theta": 0}, "right": {"w": 0, "M": 0}}}, "params.bc.left.theta"),
        ({"bc": {"left": {"w": 0, "slope": 0, "M": 0}, "right": {"w": 0, "M": 0}}}, "params.bc.left"),
        ({"bc": {"left": {"w": 0, "M": 0}}}, "params.bc.right"),
        ({"bc": {"left": {"w": 0, "M": 0}, "right": {"w": 0, "M": "sin("}}}, "params.bc.right.M"),
        ({"bc": {"left": {"w": 0, "M": 0}, "right": {"w": 0, "M": "x"}}}, "params.bc.right.M"),
        ({"bc": {"left": {"w": 0, "M": 0}, "right": {"M": 0, "V": 0}}}, "params.bc"),  # mechanism
        ({"bc": {"left": {"slope": 0, "M": 0}, "right": {"slope": 0, "M": 0}}}, "params.bc"),  # no w
        ({"bc": {"left": {"w": 0, "V": 0}, "right": {"w": 0, "V": 0}}}, "params.bc"),
        ({"EI": "exp(x"}, "params.EI"),
        ({"EI": "exp(y)"}, "params.EI"),
        ({"EI": "x"}, "params.EI"),  # 1/EI infinite at x = 0
        ({"q": "foo(x)"}, "params.q"),
        ({"n": 3}, "params.n"),
        ({"bounds": (1.0, 0.0)}, "params.bounds"),
        ({"flexibility": "1", "EI": "2"}, "params.flexibility"),
    ],
)
def test_bad_parameters_name_their_field(params, field) -> None:
    if "bc" not in params and params.keys() & {"EI", "q", "n", "bounds", "flexibility"}:
        params = {**params, "bc": SIMPLY_SUPPORTED}   # any beam but the paper's states its supports
    with pytest.raises(ProblemError, match=rf"^{field.replace('.', '[.]')}[:.]"):
        beam(**params)


SIMPLY_SUPPORTED = {"left": {"w": 0, "M": 0}, "right": {"w": 0, "M": 0}}


def test_a_beam_other_than_the_papers_states_its_boundary_conditions() -> None:
    with pytest.raises(ProblemError, match=r"^params[.]bc: missing; a beam other than the paper's"):
        beam(EI="1 + x")
    assert beam(EI="1 + x", bc=SIMPLY_SUPPORTED).optimum is not None
    assert beam().optimum == pytest.approx(beam(bc=None).optimum)


def test_queries_outside_the_beam_are_rejected() -> None:
    solution = _paper()
    with pytest.raises(ValueError, match="outside"):
        solution(1.5)
    with pytest.raises(ValueError, match="outside"):
        solution(np.array([0.2, -0.1]))
    problem = beam()
    with pytest.raises(ValueError):
        problem.objective(np.array([1.01]))
    assert problem.objective(np.array([1.0])) == pytest.approx(float(_exact(PAPER_DEFLECTION)(1.0)), abs=1e-12)


def test_the_guide_beam_case_builds_with_its_closed_form_minimum(tmp_path) -> None:
    """The user-defined beam of the problems guide, as written: EI = 1 + x on [0, 2], clamped at 0, simply
    supported at 2, q = −1. Its deflection solves EI w'' = M with M'' = −1, M(2) = 0, and
    w(0) = w'(0) = w(2) = 0; the finite-difference minimum matches a direct quadrature of that."""
    import re

    import yaml

    from pinnbo.runner.build import build_problem
    from pinnbo.runner.case import case_from_dict

    text = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "problems-and-pdes.md").read_text()
    block = re.search(r"```yaml\n(name: my_beam\n.*?)```", text, re.S)[1]
    problem = build_problem(case_from_dict(yaml.safe_load(block)))
    assert problem.domain.lower == (0.0,) and problem.domain.upper == (2.0,)
    # Closed form by the flexibility method: M = −(x − 2)²/2 + R (x − 2) with the reaction R fixed by
    # w(2) = 0, where w(x) = ∫0^x (x − s) M(s)/EI(s) ds (w(0) = w'(0) = 0).
    s = np.linspace(0.0, 2.0, 200001)

    def deflection_at(x, reaction):
        grid = s[s <= x]
        moment = -(grid - 2.0) ** 2 / 2 + reaction * (grid - 2.0)
        return np.trapezoid((x - grid) * moment / (1 + grid), grid)

    a, b = deflection_at(2.0, 0.0), deflection_at(2.0, 1.0) - deflection_at(2.0, 0.0)
    reaction = -a / b
    xs = np.linspace(0.0, 2.0, 401)
    values = np.array([deflection_at(x, reaction) for x in xs])
    assert problem.optimum == pytest.approx(values.min(), rel=1e-4)
    assert problem.optimum_location[0] == pytest.approx(xs[values.argmin()], abs=0.01)
