"""The heat-box oracle against an analytic harmonic field and py-pde's solve, and its face, edge,
vertex and cache semantics."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from pinnbo.expressions import numpy_function, parse_expression
from pinnbo.oracles.field_cache import FIELDS
from pinnbo.oracles.dirichlet import check_tensor_field, tensor_function
from pinnbo.oracles.heat_box import (AXES, FACES, TENSOR as EXPECTED, HeatBox, box_supremum, face_axis,
                                      solve_dirichlet_box, solve_graded_box, solve_tensor_box)
from pinnbo.problem import ProblemError

# e^{√2 x} sin y cos z + xyz + x² − z² is harmonic (2 − 1 − 1 = 0; 2 − 2 = 0): its face values are
# the Dirichlet data, the field is known inside.
HARMONIC = "exp(sqrt(2)*x)*sin(y)*cos(z) + x*y*z + x**2 - z**2"
ANALYTIC = {face: HARMONIC for face in FACES}
BOUNDS = ((0.0, 1.0), (0.0, 2.0), (-0.5, 1.0))
# Discontinuous along every edge.
STEP = {"x-": "1", "x+": "2", "y-": "3 + x", "y+": "-1", "z-": "0", "z+": "5 - y"}


def harmonic(points):
    return numpy_function(parse_expression(HARMONIC, ["x", "y", "z"], "u"), ["x", "y", "z"])(*np.asarray(points).T)


def test_the_solve_converges_at_second_order_to_a_harmonic_field(cache_dir):
    inside = np.random.default_rng(0).uniform([0.05, 0.05, -0.45], [0.95, 1.95, 0.95], (500, 3))
    at_cells, between = [], []
    for grid in (16, 32):
        box = HeatBox(ANALYTIC, bounds=BOUNDS, grid=grid)
        cells = np.stack(np.meshgrid(*box.cells_at, indexing="ij"), axis=-1).reshape(-1, 3)
        at_cells.append(np.abs(box.cells.ravel() - harmonic(cells)).max())
        between.append(np.abs(box.temperature(inside) - harmonic(inside)).max())
    # second order, the solve's and the trilinear interpolation's: a quarter, with room
    assert at_cells[1] < at_cells[0] / 3.5 and between[1] < between[0] / 3.5
    assert at_cells[1] < 2e-3 and between[1] < 4e-3


def test_the_sine_transform_solve_is_py_pdes_finite_volume_solve():
    pde = pytest.importorskip("pde")
    grid = 8
    rng = np.random.default_rng(1)
    data = {face: rng.normal(size=(grid, grid)) for face in FACES}
    reference = pde.solve_laplace_equation(pde.CartesianGrid([list(b) for b in BOUNDS], [grid] * 3),
                                           {face: {"value": values} for face, values in data.items()}).data
    assert np.abs(solve_dirichlet_box(BOUNDS, grid, data) - reference).max() < 1e-10


@pytest.fixture(scope="module")
def step(cache_dir):
    return HeatBox(STEP, grid=16)


def test_faces_edges_and_vertices_return_the_data_and_their_means(step):
    assert step((0.0, 0.4, 0.7)) == 1.0                      # x- face
    assert step((0.3, 0.0, 0.5)) == pytest.approx(3.3)       # y- face: 3 + x
    assert step((0.5, 0.25, 1.0)) == pytest.approx(4.75)     # z+ face: 5 − y
    assert step((1.0, 0.5, 1.0)) == pytest.approx((2 + 4.5) / 2)      # edge x+ ∩ z+
    assert step((0.0, 0.0, 0.0)) == pytest.approx((1 + 3 + 0) / 3)   # vertex x- ∩ y- ∩ z-
    assert step((1 + 1e-14, 0.5, 0.5)) == 2.0                 # within the tolerance: on the face
    with pytest.raises(ValueError, match="outside the box"):
        step((1.01, 0.5, 0.5))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        step((0.5, 0.5))


def test_the_field_keeps_the_maximum_principle_and_its_supremum_is_the_datas(step):
    points = np.random.default_rng(2).uniform(0, 1, (20000, 3))
    values = step.temperature(points)
    assert values.max() < 5.0 and values.min() > -1.0
    f_star, location = box_supremum(step)
    # the z+ face, 5 − y, rises to 5 towards its edge with y-, where y- is at 3 + x
    assert f_star == pytest.approx(5.0, abs=1e-8)
    assert location[2] == 1.0 and location[1] == pytest.approx(0.0, abs=1e-8)
    assert step(location) == f_star
    assert not step.boundary_continuous()
    assert HeatBox(ANALYTIC, grid=8).boundary_continuous()


def test_a_field_is_solved_once_and_a_pickled_box_finds_it(step):
    solves = FIELDS.stats["solves"]
    again = pickle.loads(pickle.dumps(step))
    assert FIELDS.stats["solves"] == solves
    np.testing.assert_array_equal(again.cells, step.cells)
    FIELDS.clear_memory()
    reloaded = HeatBox(STEP, grid=16)
    assert FIELDS.stats["solves"] == solves
    np.testing.assert_array_equal(reloaded.cells, step.cells)


@pytest.mark.parametrize("boundary, message", [
    ({**STEP, "w-": "0"}, "params.boundary.w-: unknown face"),
    ({k: v for k, v in STEP.items() if k != "z+"}, r"params.boundary.z\+: missing"),
    ({**STEP, "x+": "1/(x - 1)"}, r"params.boundary.x\+: boundary data is not finite"),
    ({**STEP, "y+": "__import__('os')"}, r"params.boundary.y\+"),
])
def test_bad_boundary_data_is_refused_before_a_solve(cache_dir, boundary, message):
    solves = FIELDS.stats["solves"]
    with pytest.raises(ProblemError, match=message):
        HeatBox(boundary, grid=8)
    assert FIELDS.stats["solves"] == solves


@pytest.mark.parametrize("bounds", [[[0, 1], [0, 1]], [[0, 1], [0, 1], [1, 0]], "cube", [[0, 1], [0, 1], [0, True]]])
def test_bad_bounds_are_refused(cache_dir, bounds):
    with pytest.raises(ProblemError, match="params.bounds"):
        HeatBox(STEP, bounds=bounds, grid=8)


# With a flow v, e^{v·x} solves ∇²T − v·∇T = 0 (|v|² − |v|² = 0), and so does a linear field across
# the flow (here a·v = 3 − 3 = 0).
FLOW = (2.0, -1.5, 1.0)
CARRIED = "exp(2*x - 1.5*y + z)/10 + 1.5*x + 2*y"
FLOW_BOUNDS = ((0.0, 1.5), (0.0, 1.0), (0.0, 1.0))


def test_a_flow_is_solved_at_second_order_towards_a_field_it_carries(cache_dir):
    inside = np.random.default_rng(3).uniform([0.05, 0.05, 0.05], [1.45, 0.95, 0.95], (500, 3))
    exact = np.exp(inside @ np.array(FLOW)) / 10 + 1.5 * inside[:, 0] + 2 * inside[:, 1]
    errors = []
    for grid in (16, 32):
        box = HeatBox({face: CARRIED for face in FACES}, bounds=FLOW_BOUNDS, grid=grid, velocity=FLOW)
        errors.append(np.abs(box.temperature(inside) - exact).max() / np.abs(exact).max())
    assert errors[1] < errors[0] / 3.5 and errors[1] < 1e-3
    # without the flow the same data give another field: the flow is no decoration
    still = HeatBox({face: CARRIED for face in FACES}, bounds=FLOW_BOUNDS, grid=32)
    assert np.abs(still.temperature(inside) - exact).max() / np.abs(exact).max() > 0.01


def test_a_flow_keeps_its_own_cache_entry_and_pickles_with_its_box(cache_dir):
    carried = HeatBox(STEP, grid=16, velocity=FLOW)
    assert carried.cache_key != HeatBox(STEP, grid=16).cache_key
    assert "velocity" not in HeatBox(STEP, grid=16).cache_key
    again = pickle.loads(pickle.dumps(carried))
    assert again.velocity == FLOW
    np.testing.assert_array_equal(again.cells, carried.cells)


@pytest.mark.parametrize("velocity, message", [
    ((1.0, 2.0), "expected three numbers"), ("fast", "expected three numbers"),
    ((1.0, float("nan"), 0.0), "expected three numbers"), ((True, 0, 0), "expected three numbers"),
    ((30.0, 0.0, 15.0), "must be at most 40, got 45"),
])
def test_a_bad_flow_is_refused_before_a_solve(cache_dir, velocity, message):
    solves = FIELDS.stats["solves"]
    with pytest.raises(ProblemError, match=f"params.velocity: .*{message}"):
        HeatBox(STEP, grid=8, velocity=velocity)
    assert FIELDS.stats["solves"] == solves


@pytest.mark.parametrize("velocity, reaction, formula, exact", [
    # a gain: cos 2x cos y cos z has ∇²T = −6T
    ((0.0, 0.0, 0.0), 6.0, "cos(2*x)*cos(y)*cos(z)",
     lambda p: np.cos(2 * p[:, 0]) * np.cos(p[:, 1]) * np.cos(p[:, 2])),
    # a gain with a flow along x: e^{λx}, λ² − 3λ + 2 = 0 (λ = 1, 2), plus a gain's cos(√2 y)
    ((3.0, 0.0, 0.0), 2.0, "exp(x) + exp(2*x) + cos(sqrt(2)*y)",
     lambda p: np.exp(p[:, 0]) + np.exp(2 * p[:, 0]) + np.cos(np.sqrt(2) * p[:, 1])),
    # a loss: cosh(√5 x) and e^{√5 z} have T'' = 5T
    ((0.0, 0.0, 0.0), -5.0, "cosh(sqrt(5)*x) + exp(sqrt(5)*z)",
     lambda p: np.cosh(np.sqrt(5) * p[:, 0]) + np.exp(np.sqrt(5) * p[:, 2])),
])
def test_a_reaction_is_solved_at_second_order_towards_a_field_it_solves(cache_dir, velocity, reaction, formula, exact):
    inside = np.random.default_rng(4).uniform([0.05, 0.05, 0.05], [1.45, 0.95, 0.95], (500, 3))
    errors = []
    for grid in (16, 32):
        box = HeatBox({face: formula for face in FACES}, bounds=FLOW_BOUNDS, grid=grid, velocity=velocity,
                      reaction=reaction)
        errors.append(np.abs(box.temperature(inside) - exact(inside)).max() / np.abs(exact(inside)).max())
    assert errors[1] < errors[0] / 3.5 and errors[1] < 1e-3
    again = pickle.loads(pickle.dumps(box))
    assert again.reaction == reaction and f"reaction={reaction:g}" in repr(box)
    assert "reaction" in box.cache_key and "reaction" not in HeatBox(STEP, grid=8).cache_key


@pytest.mark.parametrize("reaction, conductivity, message", [
    (3 * np.pi**2, None, r"expected a number below 29\.6088, the box's first eigenvalue"),
    ("hot", None, r"expected a number, got 'hot'"),
    (float("inf"), None, r"expected a number"),
    # graded or a tensor: below λ_min 3π², λ_min the smallest conductivity (eigenvalue) on the box
    (29.7, "1 + x", r"expected a number below 29\.6088, a lower bound on the box's first eigenvalue under its "
                    r"smallest conductivity, 1 "),
    (20.0, [[1, 0.5, 0], [0.5, 1, 0], [0, 0, 1]], r"expected a number below 14\.8044, .* smallest conductivity, 0\.5 "),
    (15.0, [["1 + x", 0.5, 0], [0.5, 1, 0], [0, 0, 1]], r"expected a number below 14\.8044"),
])
def test_a_bad_reaction_is_refused_before_a_solve(cache_dir, reaction, conductivity, message):
    solves = FIELDS.stats["solves"]
    with pytest.raises(ProblemError, match=f"params\\.reaction: {message}"):
        HeatBox(STEP, grid=8, reaction=reaction, conductivity=conductivity)
    assert FIELDS.stats["solves"] == solves


def test_with_a_gain_the_boxs_supremum_is_inside():
    """sin 2x sin 2y sin 2z on [0, 1.2]³ (λ₁ = 3π²/1.44 = 20.6) solves ∇²T + 12T = 0; its maximum, 1
    at (π/4, π/4, π/4), is inside, where the faces' data reach sin 2.4 = 0.68 at most: no maximum
    principle."""
    formula = "sin(2*x)*sin(2*y)*sin(2*z)"
    box = HeatBox({face: formula for face in FACES}, bounds=((0.0, 1.2),) * 3, grid=48, reaction=12.0)
    value, location = box_supremum(box)
    assert value == pytest.approx(1.0, abs=2e-3)
    np.testing.assert_allclose(location, (np.pi / 4,) * 3, atol=0.03)


# ((1 + x)² T')' + 2T = 0: T = (1 + x)^{−1/2} cos(ω ln(1 + x)), ω = √7/2 (Euler's equation); a tensor
# (1 + x)² A with A_xx = 1 gives the same equation for a T of x alone.
OMEGA = float(np.sqrt(7)) / 2
EULER = f"(1 + x)**(-0.5)*cos({OMEGA!r}*log(1 + x))"


@pytest.mark.parametrize("conductivity", [
    "(1 + x)**2",
    [[f"{a}*(1 + x)**2" for a in row] for row in ((1.0, 0.3, 0.2), (0.3, 0.8, 0.1), (0.2, 0.1, 1.0))],
])
def test_a_reaction_in_a_graded_or_composite_box_matches_its_analytic_field(cache_dir, conductivity):
    inside = np.random.default_rng(5).uniform(0.05, 0.95, (300, 3))
    truth = (1 + inside[:, 0]) ** -0.5 * np.cos(OMEGA * np.log(1 + inside[:, 0]))
    faces = {face: EULER for face in FACES}
    errors = []
    for grid in (16, 32):
        box = HeatBox(faces, grid=grid, conductivity=conductivity, reaction=2.0)
        errors.append(np.abs(box.temperature(inside) - truth).max())
    assert errors[1] < 1e-4 and errors[0] / errors[1] > 3, errors      # 2.4e-4, 7.1e-5
    without = HeatBox(faces, grid=32, conductivity=conductivity)
    assert np.abs(without.temperature(inside) - truth).max() > 100 * errors[1]
    assert "reaction" in box.cache_key and pickle.loads(pickle.dumps(box)).reaction == 2.0


# k = (1 + x)²: ∂x(k ∂x T) = 0 for T = 1/(1 + x), and yz has T_yy = T_zz = 0, so their sum solves
# ∇·(k∇T) = 0 with k varying along x.
GRADED = "1/(1 + x) + y*z"


def test_a_graded_box_is_solved_at_second_order_towards_a_field_it_conducts(cache_dir):
    inside = np.random.default_rng(4).uniform([0.05, 0.05, 0.05], [1.45, 0.95, 0.95], (500, 3))
    exact = 1 / (1 + inside[:, 0]) + inside[:, 1] * inside[:, 2]
    errors = []
    for grid in (16, 32):
        box = HeatBox({face: GRADED for face in FACES}, bounds=FLOW_BOUNDS, grid=grid, conductivity="(1 + x)**2")
        errors.append(np.abs(box.temperature(inside) - exact).max())
    assert errors[1] < errors[0] / 3.5 and errors[1] < 1e-3
    # the same data at k = 1 give another field: the conductivity is no decoration
    assert np.abs(HeatBox({face: GRADED for face in FACES}, bounds=FLOW_BOUNDS, grid=32).temperature(inside)
                  - exact).max() > 0.01


def test_the_iterative_solve_of_a_uniform_conductor_is_the_transforms():
    rng = np.random.default_rng(5)
    data = {face: rng.normal(size=(12, 12)) for face in FACES}
    direct = solve_dirichlet_box(FLOW_BOUNDS, 12, data)
    iterated = solve_graded_box(FLOW_BOUNDS, 12, data, lambda x, y, z: np.ones_like(x))
    assert np.abs(iterated - direct).max() < 1e-9 * np.abs(direct).max()


@pytest.mark.parametrize("conductivity, message", [
    ("x - 0.5", r"'x - 0.5' is -0.5 at \(x, y, z\) = \(0, 0, 0\); expected a formula of x, y and z, finite and "
                "positive on the whole closed box"),
    ("1/y", "is inf at"), (2.0, "expected a formula of x, y and z or a symmetric positive-definite tensor"),
    ("__import__('os')", "params.conductivity"),
])
def test_a_bad_conductivity_is_refused_before_a_solve(cache_dir, conductivity, message):
    solves = FIELDS.stats["solves"]
    with pytest.raises(ProblemError, match=f"params.conductivity: .*{message}" if "params" not in message else message):
        HeatBox(STEP, grid=8, conductivity=conductivity)
    assert FIELDS.stats["solves"] == solves


# A constant tensor K: e^{a·x} cos(c·x) solves ∇·(K∇T) = 0 where aᵀKa = cᵀKc and aᵀKc = 0, and a
# quadratic xᵀBx where tr(KB) = 0; neither is exact for the differences, so the error shows their order.
TENSOR = np.array([[2.0, 0.5, 0.3], [0.5, 1.0, -0.2], [0.3, -0.2, 1.5]])
TENSOR_BOUNDS = ((0.0, 1.5), (0.0, 1.0), (0.0, 1.2))


def tensor_field(points):
    a = np.array([1.0, 0.5, -0.3])
    c = np.array([0.2, 1.0, 0.4])
    c = c - (a @ TENSOR @ c) / (a @ TENSOR @ a) * a
    c *= np.sqrt((a @ TENSOR @ a) / (c @ TENSOR @ c))
    B = np.array([[1.0, 0.2, 0.0], [0.2, -1.0, 0.5], [0.0, 0.5, 0.0]])
    B[2, 2] = -(np.trace(TENSOR @ B)) / TENSOR[2, 2]
    return np.exp(points @ a) * np.cos(points @ c) + np.einsum("...i,ij,...j", points, B, points)


def tensor_face_data(grid: int, field) -> tuple[list[np.ndarray], dict]:
    """The cell centres of TENSOR_BOUNDS at ``grid`` cells per axis and ``field`` (points (..., 3) ->
    values) at each face's cell midpoints, the solvers' face data."""
    cells = [lo + (np.arange(grid) + 0.5) * (hi - lo) / grid for lo, hi in TENSOR_BOUNDS]
    data = {}
    for face in FACES:
        axis, side = face_axis(face)
        grids = np.meshgrid(*[cells[a] if a != axis else np.array([TENSOR_BOUNDS[axis][side]]) for a in range(3)],
                            indexing="ij")
        data[face] = field(np.stack([g.reshape(grid, grid) for g in grids], -1))
    return cells, data


def test_a_tensor_box_is_solved_at_second_order_towards_a_field_it_conducts():
    errors = []
    for grid in (16, 32):
        cells, data = tensor_face_data(grid, tensor_field)
        field = solve_tensor_box(TENSOR_BOUNDS, grid, data, TENSOR)
        errors.append(np.abs(field - tensor_field(np.stack(np.meshgrid(*cells, indexing="ij"), -1))).max())
    assert errors[1] < errors[0] / 3.3 and errors[1] < 5e-3
    rng = np.random.default_rng(6)
    data = {face: rng.normal(size=(12, 12)) for face in FACES}
    isotropic = solve_tensor_box(TENSOR_BOUNDS, 12, data, np.eye(3))
    assert np.abs(isotropic - solve_dirichlet_box(TENSOR_BOUNDS, 12, data)).max() < 1e-9


@pytest.mark.parametrize("tensor", [[[1, 0, 0], [0, 1, 0]], [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]],
                                    [[1, 2, 0], [2, 1, 0], [0, 0, 1]], [[1, 0, 0], [0, None, 0], [0, 0, 1]]])
def test_a_bad_tensor_is_refused(cache_dir, tensor):
    with pytest.raises(ProblemError, match="params.conductivity: expected a formula of x, y and z or a symmetric "
                                           "positive-definite tensor"):
        HeatBox(STEP, grid=8, conductivity=tensor)


def test_a_graded_tensor_box_is_exact_for_a_linear_field_it_conducts():
    """K = (1 + x) A: T = x − 4y solves ∇·(K∇T) = ∂k/∂x (A∇T)_x = 2 − 2 = 0 (hand-derived), and the
    differences, the tensor's drift among them, are exact for it."""
    K, _ = check_tensor_field([[f"{a}*(1 + x)" for a in row] for row in TENSOR.tolist()], TENSOR_BOUNDS, AXES, EXPECTED)
    grid = 12
    cells, data = tensor_face_data(grid, lambda p: p[..., 0] - 4 * p[..., 1])
    field = solve_tensor_box(TENSOR_BOUNDS, grid, data, tensor_function(K, AXES))
    X = np.meshgrid(*cells, indexing="ij")
    assert np.abs(field - (X[0] - 4 * X[1])).max() < 1e-9


def test_a_tensor_k_times_the_identity_is_the_graded_boxs_solve():
    """K = k I with k linear along each axis: the conservative differences of the graded box and the
    tensor's, k times the Laplacian plus its drift ∇k·∇T, are the same to rounding; with k = eˣ + y²
    they differ at second order."""
    differences = []
    for formula, k, grid in [("1 + 2*x + y*z", lambda x, y, z: 1 + 2 * x + y * z, 12),
                             ("exp(x) + y**2", lambda x, y, z: np.exp(x) + y**2, 12),
                             ("exp(x) + y**2", lambda x, y, z: np.exp(x) + y**2, 24)]:
        _, data = tensor_face_data(grid, lambda p: np.sin(2 * p[..., 0]) + p[..., 1] * p[..., 2] - p[..., 0] ** 2)
        K, _ = check_tensor_field([[formula if i == j else 0 for j in range(3)] for i in range(3)], TENSOR_BOUNDS,
                                  AXES, EXPECTED)
        tensor = solve_tensor_box(TENSOR_BOUNDS, grid, data, tensor_function(K, AXES))
        differences.append(np.abs(tensor - solve_graded_box(TENSOR_BOUNDS, grid, data, k)).max())
    assert differences[0] < 1e-12
    assert 1e-7 < differences[2] < differences[1] / 3.3


@pytest.mark.parametrize("tensor, message", [
    ([[1, "x", 0], ["y", 1, 0], [0, 0, 1]], r"params.conductivity: expected a symmetric tensor, got \[0\]\[1\] = "
                                           r"'x' and \[1\]\[0\] = 'y'"),
    ([["x - 0.5", 0, 0], [0, 1, 0], [0, 0, 1]], r"is not finite and positive-definite at \(x, y, z\) = \(0, 0, 0\)"),
    ([["1 + x", "1 + x", 0], ["1 + x", "1", 0], [0, 0, 1]], "is not finite and positive-definite at"),
    ([["1/y", 0, 0], [0, 1, 0], [0, 0, 1]], "is not finite and positive-definite at"),
    ([[1, 0, 0], [0, "a", 0], [0, 0, 1]], r"params.conductivity\[1\]\[1\]"),
    ([["__import__('os')", 0, 0], [0, 1, 0], [0, 0, 1]], r"params.conductivity\[0\]\[0\]"),
    ([["1 + x", 0], [0, 1]], "expected a formula of x, y and z or a symmetric positive-definite tensor"),
])
def test_a_bad_graded_tensor_is_refused_before_a_solve(cache_dir, tensor, message):
    solves = FIELDS.stats["solves"]
    with pytest.raises(ProblemError, match=message):
        HeatBox(STEP, grid=8, conductivity=tensor)
    assert FIELDS.stats["solves"] == solves


def test_a_graded_tensor_keeps_its_own_cache_entry_and_pickles_with_its_box(cache_dir):
    K = [["2*(1 + x)", "0.5*(1 + x)", 0], ["0.5*(1 + x)", "1 + x", 0], [0, 0, 1]]
    box = HeatBox(STEP, grid=8, conductivity=K)
    constant = HeatBox(STEP, grid=8, conductivity=[[2, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])
    assert box.cache_path != constant.cache_path and box.cache_path.exists()
    solves = FIELDS.stats["solves"]
    again = pickle.loads(pickle.dumps(box))
    assert FIELDS.stats["solves"] == solves and np.array_equal(again.cells, box.cells)
    point = np.array([0.3, 0.6, 0.4])
    assert again(point) == box(point) != constant(point)
