"""The unit square's corner angles as the sides of its jumps (pde-gp's, where its model carries the
corner functions)."""

from __future__ import annotations

import numpy as np
import torch

from pinnbo.models.corners import corner_angles


def unit_square_sides(unit: np.ndarray) -> np.ndarray:
    """:func:`pinnbo.models.corners.corner_angles` of the unit square at unit designs (n, 2)."""
    lower, upper = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    return corner_angles(torch.as_tensor(unit, dtype=torch.float64), lower, upper).numpy()
