"""Steady heat plate (PINN-BO real task 1; docs/algorithms.md, "The heat plate"): find the hottest point of a plate
whose temperature obeys ∇²T = 0, with Dirichlet data on its four edges that the optimiser never
sees; it sees only the PDE.

The oracle is a py-pde finite-volume solve, done once per boundary set and cached
(:mod:`pinnbo.oracles.heat_plate`). On an edge it returns the Dirichlet data, at a corner the mean of
the two edges' data; f* is the supremum over the closed plate with those semantics, which by the
maximum principle is the supremum of the boundary data (:func:`plate_supremum`; BC1 ≈ 3374.59 next to (2π, 0),
BC2 ≈ 880.32 next to (2π, 2π), BC3 ≈ 885.58 next to (0, 2π)).

With ``max_gradient`` = G the problem gains one black-box constraint, ``gradient`` =
|∇T(x, y)| − G <= 0 (a thermal-stress limit at the chosen point), computed from the same cached
solve (:meth:`pinnbo.oracles.heat_plate.HeatPlate.gradient`: second-order differences of the solved
cells, ≈ 7e-4 of max |∇T| on a harmonic test field at 256²); the oracle then returns
``(T, [|∇T| − G])``. The hot corners and edges have huge gradients (BC1: |∇T| ≈ 9e4 next to
(2π, 0)), so the unconstrained optimum is infeasible and f* is the constrained maximum, found on
the cached field by a dense grid and a local refinement
(:func:`limited_supremum`). Case ``heat_bc1_gradient``:
BC1 with G = 150, f* ≈ 205.8947 at (4.27272, 1.30867), well inside the plate on the constraint's
level curve (|∇T| = 150 there); 89 % of the plate is feasible.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from scipy.optimize import minimize_scalar

from pinnbo.errors import shown
from pinnbo.oracles.heat_plate import (CORNER_OFFSET, DEFAULT_BOUNDS, EDGES, GradientLimitedPlate, HeatPlate,
                                      check_max_gradient, conductivity_tensor)
from pinnbo.problem import Box, Constraint, Problem, ProblemError, register_problem


@register_problem
def heat_plate(boundary: dict, bounds: list | None = None, grid: int = 256,
               max_gradient: float | None = None, conductivity: list | str | None = None,
               velocity: list | None = None, reaction: float | None = None) -> Problem:
    """Maximise the steady temperature T(x, y) of a rectangular plate, ∇²T = 0 (k_x ∂²T/∂x² +
    k_y ∂²T/∂y² − v·∇T + qT = 0 with ``conductivity``, ``velocity`` and ``reaction``).

    Args:
        boundary: Dirichlet data per edge as formulas of x and y:
            ``{left: T(x0, y), right: T(x1, y), bottom: T(x, y0), top: T(x, y1)}``.
        bounds: ``[[x0, x1], [y0, y1]]``, default [0, 2π]².
        grid: finite-volume cells per axis of the reference solve (≥ 16; 256 gives ≈ 1e-4
            relative error on a smooth harmonic field and takes ≈ 5 s, once, then cached).
        max_gradient: None (default): unconstrained. A number G > 0: maximise T subject to the
            black-box constraint ``gradient`` = |∇T(x, y)| − G <= 0 at the chosen point; f* is
            then the constrained maximum (≈ 1–2 s to compute on the cached field).
        conductivity: ``[k_x, k_y]``, positive, default [1, 1]: a plate that conducts heat
            differently along its axes (a fibre composite); or the tensor ``[[k_xx, k_xy], [k_xy,
            k_yy]]``, symmetric and positive definite, for fibres at an angle to the edges
            (∇·(K∇T) = 0, solved by second-order finite differences on the same cells). The
            supremum is still the boundary data's (maximum principle); the field inside, and so
            what the PDE tells an optimiser, changes. Or a formula of x and y, positive on the
            plate, for a graded plate, ∇·(k∇T) = 0 (conservative finite differences); or a tensor
            whose entries are numbers or formulas of x and y, positive-definite on the whole plate,
            for a graded composite, ∇·(K∇T) = 0 (the tensor's differences, its drift beside them).
        velocity: ``[v_x, v_y]``, default [0, 0]: heat carried downstream by a flow (a strip
            moving through a furnace); solved by second-order finite differences on the same
            cells. The supremum is still the boundary data's.
        reaction: q, default 0: + qT, heat released in proportion to the temperature (q > 0, a
            reaction whose heat grows with T; the hottest point may then lie inside the plate) or
            lost (q < 0, through the faces to surroundings at 0); q below the plate's first
            eigenvalue Σ k_i π²/L_i² + v_i²/(4k_i) (above it the steady state is unstable), or
            with a tensor or a graded conductivity below its lower bound λ_min Σ π²/L_i², λ_min
            the smallest conductivity on the plate (a tensor's smallest eigenvalue). Solved by
            finite differences on the same cells.
    """
    if bounds is None:
        bounds = [list(pair) for pair in DEFAULT_BOUNDS]
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (list, tuple)):
        raise ProblemError(f"params.bounds: expected a list of two [lower, upper] pairs, got {shown(bounds)}")
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 16:
        raise ProblemError(f"params.grid: expected an integer >= 16, got {shown(grid)}")
    if max_gradient is not None:
        max_gradient = check_max_gradient(max_gradient)  # before the solve: a typo costs no solve

    # the plate checks its conductivity and velocity before it solves
    plate = HeatPlate(boundary, bounds=bounds, grid=int(grid),
                      conductivity=(1.0, 1.0) if conductivity is None else conductivity,
                      velocity=(0.0, 0.0) if velocity is None else velocity,
                      reaction=0.0 if reaction is None else reaction)
    graded = plate.conductivity_expression
    varying = plate.tensor_expressions          # a tensor that varies
    tensor = None if graded is not None or varying is not None else conductivity_tensor(plate.conductivity)
    (k_x, k_xy), (_, k_y) = tensor if tensor is not None else ((None, 0.0), (None, None))
    v_x, v_y = plate.velocity
    f_star, location = plate_supremum(plate)

    from pinnbo.pde import PDE  # imported here: the oracle does not need torch

    x, y = sp.symbols("x y")
    T = sp.Function("T")(x, y)
    (x0, x1), (y0, y1) = plate.bounds
    given = ""                                  # a varying conductivity's formula, after the equation
    if graded is not None:
        operator, given = "∇·(k∇T)", f" (k = {plate.conductivity})"
    elif varying is not None:
        operator, given = "∇·(K∇T)", f" (K = {shown(plate.conductivity)})"
    else:
        operator = "∇²T" if k_x == k_y == 1.0 and k_xy == 0.0 else \
            f"{k_x:g} T_xx + {2 * k_xy:g} T_xy + {k_y:g} T_yy" if k_xy else f"{k_x:g} T_xx + {k_y:g} T_yy"
    flow = [f"{v:g} T_{z}" for v, z in ((v_x, "x"), (v_y, "y")) if v != 0.0]
    if flow:
        operator += f" - ({' + '.join(flow)})"
    if plate.reaction:
        operator += f" {'+' if plate.reaction > 0 else '-'} {abs(plate.reaction):g} T"
    differenced = flow or k_xy or graded is not None or varying is not None or plate.reaction
    description = (
        f"Steady heat plate {operator} = 0{given} on [{x0:g}, {x1:g}] × [{y0:g}, {y1:g}], Dirichlet data "
        f"left={shown(plate.boundary['left'])}, right={shown(plate.boundary['right'])}, "
        f"bottom={shown(plate.boundary['bottom'])}, top={shown(plate.boundary['top'])}; "
        f"{'finite-difference' if differenced else 'py-pde'} reference on a "
        f"{plate.grid}² grid; maximise T"
    )
    metadata = {"boundary": dict(plate.boundary), "grid": plate.grid, "cache": str(plate.cache_path)}
    if graded is not None or varying is not None:
        metadata["conductivity"] = plate.conductivity
    elif conductivity is not None:
        metadata["conductivity"] = [k_x, k_y] if k_xy == 0.0 else [[k_x, k_xy], [k_xy, k_y]]
    if velocity is not None:
        metadata["velocity"] = [v_x, v_y]
    if plate.reaction:
        metadata["reaction"] = plate.reaction
    objective, constraints = plate, ()
    if max_gradient is not None:
        metadata["max_gradient"] = max_gradient
        metadata["unconstrained_optimum"] = f_star  # where the data peak: infeasible for any useful G
        objective = GradientLimitedPlate(plate, max_gradient)
        f_star, location = limited_supremum(objective)
        constraints = (Constraint("gradient"),)
        description += f" subject to |grad T| <= {max_gradient:g} at the chosen point"
    return Problem(
        name="heat_plate",
        domain=Box((x0, y0), (x1, y1), ("x", "y")),
        objective=objective,
        sense="maximize",
        pde=PDE((graded_operator(T, x, y, graded, plate.velocity) if graded is not None
                 else _minus_flow(tensor_divergence(T, (x, y), varying), T, x, y, plate.velocity) if varying is not None
                 else plate_operator(T, x, y, tensor, plate.velocity)) + (plate.reaction * T if plate.reaction else 0),
                rhs=0),
        optimum=f_star,
        optimum_location=tuple(float(v) for v in location),
        field_plot=plate.field,
        boundary_continuous=plate.boundary_continuous(),
        constraints=constraints,
        description=description,
        metadata=metadata,
    )


def graded_operator(T, x, y, conductivity: sp.Expr, velocity: tuple[float, float]):
    """∇·(k∇T) − v·∇T for a conductivity formula k of x and y (the oracle's real symbols, replaced by
    the PDE's)."""
    k = conductivity.xreplace({s: {"x": x, "y": y}[s.name] for s in conductivity.free_symbols})
    return _minus_flow((k * T.diff(x)).diff(x) + (k * T.diff(y)).diff(y), T, x, y, velocity)


def tensor_divergence(T, inputs, tensor):
    """∇·(K∇T) = Σ_i ∂_i(Σ_j K_ij ∂_j T) for a tensor of expressions K of the oracle's real symbols
    (replaced by the PDE's ``inputs`` of the same names), in divergence form: a plate's or a box's."""
    by_name = {symbol.name: symbol for symbol in inputs}
    K = [[entry.xreplace({s: by_name[s.name] for s in entry.free_symbols}) for entry in row] for row in tensor]
    n = len(inputs)
    return sum(sum(K[i][j] * T.diff(inputs[j]) for j in range(n) if K[i][j] != 0).diff(inputs[i]) for i in range(n))


def _minus_flow(operator, T, x, y, velocity: tuple[float, float]):
    """``operator`` − v·∇T, with only the terms of a non-zero velocity component."""
    for v, z in zip(velocity, (x, y)):
        if v != 0.0:
            operator = operator - v * T.diff(z)
    return operator


def plate_operator(T, x, y, tensor: tuple, velocity: tuple[float, float]):
    """k_xx T_xx + 2 k_xy T_xy + k_yy T_yy − v_x T_x − v_y T_y (``tensor`` ((k_xx, k_xy), (k_xy, k_yy)),
    :func:`pinnbo.oracles.heat_plate.conductivity_tensor`), with only the terms present: the plain
    Laplacian for an isotropic plate at rest, so that the PDE reads as it always has."""
    (k_x, k_xy), (_, k_y) = tensor
    operator = T.diff(x, 2) + T.diff(y, 2) if k_x == k_y == 1.0 else k_x * T.diff(x, 2) + k_y * T.diff(y, 2)
    if k_xy != 0.0:
        operator = operator + 2 * k_xy * T.diff(x, y)
    return _minus_flow(operator, T, x, y, velocity)


def plate_supremum(plate: HeatPlate, samples: int = 20001) -> tuple[float, np.ndarray]:
    """``(f_star, location)``: the supremum of :meth:`HeatPlate.temperature` over the closed rectangle.

    Candidates: the interior nodes of the solved field (linear interpolation never exceeds its
    nodes), the four corner values, and each edge's data on the open edge, sampled at
    ``samples`` points from ``CORNER_OFFSET`` of its length past one corner to as far before
    the other, the best sample refined by a bounded scalar maximisation. When the data rise
    towards a corner whose other edge is lower, the supremum is a limit that no point attains:
    the location returned then sits ``CORNER_OFFSET`` × edge length from that corner, and
    ``f_star`` is the value there (so ``plate(location) == f_star``).
    """
    (x0, x1), (y0, y1) = plate.bounds
    candidates: list[tuple[float, np.ndarray]] = []

    k = int(np.argmax(plate.cells))
    i, j = np.unravel_index(k, plate.cells.shape)
    candidates.append((float(plate.cells[i, j]), np.array([plate.x_cells[i], plate.y_cells[j]])))
    for (ci, cj), value in plate.corner_values.items():
        candidates.append((float(value), np.array([(x0, x1)[ci], (y0, y1)[cj]])))

    for edge in EDGES:
        lo, hi = plate.edge_range(edge)
        offset = CORNER_OFFSET * (hi - lo)
        a, b = lo + offset, hi - offset
        t = np.linspace(a, b, samples)
        values = plate.edge_data(edge, t)
        m = int(np.argmax(values))
        best_t, best = float(t[m]), float(values[m])
        left, right = t[max(m - 1, 0)], t[min(m + 1, samples - 1)]
        if right > left:
            res = minimize_scalar(
                lambda s: -float(plate.edge_data(edge, s)), bounds=(left, right),
                method="bounded", options={"xatol": 1e-12 * (hi - lo)},
            )
            if res.success and math.isfinite(res.fun) and -res.fun > best:
                best_t, best = float(res.x), float(-res.fun)
        location = {
            "left": (x0, best_t), "right": (x1, best_t), "bottom": (best_t, y0), "top": (best_t, y1),
        }[edge]
        candidates.append((best, np.array(location, dtype=np.float64)))

    f_star, location = max(candidates, key=lambda c: c[0])
    return f_star, location


def limited_supremum(limited: GradientLimitedPlate, n: int = 1001, candidates: int = 8, window: int = 21, min_step: float = 1e-12,
             max_rounds: int = 2000) -> tuple[float, np.ndarray]:
    """``(f_star, location)``: the largest T over the feasible points of the closed plate.

    A dense n×n grid of the closed plate (edges included, with the oracle's edge and corner
    semantics), then, from each of the best ``candidates`` feasible grid points at least two
    grid spacings apart, the best feasible point of a 601×601 grid over ±3 cells of the solve
    around it, then a pattern search: a ``window``×``window`` grid over a box around
    the incumbent (first ±2 fine spacings), moving to its best feasible point while that
    improves (so the search can walk along the constraint's level curve, where the
    interpolated fields make many shallow local maxima), shrinking the box 4× when it does
    not, until the box is ``min_step`` of the plate. The location
    returned is a feasible point that was evaluated, so ``self(location) == (f_star, [c <= 0])``.
    When the unconstrained supremum's location (:func:`plate_supremum`) is feasible, the
    limit does not bind and that is the answer. ProblemError when no grid point is feasible.
    """
    sup_value, sup_point = plate_supremum(limited.plate)
    if limited.constraint(sup_point[None, :])[0] <= 0:  # the limit does not bind
        return float(sup_value), np.asarray(sup_point, dtype=np.float64)
    (x0, x1), (y0, y1) = limited.plate.bounds
    xs, ys = np.linspace(x0, x1, n), np.linspace(y0, y1, n)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    points = np.column_stack([X.ravel(), Y.ravel()])
    values = limited.plate.temperature(points)
    feasible = limited.constraint(points) <= 0
    if not feasible.any():
        raise ProblemError(f"params.max_gradient: no point of the plate has |grad T| <= {limited.max_gradient:g} "
                           f"(on a {n}x{n} grid); raise the limit")
    order = np.flatnonzero(feasible)[np.argsort(-values[feasible], kind="stable")]
    spacing = np.array([(x1 - x0) / (n - 1), (y1 - y0) / (n - 1)])
    starts: list[np.ndarray] = []
    for k in order:
        p = points[k]
        if all(np.any(np.abs(p - q) > 2 * spacing) for q in starts):
            starts.append(p)
            if len(starts) == candidates:
                break

    best_value, best_point = -math.inf, None
    lower, upper = np.array([x0, y0]), np.array([x1, y1])
    offsets = np.linspace(-1.0, 1.0, window)
    cell = np.array([(x1 - x0) / limited.plate.grid, (y1 - y0) / limited.plate.grid])
    for start in starts:
        # ±3 solve cells at 1/100 of a cell: resolves the shallow local maxima that the
        # interpolated fields make along the constraint's level curve, then pattern search
        fx = np.clip(start[0] + np.linspace(-3, 3, 601) * cell[0], lower[0], upper[0])
        fy = np.clip(start[1] + np.linspace(-3, 3, 601) * cell[1], lower[1], upper[1])
        FX, FY = np.meshgrid(fx, fy, indexing="ij")
        fine = np.column_stack([FX.ravel(), FY.ravel()])
        fine_values = limited.plate.temperature(fine)
        ok = limited.constraint(fine) <= 0
        point, value = start, float(limited.plate.temperature(start[None, :])[0])
        if ok.any():
            k = np.flatnonzero(ok)[int(np.argmax(fine_values[ok]))]
            if fine_values[k] > value:
                point, value = fine[k], float(fine_values[k])
        half = cell / 50.0  # half-width of the local window: one fine spacing each side
        for _ in range(max_rounds):
            if np.all(half <= min_step * (upper - lower)):
                break
            gx = np.clip(point[0] + offsets * half[0], lower[0], upper[0])
            gy = np.clip(point[1] + offsets * half[1], lower[1], upper[1])
            GX, GY = np.meshgrid(gx, gy, indexing="ij")
            local = np.column_stack([GX.ravel(), GY.ravel()])
            local_values = limited.plate.temperature(local)
            ok = limited.constraint(local) <= 0
            moved = False
            if ok.any():
                k = np.flatnonzero(ok)[int(np.argmax(local_values[ok]))]
                if local_values[k] > value:
                    point, value, moved = local[k], float(local_values[k]), True
            if not moved:
                half = half / 4.0  # the incumbent is the best of its window: zoom in
        if value > best_value:
            best_value, best_point = value, point
    return best_value, np.asarray(best_point, dtype=np.float64)
