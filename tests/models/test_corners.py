"""The corners' angle functions: harmonic, 0 and 1 on a corner's two edges and ½ at the corner; a
PDE-GP that adds them to its prior recovers a harmonic function that jumps at a corner, which the
smooth kernel alone cannot, and its posterior's two paths agree."""

from __future__ import annotations

import math

import pytest
import sympy as sp
import torch

from pinnbo.models.corners import CornerShape, carries_jumps, corner_angles, corner_functions, jump_shape
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
    spread = float(plate(test).std())

    def error(model, points):
        with torch.no_grad():
            mean, _ = model.mean_and_variance(points)
        return float((mean - plate(points)).pow(2).mean().sqrt()) / spread

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
    assert not carries_jumps(box, PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T, rhs=0), False)         # Helmholtz: J₀
    assert not carries_jumps(box, PDE(T.diff(x, 2) - T.diff(y, 2), rhs=0), False)                  # hyperbolic
    assert carries_jumps(box, PDE(T.diff(x, 2) + T.diff(x, y) + T.diff(y, 2), rhs=0), False)       # a tensor
    assert not carries_jumps(box, PDE(T.diff(x, 2) + 2 * T.diff(x, y) + T.diff(y, 2), rhs=0), False)  # parabolic
    assert not carries_jumps(box, PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0, boundary=[(x, 0, 0)]), False)
    u = sp.Function("u")(x)        # an ODE in x with y a parameter: its "Laplacian" is u'' alone
    assert not carries_jumps(box, PDE(u.diff(x, 2), rhs=0).for_variables(("x", "y")), False)
    assert not carries_jumps(box, None, False)
