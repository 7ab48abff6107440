"""The heat-plate oracle against an analytic harmonic field, and its edge, corner and cache semantics."""

from __future__ import annotations

import math
import os
import pickle

import numpy as np
import pytest

from pinnbo.oracles import heat_plate as laplace
from pinnbo.oracles.field_cache import FIELDS
from pinnbo.oracles.heat_plate import HeatPlate
from pinnbo.problem import ProblemError
from problems.heat_plate import limited_supremum, plate_supremum

L = 2 * math.pi

# T = eˣ sin y + x y is harmonic: its edge values are the Dirichlet data, the field is known inside.
ANALYTIC = {
    "left": "sin(y)",  # e⁰ sin y + 0
    "right": "exp(2*pi)*sin(y) + 2*pi*y",
    "bottom": "0",
    "top": "exp(x)*sin(2*pi) + 2*pi*x",
}


def analytic(x, y):
    return np.exp(x) * np.sin(y) + x * y


# Discontinuous at every corner.
STEP = {"left": "1", "right": "2", "bottom": "10 + x", "top": "-5"}


@pytest.fixture(scope="module")
def fine(cache_dir):
    """The one default-grid (256²) solve of this module."""
    return HeatPlate(ANALYTIC)


@pytest.fixture(scope="module")
def coarse(cache_dir):
    return HeatPlate(ANALYTIC, grid=32)


@pytest.fixture(scope="module")
def step(cache_dir):
    return HeatPlate(STEP, grid=16)


@pytest.fixture
def rng():
    return np.random.default_rng(20240607)


def test_interior_matches_analytic_field(fine, rng):
    points = rng.uniform(0, L, size=(2000, 2))
    exact = analytic(points[:, 0], points[:, 1])
    error = np.max(np.abs(fine.temperature(points) - exact)) / np.max(np.abs(exact))
    assert error < 1e-3


def test_default_cache_dir_follows_environment(fine, cache_dir):
    assert fine.cache_path.parent == cache_dir
    assert fine.cache_path.is_file()
    assert not [p for p in os.listdir(cache_dir) if p.endswith(".tmp")]


def test_edges_return_the_dirichlet_data(coarse, rng):
    t = rng.uniform(0, L, 50)
    zeros, ends = np.zeros_like(t), np.full_like(t, L)
    for pts in (np.column_stack([zeros, t]), np.column_stack([ends, t]),
                np.column_stack([t, zeros]), np.column_stack([t, ends])):
        np.testing.assert_allclose(coarse.temperature(pts), analytic(pts[:, 0], pts[:, 1]), rtol=1e-13, atol=1e-12)


def test_edge_tolerance_snaps_and_outside_raises(step):
    assert step((-1e-14, 3.0)) == 1.0  # within 1e-12 relative: on the left edge
    assert step((3.0, L * (1 + 1e-13))) == -5.0
    for bad in ((-1e-6, 3.0), (3.0, L + 1e-6), (7.0, 7.0)):
        with pytest.raises(ValueError, match="outside"):
            step(bad)
    with pytest.raises(ValueError, match="outside"):
        step.temperature(np.array([[1.0, 1.0], [1.0, -0.5]]))
    with pytest.raises(ValueError):
        step(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError):
        step((np.nan, 1.0))


def test_corners_are_the_mean_of_both_edges(step, coarse):
    corners = np.array([[0, 0], [L, 0], [0, L], [L, L]])
    np.testing.assert_allclose(step.temperature(corners), [(1 + 10) / 2, (2 + 10 + L) / 2, (1 - 5) / 2, (2 - 5) / 2])
    # continuous data: the mean of two equal limits is the field itself
    np.testing.assert_allclose(coarse.temperature(corners), analytic(corners[:, 0], corners[:, 1]), atol=1e-12)


def test_interior_next_to_an_edge_approaches_its_data(step):
    # a hair inside, the interpolant is already (almost) the edge value, not a ghost-cell mix
    assert step((1e-9, 3.0)) == pytest.approx(1.0, abs=1e-6)
    assert step((3.0, 1e-9)) == pytest.approx(13.0, abs=1e-6)
    assert isinstance(step((1.0, 1.0)), float)


def test_maximum_principle_and_supremum(fine, coarse, step, rng):
    for plate in (fine, coarse, step):
        f_star, location = plate_supremum(plate)
        assert plate(location) == pytest.approx(f_star, rel=1e-12)
        interior = plate.temperature(rng.uniform(0, L, size=(5000, 2)))
        assert interior.max() <= f_star
        t = np.linspace(0, L, 2001)[1:-1]
        boundary = np.concatenate([plate.edge_data(e, t) for e in laplace.EDGES])
        assert f_star >= boundary.max() - 1e-9 * abs(f_star)
    # step data: the bottom edge 10 + x rises to 10 + 2π at the lower-right corner, never attained
    f_star, location = plate_supremum(step)
    assert f_star == pytest.approx(10 + L, abs=1e-7)
    np.testing.assert_allclose(location, [L, 0], atol=1e-7)
    assert location[0] < L


def test_field_orientation(step):
    xs, ys, values = step.field(9)
    assert values.shape == (9, 9)
    assert values[4, 0] == 1.0 and values[4, -1] == 2.0  # rows are y: column 0 is the left edge
    assert values[0, 4] == pytest.approx(10 + xs[4]) and values[-1, 4] == -5.0


def test_same_data_is_not_solved_twice(cache_dir, monkeypatch):
    first = HeatPlate(STEP, grid=16)
    solves = FIELDS.stats["solves"]

    def no_solve(*args, **kwargs):
        raise AssertionError("solved again")

    monkeypatch.setattr(laplace, "solve_dirichlet_laplace", no_solve)
    again = HeatPlate(dict(STEP), grid=16)  # in memory
    assert again.cells is first.cells
    # the same formula written differently is the same key
    assert HeatPlate({**STEP, "bottom": "x+10"}, grid=16).cache_path == first.cache_path
    FIELDS.clear_memory()  # a fresh process: loads from disk
    loads = FIELDS.stats["disk_loads"]
    reloaded = HeatPlate(STEP, grid=16, cache_dir=cache_dir)
    assert FIELDS.stats["disk_loads"] == loads + 1
    np.testing.assert_array_equal(reloaded.cells, first.cells)
    assert FIELDS.stats["solves"] == solves


def test_pickles_without_solving(step):
    solves = FIELDS.stats["solves"]
    clone = pickle.loads(pickle.dumps(step))
    assert clone((1.0, 2.0)) == step((1.0, 2.0))
    assert FIELDS.stats["solves"] == solves


def test_missing_or_corrupt_cache_solves_again(tmp_path):
    FIELDS.clear_memory()
    solves = FIELDS.stats["solves"]
    plate = HeatPlate(STEP, grid=8, cache_dir=tmp_path)
    assert FIELDS.stats["solves"] == solves + 1
    plate.cache_path.write_bytes(b"not a zip file")
    FIELDS.clear_memory()
    again = HeatPlate(STEP, grid=8, cache_dir=tmp_path)
    assert FIELDS.stats["solves"] == solves + 2
    np.testing.assert_array_equal(again.cells, plate.cells)
    # and a different grid is a different field
    assert HeatPlate(STEP, grid=12, cache_dir=tmp_path).cache_path != plate.cache_path


@pytest.mark.parametrize(
    ("boundary", "field"),
    [
        ({**STEP, "top": "z + 1"}, "params.boundary.top"),
        ({**STEP, "left": "sin(y"}, "params.boundary.left"),
        ({**STEP, "front": "1"}, "params.boundary.front"),
        ({k: v for k, v in STEP.items() if k != "right"}, "params.boundary.right"),
        ({**STEP, "bottom": "sqrt(x - 1)"}, "params.boundary.bottom"),
        ({**STEP, "right": "1/(y - pi)"}, "params.boundary.right"),
        ({**STEP, "left": "log(y)"}, "params.boundary.left"),
        ({**STEP, "top": None}, "params.boundary.top"),
        ("x + y", "params.boundary"),
    ],
)
def test_bad_boundary_names_the_field(boundary, field, tmp_path):
    with pytest.raises(ProblemError, match=field.replace(".", r"\.")):
        HeatPlate(boundary, grid=8, cache_dir=tmp_path)


@pytest.mark.parametrize("bounds", [((0, 1),), ((1, 0), (0, 1)), ((0, math.inf), (0, 1)), "01", ((0, "a"), (0, 1))])
def test_bad_bounds(bounds, tmp_path):
    with pytest.raises(ProblemError, match=r"params\.bounds"):
        HeatPlate(STEP, bounds=bounds, grid=8, cache_dir=tmp_path)


def test_other_bounds(tmp_path):
    # T = x² − y² on [1, 3] × [−1, 2]: the data may mention the edge's own coordinate
    plate = HeatPlate({e: "x**2 - y**2" for e in laplace.EDGES}, bounds=((1, 3), (-1, 2)), grid=64, cache_dir=tmp_path)
    pts = np.array([[2.0, 0.5], [1.5, -0.5], [2.9, 1.9]])
    np.testing.assert_allclose(plate.temperature(pts), pts[:, 0] ** 2 - pts[:, 1] ** 2, atol=2e-3)
    f_star, location = plate_supremum(plate)
    assert f_star == pytest.approx(9.0, abs=1e-6)
    np.testing.assert_allclose(location, [3, 0], atol=1e-5)
    with pytest.raises(ValueError):
        plate((0.5, 0.0))


def test_an_anisotropic_plate_matches_its_analytic_field(tmp_path):
    # T = e^{x/√k_x} sin(y/√k_y) + x y solves k_x T_xx + k_y T_yy = 0 on [0, 2] × [0, 3]
    k_x, k_y = 0.5, 4.0
    formula = f"exp(x/sqrt({k_x}))*sin(y/sqrt({k_y})) + x*y"
    plate = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 3)), grid=64, cache_dir=tmp_path,
                      conductivity=(k_x, k_y))
    points = np.random.default_rng(3).uniform([0.1, 0.1], [1.9, 2.9], size=(300, 2))
    exact = np.exp(points[:, 0] / math.sqrt(k_x)) * np.sin(points[:, 1] / math.sqrt(k_y)) + points[:, 0] * points[:, 1]
    error = np.abs(plate.temperature(points) - exact).max() / np.abs(exact).max()
    assert error < 2e-4       # second order: 4.3e-4, 1.2e-4, 3.2e-5 at 32², 64², 128²
    # the isotropic solve of the same data is another field
    isotropic = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 3)), grid=64, cache_dir=tmp_path)
    assert np.abs(isotropic.temperature(points) - exact).max() / np.abs(exact).max() > 50 * error
    assert pickle.loads(pickle.dumps(plate)).conductivity == (k_x, k_y)


def test_without_a_flow_the_finite_differences_are_py_pdes_solve():
    # the same cells, the same ghost-cell rule for the edge data: the same linear system
    edge_data = {"left": np.sin(np.arange(32) / 5), "right": np.cos(np.arange(32) / 7),
                 "bottom": np.linspace(0, 1, 32), "top": np.full(32, 2.0)}
    ours = laplace.solve_dirichlet_operator(((0, 2), (0, 3)), 32, edge_data, (0.5, 4.0), (0.0, 0.0))
    theirs = laplace.solve_dirichlet_laplace(((0, 2), (0, 3)), 32, edge_data, (0.5, 4.0))
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12)


def test_a_plate_with_a_flow_matches_its_analytic_field(tmp_path):
    # T = e^{v_x x/k_x} + e^{v_y y/k_y} solves k_x T_xx + k_y T_yy − v_x T_x − v_y T_y = 0
    k, v = (1.0, 8.0), (3.0, -2.0)
    formula = f"exp({v[0] / k[0]}*x) + exp({v[1] / k[1]}*y)"
    points = np.random.default_rng(4).uniform([0.1, 0.1], [1.9, 0.9], size=(300, 2))
    exact = np.exp(v[0] / k[0] * points[:, 0]) + np.exp(v[1] / k[1] * points[:, 1])
    errors = []
    for grid in (32, 64):
        plate = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 1)), grid=grid,
                          cache_dir=tmp_path, conductivity=k, velocity=v)
        errors.append(np.abs(plate.temperature(points) - exact).max() / np.abs(exact).max())
    assert errors[1] < 1e-3 and errors[0] / errors[1] > 3          # second order: 2.5e-3, 7.2e-4
    assert pickle.loads(pickle.dumps(plate)).velocity == v
    assert "velocity=(3.0, -2.0)" in repr(plate)


@pytest.mark.parametrize("k, v, q, formula, exact", [
    # a gain: cos(√(q/k_x) x) + cos(√(q/k_y) y) solves k_x T_xx + k_y T_yy + qT = 0
    ((1.0, 8.0), (0.0, 0.0), 6.0, "cos(sqrt(6)*x) + cos(sqrt(3/4)*y)",
     lambda p: np.cos(math.sqrt(6) * p[:, 0]) + np.cos(math.sqrt(0.75) * p[:, 1])),
    # a loss with a flow: e^{λx} + e^{μy}, k_x λ² − v_x λ + q = 0 (λ = −1), k_y μ² − v_y μ + q = 0
    ((1.0, 8.0), (3.0, -2.0), -4.0, "exp(-x) + exp(((-2 + sqrt(132))/16)*y)",
     lambda p: np.exp(-p[:, 0]) + np.exp((-2 + math.sqrt(132)) / 16 * p[:, 1])),
])
def test_a_plate_with_a_reaction_matches_its_analytic_field(k, v, q, formula, exact, tmp_path):
    points = np.random.default_rng(6).uniform([0.1, 0.1], [1.9, 0.9], size=(300, 2))
    errors = []
    for grid in (32, 64):
        plate = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 1)), grid=grid,
                          cache_dir=tmp_path, conductivity=k, velocity=v, reaction=q)
        errors.append(np.abs(plate.temperature(points) - exact(points)).max() / np.abs(exact(points)).max())
    assert errors[1] < 1e-3 and errors[0] / errors[1] > 3          # second order
    assert pickle.loads(pickle.dumps(plate)).reaction == q
    assert f"reaction={q:g}" in repr(plate)
    unreacting = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 1)), grid=64,
                           cache_dir=tmp_path, conductivity=k, velocity=v)
    assert unreacting.cache_key != plate.cache_key and "reaction" not in unreacting.cache_key


def test_with_a_gain_the_supremum_is_the_fields_inside():
    """sin(1.2x) sin(1.6y) solves ∇²T + 4T = 0; its maximum, 1 at (π/2.4, π/3.2), is inside the
    plate [0, 2] × [0, 1], above the top edge's data (at most sin 1.6 = 0.9996): no maximum principle."""
    formula = "sin(1.2*x)*sin(1.6*y)"
    plate = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 1)), grid=128, reaction=4.0)
    value, location = plate_supremum(plate)
    assert value == pytest.approx(1.0, abs=2e-4) and value > math.sin(1.6)
    np.testing.assert_allclose(location, (math.pi / 2.4, math.pi / 3.2), atol=0.02)
    assert plate(location) == value


@pytest.mark.parametrize("reaction, conductivity, message", [
    (12.34, (1.0, 1.0), r"params\.reaction: expected a number below 12\.337, the plate's first eigenvalue"),
    (5.0, (1.0, 1.0), None),
    (81.5, (1.0, 8.0), r"below 81\.4242"),       # π²/4 + 8π²
    (81.0, (1.0, 8.0), None),
    ("1", (1.0, 1.0), r"params\.reaction: expected a number, got '1'"),
    (math.nan, (1.0, 1.0), r"params\.reaction: expected a number"),
    (True, (1.0, 1.0), r"params\.reaction: expected a number"),
    # a tensor or a graded plate: below λ_min 5π²/4, λ_min the smallest conductivity (eigenvalue)
    (9.8, [[2.0, 0.5], [0.5, 1.0]], r"below 9\.78193, a lower bound on the plate's first eigenvalue under its "
                                     r"smallest conductivity, 0\.792893 "),         # λ_min = (3 − √2)/2
    (9.7, [[2.0, 0.5], [0.5, 1.0]], None),
    (14.8, [[2.0, 0.0], [0.0, 1.0]], None),               # diagonal: the exact 2π²/4 + π² = 14.804
    (9.8, [["2*(1 + x)", "0.5"], ["0.5", "1 + x"]], r"below 9\.78193"),       # its smallest at x = 0
    (9.7, [["2*(1 + x)", "0.5"], ["0.5", "1 + x"]], None),
    (12.3, "1 + x", None),
    (12.4, "1 + x", r"below 12\.337, a lower bound on the plate's first eigenvalue under its smallest conductivity, 1 "),
])
def test_bad_reaction(reaction, conductivity, message, tmp_path):
    """q at or above λ₁ = Σ k_i π²/L_i² + v_i²/(4k_i) is refused: [0, 2] × [0, 1] at rest, λ₁ = 5π²/4;
    with a tensor or a graded conductivity, q at or above λ_min · 5π²/4, which bounds λ₁ from below."""
    def make():
        return HeatPlate(STEP, bounds=((0, 2), (0, 1)), grid=8, cache_dir=tmp_path, conductivity=conductivity,
                         reaction=reaction)
    if message is None:
        assert make().reaction == reaction
    else:
        with pytest.raises(ProblemError, match=message):
            make()


def test_the_first_eigenvalue_is_where_the_solved_field_resonates(tmp_path):
    """Near λ₁ the field's extreme grows as A/(λ_h − q) + B, λ_h the grid's own eigenvalue: fitted
    from three q below λ₁ = π²/4 + 8π² + 3²/4 + 2²/32 (a flow raises it), λ₁ − λ_h falls to zero at
    second order in the grid."""
    from scipy.optimize import brentq

    from pinnbo.oracles.dirichlet import first_eigenvalue

    k, v = (1.0, 8.0), (3.0, -2.0)
    limit = first_eigenvalue(k, ((0, 2), (0, 1)), v)
    assert limit == pytest.approx(math.pi**2 / 4 + 8 * math.pi**2 + 9 / 4 + 4 / 32, rel=1e-12)
    gaps, offsets = (0.4, 0.2, 0.1), []
    for grid in (64, 128):
        peaks = [np.abs(HeatPlate({"left": "1", "right": "0", "bottom": "0", "top": "0"}, bounds=((0, 2), (0, 1)),
                                  grid=grid, cache_dir=tmp_path, conductivity=k, velocity=v,
                                  reaction=limit - gap).cells).max() for gap in gaps]
        ratio = (peaks[2] - peaks[1]) / (peaks[1] - peaks[0])           # free of A and B

        def mismatch(e):
            return (1 / (gaps[2] - e) - 1 / (gaps[1] - e)) / (1 / (gaps[1] - e) - 1 / (gaps[0] - e)) - ratio
        offsets.append(brentq(mismatch, -0.09, 0.09))                  # λ₁ − λ_h: 0.018, 0.0048
    assert 0 < offsets[1] < 0.01 and offsets[0] / offsets[1] > 3


def laminate_solution(K, v):
    """A solution of ∇·(K∇T) − v·∇T = 0 and its formula: e^{ζ₁} sin ζ₂ + ζ₁ζ₂ in ζ = M⁻¹z, K = MMᵀ,
    harmonic in ζ, without a flow; e^{λ·z} + e^{λ'·z} with λᵀKλ = v·λ (λ = t n, t = v·n / nᵀKn along
    two directions n) with one."""
    if v == (0.0, 0.0):
        (a, b), (c, d) = np.linalg.inv(np.linalg.cholesky(np.array(K))).tolist()
        z1, z2 = f"({a!r}*x + {b!r}*y)", f"({c!r}*x + {d!r}*y)"
        return f"exp({z1})*sin({z2}) + {z1}*{z2}", lambda p: (
            np.exp(a * p[:, 0] + b * p[:, 1]) * np.sin(c * p[:, 0] + d * p[:, 1])
            + (a * p[:, 0] + b * p[:, 1]) * (c * p[:, 0] + d * p[:, 1]))
    rates = [float(np.dot(v, n) / (np.array(n) @ np.array(K) @ np.array(n))) * np.array(n)
             for n in ((1.0, 0.0), (-0.8, 0.6))]
    formula = " + ".join(f"exp({float(r[0])!r}*x + {float(r[1])!r}*y)" for r in rates)
    return formula, lambda p: sum(np.exp(p @ r) for r in rates)


@pytest.mark.parametrize("v", [(0.0, 0.0), (3.0, -2.0)])
def test_a_plate_with_a_conductivity_tensor_matches_its_analytic_field(v, tmp_path):
    """Fibres at 30° to x, four times as conductive along them: second order in the grid, with and
    without a flow, and the diagonal of the same tensor is another field."""
    K = ((3.25, 1.3), (1.3, 1.75))
    formula, exact = laminate_solution(K, v)
    points = np.random.default_rng(5).uniform([0.05, 0.05], [1.95, 0.95], size=(300, 2))
    truth = exact(points)
    errors = []
    for grid in (32, 64):
        plate = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 1)), grid=grid,
                          cache_dir=tmp_path, conductivity=[list(row) for row in K], velocity=v)
        errors.append(np.abs(plate.temperature(points) - truth).max() / np.abs(truth).max())
    assert errors[1] < 3e-4 and errors[0] / errors[1] > 3      # second order: 2.7e-4, 5.8e-5; 7.3e-4, 2.1e-4
    diagonal = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 1)), grid=64, cache_dir=tmp_path,
                         conductivity=(3.25, 1.75), velocity=v)
    assert np.abs(diagonal.temperature(points) - truth).max() / np.abs(truth).max() > 20 * errors[1]
    assert plate.conductivity == K and pickle.loads(pickle.dumps(plate)).conductivity == K
    assert "conductivity=((3.25, 1.3), (1.3, 1.75))" in repr(plate)
    # a diagonal tensor is the plate of its diagonal: the same field, from the same cache entry
    same = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 1)), grid=64, cache_dir=tmp_path,
                     conductivity=[[3.25, 0], [0, 1.75]], velocity=v)
    assert same.conductivity == (3.25, 1.75) and same.cache_key == diagonal.cache_key


@pytest.mark.parametrize("conductivity, why", [
    ([[1.0, 0.5], [0.4, 1.0]], "not symmetric"),
    ([[1.0, 2.0], [2.0, 1.0]], "not positive definite"),
    ([[-1.0, 0.0], [0.0, -1.0]], "not positive definite"),
    ([[1.0, 0.5], [0.5]], "got"),
    ([[1.0, math.nan], [math.nan, 1.0]], "got"),
    ([[1.0, None], [None, 1.0]], "got"),
])
def test_bad_conductivity_tensor(conductivity, why, tmp_path):
    with pytest.raises(ProblemError, match=r"params\.conductivity: expected two positive numbers \[k_x, k_y\] or a "
                                           r"symmetric positive-definite matrix .*" + why):
        HeatPlate(STEP, grid=8, cache_dir=tmp_path, conductivity=conductivity)


def test_a_graded_plate_matches_its_analytic_fields(tmp_path):
    """∇·(k∇T) − v·∇T = 0 for k = eˣ, T = e^{ax} sin y with a² + a = 1, and for k = 1 + x with the flow
    v = (2, 0), T = (1 + x)² + y: second order in the grid; the uniform plate's field is another."""
    a = (math.sqrt(5) - 1) / 2
    cases = [("exp(x)", (0.0, 0.0), f"exp({a!r}*x)*sin(y)", lambda p: np.exp(a * p[:, 0]) * np.sin(p[:, 1])),
             ("1 + x", (2.0, 0.0), "(1 + x)**2 + y", lambda p: (1 + p[:, 0]) ** 2 + p[:, 1])]
    points = np.random.default_rng(6).uniform([0.05, 0.05], [1.95, 2.95], size=(300, 2))
    for k, v, formula, exact in cases:
        truth, errors = exact(points), []
        for grid in (32, 64):
            plate = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 3)), grid=grid,
                              cache_dir=tmp_path, conductivity=k, velocity=v)
            errors.append(np.abs(plate.temperature(points) - truth).max() / np.abs(truth).max())
        assert errors[1] < 5e-4 and errors[0] / errors[1] > 3, (k, errors)   # 2.3e-4, 2.0e-5 (1.0e-3, 7.8e-5 at 32)
        uniform = HeatPlate({e: formula for e in laplace.EDGES}, bounds=((0, 2), (0, 3)), grid=64,
                            cache_dir=tmp_path, velocity=v)
        assert np.abs(uniform.temperature(points) - truth).max() / np.abs(truth).max() > 20 * errors[1]
        assert pickle.loads(pickle.dumps(plate)).conductivity == k and plate.cache_key != uniform.cache_key


def test_a_graded_composite_plate_matches_its_analytic_fields(tmp_path):
    """∇·(K∇T) = 0 for K = eˣ A, A = ((2, 0.5), (0.5, 1)): T = e^{p·z} with pᵀAp + (Ap)_x = 0, p = (−1, ½)
    (1.75 − 1.75, by hand), second order in the grid, the tensor's drift A∇k among the differences; and
    T = x − 4y for K = (1 + x) A, whose residual (A∇T)_x = 2 − 2 = 0, exact."""
    A = ((2.0, 0.5), (0.5, 1.0))
    points = np.random.default_rng(7).uniform([0.05, 0.05], [1.95, 2.95], size=(300, 2))
    truth, errors = np.exp(-points[:, 0] + 0.5 * points[:, 1]), []
    for grid in (32, 64):
        plate = HeatPlate({e: "exp(-x + 0.5*y)" for e in laplace.EDGES}, bounds=((0, 2), (0, 3)), grid=grid,
                          cache_dir=tmp_path, conductivity=[[f"{a}*exp(x)" for a in row] for row in A])
        errors.append(np.abs(plate.temperature(points) - truth).max() / np.abs(truth).max())
    assert errors[1] < 5e-4 and errors[0] / errors[1] > 3, errors
    constant = HeatPlate({e: "exp(-x + 0.5*y)" for e in laplace.EDGES}, bounds=((0, 2), (0, 3)), grid=64,
                         cache_dir=tmp_path, conductivity=[list(row) for row in A])
    assert np.abs(constant.temperature(points) - truth).max() / np.abs(truth).max() > 20 * errors[1]
    linear = HeatPlate({e: "x - 4*y" for e in laplace.EDGES}, bounds=((0, 2), (0, 3)), grid=16, cache_dir=tmp_path,
                       conductivity=[[f"{a}*(1 + x)" for a in row] for row in A])
    assert np.abs(linear.cells - (linear.x_cells[:, None] - 4 * linear.y_cells[None, :])).max() < 1e-9
    again = pickle.loads(pickle.dumps(plate))
    assert again.conductivity == plate.conductivity and again.cache_key == plate.cache_key != constant.cache_key


# ((1 + x)² T')' + 2T = 0 is Euler's equation in s = 1 + x: s^r with r² + r + 2 = 0, so
# T = s^{−1/2} cos(ω ln s), ω = √7/2; a tensor (1 + x)² A with A_xx = 1 gives the same equation for a
# T of x alone (∂_y(K_yx T') = 0), and a constant tensor K_xx T'' + qT = 0 gives cos(√(q/K_xx) x).
OMEGA = math.sqrt(7) / 2
EULER = f"(1 + x)**(-0.5)*cos({OMEGA!r}*log(1 + x))"
EULER_A = [["(1 + x)**2", "0.5*(1 + x)**2"], ["0.5*(1 + x)**2", "0.8*(1 + x)**2"]]


@pytest.mark.parametrize("conductivity, reaction, formula, exact", [
    ("(1 + x)**2", 2.0, EULER, lambda x: (1 + x) ** -0.5 * np.cos(OMEGA * np.log(1 + x))),
    (EULER_A, 2.0, EULER, lambda x: (1 + x) ** -0.5 * np.cos(OMEGA * np.log(1 + x))),
    ([[2.0, 0.5], [0.5, 1.0]], 4.0, "cos(sqrt(2)*x)", lambda x: np.cos(np.sqrt(2) * x)),
])
def test_a_reaction_in_a_graded_or_composite_plate_matches_its_analytic_field(conductivity, reaction, formula, exact,
                                                                             tmp_path):
    points = np.random.default_rng(8).uniform(0.05, 0.95, size=(300, 2))
    truth, errors = exact(points[:, 0]), []
    for grid in (32, 64):
        plate = HeatPlate({"left": "1", "right": formula, "bottom": formula, "top": formula}, bounds=((0, 1), (0, 1)),
                          grid=grid, cache_dir=tmp_path, conductivity=conductivity, reaction=reaction)
        errors.append(np.abs(plate.temperature(points) - truth).max())
    assert errors[1] < 1e-4 and errors[0] / errors[1] > 3, errors
    without = HeatPlate({"left": "1", "right": formula, "bottom": formula, "top": formula}, bounds=((0, 1), (0, 1)),
                        grid=64, cache_dir=tmp_path, conductivity=conductivity)
    assert np.abs(without.temperature(points) - truth).max() > 100 * errors[1]
    assert "reaction" in plate.cache_key and pickle.loads(pickle.dumps(plate)).reaction == reaction


@pytest.mark.parametrize("conductivity, message", [
    ([[1, "x"], ["y", 1]], r"expected a symmetric tensor, got \[0\]\[1\] = 'x' and \[1\]\[0\] = 'y'"),
    ([["1 + x", "1 + x"], ["1 + x", 1]], r"is not finite and positive-definite at \(x, y\) = \(0, 0\)"),
    ([["1/y", 0], [0, 1]], r"is not finite and positive-definite at \(x, y\) = \(0, 0\)"),
    ([["1 + z", 0], [0, 1]], r"params\.conductivity\[0\]\[0\]: .*unknown symbol 'z'"),
])
def test_bad_graded_conductivity_tensor(conductivity, message, tmp_path):
    solves = FIELDS.stats["solves"]
    with pytest.raises(ProblemError, match=message):
        HeatPlate(STEP, bounds=((0, 2), (0, 1)), grid=8, cache_dir=tmp_path, conductivity=conductivity)
    assert FIELDS.stats["solves"] == solves


@pytest.mark.parametrize("conductivity, message", [
    ("x +", r"cannot parse formula 'x \+'"),
    ("z + 1", "unknown symbol 'z'"),
    ("x - 1", r"'x - 1' is -1 at \(x, y\) = \(0, 0\); expected a formula of x and y, finite and positive"),
    ("1/x", r"'1/x' is (inf|nan) at \(x, y\) = \(0, 0\)"),
])
def test_bad_conductivity_formula(conductivity, message, tmp_path):
    with pytest.raises(ProblemError, match=r"params\.conductivity: " + message):
        HeatPlate(STEP, bounds=((0, 2), (0, 1)), grid=8, cache_dir=tmp_path, conductivity=conductivity)


@pytest.mark.parametrize("velocity", [(1.0,), (1.0, math.nan), "11", (False, 1.0), (1.0, None)])
def test_bad_velocity(velocity, tmp_path):
    with pytest.raises(ProblemError, match=r"params\.velocity: expected two numbers"):
        HeatPlate(STEP, grid=8, cache_dir=tmp_path, velocity=velocity)


@pytest.mark.parametrize("conductivity", [(1.0,), (1.0, 0.0), (1.0, -2.0), (1.0, math.inf), {"k": 11}, (True, 1.0),
                                          (1.0, "a")])
def test_bad_conductivity(conductivity, tmp_path):
    with pytest.raises(ProblemError, match=r"params\.conductivity: expected two positive numbers"):
        HeatPlate(STEP, grid=8, cache_dir=tmp_path, conductivity=conductivity)


# -- the temperature gradient (the heat plate's thermal-stress constraint) -------------------------


def analytic_gradient(x, y):
    return np.column_stack([np.exp(x) * np.sin(y) + y, np.exp(x) * np.cos(y) + x])


def gradient_test_points(rng):
    inside = rng.uniform(0, L, size=(4000, 2))
    t = rng.uniform(0, L, 400)
    near = rng.uniform(0, 0.02, 400)  # within a cell of each edge
    near_edges = np.concatenate([np.column_stack([near, t]), np.column_stack([L - near, t]),
                                 np.column_stack([t, near]), np.column_stack([t, L - near])])
    zeros, ends = np.zeros_like(t), np.full_like(t, L)
    on_edges = np.concatenate([np.column_stack([zeros, t]), np.column_stack([ends, t]),
                               np.column_stack([t, zeros]), np.column_stack([t, ends])])
    corners = np.array([[0, 0], [L, 0], [0, L], [L, L]], dtype=float)
    return {"inside": inside, "near edges": near_edges, "on edges": on_edges, "corners": corners}


def test_gradient_matches_the_analytic_gradient(fine, rng):
    scale = np.max(np.linalg.norm(analytic_gradient(np.full(100, L), np.linspace(0, L, 100)), axis=1))
    assert scale == pytest.approx(math.exp(L) + L, rel=1e-3)  # ≈ 541.8 at (2π, 0)
    for where, points in gradient_test_points(rng).items():
        exact = analytic_gradient(points[:, 0], points[:, 1])
        error = np.linalg.norm(fine.gradient(points) - exact, axis=1)
        # measured 7.5e-4 at 256² (the solve's own error dominates), everywhere up to the corners
        assert error.max() / scale < 1.5e-3, where
        norm_error = np.abs(fine.gradient_norm(points) - np.linalg.norm(exact, axis=1))
        assert norm_error.max() / scale < 1.5e-3, where


def test_gradient_is_second_order_in_the_grid(coarse, cache_dir, rng):
    finer = HeatPlate(ANALYTIC, grid=64)
    points = np.concatenate(list(gradient_test_points(rng).values()))
    exact = analytic_gradient(points[:, 0], points[:, 1])
    errors = [np.abs(plate.gradient(points) - exact).max() for plate in (coarse, finer)]
    assert errors[0] / errors[1] > 3.5  # 4 for second order


def test_gradient_queries(step, coarse):
    g = step.gradient((1.0, 2.0))
    assert g.shape == (1, 2) and np.all(np.isfinite(g))
    assert coarse.gradient(np.array([[1.0, 2.0], [3.0, 4.0]])).shape == (2, 2)
    assert coarse.gradient_norm((1.0, 2.0)).shape == (1,)
    # within the edge tolerance: on the edge; beyond it: outside
    np.testing.assert_array_equal(coarse.gradient((-1e-14, 3.0)), coarse.gradient((0.0, 3.0)))
    for bad in ((-1e-6, 3.0), (3.0, L + 1e-6)):
        with pytest.raises(ValueError, match="outside"):
            coarse.gradient(bad)
    with pytest.raises(ValueError):
        coarse.gradient((np.nan, 1.0))
    with pytest.raises(ValueError):
        coarse.gradient(np.zeros((2, 3)))
    # a discontinuous corner has a large gradient (the step data jump by 5 + 2π at (2π, 0))
    assert step.gradient_norm((L, 0.0))[0] > 5 * step.gradient_norm((L / 2, L / 2))[0]


def test_gradient_leaves_the_temperature_untouched(coarse, rng):
    points = rng.uniform(0, L, size=(500, 2))
    before = coarse.temperature(points)
    coarse.gradient(points)
    np.testing.assert_array_equal(coarse.temperature(points), before)


def test_gradient_limited_oracle(coarse, rng):
    oracle = laplace.GradientLimitedPlate(coarse, 100)
    assert oracle.max_gradient == 100.0
    for point in rng.uniform(0, L, size=(20, 2)):
        value, constraints = oracle(point)
        assert value == coarse(point)  # the same temperature, bit for bit
        assert constraints == [pytest.approx(coarse.gradient_norm(point)[0] - 100.0, abs=1e-12)]
        assert isinstance(value, float) and isinstance(constraints[0], float)
    clone = pickle.loads(pickle.dumps(oracle))
    assert clone((1.0, 2.0)) == oracle((1.0, 2.0))
    with pytest.raises(ValueError):
        oracle(np.zeros(3))


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "150", None])
def test_gradient_limit_must_be_positive(coarse, bad):
    with pytest.raises(ProblemError, match=r"params\.max_gradient"):
        laplace.GradientLimitedPlate(coarse, bad)


@pytest.mark.parametrize(("limit", "exact_value", "exact_location"), [
    # max eˣ sin y + xy s.t. |∇T| ≤ G, by SLSQP on the exact functions from 30 starts
    (100.0, 105.87505285, (4.59133339, 1.6550049)),
    (200.0, 206.90160906, (5.29112999, 1.61940714)),
])
def test_constrained_supremum_matches_the_analytic_field(fine, rng, limit, exact_value, exact_location):
    oracle = laplace.GradientLimitedPlate(fine, limit)
    f_star, location = limited_supremum(oracle)
    assert f_star == pytest.approx(exact_value, rel=1e-4)  # measured 5e-5 at 256²
    np.testing.assert_allclose(location, exact_location, atol=5e-3)
    value, (c,) = oracle(location)
    assert value == f_star and -1e-6 * limit < c <= 0  # feasible, on the constraint
    # no feasible point of the interpolated fields beats it
    points = np.concatenate([rng.uniform(0, L, size=(200_000, 2)),
                             np.clip(location + rng.uniform(-0.1, 0.1, size=(200_000, 2)), 0, L)])
    feasible = oracle.constraint(points) <= 0
    assert fine.temperature(points)[feasible].max() <= f_star


def test_loose_limit_gives_the_unconstrained_supremum(step):
    oracle = laplace.GradientLimitedPlate(step, 1e9)
    (value, location), (expected, expected_location) = limited_supremum(oracle, n=101), plate_supremum(step)
    assert value == expected
    np.testing.assert_array_equal(location, expected_location)


def test_impossible_limit_is_a_problem_error(step):
    with pytest.raises(ProblemError, match=r"params\.max_gradient"):
        limited_supremum(laplace.GradientLimitedPlate(step, 1e-9), n=51)
