"""The angle functions of a rectangle's corners: harmonic functions that jump where two edges meet
(docs/algorithms.md, "Boundary data that jump at a corner").

Where a plate's two edges carry different data at a shared corner, Laplace's solution jumps there:
in the quarter plane with data A on one edge and B on the other it is A + (B − A) θ_c/(π/2), with
θ_c the angle seen from the corner c, and near a corner of the plate it differs from that by a
function continuous at c. The angle is harmonic, so a Gaussian process conditioned on ∇²f = g may
add it to its prior with an unknown amplitude without breaking the physics, and what remains is
continuous, which a smooth kernel models. Each function is 0 along
the corner's horizontal edge (the second coordinate at its bound), 1 along the vertical one and ½
at the corner itself, where a plate's value is the mean of its two edges'.
"""

from __future__ import annotations

import math

import torch


def corner_angles(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor) -> torch.Tensor:
    """θ_c/(π/2) at physical ``points`` (N, 2) of the box [lower, upper] for its four corners, in the
    order (x₀, y₀), (x₀, y₁), (x₁, y₀), (x₁, y₁): shape (N, 4), each in [0, 1], differentiable
    everywhere in the box but at its own corner, where it is ½ with a zero gradient."""
    columns = []
    for across in (points[:, 0] - lower[0], upper[0] - points[:, 0]):
        for along in (points[:, 1] - lower[1], upper[1] - points[:, 1]):
            at = (across == 0) & (along == 0)
            # atan2(0, 0) and its gradient there are not defined: the corner's own value instead
            one = torch.ones_like(across)
            angle = torch.atan2(torch.where(at, one, along), torch.where(at, one, across)) / (math.pi / 2)
            columns.append(torch.where(at, torch.full_like(angle, 0.5), angle))
    return torch.stack(columns, -1)
