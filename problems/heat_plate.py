"""Steady heat plate (PINN-BO real task 1, REFERENCES §6.1): find the hottest point of a plate
whose temperature obeys ∇²T = 0, with Dirichlet data on its four edges that the optimiser never
sees; it sees only the PDE.

The oracle is a py-pde finite-volume solve, done once per boundary set and cached
(:mod:`pinnbo.oracles.laplace`). On an edge it returns the Dirichlet data, at a corner the mean of
the two edges' data; f* is the supremum over the closed plate with those semantics, which by the
maximum principle is the supremum of the boundary data (BC1 ≈ 3374.59 next to (2π, 0),
BC2 ≈ 880.32 next to (2π, 2π), BC3 ≈ 885.58 next to (0, 2π)).
"""

from __future__ import annotations


import numpy as np
import sympy as sp

from pinnbo.oracles.laplace import DEFAULT_BOUNDS, HeatPlate
from pinnbo.problem import Box, Problem, ProblemError, register_problem


@register_problem
def heat_plate(boundary: dict, bounds: list | None = None, grid: int = 256) -> Problem:
    """Maximise the steady temperature T(x, y) of a rectangular plate, ∇²T = 0.

    Args:
        boundary: Dirichlet data per edge as formulas of x and y:
            ``{left: T(x0, y), right: T(x1, y), bottom: T(x, y0), top: T(x, y1)}``.
        bounds: ``[[x0, x1], [y0, y1]]``, default [0, 2π]².
        grid: finite-volume cells per axis of the reference solve (≥ 16; 256 gives ≈ 1e-4
            relative error on a smooth harmonic field and takes ≈ 5 s, once, then cached).
    """
    if bounds is None:
        bounds = [list(pair) for pair in DEFAULT_BOUNDS]
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (list, tuple)):
        raise ProblemError(f"params.bounds: expected a list of two [lower, upper] pairs, got {bounds!r}")
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 16:
        raise ProblemError(f"params.grid: expected an integer >= 16, got {grid!r}")

    plate = HeatPlate(boundary, bounds=bounds, grid=int(grid))
    f_star, location = plate.supremum()

    from pinnbo.pde import PDE  # imported here: the oracle does not need torch

    x, y = sp.symbols("x y")
    T = sp.Function("T")(x, y)
    (x0, x1), (y0, y1) = plate.bounds
    return Problem(
        name="heat_plate",
        domain=Box((x0, y0), (x1, y1), ("x", "y")),
        objective=plate,
        sense="maximize",
        pde=PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0),
        optimum=f_star,
        optimum_location=tuple(float(v) for v in location),
        field_plot=plate.field,
        description=(
            f"Steady heat plate ∇²T = 0 on [{x0:g}, {x1:g}] × [{y0:g}, {y1:g}], Dirichlet data "
            f"left={plate.boundary['left']!r}, right={plate.boundary['right']!r}, "
            f"bottom={plate.boundary['bottom']!r}, top={plate.boundary['top']!r}; "
            f"py-pde reference on a {plate.grid}² grid; maximise T"
        ),
        metadata={"boundary": dict(plate.boundary), "grid": plate.grid, "cache": str(plate.cache_path)},
    )
