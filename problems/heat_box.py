"""Steady heat in a box (docs/algorithms.md, "The heat box"): find the hottest point of a box whose
temperature obeys ∇²T = 0 (∇²T − v·∇T = 0 where a flow carries the heat), with Dirichlet data on its
six faces that the optimiser never sees; it sees only the PDE. The heat plate's problem
(:mod:`problems.heat_plate`) in three variables.

The oracle solves the field once per boundary set by sine transforms and caches it
(:mod:`pinnbo.oracles.heat_box`). On a face it returns the face's data, on an edge the mean of the
two faces' data; f* is the supremum over the closed box with those semantics, which by the maximum
principle is the supremum of the faces' data (:func:`pinnbo.oracles.heat_box.box_supremum`).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from pinnbo.errors import shown
from pinnbo.oracles.heat_box import FACES, HeatBox, box_supremum
from pinnbo.problem import Box, Problem, ProblemError, register_problem
from problems.heat_plate import tensor_divergence


@register_problem
def heat_box(boundary: dict, bounds: list | None = None, grid: int = 96, velocity: list | None = None,
             conductivity: str | list | None = None, reaction: float | None = None) -> Problem:
    """Maximise the steady temperature T(x, y, z) of a box, ∇²T = 0, or ∇·(k∇T) − v·∇T + qT = 0 with
    a conductivity that varies, a flow or a reaction.

    Args:
        boundary: Dirichlet data per face as formulas of x, y and z: ``{x-: T(x0, y, z), x+: T(x1,
            y, z), y-: T(x, y0, z), y+: T(x, y1, z), z-: T(x, y, z0), z+: T(x, y, z1)}``.
        bounds: ``[[x0, x1], [y0, y1], [z0, z1]]``, default the unit cube.
        grid: cells per axis of the reference solve (≥ 16; 96 takes a second, once, then cached).
        velocity: ``[v_x, v_y, v_z]``, default [0, 0, 0]: heat carried downstream by a uniform flow,
            Σ |v_i| (x1_i − x0_i) at most 40.
        conductivity: a formula of x, y and z, finite and positive on the closed box, default 1: a
            graded box, ∇·(k∇T) = 0; or a symmetric positive-definite tensor
            ``[[k_xx, k_xy, k_xz], [k_xy, k_yy, k_yz], [k_xz, k_yz, k_zz]]``, ∇·(K∇T) = 0, whose
            entries are numbers or formulas of x, y and z (a graded composite; positive-definite on
            the whole closed box); either solved iteratively: a few seconds at 96³, once.
        reaction: q, default 0: + qT, heat released (q > 0; the hottest point may then lie inside)
            or lost (q < 0) in proportion to the temperature; q below the box's first eigenvalue
            Σ π²/L_i² + |v|²/4, or with a conductivity below its lower bound λ_min Σ π²/L_i²,
            λ_min the smallest conductivity on the box (a tensor's smallest eigenvalue).
    """
    if bounds is None:
        bounds = [[0.0, 1.0]] * 3
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (list, tuple)):
        raise ProblemError(f"params.bounds: expected a list of three [lower, upper] pairs, got {shown(bounds)}")
    if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 16:
        raise ProblemError(f"params.grid: expected an integer >= 16, got {shown(grid)}")
    box = HeatBox(boundary, bounds=bounds, grid=int(grid), velocity=(0.0, 0.0, 0.0) if velocity is None else velocity,
                  conductivity=conductivity, reaction=0.0 if reaction is None else reaction)
    f_star, location = box_supremum(box)

    from pinnbo.pde import PDE  # imported here: the oracle does not need torch

    x, y, z = sp.symbols("x y z")
    T = sp.Function("T")(x, y, z)
    lower, upper = zip(*box.bounds)
    faces = ", ".join(f"{face}={shown(box.boundary[face])}" for face in FACES)
    k = box.conductivity_expression
    if k is not None:       # the parsed formula's symbols are the oracle's, not the PDE's inputs
        k = k.xreplace({s: {"x": x, "y": y, "z": z}[s.name] for s in k.free_symbols})
    inputs = (x, y, z)
    if box.tensor_expressions is not None:     # a tensor that varies: its divergence form
        operator = tensor_divergence(T, inputs, box.tensor_expressions)
    elif box.tensor is not None:
        K = box.tensor
        operator = sum(K[i][i] * sp.diff(T, inputs[i], 2) for i in range(3)) + sum(
            2 * K[i][j] * sp.diff(T, inputs[i], inputs[j]) for i in range(3) for j in range(i + 1, 3) if K[i][j])
    else:
        operator = sum((sp.diff(T, s, 2) if k is None else (k * sp.diff(T, s)).diff(s)) for s in inputs)
    for v, s in zip(box.velocity, inputs):
        if v:
            operator = operator - v * sp.diff(T, s)
    if box.reaction:
        operator = operator + box.reaction * T
    if box.conductivity is None:
        law, given = "∇²T", []
    elif box.tensor is not None or box.tensor_expressions is not None:
        law, given = "∇·(K∇T)", [f"K = {shown(box.conductivity)}"]
    else:
        law, given = "∇·(k∇T)", [f"k = {box.conductivity}"]
    if any(box.velocity):
        law += " − v·∇T"
        given.append(f"v = ({', '.join(f'{v:g}' for v in box.velocity)})")
    if box.reaction:
        law += " + qT"
        given.append(f"q = {box.reaction:g}")
    law += " = 0" + (f" ({'; '.join(given)})" if given else "")
    metadata = {"boundary": dict(box.boundary), "grid": box.grid, "cache": str(box.cache_path)}
    if any(box.velocity):
        metadata["velocity"] = list(box.velocity)
    if box.reaction:
        metadata["reaction"] = box.reaction
    if box.conductivity is not None:
        metadata["conductivity"] = box.conductivity
    return Problem(
        name="heat_box",
        domain=Box(lower, upper, ("x", "y", "z")),
        objective=box,
        sense="maximize",
        pde=PDE(operator, rhs=0),
        optimum=f_star,
        optimum_location=tuple(float(v) for v in location),
        boundary_continuous=box.boundary_continuous(),
        description=(f"Steady heat box {law} on {' × '.join(f'[{lo:g}, {hi:g}]' for lo, hi in box.bounds)}, "
                     f"Dirichlet data {faces}; {'sine-transform' if box.conductivity is None else 'iterative'} reference on a {box.grid}³ grid; maximise T"),
        metadata=metadata,
    )
