"""The corner functions of a rectangle: solutions of a PDE's homogeneous part that jump where two
edges meet (docs/algorithms.md, "Boundary data that jump at a corner").

Where a plate's two edges carry different data at a shared corner, Laplace's solution jumps there:
in the quarter plane with data A on one edge and B on the other it is A + (B − A) θ_c/(π/2), with
θ_c the angle seen from the corner c, and near a corner of the plate it differs from that by a
function continuous at c. The angle is harmonic, so a Gaussian process conditioned on ∇²f = g may
add it to its prior with an unknown amplitude without breaking the physics, and what remains is
continuous, which a smooth kernel models. Each function is 0 along the corner's horizontal edge
(the second coordinate at its bound), 1 along the vertical one and ½ at the corner itself, where a
plate's value is the mean of its two edges'.

The same holds under L = a_x ∂²/∂x² + a_y ∂²/∂y² + b_x ∂/∂x + b_y ∂/∂y + c with constants, a_x and
a_y of one sign (:meth:`pinnbo.pde.PDE.axis_operator`; taken here with a_x, a_y > 0). With
f = e^{α·z} v, α = (−b_x/(2a_x), −b_y/(2a_y)), and ξ = x/√a_x, η = y/√a_y, L f = e^{α·z}(Δ_{ξη} v + μ v)
with μ = c − b_x²/(4a_x) − b_y²/(4a_y). The angle θ seen from the corner in (ξ, η) is harmonic there
and its gradient is perpendicular to the radius ρ, so θ·I₀(κρ), κ = √(−μ), solves Δv + μv = 0 for
μ ≤ 0: the corner function is e^{α·(z − c)} θ/(π/2) I₀(κρ), still 0 along the horizontal edge, ½ at
the corner and a jump of 1 there, the fan between the edges stretched (a conductivity that differs
along the axes), tilted downstream (a flow) and fading away from the corner (a loss). μ > 0 (a
Helmholtz operator) needs J₀, which has no autograd in torch, and is not modelled.

A model carries them where :func:`jump_shape` says: pde-gp's prior (:mod:`pinnbo.models.pde_gp`)
and, as :class:`CornerKernel`, the GP that recommends a design under noise, which would otherwise
take a corner and the design beside it on its edge for one point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from gpytorch.kernels import Kernel


@dataclass(frozen=True)
class CornerShape:
    """What the operator makes of the corner functions (module docstring): ``stretch`` √(a_x/a_y),
    the factor on the second coordinate's offset inside the angle (its own root: the ratio of the
    two scales differs from it in the last bit); ``scale`` (1/√a_x, 1/√a_y) of the radius;
    ``drift`` α and ``decay`` κ. The default, Laplace's, is the plain angle."""

    stretch: float = 1.0
    scale: tuple[float, float] = (1.0, 1.0)
    drift: tuple[float, float] = (0.0, 0.0)
    decay: float = 0.0


def corner_angles(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                  stretch: float = 1.0) -> torch.Tensor:
    """θ_c/(π/2) at physical ``points`` (N, 2) of the box [lower, upper] for its four corners, in the
    order (x₀, y₀), (x₀, y₁), (x₁, y₀), (x₁, y₁): shape (N, 4), each in [0, 1], differentiable
    everywhere in the box but at its own corner, where it is ½ with a zero gradient. ``stretch``
    √(a_x/a_y) measures the angle in the coordinates (x/√a_x, y/√a_y) (:class:`CornerShape`)."""
    columns = []
    for across in (points[:, 0] - lower[0], upper[0] - points[:, 0]):
        for along in (points[:, 1] - lower[1], upper[1] - points[:, 1]):
            at = (across == 0) & (along == 0)
            if stretch != 1.0:
                along = along * stretch
            # atan2(0, 0) and its gradient there are not defined: the corner's own value instead
            one = torch.ones_like(across)
            angle = torch.atan2(torch.where(at, one, along), torch.where(at, one, across)) / (math.pi / 2)
            columns.append(torch.where(at, torch.full_like(angle, 0.5), angle))
    return torch.stack(columns, -1)


def corner_functions(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                     shape: CornerShape = CornerShape()) -> torch.Tensor:
    """The four corner functions of ``shape``'s operator at physical ``points`` (N, 2), in
    :func:`corner_angles`' order: the angles times e^{α·(z − c)} I₀(κρ) (module docstring), which
    is 1 at each function's own corner; the angles alone where α = 0 and κ = 0."""
    angles = corner_angles(points, lower, upper, shape.stretch)
    if shape.drift == (0.0, 0.0) and shape.decay == 0.0:
        return angles
    (s_x, s_y), (alpha, beta) = shape.scale, shape.drift
    factors = []
    for x_c in (lower[0], upper[0]):
        for y_c in (lower[1], upper[1]):
            dx, dy = points[:, 0] - x_c, points[:, 1] - y_c
            factor = torch.exp(alpha * dx + beta * dy)
            if shape.decay:
                squared = (s_x * dx) ** 2 + (s_y * dy) ** 2
                at = squared == 0
                # √ has no gradient at 0, I₀(κ√s) has (it is even): the corner's own value instead
                radius = torch.sqrt(torch.where(at, torch.ones_like(squared), squared))
                factor = factor * torch.where(at, torch.ones_like(squared), torch.special.i0(shape.decay * radius))
            factors.append(factor)
    return angles * torch.stack(factors, -1)


def jump_shape(domain, pde, boundary_continuous) -> CornerShape | None:
    """The shape of the corner functions where a model of this problem adds them, None where it
    does not: boundary data declared to jump (``boundary_continuous`` False), a PDE
    a_x f_xx + a_y f_yy + b_x f_x + b_y f_y + c f = g in the box's two variables with constant
    coefficients and μ ≤ 0 (module docstring; the corner functions solve its homogeneous part), and
    no boundary condition (which they would break)."""
    if boundary_continuous is not False or pde is None or isinstance(pde, dict) or domain.dim != 2:
        return None
    own = tuple(getattr(pde, "own_inputs", ()))
    if set(own) != set(domain.names) or getattr(pde, "boundary", ()):
        return None
    operator = pde.axis_operator()
    if operator is None:
        return None
    sign = 1.0 if operator[0][0] > 0 else -1.0        # −L has the same solutions
    order = [own.index(name) for name in domain.names]
    a, b = ([sign * values[i] for i in order] for values in operator[:2])
    c = sign * operator[2]
    mu = c - b[0] ** 2 / (4 * a[0]) - b[1] ** 2 / (4 * a[1])
    if mu > 0:
        return None
    drift = (-b[0] / (2 * a[0]) + 0.0, -b[1] / (2 * a[1]) + 0.0)     # + 0.0: no −0.0
    return CornerShape(math.sqrt(a[0] / a[1]), (1 / math.sqrt(a[0]), 1 / math.sqrt(a[1])), drift,
                       math.sqrt(-mu) if mu < 0 else 0.0)


def carries_jumps(domain, pde, boundary_continuous) -> bool:
    """Whether a model of this problem adds the corner functions (:func:`jump_shape`)."""
    return jump_shape(domain, pde, boundary_continuous) is not None


class CornerKernel(Kernel):
    """ΦΦᵀ of the corner functions, on unit-cube inputs of the box [lower, upper]: added to a
    GPyTorch kernel (under a ``ScaleKernel``, the amplitudes' variance learned), a GP whose mean
    may jump at each corner."""

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, shape: CornerShape = CornerShape()) -> None:
        super().__init__()
        self.lower, self.upper, self.shape = lower, upper, shape

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params) -> torch.Tensor:
        f1, f2 = (self._functions(x) for x in (x1, x2))
        return (f1 * f2).sum(-1) if diag else f1 @ f2.transpose(-1, -2)

    def _functions(self, unit: torch.Tensor) -> torch.Tensor:
        lower, upper = self.lower.to(unit), self.upper.to(unit)
        points = lower + unit * (upper - lower)
        return corner_functions(points.reshape(-1, 2), lower, upper, self.shape).reshape(*unit.shape[:-1], 4)
