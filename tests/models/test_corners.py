"""The corners' angle functions: harmonic, 0 and 1 on a corner's two edges and ½ at the corner; a
PDE-GP that adds them to its prior recovers a harmonic function that jumps at a corner, which the
smooth kernel alone cannot, and its posterior's two paths agree."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import sympy as sp
import torch

from pinnbo.models.corners import (EDGE_AXES, EDGE_CURVE, EDGE_SLOPE, FROZEN_REACH, CornerShape, CrossEdgeShape,
                                   EdgeShape, GradedEdgeShape, GradedShape, carries_jumps, corner_angles,
                                   corner_functions, corner_sides, edge_angles, jump_functions, jump_functions_solve,
                                   jump_shape, solves_pde)
from pinnbo.models.pde_gp import PDEGP
from pinnbo.pde import PDE
from pinnbo.problem import Box
from pinnbo.streams import sobol_unit

LOWER = torch.tensor([0.0, 0.0], dtype=torch.float64)
UPPER = torch.tensor([2.0, 3.0], dtype=torch.float64)
WIDTHS = UPPER - LOWER
CORNERS = [(0.0, 0.0), (0.0, 3.0), (2.0, 0.0), (2.0, 3.0)]      # the columns' order
x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACE = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0).linear_form()


def relative_error(model, truth, points: torch.Tensor, over: torch.Tensor) -> float:
    """The RMS of the model's posterior mean less ``truth`` at ``points``, over the spread (standard
    deviation) of ``truth`` at the points ``over``."""
    with torch.no_grad():
        mean, _ = model.mean_and_variance(points)
    return float((mean - truth(points)).pow(2).mean().sqrt()) / float(truth(over).std())


def angles(points: torch.Tensor) -> torch.Tensor:
    return corner_angles(points, LOWER, UPPER)


def test_each_angle_function_is_harmonic_inside_the_box():
    """Its Laplacian by autograd at 50 points inside the box is zero to rounding."""
    unit = 0.05 + 0.9 * torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    points = (LOWER + unit * WIDTHS).requires_grad_(True)
    for j in range(4):
        (gradient,) = torch.autograd.grad(angles(points)[:, j].sum(), points, create_graph=True)
        laplacian = sum(torch.autograd.grad(gradient[:, i].sum(), points, retain_graph=True)[0][:, i] for i in range(2))
        assert float(laplacian.detach().abs().max()) < 1e-12
        assert float(gradient.detach().abs().max()) > 0.1


@pytest.mark.parametrize("a, b, c", [
    ((1.0, 0.0, 10.0), (0.0, 0.0), 0.0),         # a conductivity that differs along the axes
    ((1.0, 0.0, 1.0), (-3.0, 0.0), 0.0),         # heat carried by a flow along x
    ((2.0, 0.0, 0.5), (1.0, -2.0), -4.0),        # both, and a loss
    ((-2.0, 0.0, -0.5), (-1.0, 2.0), 4.0),       # the same operator with the other sign
    ((3.25, 2.6, 1.75), (0.0, 0.0), 0.0),        # a tensor: fibres at 30° to x, 4 times as conductive
    ((1.0, -1.5, 2.0), (-3.0, 1.0), -2.0),       # a tensor, a flow and a loss
    ((-3.25, -2.6, -1.75), (1.0, 0.0), 0.0),     # a tensor with the other sign, a flow
    ((1.0, 0.0, 1.0), (0.0, 0.0), 13.0),         # Helmholtz's: a gain, J₀(kρ), k = √13
    ((2.0, 0.0, 0.5), (1.0, -2.0), 6.0),         # a flow and a gain, μ = 6 − 1/8 − 2 > 0
    ((1.0, -1.5, 2.0), (-3.0, 1.0), 8.0),        # a tensor, a flow and a gain
])
def test_each_corner_function_solves_its_operator_and_jumps_by_one(a, b, c):
    """a_xx f_xx + a_xy f_xy + a_yy f_yy + b_x f_x + b_y f_y + c f by autograd at 50 points inside the
    box is zero to rounding for each corner function of :func:`jump_shape`'s shape, and the angle
    alone does not solve it; each function is 0 on its corner's horizontal edge and tends to 1 along
    its vertical edge at the corner."""
    x_, y_ = sp.symbols("x y")
    u = sp.Function("u")(x_, y_)
    pde = PDE(a[0] * u.diff(x_, 2) + a[1] * u.diff(x_, y_) + a[2] * u.diff(y_, 2) + b[0] * u.diff(x_)
              + b[1] * u.diff(y_) + c * u, rhs=0)
    shape = jump_shape(Box((0.0, 0.0), (2.0, 3.0), ("x", "y")), pde, False)
    unit = 0.05 + 0.9 * torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    points = (LOWER + unit * WIDTHS).requires_grad_(True)

    def residual(functions, j):
        (gradient,) = torch.autograd.grad(functions(points)[:, j].sum(), points, create_graph=True)
        (xx, xy), (_, yy) = (torch.autograd.grad(gradient[:, i].sum(), points, retain_graph=True)[0].unbind(-1)
                             for i in range(2))
        value = functions(points)[:, j]
        return (a[0] * xx + a[1] * xy + a[2] * yy + b[0] * gradient[:, 0] + b[1] * gradient[:, 1]
                + c * value).detach()

    for j in range(4):
        exact = residual(lambda p: corner_functions(p, LOWER, UPPER, shape), j)
        assert float(exact.abs().max()) < 1e-10 * (1 + float(corner_functions(points, LOWER, UPPER, shape).detach().abs().max()))
        assert float(residual(angles, j).abs().max()) > 0.1
    t = torch.linspace(0.01, 0.99, 7, dtype=torch.float64)
    for j, (cx, cy) in enumerate(CORNERS):
        horizontal = torch.stack([LOWER[0] + t * WIDTHS[0], torch.full_like(t, cy)], -1)
        assert torch.equal(corner_functions(horizontal, LOWER, UPPER, shape)[:, j], torch.zeros_like(t))
        beside = torch.tensor([[cx, cy + (1e-9 if cy == 0.0 else -1e-9)]], dtype=torch.float64)
        assert float(corner_functions(beside, LOWER, UPPER, shape)[0, j]) == pytest.approx(1.0, abs=1e-8)
        at = torch.tensor([[cx, cy]], dtype=torch.float64)
        assert float(corner_functions(at, LOWER, UPPER, shape)[0, j]) == 0.5


def test_zero_on_a_corners_horizontal_edge_one_on_its_vertical_edge_one_half_at_the_corner():
    t = torch.linspace(0.01, 0.99, 7, dtype=torch.float64)
    for j, (cx, cy) in enumerate(CORNERS):
        horizontal = torch.stack([LOWER[0] + t * WIDTHS[0], torch.full_like(t, cy)], -1)
        vertical = torch.stack([torch.full_like(t, cx), LOWER[1] + t * WIDTHS[1]], -1)
        assert torch.equal(angles(horizontal)[:, j], torch.zeros_like(t))
        assert torch.equal(angles(vertical)[:, j], torch.ones_like(t))
        corner = torch.tensor([[cx, cy]], dtype=torch.float64, requires_grad=True)
        value = angles(corner)[0, j]
        (gradient,) = torch.autograd.grad(value, corner)
        assert float(value) == 0.5 and torch.equal(gradient, torch.zeros_like(gradient))
    # within the box every value lies in [0, 1]
    inside = LOWER + torch.rand(200, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * WIDTHS
    assert float(angles(inside).min()) >= 0.0 and float(angles(inside).max()) <= 1.0


def plate(unit: torch.Tensor) -> torch.Tensor:
    """e^x sin(y)/3 plus a jump of 4 at the corner (2, 0): 0 along y = 0, 4 along x = 2."""
    p = LOWER + unit * WIDTHS
    return torch.exp(p[:, 0]) * torch.sin(p[:, 1]) / 3 + 4 * angles(p)[:, 2]


@pytest.mark.parametrize("shape, box", [
    (CornerShape(), "plate"),
    (CornerShape(0.8, 0.3, (1.2, -0.2, 0.9), (0.5, -1.0), 0.0, math.inf, 2.0), "plate"),     # a gain, sheared
    ((CornerShape(), CornerShape(decay=1.7, drift=(-2.0, 0.0)), CornerShape(wavenumber=3.1),
      CornerShape(0.8, 0.3, (1.2, -0.2, 0.9), (0.5, -1.0), 0.0, 1.5, 2.0)), "plate"),        # frozen
    (GradedShape(CornerShape(wavenumber=2.0), lambda p: 1 + 3 * p[:, 0], (1.0, 1.0, 7.0, 7.0)), "plate"),
    (EdgeShape(), "box"),
    (EdgeShape((1.0, 2.0, 0.5), (0.3, 0.0, -0.2), (0.0, 0.0, 0.0), (3.5, 2.0, 1.0)), "box"),   # a gain
    (GradedEdgeShape(EdgeShape(), lambda p: 3 + 2 * p[:, 0] + p[:, 1] * p[:, 2], reaction=4.0), "box"),
    (CrossEdgeShape((CornerShape(1.0, 0.5, wavenumber=2.0),) * 3), "box"),
])
def test_centred_functions_are_the_angles_less_one_half_times_their_factors(shape, box):
    """Each centred function is (θ/ω − ½) times the same factor as the angle's own function (0 at
    its corner or edge, −½ and ½ times the factor on its two sides), for every kind of shape: the
    same jumps, the prior's variance shared by the two sides."""
    lower, upper = (LOWER, UPPER) if box == "plate" else (BOX_LOWER, BOX_UPPER)
    unit = 0.05 + 0.9 * torch.rand(100, len(lower), dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    points = lower + unit * (upper - lower)
    plain, centred = corner_functions(points, lower, upper, shape), corner_functions(points, lower, upper, shape,
                                                                                     centred=True)
    angles = corner_sides(points, lower, upper, shape)
    assert float(angles.min()) > 1e-4                         # the factor is the plain function over its angle
    torch.testing.assert_close(centred, plain - 0.5 * plain / angles, rtol=1e-10, atol=1e-12)
    vertices = torch.tensor(list(itertools.product(*zip(lower.tolist(), upper.tolist()))), dtype=torch.float64)
    at = corner_sides(vertices, lower, upper, shape) == 0.5   # each function at its own apex
    assert bool(at.any()) and torch.equal(corner_functions(vertices, lower, upper, shape, centred=True)[at],
                                          torch.zeros(int(at.sum()), dtype=torch.float64))


def test_the_centred_functions_of_a_gain_solve_it_and_jump_by_one():
    """∇²f + 13 f = 0 on the plate: each centred corner function (θ/ω − ½) J₀(kρ) solves it, as the
    angle's does (J₀(kρ) solves it alone), tends to −½ and ½ along its corner's two edges and is 0 at
    the corner."""
    helmholtz = PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T, rhs=0)
    shape = jump_shape(Box((0.0, 0.0), (2.0, 3.0), ("x", "y")), helmholtz, False)
    unit = 0.05 + 0.9 * torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    points = (LOWER + unit * WIDTHS).requires_grad_(True)
    residual = helmholtz.compile()
    for j in range(4):
        values = residual(lambda p: corner_functions(p, LOWER, UPPER, shape, centred=True)[:, j], points)
        assert float(values.detach().abs().max()) < 1e-10
    for j, (cx, cy) in enumerate(CORNERS):
        horizontal = torch.tensor([[cx + (1e-9 if cx == 0.0 else -1e-9), cy]], dtype=torch.float64)
        vertical = torch.tensor([[cx, cy + (1e-9 if cy == 0.0 else -1e-9)]], dtype=torch.float64)
        at = torch.tensor([[cx, cy]], dtype=torch.float64)
        values = [float(corner_functions(p, LOWER, UPPER, shape, centred=True)[0, j])
                  for p in (horizontal, vertical, at)]
        assert values == pytest.approx([-0.5, 0.5, 0.0], abs=1e-8)


def test_a_pde_gp_with_the_angle_functions_follows_a_jump_the_smooth_kernel_cannot():
    """Sixteen values of a harmonic function with a jump at a corner, and ∇²f = 0 at 128 points: with
    the angle functions in its prior the mean is within 2 % of the function's spread (RMS over the
    box), and in the corner's quarter of the box too; the smooth kernel alone is off by more than 5
    times as much there."""
    X = torch.as_tensor(sobol_unit(16, 2, 0, "corners-test"))
    Z = torch.as_tensor(sobol_unit(128, 2, 1, "corners-test"))
    basis = lambda points: corner_angles(points, LOWER, UPPER)  # noqa: E731
    with_angles = PDEGP(X, plate(X), Z, LAPLACE, LOWER, WIDTHS, basis=basis)
    smooth = PDEGP(X, plate(X), Z, LAPLACE, LOWER, WIDTHS)
    test = torch.rand(400, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    near = 0.5 * test + torch.tensor([0.5, 0.0], dtype=torch.float64)       # the corner's quarter
    error = lambda model, points: relative_error(model, plate, points, test)  # noqa: E731
    assert error(with_angles, test) < 0.02 and error(with_angles, near) < 0.02
    assert error(smooth, near) > 5 * error(with_angles, near)


def test_under_a_conductivity_tensor_the_sheared_functions_follow_the_jump_and_the_plain_angles_do_not():
    """f_xx + f_xy + f_yy = 0: (x² − y²)/3 plus a jump of 4 at the corner (2, 0) in the sheared angle,
    sixteen values and the PDE at 128 points. With the sheared functions in its prior the mean is
    within 1 % of the function's spread, near the corner too; with the angles of f_xx + f_yy, or of
    f_xx + f_yy stretched as the tensor's diagonal, neither of which solves the PDE, it is off by
    more than 5 times as much in the corner's quarter of the box."""
    pde = PDE(T.diff(x, 2) + T.diff(x, y) + T.diff(y, 2), rhs=0)
    shape = jump_shape(Box((0.0, 0.0), (2.0, 3.0), ("x", "y")), pde, False)
    assert shape.shear == 0.5 and shape.stretch == pytest.approx(math.sqrt(3) / 2)

    def tensor_plate(unit):
        p = LOWER + unit * WIDTHS
        return (p[:, 0] ** 2 - p[:, 1] ** 2) / 3 + 4 * corner_functions(p, LOWER, UPPER, shape)[:, 2]

    X = torch.as_tensor(sobol_unit(16, 2, 0, "corners-test"))
    Z = torch.as_tensor(sobol_unit(128, 2, 1, "corners-test"))
    test = torch.rand(400, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    near = 0.5 * test + torch.tensor([0.5, 0.0], dtype=torch.float64)       # the corner's quarter
    spread = float(tensor_plate(test).std())

    def error(basis, points):
        model = PDEGP(X, tensor_plate(X), Z, pde.linear_form(), LOWER, WIDTHS, basis=basis)
        with torch.no_grad():
            mean, _ = model.mean_and_variance(points)
        return float((mean - tensor_plate(points)).pow(2).mean().sqrt()) / spread

    sheared = lambda points: corner_functions(points, LOWER, UPPER, shape)  # noqa: E731
    assert error(sheared, test) < 0.01 and error(sheared, near) < 0.01
    for plain in (angles, lambda points: corner_angles(points, LOWER, UPPER, shape.stretch)):
        assert error(plain, near) > 5 * error(sheared, near)


def test_the_posterior_of_several_points_agrees_with_the_mean_and_variance():
    """BoTorch's joint posterior (the angle functions' prior covariance added) and the model's own
    pointwise mean and variance are the same numbers."""
    X = torch.as_tensor(sobol_unit(10, 2, 3, "corners-test"))
    model = PDEGP(X, plate(X), torch.as_tensor(sobol_unit(64, 2, 4, "corners-test")), LAPLACE, LOWER, WIDTHS,
                  basis=lambda points: corner_angles(points, LOWER, UPPER))
    new = torch.rand(5, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        mean, variance = model.mean_and_variance(new)
        joint = model.posterior(new[None])
        batched = model.posterior(new[:, None, :])
    torch.testing.assert_close(joint.mean.reshape(-1), mean, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(torch.diagonal(joint.covariance_matrix[0]), variance, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(batched.variance.reshape(-1), variance, rtol=1e-6, atol=1e-9)
    assert math.isfinite(model.log_likelihood)


def test_the_angle_functions_are_carried_where_the_data_jump_and_they_solve_the_pde():
    box = Box((0.0, 0.0), (1.0, 1.0), ("x", "y"))
    laplace = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
    assert carries_jumps(box, laplace, False)
    assert carries_jumps(box, PDE(-2 * T.diff(x, 2) - 2 * T.diff(y, 2), rhs=sp.sin(x)), False)     # Poisson
    assert not carries_jumps(box, laplace, True) and not carries_jumps(box, laplace, None)
    assert jump_shape(box, laplace, False) == CornerShape()
    assert jump_shape(box, PDE(T.diff(x, 2) + 4 * T.diff(y, 2), rhs=0), False).stretch == 0.5      # anisotropic
    flipped = jump_shape(Box((0.0, 0.0), (1.0, 1.0), ("y", "x")),
                         PDE(T.diff(x, 2) + 4 * T.diff(y, 2) - 8 * T.diff(y), rhs=0), False)
    assert flipped.stretch == 2.0 and flipped.drift == (1.0, 0.0)              # the domain's order, not the PDE's
    assert jump_shape(box, PDE(T.diff(x, 2) + T.diff(y, 2) - 3 * T.diff(x) - 4 * T, rhs=0), False) == \
        CornerShape(1.0, 0.0, (1.0, 0.0, 1.0), (1.5, 0.0), 2.5)                # κ² = 9/4 + 4
    tensor = jump_shape(box, PDE(2 * T.diff(x, 2) + 2 * T.diff(x, y) + T.diff(y, 2) - 2 * T.diff(y), rhs=0), False)
    assert tensor == CornerShape(1.0, 1.0, (1.0, -1.0, 2.0), (-1.0, 2.0), math.sqrt(2))  # det A = 1, μ = −¼bᵀA⁻¹b
    assert jump_shape(box, PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T, rhs=0), False) == \
        CornerShape(wavenumber=math.sqrt(13))                                  # Helmholtz's: J₀(kρ), k² = μ
    assert not carries_jumps(box, PDE(T.diff(x, 2) - T.diff(y, 2), rhs=0), False)                  # hyperbolic
    assert carries_jumps(box, PDE(T.diff(x, 2) + T.diff(x, y) + T.diff(y, 2), rhs=0), False)       # a tensor
    assert not carries_jumps(box, PDE(T.diff(x, 2) + 2 * T.diff(x, y) + T.diff(y, 2), rhs=0), False)  # parabolic
    assert not carries_jumps(box, PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0, boundary=[(x, 0, 0)]), False)
    u = sp.Function("u")(x)        # an ODE in x with y a parameter: its "Laplacian" is u'' alone
    assert not carries_jumps(box, PDE(u.diff(x, 2), rhs=0).for_variables(("x", "y")), False)
    assert not carries_jumps(box, None, False)


GRADED = PDE(((1 + 3 * x) * T.diff(x)).diff(x) + ((1 + 3 * x) * T.diff(y)).diff(y), rhs=0)     # ∇·(k∇T), k = 1 + 3x
CARRIED = PDE(GRADED.lhs[0] + 3 * T.diff(x), rhs=0)          # (1 + 3x)ΔT + 6T_x: ∇·(k∇T) + 3T_x
FLOWING = PDE(CARRIED.lhs[0] + 3 * x * T.diff(y), rhs=0)      # a flow (3, 3x) that varies: no divergence form


def test_a_graded_conductor_gets_laplaces_functions_divided_by_the_root_of_its_conductivity():
    """∇·((1 + 3x)∇T): the plain angles times √(k_c/k), k_c the conductivity at each corner; the
    operator on them is −√k_c θ Δ√k = (9/4) √k_c θ (1 + 3x)^{−3/2}, by hand, divided by the fit's
    norm of the coefficients (k, k and 3), bounded up to the corners."""
    box = Box((0.0, 0.0), (2.0, 1.0), ("x", "y"))
    graded = jump_shape(box, GRADED, False)
    assert isinstance(graded, GradedShape) and not solves_pde(graded)
    assert graded.shape == CornerShape() and graded.at_corners == (1.0, 1.0, 7.0, 7.0)
    assert jump_shape(box, GRADED.negated(), False).at_corners == (-1.0, -1.0, -7.0, -7.0)
    lower, upper = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.tensor([2.0, 1.0], dtype=torch.float64)
    points = lower + torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) * (upper - lower)
    k = 1 + 3 * points[:, 0]
    k_c = torch.tensor([1.0, 1.0, 7.0, 7.0], dtype=torch.float64)
    plain = corner_angles(points, lower, upper)
    torch.testing.assert_close(corner_functions(points, lower, upper, graded), plain * torch.sqrt(k_c / k[:, None]))
    torch.testing.assert_close(corner_sides(points, lower, upper, graded), plain, rtol=0, atol=0)
    X = torch.as_tensor(sobol_unit(6, 2, 0, "corners-test"))
    Z = torch.as_tensor(sobol_unit(64, 2, 1, "corners-test"))
    model = PDEGP(X, X[:, 0], Z, GRADED.linear_form(), lower, upper - lower,
                  basis=lambda p: corner_functions(p, lower, upper, graded), basis_solves=False)
    P = lower + Z * (upper - lower)
    k = 1 + 3 * P[:, 0]
    expected = 2.25 * torch.sqrt(k_c) * corner_angles(P, lower, upper) * k[:, None] ** -1.5
    torch.testing.assert_close(model.basis_operator, expected / torch.sqrt(2 * k**2 + 9)[:, None], rtol=1e-9, atol=1e-12)


def test_a_graded_conductor_carried_by_a_flow_gets_the_flows_functions_over_its_conductivity_at_each_corner():
    """∇·((1 + 3x)∇T) + 3T_x: each corner's function is the flow's of ΔT + 3T_x with its drift and
    decay divided by k_c (the principal part frozen there), times √(k_c/k); the operator on it stays
    bounded as the corner nears, where on the graded functions at rest it grows as 1/r."""
    box = Box((0.0, 0.0), (2.0, 1.0), ("x", "y"))
    shape = jump_shape(box, CARRIED, False)
    assert isinstance(shape, GradedShape) and not solves_pde(shape) and shape.at_corners == (1.0, 1.0, 7.0, 7.0)
    flow = CornerShape(drift=(-1.5, 0.0), decay=1.5)                 # ΔT + 3T_x: α = −3/2, κ = 3/2
    assert shape.shape == tuple(dataclasses.replace(flow, drift=(-1.5 / k_c, 0.0), decay=1.5 / k_c)
                                for k_c in (1.0, 1.0, 7.0, 7.0))
    lower, upper = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.tensor([2.0, 1.0], dtype=torch.float64)
    points = lower + torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) * (upper - lower)
    k_c = torch.tensor([1.0, 1.0, 7.0, 7.0], dtype=torch.float64)
    frozen = torch.cat([corner_functions(points, lower, upper, one)[:, [j]] for j, one in enumerate(shape.shape)], -1)
    functions = corner_functions(points, lower, upper, shape)
    torch.testing.assert_close(functions, frozen * torch.sqrt(k_c / (1 + 3 * points[:, :1])))
    for j in range(4):                               # one corner's column alone
        torch.testing.assert_close(corner_functions(points, lower, upper, shape, j), functions[:, [j]])
    at_rest = jump_shape(box, GRADED, False)
    residual = CARRIED.compile()
    for r in (1e-1, 1e-2, 1e-3):                    # by the corner (2, 1), column 3
        angle = torch.linspace(0.1, 1.4, 5, dtype=torch.float64)
        near = torch.stack([2 - r * torch.cos(angle), 1 - r * torch.sin(angle)], -1)
        carried = residual(lambda p: corner_functions(p, lower, upper, shape)[:, 3], near).abs().max()
        rest = residual(lambda p: corner_functions(p, lower, upper, at_rest)[:, 3], near).abs().max()
        assert float(carried) < 5 and float(rest) > 0.2 / r


def test_where_the_coefficients_vary_otherwise_each_corner_gets_the_operator_frozen_there():
    """(1 + 3x)ΔT + 6T_x + 3x T_y, no divergence form: at x = 0 the frozen operator is Δ + 6∂x (drift
    −3, κ = 3), at x = 2 it is 7Δ + 6∂x + 6∂y (drift (−3/7, −3/7), κ² = −μ = ¼ · 72/7), each kept
    within FROZEN_REACH/(|α|_A + κ), |α|_A = √(αᵀAα); the functions do not solve the PDE, and each
    column is its own shape's."""
    box = Box((0.0, 0.0), (2.0, 1.0), ("x", "y"))
    shapes = jump_shape(box, FLOWING, False)
    assert isinstance(shapes, tuple) and len(shapes) == 4 and not solves_pde(shapes)
    assert shapes[0] == shapes[1] == CornerShape(1.0, 0.0, (1.0, 0.0, 1.0), (-3.0, 0.0), 3.0, FROZEN_REACH / 6)
    assert shapes[2] == shapes[3]
    assert shapes[2].metric == pytest.approx((1 / 7, 0.0, 1 / 7)) and shapes[2].drift == pytest.approx((-3 / 7, -3 / 7))
    assert shapes[2].decay == pytest.approx(3 * math.sqrt(2 / 7))
    assert shapes[2].reach == pytest.approx(FROZEN_REACH / (6 * math.sqrt(2 / 7)))
    lower, upper = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.tensor([2.0, 1.0], dtype=torch.float64)
    points = lower + torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(7)) * (upper - lower)
    values, sides = corner_functions(points, lower, upper, shapes), corner_sides(points, lower, upper, shapes)
    for k, shape in enumerate(shapes):
        torch.testing.assert_close(values[:, k], corner_functions(points, lower, upper, shape)[:, k], rtol=0, atol=0)
        torch.testing.assert_close(sides[:, k], corner_angles(points, lower, upper, shape.stretch, shape.shear)[:, k],
                                   rtol=0, atol=0)
    # e^{α·d} I₀(κρ) e^{−ρ²/(2 reach²)}: the reach's factor, on top of the unlimited frozen function
    unlimited = corner_functions(points, lower, upper, dataclasses.replace(shapes[0], reach=math.inf))[:, 0]
    rho2 = points[:, 0] ** 2 + points[:, 1] ** 2
    torch.testing.assert_close(values[:, 0], unlimited * torch.exp(-0.5 * rho2 / shapes[0].reach ** 2))
    assert not carries_jumps(box, PDE(((x - 1) * T.diff(x)).diff(x) + T.diff(y, 2), rhs=0), False)  # not elliptic at x = 1


def test_the_operator_of_a_basis_is_its_hand_derived_value_at_the_collocation_points():
    """L = (1 + 3x)Δ + 3∂x on x² and xy: 2 + 12x and 3y, divided by the equation's norm at each
    point, √(2(1 + 3x)² + 9) (the fit's terms are normalised); the corner functions of Laplace's
    equation give L ≈ 0."""
    lower, upper = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.tensor([2.0, 1.0], dtype=torch.float64)
    X = torch.as_tensor(sobol_unit(6, 2, 0, "corners-test"))
    Z = torch.as_tensor(sobol_unit(32, 2, 1, "corners-test"))
    polynomials = lambda p: torch.stack([p[:, 0] ** 2, p[:, 0] * p[:, 1]], -1)  # noqa: E731
    model = PDEGP(X, X[:, 0], Z, GRADED.linear_form(), lower, upper - lower, basis=polynomials, basis_solves=False)
    P = lower + Z * (upper - lower)
    norm = torch.sqrt(2 * (1 + 3 * P[:, 0]) ** 2 + 9)
    torch.testing.assert_close(model.basis_operator, torch.stack([2 + 12 * P[:, 0], 3 * P[:, 1]], -1) / norm[:, None],
                               rtol=1e-12, atol=1e-12)
    reused = PDEGP(X, X[:, 1], Z, GRADED.linear_form(), lower, upper - lower, basis=polynomials, basis_solves=False,
                   basis_operator=model.basis_operator)
    assert reused.basis_operator is model.basis_operator
    laplace = PDEGP(X, X[:, 0], Z, LAPLACE, LOWER, WIDTHS, basis=angles, basis_solves=False)
    assert float(laplace.basis_operator.abs().max()) < 1e-9


def test_on_a_graded_plate_the_corner_functions_follow_the_jump(tmp_path):
    """A graded plate, ∇·((1 + 3x)∇T) = 0 on [0, 2] × [0, 1], whose edges disagree at three corners
    (the solve on 128² cells the truth): 24 values and the PDE at 128 points. With its corner
    functions and their operator in the PDE's blocks the mean is within 2 % of the field's spread,
    in the quarter of the hot corner (0, 1) too; the smooth kernel is off by more than 3 times as
    much there (4.8), and the same functions taken as solutions by more than 1.5 times as much
    overall (2.4)."""
    from pinnbo.oracles.heat_plate import HeatPlate

    lower, upper = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.tensor([2.0, 1.0], dtype=torch.float64)
    widths = upper - lower
    boundary = {"left": "2*y + sin(3*y)", "right": "1 + y", "bottom": "x*exp(-x)", "top": "2.5 - x/3 + 0.2*cos(5*x)"}
    field = HeatPlate(boundary, bounds=((0, 2), (0, 1)), grid=128, conductivity="1 + 3*x", cache_dir=tmp_path)

    def truth(unit):
        return torch.as_tensor(field.temperature((lower + unit * widths).numpy()))

    shape = jump_shape(Box((0.0, 0.0), (2.0, 1.0), ("x", "y")), GRADED, False)
    X = torch.as_tensor(sobol_unit(24, 2, 0, "corners-test"))
    Z = torch.as_tensor(sobol_unit(128, 2, 1, "corners-test"))
    test = torch.rand(400, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).clamp(1e-3, 1 - 1e-3)
    hot = 0.5 * test + torch.tensor([0.0, 0.5], dtype=torch.float64)
    spread = float(truth(test).std())

    def error(points, **basis):
        model = PDEGP(X, truth(X), Z, GRADED.linear_form(), lower, widths, **basis)
        with torch.no_grad():
            mean, _ = model.mean_and_variance(points)
        return float((mean - truth(points)).pow(2).mean().sqrt()) / spread

    graded = dict(basis=lambda p: corner_functions(p, lower, upper, shape), basis_solves=False)
    assert error(test, **graded) < 0.02 and error(hot, **graded) < 0.02      # 0.017, 0.016
    assert error(hot) > 3 * error(hot, **graded)
    assert error(test, basis=graded["basis"]) > 1.5 * error(test, **graded)


BOX_LOWER = torch.tensor([0.0, -1.0, 0.5], dtype=torch.float64)
BOX_UPPER = torch.tensor([1.0, 1.0, 2.0], dtype=torch.float64)
z = sp.Symbol("z")
U = sp.Function("U")(x, y, z)


@pytest.mark.parametrize("scales", [(1.0, 1.0, 1.0), (1.0, 2.0, 0.5)])
def test_each_edge_function_solves_its_operator_inside_the_box(scales):
    """Σ A_ii ∂²f/∂z_i² by autograd, A_ii = scales², of the 12 functions at 50 points: zero to rounding."""
    unit = 0.05 + 0.9 * torch.rand(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    points = (BOX_LOWER + unit * (BOX_UPPER - BOX_LOWER)).requires_grad_(True)
    functions = corner_functions(points, BOX_LOWER, BOX_UPPER, EdgeShape(scales))
    assert functions.shape == (50, 12)
    for j in range(12):
        (gradient,) = torch.autograd.grad(functions[:, j].sum(), points, create_graph=True)
        operator = sum(scales[i] ** 2 * torch.autograd.grad(gradient[:, i].sum(), points, retain_graph=True)[0][:, i]
                       for i in range(3))
        assert float(operator.abs().max()) < 1e-10


def test_an_edge_function_is_one_and_zero_on_its_two_faces_and_one_half_on_its_edge():
    """The edge along z at (x₁, y₀), the 11th (EDGE_AXES: z's edges last, the angle from x's offset
    to y's): 1 on the face x = x₁, 0 on the face y = y₀, ½ on the edge with a zero gradient there,
    and the angle atan2(y − y₀, x₁ − x)/(π/2) between."""
    along = torch.tensor([0.5, 1.1, 2.0], dtype=torch.float64)
    on_x_face = torch.stack([torch.ones(3).double(), torch.tensor([-0.2, 0.4, 0.9]).double(), along], -1)
    on_y_face = torch.stack([torch.tensor([0.1, 0.5, 0.7]).double(), -torch.ones(3).double(), along], -1)
    on_edge = torch.stack([torch.ones(3).double(), -torch.ones(3).double(), along], -1)
    k = 10                                    # z's edges: 8..11, (x₀, y₀), (x₀, y₁), (x₁, y₀), (x₁, y₁)
    assert torch.equal(edge_angles(on_x_face, BOX_LOWER, BOX_UPPER)[:, k], torch.ones(3, dtype=torch.float64))
    assert torch.equal(edge_angles(on_y_face, BOX_LOWER, BOX_UPPER)[:, k], torch.zeros(3, dtype=torch.float64))
    torch.testing.assert_close(edge_angles(on_edge, BOX_LOWER, BOX_UPPER)[:, k], torch.full((3,), 0.5).double())
    inside = torch.tensor([[0.7, -0.4, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(edge_angles(inside, BOX_LOWER, BOX_UPPER)[0, k],
                               torch.tensor(math.atan2(0.6, 0.3) / (math.pi / 2), dtype=torch.float64))
    edge = on_edge.clone().requires_grad_(True)
    (gradient,) = torch.autograd.grad(edge_angles(edge, BOX_LOWER, BOX_UPPER)[:, k].sum(), edge)
    assert torch.equal(gradient, torch.zeros_like(gradient))
    assert corner_sides(on_edge, BOX_LOWER, BOX_UPPER, EdgeShape()).shape == (3, 12)


def test_a_box_carries_the_edge_functions_of_a_diagonal_operator_and_no_other():
    box = Box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), ("x", "y", "z"))
    laplace = PDE(U.diff(x, 2) + U.diff(y, 2) + U.diff(z, 2), rhs=0)
    assert jump_shape(box, laplace, False) == EdgeShape() and solves_pde(EdgeShape())
    assert not carries_jumps(box, laplace, True)
    reordered = Box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), ("z", "x", "y"))
    assert jump_shape(reordered, PDE(-U.diff(x, 2) - 4 * U.diff(y, 2) - 9 * U.diff(z, 2), rhs=1), False) == \
        EdgeShape((3.0, 1.0, 2.0))                                        # the domain's order; −L alike
    assert jump_shape(box, PDE(laplace.lhs[0] + 4 * U, rhs=0), False) == \
        EdgeShape(wavenumber=(2.0, 2.0, 2.0))                             # Helmholtz's: J₀(2ρ)
    assert carries_jumps(box, PDE(laplace.lhs[0] + U.diff(x, y), rhs=0), False)               # a tensor
    assert not carries_jumps(box, PDE(((1 + x) * U.diff(x)).diff(x) + U.diff(y, 2) + U.diff(z, 2), rhs=0), False)
    four = Box((0.0,) * 4, (1.0,) * 4, ("x", "y", "z", "t"))
    V = sp.Function("V")(x, y, z, sp.Symbol("t"))
    assert not carries_jumps(four, PDE(V.diff(x, 2) + V.diff(y, 2) + V.diff(z, 2) + V.diff(sp.Symbol("t"), 2),
                                       rhs=0), False)


def test_a_flow_and_a_loss_in_a_box_get_the_corner_functions_of_the_part_across_each_edge():
    """−L, L = ∇²f + 3 f_zz − 2 f_x + 6 f_y + f_z / 2 − f in the domain's order z, x, y: A = (4, 1, 1),
    α = −b/(2A) = (−1/16, 1, −3), and across the edge along each axis κ² = Σ b_i²/(4 A_ii) − c over
    the other two (along z: 1 + 9 + 1)."""
    box = Box((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), ("z", "x", "y"))
    operator = U.diff(x, 2) + U.diff(y, 2) + 4 * U.diff(z, 2) - 2 * U.diff(x) + 6 * U.diff(y) + U.diff(z) / 2 - U
    shape = jump_shape(box, PDE(-operator, rhs=0), False)
    b, A = (0.5, -2.0, 6.0), (4.0, 1.0, 1.0)          # z, x, y
    squared = [sum(b[i] ** 2 / (4 * A[i]) for i in range(3) if i != along) + 1.0 for along in range(3)]
    assert shape == EdgeShape((2.0, 1.0, 1.0), (-1 / 16, 1.0, -3.0), tuple(math.sqrt(k) for k in squared))
    assert solves_pde(shape)
    gain = jump_shape(box, PDE(operator + 20 * U, rhs=0), False)           # κ² − 20 < 0: J₀ across each edge
    assert gain.decay == (0.0, 0.0, 0.0)
    assert gain.wavenumber == pytest.approx(tuple(math.sqrt(20 - k) for k in squared))


@pytest.mark.parametrize("velocity, loss", [((2.0, -1.5, 1.0), 0.0), ((0.0, 3.0, 0.0), 1.5), ((0.0, 0.0, 0.0), 2.0),
                                            ((0.0, 0.0, 0.0), -4.0), ((2.0, -1.5, 1.0), -9.0)])   # gains: J₀
def test_each_edge_function_of_a_flow_or_a_loss_solves_it_and_jumps_by_one_at_its_edge(velocity, loss):
    """∇²f − v·∇f − λ f by autograd, of the 12 functions at 50 points: zero to rounding; on an
    edge ½, beside it on its two faces 1 and 0 (the jump is 1 all along the edge)."""
    operator = U.diff(x, 2) + U.diff(y, 2) + U.diff(z, 2) - loss * U
    for v, s in zip(velocity, (x, y, z)):
        operator = operator - v * U.diff(s)
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    shape = jump_shape(box, PDE(operator, rhs=0), False)
    unit = 0.05 + 0.9 * torch.rand(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    points = (BOX_LOWER + unit * (BOX_UPPER - BOX_LOWER)).requires_grad_(True)
    functions = corner_functions(points, BOX_LOWER, BOX_UPPER, shape)
    v = torch.tensor(velocity, dtype=torch.float64)
    for j in range(12):
        (gradient,) = torch.autograd.grad(functions[:, j].sum(), points, create_graph=True)
        laplacian = sum(torch.autograd.grad(gradient[:, i].sum(), points, retain_graph=True)[0][:, i] for i in range(3))
        residual = laplacian - gradient @ v - loss * functions[:, j]
        assert float(residual.abs().max()) < 1e-10 * float(functions[:, j].abs().max())
    along = torch.tensor([0.5, 1.1, 2.0], dtype=torch.float64)
    edge = torch.stack([torch.ones(3).double(), -torch.ones(3).double(), along], -1)      # x₁, y₀: the 11th
    k, step = 10, 1e-7
    beside_x = edge - torch.tensor([0.0, -step, 0.0], dtype=torch.float64)                 # on x = x₁
    beside_y = edge - torch.tensor([step, 0.0, 0.0], dtype=torch.float64)                  # on y = y₀
    at = lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, k]  # noqa: E731
    torch.testing.assert_close(at(edge), torch.full((3,), 0.5).double())
    torch.testing.assert_close(at(beside_x), torch.ones(3).double(), atol=1e-5, rtol=0)
    torch.testing.assert_close(at(beside_y), torch.zeros(3).double(), atol=1e-12, rtol=0)


def test_a_tensor_in_a_box_gets_the_corner_functions_of_its_part_across_each_edge():
    """Σ K_ij ∂²f/∂z_i∂z_j − 2 f_x + f_z (the domain's order y, z, x): each of the 12 functions solves
    it, by autograd at 50 points, is ½ on its edge and jumps by 1 across it; the edges along x take
    the corner shape of the (y, z) part, K_yy = 1.5, K_yz = 0.3, K_zz = 1."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("y", "z", "x"))
    K = {(x, x): 2.0, (y, y): 1.5, (z, z): 1.0, (x, y): 0.8, (x, z): 0.4, (y, z): 0.3}
    operator = sum(K[(s, s)] * U.diff(s, 2) for s in (x, y, z)) + sum(
        2 * K[pair] * U.diff(*pair) for pair in ((x, y), (x, z), (y, z))) - 2 * U.diff(x) + U.diff(z)
    shape = jump_shape(box, PDE(operator, rhs=0), False)
    assert isinstance(shape, CrossEdgeShape) and solves_pde(shape)
    # the edges along the box's first axis, y, lie across (z, x): K_zz = 1, K_zx = 0.4, K_xx = 2
    assert shape.shapes[0].shear == pytest.approx(0.4 / 2.0) and shape.shapes[0].stretch == pytest.approx(
        math.sqrt(1.0 * 2.0 - 0.16) / 2.0)
    unit = 0.05 + 0.9 * torch.rand(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    points = (BOX_LOWER + unit * (BOX_UPPER - BOX_LOWER)).requires_grad_(True)
    residual = PDE(operator, rhs=0).for_variables(("y", "z", "x")).compile()
    for j in range(12):
        values = residual(lambda p, j=j: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, j], points)
        assert float(values.abs().max()) < 1e-9
    # along the box's third axis (x) at (y₁, z₀), the 11th: ½ on it, 1 beside it on y = y₁, 0 on z = z₀
    edge = torch.tensor([[1.0, -1.0, 0.7], [1.0, -1.0, 1.9]], dtype=torch.float64)
    at = lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, 10]  # noqa: E731
    torch.testing.assert_close(at(edge), torch.full((2,), 0.5).double())
    torch.testing.assert_close(at(edge + torch.tensor([0.0, 1e-7, 0.0]).double()), torch.ones(2).double(), atol=1e-6, rtol=0)
    torch.testing.assert_close(at(edge - torch.tensor([1e-7, 0.0, 0.0]).double()), torch.zeros(2).double(), atol=1e-6, rtol=0)
    assert corner_sides(edge, BOX_LOWER, BOX_UPPER, shape).shape == (2, 12)
    # without the flow the twelve sheared angles go through each operation together: the same
    # functions as each edge direction's four corner functions
    still = jump_shape(box, PDE(operator + 2 * U.diff(x) - U.diff(z), rhs=0), False)
    inside = points.detach()
    together = corner_functions(inside, BOX_LOWER, BOX_UPPER, still)
    apart = torch.cat([corner_functions(inside[:, [a, b]], BOX_LOWER[[a, b]], BOX_UPPER[[a, b]], still.shapes[c])
                       for a, b, c in EDGE_AXES], -1)
    torch.testing.assert_close(together, apart, atol=1e-14, rtol=0)
    torch.testing.assert_close(corner_sides(inside, BOX_LOWER, BOX_UPPER, still), apart, atol=1e-14, rtol=0)
    # with the flow, and with a loss or a gain besides, too
    for extra in (0, -0.7 * U, 0.9 * U):
        carried = jump_shape(box, PDE(operator + extra, rhs=0), False)
        apart = torch.cat([corner_functions(inside[:, [a, b]], BOX_LOWER[[a, b]], BOX_UPPER[[a, b]], carried.shapes[c])
                           for a, b, c in EDGE_AXES], -1)
        torch.testing.assert_close(corner_functions(inside, BOX_LOWER, BOX_UPPER, carried), apart, atol=1e-14, rtol=0)


def bounded_by_the_edge(residual, shape, unbounded, j: int) -> None:
    """The operator on ``shape``'s edge function j (along z at (x₁, y₀)) stays under 5 at 10⁻¹,
    10⁻² and 10⁻³ from its edge, where on ``unbounded``'s it exceeds 0.2/r."""
    for r in (1e-1, 1e-2, 1e-3):
        angle = torch.linspace(0.1, 1.4, 5, dtype=torch.float64)
        points = torch.stack([BOX_UPPER[0] - r * torch.cos(angle), BOX_LOWER[1] + r * torch.sin(angle),
                              torch.full((5,), 1.3, dtype=torch.float64)], -1)
        near = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, j], points).abs().max()
        other = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, unbounded)[:, j], points).abs().max()
        assert float(near) < 5 and float(other) > 0.2 / r


def test_a_graded_box_gets_the_edge_functions_divided_by_the_root_of_its_conductivity():
    """∇·(k∇f), k = 3 + 2x + yz: each edge function is the angle times √(k(z_e)/k(z)), z_e the edge's
    point nearest z, so it jumps by 1 all along its edge, and the operator on it stays bounded as
    the edge nears (Liouville's transformation), where on the plain angle it grows as 1/r."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    k = 3 + 2 * x + y * z
    graded = PDE(sum((k * U.diff(s)).diff(s) for s in (x, y, z)), rhs=0)
    shape = jump_shape(box, graded, False)
    assert isinstance(shape, GradedEdgeShape) and shape.shape == EdgeShape() and not solves_pde(shape)
    conductivity = lambda p: 3 + 2 * p[:, 0] + p[:, 1] * p[:, 2]  # noqa: E731
    j = 10                                           # along z at (x₁, y₀)
    bounded_by_the_edge(graded.compile(), shape, EdgeShape(), j)
    edge = torch.tensor([[1.0, -1.0, 0.7], [1.0, -1.0, 1.9]], dtype=torch.float64)
    beside_x, beside_y = edge + torch.tensor([0.0, 1e-7, 0.0]).double(), edge - torch.tensor([1e-7, 0.0, 0.0]).double()
    at = lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, j]  # noqa: E731
    torch.testing.assert_close(at(edge), torch.full((2,), 0.5).double())
    torch.testing.assert_close(at(beside_x) - at(beside_y), torch.ones(2).double(), atol=1e-6, rtol=0)
    inside = torch.tensor([[0.4, 0.2, 1.0]], dtype=torch.float64)
    nearest = torch.tensor([[1.0, -1.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(at(inside), edge_angles(inside, BOX_LOWER, BOX_UPPER)[:, j]
                               * torch.sqrt(conductivity(nearest) / conductivity(inside)))
    assert jump_shape(box, PDE(sum((k * U.diff(s)).diff(s) for s in (x, y)) + 4 * U.diff(z, 2), rhs=0), False) is None


def test_four_frozen_shapes_together_give_each_corners_own_function_and_gradient():
    """The four columns of a tuple of shapes go through each tensor operation together, a term a
    corner's shape lacks entering as its neutral value: each column is its own shape's function,
    and so is its gradient, with a shear, a stretch, a decay, a wavenumber, a drift and a reach
    each held by one corner only (the last bit may differ: torch's vectorised exp and Bessel
    functions round a lane as its neighbours do)."""
    shapes = (CornerShape(),
              CornerShape(0.8, 0.3, (1.2, -0.2, 0.9), (0.5, -1.0), 0.0, 1.5, 2.0),
              CornerShape(1.0, 0.0, (1.0, 0.0, 1.0), (-2.0, 0.0), 1.7),
              CornerShape(1.3, -0.4, (0.7, 0.1, 1.1), (0.0, 0.8), 0.0, math.inf, 3.1))
    lower, upper = torch.tensor([-1.0, 0.5], dtype=torch.float64), torch.tensor([2.0, 1.5], dtype=torch.float64)
    unit = torch.rand(200, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    corners = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.4], [1e-12, 1.0]],
                           dtype=torch.float64)
    points = (lower + torch.cat([unit, corners]) * (upper - lower)).requires_grad_(True)
    together = corner_functions(points, lower, upper, shapes)
    assert together.shape == (206, 4)
    for k, shape in enumerate(shapes):
        own = corner_functions(points, lower, upper, shape)[:, k]
        torch.testing.assert_close(together[:, k], own, rtol=1e-15, atol=1e-15)
        gradient, = torch.autograd.grad(together[:, k].sum(), points, retain_graph=True)
        own_gradient, = torch.autograd.grad(own.sum(), points)
        torch.testing.assert_close(gradient, own_gradient, rtol=1e-13, atol=1e-13)
    assert together[200:204].diag().tolist() == [0.5] * 4       # each corner's own: ½, its factors 1 there


def test_a_graded_box_under_a_flow_gets_the_flows_functions_frozen_at_each_edges_nearest_point():
    """∇·(k∇f) − v·∇f, k = 3 + 2x + yz: each edge function is the flow's, its drift and decay
    divided by k(z_e), times √(k(z_e)/k(z)), so it jumps by 1 all along its edge; the operator on it
    stays bounded as the edge nears, where on the graded functions at rest it grows as 1/r. The
    negated PDE (a maximised objective's) gets the same functions."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    k, v = 3 + 2 * x + y * z, (2.0, -1.5, 1.0)
    carried = PDE(sum((k * U.diff(s)).diff(s) - w * U.diff(s) for s, w in zip((x, y, z), v)), rhs=0)
    shape = jump_shape(box, carried, False)
    assert isinstance(shape, GradedEdgeShape) and not solves_pde(shape)
    kappa = [math.sqrt(sum(w**2 / 4 for i, w in enumerate(v) if i != along)) for along in range(3)]
    assert shape.shape == EdgeShape((1.0, 1.0, 1.0), (1.0, -0.75, 0.5), tuple(kappa))
    at_rest = jump_shape(box, PDE(sum((k * U.diff(s)).diff(s) for s in (x, y, z)), rhs=0), False)
    j = 10                                           # along z at (x₁, y₀)
    bounded_by_the_edge(carried.compile(), shape, at_rest, j)
    at = lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, j]  # noqa: E731
    edge = torch.tensor([[1.0, -1.0, 0.7], [1.0, -1.0, 1.9]], dtype=torch.float64)
    beside_x, beside_y = edge + torch.tensor([0.0, 1e-7, 0.0]).double(), edge - torch.tensor([1e-7, 0.0, 0.0]).double()
    torch.testing.assert_close(at(edge), torch.full((2,), 0.5).double())
    torch.testing.assert_close(at(beside_x) - at(beside_y), torch.ones(2).double(), atol=1e-6, rtol=0)
    # by hand at (0.4, 0.2, 1.5): the edge's point (1, −1, 1.5), k_e = 3.5, k = 4.1; offsets (−0.6, 1.2)
    inside = torch.tensor([[0.4, 0.2, 1.5]], dtype=torch.float64)
    k_e, k_z, (dx, dy) = 3.5, 4.1, (-0.6, 1.2)
    factor = math.exp((1.0 * dx - 0.75 * dy) / k_e) * float(torch.special.i0(torch.tensor(kappa[2] * math.hypot(dx, dy) / k_e)))
    torch.testing.assert_close(at(inside), edge_angles(inside, BOX_LOWER, BOX_UPPER)[:, j] * factor * math.sqrt(k_e / k_z))
    negated = jump_shape(box, carried.negated(), False)
    torch.testing.assert_close(corner_functions(inside, BOX_LOWER, BOX_UPPER, negated),
                               corner_functions(inside, BOX_LOWER, BOX_UPPER, shape))


def test_a_graded_tensor_in_a_box_gets_the_sheared_functions_divided_by_the_root_of_its_conductivity():
    """∇·(k K ∇f), k = 3 + 2x + yz, K with mixed derivatives: each edge function is the sheared
    angle of K's part across its edge times √(k(m_e)/k(z)), m_e the edge's midpoint; the operator
    on it stays bounded as the edge nears, on every edge, where on the sheared angle alone it grows
    as 1/r."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    k, K = 3 + 2 * x + y * z, ((2.0, 0.6, 0.3), (0.6, 1.0, 0.2), (0.3, 0.2, 1.5))
    symbols = (x, y, z)
    graded = PDE(sum((k * sum(K[i][j] * U.diff(symbols[j]) for j in range(3))).diff(symbols[i]) for i in range(3)), rhs=0)
    shape = jump_shape(box, graded, False)
    constant = jump_shape(box, PDE(sum(K[i][j] * U.diff(symbols[i], symbols[j]) for i in range(3) for j in range(3)),
                                   rhs=0), False)
    assert isinstance(shape, GradedEdgeShape) and isinstance(shape.shape, CrossEdgeShape) and not solves_pde(shape)
    residual = graded.compile()
    j = 10                                           # along z at (x₁, y₀), sheared by K_xy
    for r in (1e-1, 1e-2, 1e-3):
        angle = torch.linspace(0.1, 1.4, 5, dtype=torch.float64)
        edges = [(a, b, c, i, side) for a, b, c in EDGE_AXES for i in (0, 1) for side in (0, 1)]
        for e, (a, b, c, i, side) in enumerate(edges):                      # 5 points by each edge
            points = torch.full((5, 3), 0.0, dtype=torch.float64)
            points[:, c] = 0.3 * BOX_LOWER[c] + 0.7 * BOX_UPPER[c]
            points[:, a] = BOX_LOWER[a] + r * torch.cos(angle) if i == 0 else BOX_UPPER[a] - r * torch.cos(angle)
            points[:, b] = BOX_LOWER[b] + r * torch.sin(angle) if side == 0 else BOX_UPPER[b] - r * torch.sin(angle)
            near = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, e], points).abs().max()
            assert float(near) < 5, (e, r)
        points = torch.stack([BOX_UPPER[0] - r * torch.cos(angle), BOX_LOWER[1] + r * torch.sin(angle),
                              torch.full((5,), 1.3, dtype=torch.float64)], -1)
        sheared = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, constant)[:, j], points).abs().max()
        assert float(sheared) > 0.2 / r
    inside = torch.tensor([[0.4, 0.2, 1.5]], dtype=torch.float64)          # the edge's midpoint (1, −1, 1.25)
    torch.testing.assert_close(corner_functions(inside, BOX_LOWER, BOX_UPPER, shape)[:, j],
                               corner_functions(inside, BOX_LOWER, BOX_UPPER, constant)[:, j] * math.sqrt(3.75 / 4.1))


def test_a_graded_tensor_under_a_flow_gets_the_flows_sheared_functions_frozen_along_each_edge():
    """∇·(k K ∇f) − v·∇f, k = 3 + 2x + yz, K with mixed derivatives: each edge function is the
    corner function of the flow's part across its edge with its drift and decay divided by k(z_e),
    z_e the edge's point nearest z, times √(k(m_e)/k(z)), m_e its midpoint. The operator on it
    stays bounded as each edge nears, at three points along it, where on the graded tensor's
    functions at rest it grows as 1/r; by hand at one point; it jumps by 1 across its edge."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    k, K, v = 3 + 2 * x + y * z, ((2.0, 0.6, 0.3), (0.6, 1.0, 0.2), (0.3, 0.2, 1.5)), (2.0, -1.5, 1.0)
    symbols = (x, y, z)
    graded = sum((k * sum(K[i][j] * U.diff(symbols[j]) for j in range(3))).diff(symbols[i]) for i in range(3))
    carried = PDE(graded - sum(w * U.diff(s) for w, s in zip(v, symbols)), rhs=0)
    shape, at_rest = jump_shape(box, carried, False), jump_shape(box, PDE(graded, rhs=0), False)
    assert isinstance(shape, GradedEdgeShape) and isinstance(shape.shape, CrossEdgeShape) and not solves_pde(shape)
    residual = carried.compile()
    angle = torch.linspace(0.1, 1.4, 5, dtype=torch.float64)
    edges = [(a, b, c, i, side) for a, b, c in EDGE_AXES for i in (0, 1) for side in (0, 1)]
    for r in (1e-1, 1e-2, 1e-3):
        for e, (a, b, c, i, side) in enumerate(edges):
            for t in (0.1, 0.5, 0.9):                                        # 5 points by each edge, three places
                points = torch.full((5, 3), 0.0, dtype=torch.float64)
                points[:, c] = (1 - t) * BOX_LOWER[c] + t * BOX_UPPER[c]
                points[:, a] = BOX_LOWER[a] + r * torch.cos(angle) if i == 0 else BOX_UPPER[a] - r * torch.cos(angle)
                points[:, b] = BOX_LOWER[b] + r * torch.sin(angle) if side == 0 else BOX_UPPER[b] - r * torch.sin(angle)
                near = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, e], points).abs().max()
                rest = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, at_rest)[:, e], points).abs().max()
                assert float(near) < 6 and float(rest) > 0.5 / r, (e, t, r)
    # by hand along z at (x₁, y₀), the 11th, at (0.4, 0.2, 1.5): the edge's point (1, −1, 1.5), k_e = 3.5,
    # its midpoint (1, −1, 1.25), k_m = 3.75, k = 4.1; offsets (−0.6, 1.2) across it in (x, y). The
    # divergence form takes A with A_xx = 1 (pinnbo.pde.PDE.divergence_form), so its k is K_xx = 2 times these.
    part = shape.shape.shapes[2]
    inside = torch.tensor([[0.4, 0.2, 1.5]], dtype=torch.float64)
    assert float(shape.conductivity(inside)) == pytest.approx(2 * 4.1)
    (m_xx, m_xy, m_yy), (a_x, a_y), (dx, dy) = part.metric, part.drift, (-0.6, 1.2)
    rho = math.sqrt(m_xx * dx**2 + 2 * m_xy * dx * dy + m_yy * dy**2)
    factor = math.exp((a_x * dx + a_y * dy) / 7.0) * float(torch.special.i0(torch.tensor(part.decay * rho / 7.0)))
    angles = corner_functions(inside, BOX_LOWER, BOX_UPPER, at_rest.shape)[:, 10]
    torch.testing.assert_close(corner_functions(inside, BOX_LOWER, BOX_UPPER, shape)[:, 10],
                               angles * factor * math.sqrt(3.75 / 4.1))
    edge = torch.tensor([[1.0, -1.0, 0.7], [1.0, -1.0, 1.9]], dtype=torch.float64)
    beside_x, beside_y = edge + torch.tensor([0.0, 1e-7, 0.0]).double(), edge - torch.tensor([1e-7, 0.0, 0.0]).double()
    on = lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, 10]  # noqa: E731
    jump = torch.sqrt(3.75 / (3 + 2 * edge[:, 0] + edge[:, 1] * edge[:, 2]))
    torch.testing.assert_close(on(beside_x) - on(beside_y), jump, atol=1e-5, rtol=0)


def near_edge(e: int, r: float, t: float = 0.3) -> torch.Tensor:
    """Five points at r from edge e (EDGE_AXES' order), a fraction t along it."""
    a, b, c = EDGE_AXES[e // 4]
    i, side = divmod(e % 4, 2)
    angle = torch.linspace(0.1, 1.4, 5, dtype=torch.float64)
    points = torch.zeros((5, 3), dtype=torch.float64)
    points[:, c] = (1 - t) * BOX_LOWER[c] + t * BOX_UPPER[c]
    points[:, a] = BOX_LOWER[a] + r * torch.cos(angle) if i == 0 else BOX_UPPER[a] - r * torch.cos(angle)
    points[:, b] = BOX_LOWER[b] + r * torch.sin(angle) if side == 0 else BOX_UPPER[b] - r * torch.sin(angle)
    return points


def test_a_reaction_in_a_graded_box_is_frozen_along_each_edge():
    """∇·(k∇f) + qf: the part across an edge frozen there, over k(z_e), is Δ + q/k(z_e), whose
    corner function is the angle times J₀(√(q/k(z_e)) ρ). With k = 3 + z the edges along z see k
    unchanged across them (k(z_e) = k(z)), so the operator on their functions vanishes as the edge
    nears (O(ρ)), where on the graded functions at rest it is qθ; a loss (q < 0) gets I₀; with a
    flow the frozen κ² = κ_b²/k² − q/k changes sign over the box and each point takes its own
    Bessel function, the operator bounded by every edge and the gradient finite everywhere."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    along_z = 3 + z
    rest = PDE(sum((along_z * U.diff(s)).diff(s) for s in (x, y, z)), rhs=0)
    gain = PDE(rest.lhs[0] + 6 * U, rhs=0)
    shape, at_rest = jump_shape(box, gain, False), jump_shape(box, rest, False)
    assert isinstance(shape, GradedEdgeShape) and shape.reaction == 6.0 and shape.shape == EdgeShape()
    assert not solves_pde(shape) and at_rest.reaction == 0.0
    residual = gain.compile()
    for e in (8, 9, 10, 11):                                          # the edges along z
        points = near_edge(e, 1e-3)
        near = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, e], points).abs().max()
        other = residual(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, at_rest)[:, e], points).abs().max()
        assert float(near) < 0.02 and float(other) > 0.5, (e, near, other)
    # by hand at (0.4, 0.2, 1.5), the 11th (along z at (x₁, y₀)): k_e = k = 4.5, offsets (−0.6, 1.2)
    inside = torch.tensor([[0.4, 0.2, 1.5]], dtype=torch.float64)
    wave = math.sqrt(6 / 4.5) * math.hypot(0.6, 1.2)
    torch.testing.assert_close(corner_functions(inside, BOX_LOWER, BOX_UPPER, shape)[:, 10],
                               edge_angles(inside, BOX_LOWER, BOX_UPPER)[:, 10]
                               * float(torch.special.bessel_j0(torch.tensor(wave))))
    loss = jump_shape(box, PDE(rest.lhs[0] - 6 * U, rhs=0), False)
    torch.testing.assert_close(corner_functions(inside, BOX_LOWER, BOX_UPPER, loss)[:, 10],
                               edge_angles(inside, BOX_LOWER, BOX_UPPER)[:, 10]
                               * float(torch.special.i0(torch.tensor(wave))))
    # a flow and a gain: κ² = |v|²/(4k²) − q/k, k = 3 + 2x + yz in [1, 5.5]: both signs on the edges
    k, v = 3 + 2 * x + y * z, (6.0, -4.0, 3.0)
    both = PDE(sum((k * U.diff(s)).diff(s) - w * U.diff(s) for s, w in zip((x, y, z), v)) + 3 * U, rhs=0)
    mixed = jump_shape(box, both, False)
    assert isinstance(mixed, GradedEdgeShape) and mixed.reaction == 3.0
    compiled = both.compile()
    signs = set()
    for e in range(12):
        for t in (0.1, 0.9):
            points = near_edge(e, 1e-3, t)
            edge_k = 3 + 2 * points[:, 0].round() + points[:, 1].round() * points[:, 2]
            signs |= {bool(s) for s in (sum(w**2 for i, w in enumerate(v) if i != EDGE_AXES[e // 4][2]) / 4
                                        / edge_k**2 - 3 / edge_k >= 0)}
            near = compiled(lambda p: corner_functions(p, BOX_LOWER, BOX_UPPER, mixed)[:, e], points).abs().max()
            assert float(near) < 10, (e, t, near)
    assert signs == {True, False}
    points = (BOX_LOWER + torch.rand(200, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
              * (BOX_UPPER - BOX_LOWER)).requires_grad_(True)
    corner_functions(points, BOX_LOWER, BOX_UPPER, mixed).sum().backward()
    assert torch.isfinite(points.grad).all()


def test_a_reaction_in_a_graded_plate_gets_the_operator_frozen_at_each_corner():
    """∇·((1 + 3x)∇T) + 5T: each corner's function is that of k_c Δ + 3∂x + 5, the operator frozen
    there (drift −3/(2k_c), μ = 5 − 9/(4k_c) > 0 with ρ² = |d|²/k_c: J₀), kept within its reach; the
    operator on it stays bounded as the corner nears."""
    box = Box((0.0, 0.0), (2.0, 1.0), ("x", "y"))
    gain = PDE(GRADED.lhs[0] + 5 * T, rhs=0)
    shapes = jump_shape(box, gain, False)
    assert isinstance(shapes, tuple) and not solves_pde(shapes)
    for shape, k_c in zip(shapes, (1.0, 1.0, 7.0, 7.0)):
        assert shape.drift == pytest.approx((-1.5 / k_c, 0.0)) and shape.decay == 0.0
        assert shape.wavenumber == pytest.approx(math.sqrt(5 - 9 / (4 * k_c)))
        assert shape.reach == pytest.approx(FROZEN_REACH / (1.5 / math.sqrt(k_c)))
    lower, upper = torch.tensor([0.0, 0.0], dtype=torch.float64), torch.tensor([2.0, 1.0], dtype=torch.float64)
    residual = gain.compile()
    angle = torch.linspace(0.1, 1.4, 5, dtype=torch.float64)
    for r in (1e-1, 1e-2, 1e-3):                     # by the corners (0, 1) and (2, 1), columns 1 and 3
        for column, (x_c, sign) in ((1, (0.0, 1.0)), (3, (2.0, -1.0))):
            near = torch.stack([x_c + sign * r * torch.cos(angle), 1 - r * torch.sin(angle)], -1)
            value = residual(lambda p: corner_functions(p, lower, upper, shapes)[:, column], near).abs().max()
            assert float(value) < 10, (column, r, value)


def test_a_pde_gp_with_the_edge_functions_follows_jumps_along_the_edges():
    """A harmonic function of three variables, x² − z² plus jumps of 3 and −1 along two edges; 60
    values and ∇²f = 0 at 128 points: with the edge functions the mean is within 1 % of the spread
    (RMS over the box, and in the quarter by the first edge), the smooth kernel more than 20 times
    further off there."""
    lower, upper = torch.zeros(3, dtype=torch.float64), torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)

    def field(unit):
        points = lower + unit * (upper - lower)
        angles = edge_angles(points, lower, upper)
        return points[:, 0] ** 2 - points[:, 2] ** 2 + 3 * angles[:, 3] - angles[:, 8]

    laplace = PDE(U.diff(x, 2) + U.diff(y, 2) + U.diff(z, 2), rhs=0).linear_form()
    X = torch.as_tensor(sobol_unit(60, 3, 0, "edges-test"))
    Z = torch.as_tensor(sobol_unit(128, 3, 1, "edges-test"))
    with_edges = PDEGP(X, field(X), Z, laplace, lower, upper - lower,
                       basis=lambda points: corner_functions(points, lower, upper, EdgeShape()))
    smooth = PDEGP(X, field(X), Z, laplace, lower, upper - lower)
    test = torch.rand(400, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    near = test * torch.tensor([1.0, 0.5, 0.5], dtype=torch.float64) + torch.tensor([0.0, 0.5, 0.5],
                                                                                      dtype=torch.float64)
    error = lambda model, unit: relative_error(model, field, unit, test)  # noqa: E731
    assert error(with_edges, near) < 0.01 and error(with_edges, test) < 0.01
    assert error(smooth, near) > 20 * error(with_edges, near)


def test_the_bessel_function_of_a_gain_has_its_hand_derived_derivatives():
    """J₀' = −J₁ and J₀'' = −(J₀ − J₁/x), −½ at 0, by autograd against torch's own J₀ and J₁ (whose
    own autograd is missing), and gradcheck's finite differences of both orders."""
    from pinnbo.models.corners import _bessel_j0

    points = torch.tensor([0.0, 1e-8, 0.3, 1.0, 2.404825557695773, 7.0, -2.0], dtype=torch.float64,
                          requires_grad=True)
    (first,) = torch.autograd.grad(_bessel_j0(points).sum(), points, create_graph=True)
    (second,) = torch.autograd.grad(first.sum(), points)
    values = points.detach()
    j0, j1 = torch.special.bessel_j0(values), torch.special.bessel_j1(values)
    torch.testing.assert_close(first.detach(), -j1, rtol=1e-12, atol=1e-15)
    expected = torch.where(values.abs() < 1e-6, torch.full_like(values, -0.5), -(j0 - j1 / values))
    torch.testing.assert_close(second, expected, rtol=1e-10, atol=1e-12)
    assert torch.autograd.gradcheck(_bessel_j0, (points,))
    assert torch.autograd.gradgradcheck(_bessel_j0, (points,))


def test_the_angles_keep_a_gradient_a_hair_from_their_apex():
    """Offsets below 10⁻¹⁵⁴ square to a subnormal whose reciprocal, in atan2's gradient, overflows:
    the acquisition's search stepped to x = 6.2 × 10⁻¹⁵⁵ on the box's edge x = 0, z = 1 and its
    gradient turned NaN. Such a point is the apex (½, a zero gradient), every function's gradient
    stays finite, and a point 10⁻¹⁵⁰ off keeps its own angle."""
    hair = torch.tensor([[6.19e-155, 0.999, 1.0], [1e-160, 0.5, 1.0 - 1e-160]], dtype=torch.float64)
    box = (BOX_LOWER.new_zeros(3), BOX_LOWER.new_ones(3))
    for shape in (EdgeShape(), EdgeShape(wavenumber=(3.5, 3.5, 3.5)), EdgeShape(decay=(2.0, 2.0, 2.0)),
                  CrossEdgeShape((CornerShape(1.0, 0.5), CornerShape(1.0, 0.5), CornerShape(1.0, 0.5)))):
        points = hair.clone().requires_grad_(True)
        values = corner_functions(points, *box, shape)
        (gradient,) = torch.autograd.grad(values.sum(), points)
        assert torch.isfinite(gradient).all() and torch.isfinite(values).all()
        assert values[:, 5].tolist() == [0.5, 0.5]      # about the edge x = 0, z = 1 (EDGE_AXES' 6th)
    plate = torch.tensor([[1e-156, 3.0 - 1e-157], [1e-150, 3.0]], dtype=torch.float64, requires_grad=True)
    for shape in (CornerShape(), CornerShape(wavenumber=2.0), CornerShape(1.0, 0.5)):
        values = corner_functions(plate, LOWER, UPPER, shape)
        (gradient,) = torch.autograd.grad(values.sum(), plate)
        assert torch.isfinite(gradient).all() and float(values[0, 1]) == 0.5
    assert float(corner_angles(plate, LOWER, UPPER)[1, 1]) == 0.0   # on the top edge, 10⁻¹⁵⁰ from (0, 3)


@pytest.mark.parametrize("conductivity, velocity, loss", [((1.0, 4.0, 0.25), (0.0, 0.0, 0.0), 0.0),
                                                         ((1.0, 1.0, 1.0), (0.0, 0.0, 0.0), 2.0),
                                                         ((1.0, 1.0, 1.0), (0.0, 0.0, 0.0), -4.0),
                                                         ((1.0, 1.0, 1.0), (2.0, -1.5, 1.0), 0.5),
                                                         ((2.0, 1.0, 0.5), (0.0, 0.0, 3.0), 0.0)])
def test_each_edge_slope_solves_a_constant_operator_and_runs_from_minus_to_plus_edge_slope(conductivity, velocity,
                                                                                           loss):
    """The slopes (columns 12–23 of :func:`jump_functions`) are the edge functions f times
    g = EDGE_SLOPE (2h(s) − 1), s the position along the edge. Under L = Σ k_i ∂²/∂z_i² − v·∇ − λ,
    L(f g) = g L f + f (k_s g'' − v_s g') as f does not vary along its edge: zero to rounding by
    autograd at 50 points, with h = s without a flow along the edge and h = (e^{μs} − 1)/(e^{μ} − 1),
    μ = v_s L_s/k_s, with one. On the face where the z edge at (x₁, y₀)'s function is 1 the slope is
    −EDGE_SLOPE and EDGE_SLOPE at the edge's two ends and −EDGE_SLOPE tanh(μ/4) at its midpoint."""
    operator = sum(k * U.diff(s, 2) for k, s in zip(conductivity, (x, y, z))) - loss * U
    operator = operator - sum(v * U.diff(s) for v, s in zip(velocity, (x, y, z)))
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    shape = jump_shape(box, PDE(operator, rhs=0), False)
    assert isinstance(shape, EdgeShape)
    unit = 0.05 + 0.9 * torch.rand(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    points = (BOX_LOWER + unit * (BOX_UPPER - BOX_LOWER)).requires_grad_(True)
    functions = jump_functions(points, BOX_LOWER, BOX_UPPER, shape)
    assert functions.shape == (50, 36)
    torch.testing.assert_close(functions[:, :12], corner_functions(points, BOX_LOWER, BOX_UPPER, shape))
    for j in range(12, 24):
        (gradient,) = torch.autograd.grad(functions[:, j].sum(), points, create_graph=True)
        second = [torch.autograd.grad(gradient[:, i].sum(), points, retain_graph=True)[0][:, i] for i in range(3)]
        residual = sum(conductivity[i] * second[i] - velocity[i] * gradient[:, i] for i in range(3)) - \
            loss * functions[:, j]
        assert float(residual.detach().abs().max()) < 1e-10 * float(functions[:, j - 12].detach().abs().max())
    along = torch.tensor([0.5, 1.25, 2.0], dtype=torch.float64)
    on_x_face = torch.stack([torch.ones(3).double(), torch.full((3,), 0.4).double(), along], -1)
    slopes = jump_functions(on_x_face, BOX_LOWER, BOX_UPPER, shape)[:, 12 + 10]
    factor = corner_functions(on_x_face, BOX_LOWER, BOX_UPPER, shape)[:, 10]
    mu = velocity[2] * 1.5 / conductivity[2]
    torch.testing.assert_close(slopes / factor, EDGE_SLOPE * torch.tensor([-1.0, -math.tanh(mu / 4), 1.0],
                                                                          dtype=torch.float64))


def test_a_mixed_derivative_with_an_edges_coordinate_acts_on_its_slope_and_leaves_it_to_the_covariance():
    """Under Σ K_ij ∂²/∂z_i∂z_j with K_xz = 0.4, K_yz = 0.3 and K_xy = 0.8, an edge along z's
    function f is the sheared angle of the (x, y) part, which solves that part and does not vary
    along z, so on the slope f g, g = EDGE_SLOPE (2s − 1), the operator leaves the mixed terms
    2 (K_xz f_x + K_yz f_y) g' alone, g' = 2 EDGE_SLOPE/L_z (by autograd at 50 points, to rounding):
    :func:`jump_functions_solve` is false, and the model puts those values into its covariance. A
    plate has no slopes."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    K = {(x, x): 2.0, (y, y): 1.5, (z, z): 1.0, (x, y): 0.8, (x, z): 0.4, (y, z): 0.3}
    operator = sum(K[(s, s)] * U.diff(s, 2) for s in (x, y, z)) + sum(
        2 * K[pair] * U.diff(*pair) for pair in ((x, y), (x, z), (y, z)))
    shape = jump_shape(box, PDE(operator, rhs=0), False)
    assert isinstance(shape, CrossEdgeShape) and solves_pde(shape) and not jump_functions_solve(shape)
    unit = 0.05 + 0.9 * torch.rand(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(8))
    points = (BOX_LOWER + unit * (BOX_UPPER - BOX_LOWER)).requires_grad_(True)
    residual = PDE(operator, rhs=0).compile()
    slope = 2 * EDGE_SLOPE / float(BOX_UPPER[2] - BOX_LOWER[2])
    for j in range(8, 12):                                                  # the edges along z
        values = residual(lambda p, j=j: jump_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, 12 + j], points)
        (gradient,) = torch.autograd.grad(corner_functions(points, BOX_LOWER, BOX_UPPER, shape)[:, j].sum(), points)
        expected = 2 * (0.4 * gradient[:, 0] + 0.3 * gradient[:, 1]) * slope
        assert float(expected.abs().max()) > 0.01
        torch.testing.assert_close(values.detach().reshape(-1), expected, atol=1e-9, rtol=1e-9)
    plate = torch.rand(5, 2, dtype=torch.float64)
    assert torch.equal(jump_functions(plate, LOWER, UPPER, CornerShape()), corner_functions(plate, LOWER, UPPER))


def test_with_the_slopes_a_pde_gp_follows_a_jump_that_varies_along_its_edge():
    """x² − z² plus a jump along one edge that runs from 1 to 5 along it, harmonic (θ times a
    linear function of the position along the edge); 60 values and ∇²f = 0 at 128 points: with the
    slopes the mean is within 0.1 % of the spread by the edge, with the edge functions alone more
    than ten times further off."""
    lower, upper = torch.zeros(3, dtype=torch.float64), torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)

    def field(unit):
        points = lower + unit * (upper - lower)
        return points[:, 0] ** 2 - points[:, 2] ** 2 + (1 + 4 * unit[:, 0]) * edge_angles(points, lower, upper)[:, 3]

    errors = errors_by_an_edge(field, lower, upper, {True: 24, False: 12})
    assert errors[True] < 0.001 and errors[False] > 10 * errors[True]


def errors_by_an_edge(field, lower: torch.Tensor, upper: torch.Tensor, columns: dict) -> dict:
    """{key: the relative error (:func:`relative_error`) in the quarter of the box by the edge
    y = 2, z = 1 of a PDE-GP with the first ``columns[key]`` of :func:`jump_functions` in its prior},
    each fitted to ``field``'s values at 60 points and ∇²f = 0 at 128; beyond the slopes' 24 columns
    the functions do not solve the PDE, and the model takes their operator's values."""
    laplace = PDE(U.diff(x, 2) + U.diff(y, 2) + U.diff(z, 2), rhs=0).linear_form()
    X = torch.as_tensor(sobol_unit(60, 3, 0, "edges-test"))
    Z = torch.as_tensor(sobol_unit(128, 3, 1, "edges-test"))
    test = torch.rand(400, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    near = test * torch.tensor([1.0, 0.5, 0.5], dtype=torch.float64) + torch.tensor([0.0, 0.5, 0.5],
                                                                                      dtype=torch.float64)
    errors = {}
    for key, count in columns.items():
        model = PDEGP(X, field(X), Z, laplace, lower, upper - lower, basis_solves=count <= 24,
                      basis=lambda points, count=count: jump_functions(points, lower, upper, EdgeShape())[:, :count])
        errors[key] = relative_error(model, field, near, test)
    return errors


def test_each_edge_curvature_is_the_edge_function_times_edge_curve_p2_and_leaves_laplaces_operator_a_constant():
    """The curvatures (columns 24–35 of :func:`jump_functions`) are the edge functions f times
    EDGE_CURVE P₂(s), P₂(s) = 6s² − 6s + 1, s the position along the edge: EDGE_CURVE f at the edge's
    two ends, −EDGE_CURVE/2 f at its midpoint. f does not vary along its edge and is harmonic, so
    ∇²(f P₂) = f P₂'' = 12 f/L² (L the edge's length), by autograd at 50 points: no operator is
    annihilated, so a box's functions never solve the PDE and the model puts those values into its
    covariance."""
    box = Box(tuple(BOX_LOWER.tolist()), tuple(BOX_UPPER.tolist()), ("x", "y", "z"))
    laplace = U.diff(x, 2) + U.diff(y, 2) + U.diff(z, 2)
    shape = jump_shape(box, PDE(laplace, rhs=0), False)
    assert isinstance(shape, EdgeShape) and solves_pde(shape) and not jump_functions_solve(shape)
    unit = 0.05 + 0.9 * torch.rand(50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    points = (BOX_LOWER + unit * (BOX_UPPER - BOX_LOWER)).requires_grad_(True)
    residual = PDE(laplace, rhs=0).compile()
    functions = corner_functions(points, BOX_LOWER, BOX_UPPER, shape).detach()
    lengths = (BOX_UPPER - BOX_LOWER)[[c for _, _, c in EDGE_AXES for _ in range(4)]]
    for j in range(12):
        values = residual(lambda p, j=j: jump_functions(p, BOX_LOWER, BOX_UPPER, shape)[:, 24 + j], points)
        expected = 12 * EDGE_CURVE * functions[:, j] / lengths[j] ** 2
        assert float(expected.abs().max()) > 0.1
        torch.testing.assert_close(values.detach().reshape(-1), expected, atol=1e-9, rtol=1e-9)
    along = torch.tensor([0.5, 1.25, 2.0], dtype=torch.float64)           # the edges along z run 0.5 to 2
    on_x_face = torch.stack([torch.ones(3).double(), torch.full((3,), 0.4).double(), along], -1)
    curvatures = jump_functions(on_x_face, BOX_LOWER, BOX_UPPER, shape)[:, 24 + 10]
    factor = corner_functions(on_x_face, BOX_LOWER, BOX_UPPER, shape)[:, 10]
    torch.testing.assert_close(curvatures / factor, EDGE_CURVE * torch.tensor([1.0, -0.5, 1.0], dtype=torch.float64))


def test_with_the_curvatures_a_pde_gp_follows_a_jump_that_bends_along_its_edge():
    """x² − z² plus a jump along one edge that runs from 2 at its ends to 1 at its midpoint, harmonic
    ((1 + 4(s − ½)² − 2ρ²) θ, ρ the distance from the edge: ∇²(ρ²θ) = 4θ); 60 values and ∇²f = 0 at
    128 points: with the curvatures the mean is within 3 % of the spread by the edge, with the
    slopes alone more than 2.5 times further off (the smooth part takes the −2ρ²θ the curvature's
    function leaves)."""
    lower, upper = torch.zeros(3, dtype=torch.float64), torch.tensor([1.0, 2.0, 1.0], dtype=torch.float64)

    def field(unit):
        points = lower + unit * (upper - lower)
        rho2 = (upper[1] - points[:, 1]) ** 2 + (upper[2] - points[:, 2]) ** 2
        bend = 1 + 4 * (points[:, 0] - 0.5) ** 2 - 2 * rho2
        return points[:, 0] ** 2 - points[:, 2] ** 2 + bend * edge_angles(points, lower, upper)[:, 3]

    errors = errors_by_an_edge(field, lower, upper, {True: 36, False: 24})
    assert errors[True] < 0.03 and errors[False] > 2.5 * errors[True]
