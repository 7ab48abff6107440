"""The angle functions of a rectangle's corners: harmonic functions that jump where two edges meet
(docs/algorithms.md, "Boundary data that jump at a corner").

Where a plate's two edges carry different data at a shared corner, Laplace's solution jumps there:
in the quarter plane with data A on one edge and B on the other it is A + (B − A) θ_c/(π/2), with
θ_c the angle seen from the corner c, and near a corner of the plate it differs from that by a
function continuous at c. The angle is harmonic, so a Gaussian process conditioned on ∇²f = g may
add it to its prior with an unknown amplitude without breaking the physics, and what remains is
continuous, which a smooth kernel models. Each function is 0 along the corner's horizontal edge
(the second coordinate at its bound), 1 along the vertical one and ½ at the corner itself, where a
plate's value is the mean of its two edges'. Under a_x ∂²f/∂x² + a_y ∂²f/∂y² = g (a conductor
whose conductivity differs along its axes) the angle is the one in the coordinates x/√a_x and
y/√a_y, where the operator is the Laplacian: the same edges, the same jump, a stretched fan between.

A model carries them where :func:`jump_stretch` says: pde-gp's prior (:mod:`pinnbo.models.pde_gp`)
and, as :class:`CornerKernel`, the GP that recommends a design under noise, which would otherwise
take a corner and the design beside it on its edge for one point.
"""

from __future__ import annotations

import math

import torch
from gpytorch.kernels import Kernel


def corner_angles(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                  stretch: float = 1.0) -> torch.Tensor:
    """θ_c/(π/2) at physical ``points`` (N, 2) of the box [lower, upper] for its four corners, in the
    order (x₀, y₀), (x₀, y₁), (x₁, y₀), (x₁, y₁): shape (N, 4), each in [0, 1], differentiable
    everywhere in the box but at its own corner, where it is ½ with a zero gradient. ``stretch``
    √(a_x/a_y) measures the angle in the coordinates (x/√a_x, y/√a_y) (:func:`jump_stretch`)."""
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


def jump_stretch(domain, pde, boundary_continuous) -> float | None:
    """The stretch of the corners' angle functions (:func:`corner_angles`) where a model of this
    problem adds them, None where it does not: boundary data declared to jump
    (``boundary_continuous`` False), a PDE a_x ∂²f/∂x² + a_y ∂²f/∂y² = g in the box's two variables
    with constant a_x, a_y of one sign (the stretched angle solves its homogeneous part) and no
    boundary condition (which the angle would break)."""
    if boundary_continuous is not False or pde is None or isinstance(pde, dict) or domain.dim != 2:
        return None
    own = tuple(getattr(pde, "own_inputs", ()))
    if set(own) != set(domain.names) or getattr(pde, "boundary", ()):
        return None
    coefficients = pde.scaled_laplacian()
    if coefficients is None:
        return None
    a = dict(zip(own, coefficients))
    a_x, a_y = (a[name] for name in domain.names)
    return 1.0 if a_x == a_y else math.sqrt(a_x / a_y)


def carries_jumps(domain, pde, boundary_continuous) -> bool:
    """Whether a model of this problem adds the corners' angle functions (:func:`jump_stretch`)."""
    return jump_stretch(domain, pde, boundary_continuous) is not None


class CornerKernel(Kernel):
    """ΦΦᵀ of the corners' angle functions, on unit-cube inputs of the box [lower, upper]: added to a
    GPyTorch kernel (under a ``ScaleKernel``, the amplitudes' variance learned), a GP whose mean
    may jump at each corner."""

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, stretch: float = 1.0) -> None:
        super().__init__()
        self.lower, self.upper, self.stretch = lower, upper, stretch

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params) -> torch.Tensor:
        f1, f2 = (self._angles(x) for x in (x1, x2))
        return (f1 * f2).sum(-1) if diag else f1 @ f2.transpose(-1, -2)

    def _angles(self, unit: torch.Tensor) -> torch.Tensor:
        lower, upper = self.lower.to(unit), self.upper.to(unit)
        points = lower + unit * (upper - lower)
        return corner_angles(points.reshape(-1, 2), lower, upper, self.stretch).reshape(*unit.shape[:-1], 4)
