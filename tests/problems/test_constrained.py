"""The constrained benchmarks of the Neural-CBO paper (problems/constrained.py): formulas, declared optima,
feasibility of known points, the coupled oracle, and the shipped Neural-CBO cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from pinnbo.problem import PROBLEM_FACTORIES, ProblemError
from problems import constrained as C

CASES = Path(__file__).resolve().parents[2] / "cases"

#: name -> (d, K, lower, upper): the Neural-CBO paper's table.
SPECS = {
    "branin_constrained": (2, 1, (-5, 0), (10, 15)),
    "simionescu": (2, 1, (-1.25, -1.25), (1.25, 1.25)),
    "ackley_constrained": (5, 2, (-5,) * 5, (3,) * 5),
    "hartmann6_constrained": (6, 1, (0,) * 6, (1,) * 6),
    "gas_transmission": (4, 1, (20, 1, 20, 0.1), (50, 10, 50, 60)),
    "speed_reducer": (7, 11, (2.6, 0.7, 17, 7.3, 7.8, 2.9, 5), (3.6, 0.8, 28, 8.3, 8.3, 3.9, 5.5)),
    "welded_beam": (4, 6, (0.125, 0.1, 0.1, 0.1), (10, 10, 10, 10)),
}

#: The published f*, to its printed digits (all confirmed, module docstring).
REFERENCE_VALUES = {
    "branin_constrained": (0.397887, 1e-6),
    "simionescu": (-0.072, 1e-12),
    "ackley_constrained": (0.0, 1e-12),
    "hartmann6_constrained": (-3.32237, 1e-5),
    "gas_transmission": (2964895.4, 0.1),
    "speed_reducer": (2996.348, 1e-3),
    "welded_beam": (1.724852, 1e-6),
}

#: A natural scale per constraint output, for a relative feasibility tolerance (the welded beam's
#: are in psi, lbf and inches; the others are O(1) or normalised).
CONSTRAINT_SCALE = {
    "welded_beam": np.array([13600.0, 30000.0, 1.0, 5.0, 0.25, 6000.0]),
}
FEASIBILITY_RTOL = 1e-9

NAMES = list(SPECS)


def scale(name: str, k: int) -> np.ndarray:
    return CONSTRAINT_SCALE.get(name, np.ones(k))


def evaluate(name: str, x) -> tuple[float, np.ndarray]:
    f, c = C.PROBLEM_BUILDERS[name]().objective(np.asarray(x, dtype=np.float64))
    return f, np.asarray(c)


@pytest.mark.parametrize("name", NAMES)
def test_registered_with_the_reference_domain(name):
    d, k, lower, upper = SPECS[name]
    assert PROBLEM_FACTORIES[name] is C.PROBLEM_BUILDERS[name]
    problem = PROBLEM_FACTORIES[name]()
    assert problem.name == name and problem.sense == "minimize" and problem.pde is None
    assert problem.domain.dim == d
    np.testing.assert_array_equal(problem.domain.lower, lower)
    np.testing.assert_array_equal(problem.domain.upper, upper)
    assert len(problem.constraints) == k == len(problem.oracle_constraints)
    assert all(not c.known and c.noise_std == 0 for c in problem.constraints)
    # the oracle's result has the shape split_outcome expects
    value, constraints = problem.split_outcome(problem.objective(problem.domain.from_unit(np.full(d, 0.37))))
    assert math.isfinite(value) and list(constraints) == list(problem.constraint_names)


@pytest.mark.parametrize("name", NAMES)
def test_declared_optimum_is_feasible_with_its_value(name):
    problem = C.PROBLEM_BUILDERS[name]()
    x_star = np.asarray(problem.optimum_location)
    assert problem.domain.contains(x_star)
    f, c = problem.objective(x_star)
    assert f == pytest.approx(problem.optimum, rel=1e-13, abs=1e-15)
    assert np.all(np.asarray(c) <= FEASIBILITY_RTOL * scale(name, len(c))), c
    reference, tolerance = REFERENCE_VALUES[name]
    assert problem.optimum == pytest.approx(reference, abs=tolerance)


def test_closed_form_optima():
    assert C.OPTIMA["branin_constrained"][0] == pytest.approx(5 / (4 * math.pi), rel=1e-15)
    f, c = evaluate("branin_constrained", (math.pi, 2.275))
    assert f == pytest.approx(0.3978873577297384, rel=1e-14) and c[0] == pytest.approx(-22.2877, abs=1e-4)
    # Simionescu: r = 1.2 at theta = -pi/4, the constraint active
    f, c = evaluate("simionescu", (0.6 * math.sqrt(2), -0.6 * math.sqrt(2)))
    assert f == pytest.approx(-0.072, rel=1e-14) and abs(c[0]) < 1e-14
    f, c = evaluate("simionescu", (-0.6 * math.sqrt(2), 0.6 * math.sqrt(2)))  # the mirror
    assert f == pytest.approx(-0.072, rel=1e-14) and abs(c[0]) < 1e-14
    # speed reducer: the vertex x1 = 5 x2, x2..x5 at their lower bounds, c05 = c06 = 0
    x6 = (math.sqrt((745 * 7.3 / (0.7 * 17)) ** 2 + 16.9e6) / 110) ** (1 / 3)
    x7 = (math.sqrt((745 * 7.8 / (0.7 * 17)) ** 2 + 157.5e6) / 85) ** (1 / 3)
    np.testing.assert_allclose(C.OPTIMA["speed_reducer"][1], (3.5, 0.7, 17, 7.3, 7.8, x6, x7), rtol=1e-15)
    f, c = evaluate("speed_reducer", C.OPTIMA["speed_reducer"][1])
    np.testing.assert_allclose(c[[4, 5, 7]], 0.0, atol=1e-15)
    # gas: x1 on its bound, the constraint active
    f, c = evaluate("gas_transmission", C.OPTIMA["gas_transmission"][1])
    assert C.OPTIMA["gas_transmission"][1][0] == 50.0 and abs(c[0]) < 1e-14
    # welded beam: shear, bending, geometry and buckling active
    f, c = evaluate("welded_beam", C.OPTIMA["welded_beam"][1])
    active = np.abs(c) / CONSTRAINT_SCALE["welded_beam"]
    assert np.all(active[[0, 1, 2, 5]] < 1e-12) and np.all(c[[3, 4]] < -0.2)
    # Hartmann: the constraint is inactive, the standard minimiser
    f, c = evaluate("hartmann6_constrained", C.OPTIMA["hartmann6_constrained"][1])
    assert c[0] == pytest.approx(0.946345 - 1, abs=1e-6)


def test_reference_rounded_locations():
    """What the published (rounded) locations give: the documented discrepancies."""
    # gas: infeasible by 4.5e-6, and cheaper than f* there
    f, c = evaluate("gas_transmission", (50, 1.17828, 24.5926, 0.38835))
    assert c[0] == pytest.approx(4.4957e-6, rel=1e-3) and f == pytest.approx(2964884.48, abs=0.01)
    # speed reducer: c06 violated by 1.3e-7 (borderline)
    f, c = evaluate("speed_reducer", (3.5, 0.7, 17, 7.3, 7.8, 3.350215, 5.286683))
    assert 0 < c[5] < 2e-7 and np.all(np.delete(c, 5) <= 0) and f == pytest.approx(2996.348, abs=1e-3)
    # welded beam: the classical rounded point is feasible, 3.4e-6 above f*
    f, c = evaluate("welded_beam", (0.205730, 3.470489, 9.036624, 0.205730))
    assert np.all(c <= 0) and f == pytest.approx(1.7248557, abs=1e-7)
    # Hartmann: feasible, 2.4e-11 above f*
    f, c = evaluate("hartmann6_constrained", (0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573))
    assert c[0] < 0 and 0 < f - C.OPTIMA["hartmann6_constrained"][0] < 1e-10


@pytest.mark.parametrize(
    ("name", "x", "violated"),
    [
        ("branin_constrained", (-5, 0), [0]),  # (x1 - 2.5)^2 + (x2 - 7.5)^2 = 112.5 > 50
        ("branin_constrained", (-math.pi, 12.275), [0]),  # an unconstrained Branin minimiser
        ("branin_constrained", (3 * math.pi, 2.475), [0]),  # the other one
        ("simionescu", (1.25, 1.25), [0]),
        ("simionescu", (0.9 * math.sin(math.pi / 8), 0.9 * math.cos(math.pi / 8)), [0]),  # r_max = 0.8 there
        ("ackley_constrained", (-5,) * 5, [1]),  # ||x||_inf^2 = 25 > 9 (and ||x - 1|| = 13.4: outside the shell)
        ("ackley_constrained", (1 - 5.5 / math.sqrt(5),) * 5, [0]),  # on the shell ||x - 1|| = 5.5
        ("hartmann6_constrained", (1,) * 6, [0]),
        ("gas_transmission", (20, 1, 20, 0.1), [0]),  # x2 = 1: c = x4 > 0
        ("speed_reducer", (2.6, 0.7, 17, 7.3, 7.8, 2.9, 5.0), [0, 1, 4, 5, 7]),  # the lower corner: stresses, x1 < 5 x2
        ("welded_beam", (0.125, 0.1, 0.1, 0.1), [0, 1, 2, 4, 5]),  # the lower corner
    ],
)
def test_known_infeasible_points(name, x, violated):
    f, c = evaluate(name, x)
    assert math.isfinite(f)
    assert np.flatnonzero(c > 0).tolist() == violated, c


@pytest.mark.parametrize(
    ("name", "x"),
    [
        ("branin_constrained", (2.5, 7.5)),
        ("simionescu", (0.0, 0.0)),
        ("simionescu", (0.0, 1.19)),
        ("ackley_constrained", (0.0,) * 5),
        ("ackley_constrained", (-3.0, -3.0, -3.0, -3.0, -3.0)),  # ||x - 1|| = 8.9: beyond the shell
        ("hartmann6_constrained", (0.4,) * 6),
        ("welded_beam", (0.3, 3.0, 9.0, 0.3)),
    ],
)
def test_known_feasible_points(name, x):
    f, c = evaluate(name, x)
    assert np.all(c <= 0), c


def test_simionescu_angle_is_atan2():
    # on the axis x2 = 0 the division x1/x2 would fail; atan2 gives theta = ±pi/2, cos 8theta = 1
    f, c = evaluate("simionescu", (1.2, 0.0))
    assert f == 0.0 and c[0] == pytest.approx(1.44 - 1.44, abs=1e-14)
    # between the lobes (8 theta = pi): r_max = 0.8
    theta = math.pi / 8
    _, c = evaluate("simionescu", (0.81 * math.sin(theta), 0.81 * math.cos(theta)))
    assert c[0] == pytest.approx(0.81**2 - 0.8**2, abs=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_vectorised_and_pointwise_agree(name):
    problem = C.PROBLEM_BUILDERS[name]()
    rng = np.random.default_rng(7)
    X = problem.domain.from_unit(rng.uniform(size=(64, problem.domain.dim)))
    F, Cs = C.BATCH_FUNCTIONS[name](X)
    assert F.shape == (64,) and Cs.shape == (64, len(problem.constraints))
    pointwise = [problem.objective(x) for x in X]
    np.testing.assert_allclose([p[0] for p in pointwise], F, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose([p[1] for p in pointwise], Cs, rtol=1e-14, atol=1e-300)
    assert all(isinstance(p[0], float) and all(isinstance(v, float) for v in p[1]) for p in pointwise)
    assert problem.metadata["batch_function"] is C.BATCH_FUNCTIONS[name]


def test_oracle_checks_the_design_size():
    with pytest.raises(ProblemError, match="speed_reducer"):
        C.speed_reducer().objective(np.zeros(6))


@pytest.mark.parametrize("name", ["branin_constrained", "simionescu"])
def test_dense_grid_finds_nothing_better(name):
    problem = C.PROBLEM_BUILDERS[name]()
    g = [np.linspace(lo, hi, 1201) for lo, hi in zip(problem.domain.lower, problem.domain.upper)]
    X = np.stack(np.meshgrid(*g, indexing="ij"), axis=-1).reshape(-1, 2)
    F, Cs = C.BATCH_FUNCTIONS[name](X)
    feasible = np.all(Cs <= 0, axis=1)
    best = F[feasible].min()
    assert best >= problem.optimum
    assert best - problem.optimum < 1e-3  # and the grid gets close to it


@pytest.mark.parametrize("name", [n for n in NAMES if SPECS[n][0] > 2])
def test_multistart_finds_nothing_better(name):
    """A cheap version of ``python -m problems.constrained`` (200 starts: see the module docstring)."""
    value, location, converged = C.multistart_minimum(name, starts=6, polish=False)
    f_star = C.OPTIMA[name][0]
    assert converged >= 4 and location is not None
    assert value >= f_star - 1e-7 * max(1.0, abs(f_star))
    if name != "ackley_constrained":  # one basin (in these starts): SLSQP reaches f*
        assert value <= f_star + 1e-6 * max(1.0, abs(f_star))


@pytest.mark.parametrize(
    ("case", "problem", "budget"),
    [
        ("branin_c", "branin_constrained", 100),
        ("simionescu", "simionescu", 100),
        ("ackley5_c", "ackley_constrained", 200),
        ("hartmann6_c", "hartmann6_constrained", 200),
        ("gas", "gas_transmission", 200),
        ("speed_reducer", "speed_reducer", 200),
        ("welded_beam", "welded_beam", 200),
    ],
)
def test_cases(case, problem, budget):
    # read as YAML, not through load_case: the method (neural-cbo) may not be registered yet
    data = yaml.safe_load((CASES / f"{case}.yaml").read_text())
    assert data["name"] == case and data["problem"] == problem
    assert data["method"] == "neural-cbo" and data["budget"] == budget
    assert data["initial_points"] == 10 and data["seed"] == 0 and data["noise"] == 0
    built = PROBLEM_FACTORIES[problem](**data["params"])
    assert built.optimum == C.OPTIMA[problem][0]
