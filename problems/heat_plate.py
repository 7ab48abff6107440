"""Steady heat plate (PINN-BO real task 1; docs/algorithms.md, "The heat plate"): find the hottest point of a plate
whose temperature obeys ∇²T = 0, with Dirichlet data on its four edges that the optimiser never
sees; it sees only the PDE.

The oracle is a py-pde finite-volume solve, done once per boundary set and cached
(:mod:`pinnbo.oracles.heat_plate`). On an edge it returns the Dirichlet data, at a corner the mean of
the two edges' data; f* is the supremum over the closed plate with those semantics, which by the
maximum principle is the supremum of the boundary data (BC1 ≈ 3374.59 next to (2π, 0),
BC2 ≈ 880.32 next to (2π, 2π), BC3 ≈ 885.58 next to (0, 2π)).

With ``max_gradient`` = G the problem gains one black-box constraint, ``gradient`` =
|∇T(x, y)| − G <= 0 (a thermal-stress limit at the chosen point), computed from the same cached
solve (:meth:`pinnbo.oracles.heat_plate.HeatPlate.gradient`: second-order differences of the solved
cells, ≈ 7e-4 of max |∇T| on a harmonic test field at 256²); the oracle then returns
``(T, [|∇T| − G])``. The hot corners and edges have huge gradients (BC1: |∇T| ≈ 9e4 next to
(2π, 0)), so the unconstrained optimum is infeasible and f* is the constrained maximum, found on
the cached field by a dense grid and a local refinement
(:meth:`pinnbo.oracles.heat_plate.GradientLimitedPlate.supremum`). Case ``heat_bc1_gradient``:
BC1 with G = 150, f* ≈ 205.8947 at (4.27272, 1.30867), well inside the plate on the constraint's
level curve (|∇T| = 150 there); 89 % of the plate is feasible.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from pinnbo.errors import shown
from pinnbo.oracles.heat_plate import DEFAULT_BOUNDS, GradientLimitedPlate, HeatPlate, check_max_gradient
from pinnbo.problem import Box, Constraint, Problem, ProblemError, register_problem


@register_problem
def heat_plate(boundary: dict, bounds: list | None = None, grid: int = 256,
               max_gradient: float | None = None) -> Problem:
    """Maximise the steady temperature T(x, y) of a rectangular plate, ∇²T = 0.

    Args:
        boundary: Dirichlet data per edge as formulas of x and y:
            ``{left: T(x0, y), right: T(x1, y), bottom: T(x, y0), top: T(x, y1)}``.
        bounds: ``[[x0, x1], [y0, y1]]``, default [0, 2π]².
        grid: finite-volume cells per axis of the reference solve (≥ 16; 256 gives ≈ 1e-4
            relative error on a smooth harmonic field and takes ≈ 5 s, once, then cached).
        max_gradient: None (default): unconstrained. A number G > 0: maximise T subject to the
            black-box constraint ``gradient`` = |∇T(x, y)| − G <= 0 at the chosen point; f* is
            then the constrained maximum (≈ 1–2 s to compute on the cached field).
    """
    if bounds is None:
        bounds = [list(pair) for pair in DEFAULT_BOUNDS]
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (list, tuple)):
        raise ProblemError(f"params.bounds: expected a list of two [lower, upper] pairs, got {shown(bounds)}")
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 16:
        raise ProblemError(f"params.grid: expected an integer >= 16, got {shown(grid)}")
    if max_gradient is not None:
        max_gradient = check_max_gradient(max_gradient)  # before the solve: a typo costs no solve

    plate = HeatPlate(boundary, bounds=bounds, grid=int(grid))
    f_star, location = plate.supremum()

    from pinnbo.pde import PDE  # imported here: the oracle does not need torch

    x, y = sp.symbols("x y")
    T = sp.Function("T")(x, y)
    (x0, x1), (y0, y1) = plate.bounds
    description = (
        f"Steady heat plate ∇²T = 0 on [{x0:g}, {x1:g}] × [{y0:g}, {y1:g}], Dirichlet data "
        f"left={shown(plate.boundary['left'])}, right={shown(plate.boundary['right'])}, "
        f"bottom={shown(plate.boundary['bottom'])}, top={shown(plate.boundary['top'])}; "
        f"py-pde reference on a {plate.grid}² grid; maximise T"
    )
    metadata = {"boundary": dict(plate.boundary), "grid": plate.grid, "cache": str(plate.cache_path)}
    objective, constraints = plate, ()
    if max_gradient is not None:
        metadata["max_gradient"] = max_gradient
        metadata["unconstrained_optimum"] = f_star  # where the data peak: infeasible for any useful G
        objective = GradientLimitedPlate(plate, max_gradient)
        f_star, location = objective.supremum()
        constraints = (Constraint("gradient"),)
        description += f" subject to |grad T| <= {max_gradient:g} at the chosen point"
    return Problem(
        name="heat_plate",
        domain=Box((x0, y0), (x1, y1), ("x", "y")),
        objective=objective,
        sense="maximize",
        pde=PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0),
        optimum=f_star,
        optimum_location=tuple(float(v) for v in location),
        field_plot=plate.field,
        constraints=constraints,
        description=description,
        metadata=metadata,
    )
