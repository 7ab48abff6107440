"""Steady heat plate: ∇²T = 0 on a rectangle with Dirichlet data on each edge (docs/algorithms.md,
"The heat plate"), or k_x ∂²T/∂x² + k_y ∂²T/∂y² = 0 for a plate whose conductivity differs along
its axes (a fibre composite, a laminate), ∇·(K∇T) = 0 for one whose conductivity is a tensor K (the
fibres at an angle to the edges), − v·∇T added for heat carried by a flow of velocity v (a strip
moving through a furnace, a fluid layer), and + qT for heat released (q > 0: a reaction whose heat
grows with the temperature) or lost (q < 0: through the faces to surroundings at 0) in proportion to T.

The ground truth of PINN-BO's first real task. The field is solved once with py-pde's
``solve_laplace_equation`` (second-order finite volumes on a cell-centred grid) and kept in
memory and on disk (:mod:`pinnbo.oracles.field_cache`). An anisotropic plate is solved as the
isotropic plate in the coordinates x/√k_x, y/√k_y, where its operator is the Laplacian: the same
cells, the same edge data, a stretched box. A plate with a flow, a conductivity tensor or a reaction
is solved on the same cells by second-order finite differences (:func:`solve_dirichlet_operator`),
which py-pde's Laplace solver does not take (a drift, a mixed derivative, a zero-order term); with
none of them it repeats py-pde's solve.

What the oracle returns where (this decides the benchmark: the optima sit at corners where two
edges with different data meet):

* strictly inside the rectangle: the solved field, interpolated linearly on the grid of cell
  centres extended by the four edges (whose nodes carry the Dirichlet data) and the four corners;
* exactly on an edge (within 1e-12 relative to the box size): the Dirichlet data itself,
  evaluated exactly from its formula;
* at a corner: the mean of the two edges' data at that corner;
* outside the closed rectangle: :class:`ValueError`.

With these semantics the supremum over the closed rectangle is the supremum of the boundary data
(maximum principle; linear interpolation never exceeds its nodes), which the problem beside it
finds (:func:`problems.heat_plate.plate_supremum`); with a reaction that releases heat it may lie
inside, at a node of the solved field.

The temperature gradient ∇T (:meth:`HeatPlate.gradient`, second order in the grid) comes from the
same cached cells; :class:`GradientLimitedPlate` turns the plate into a constrained oracle
``(T, [|∇T| − G])`` (a thermal-stress limit), whose constrained maximum the problem finds
(:func:`problems.heat_plate.limited_supremum`). Neither changes what :meth:`HeatPlate.temperature`
returns.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Mapping

import numpy as np
import sympy as sp
from scipy.interpolate import RegularGridInterpolator

from pinnbo.errors import shown
from pinnbo.expressions import numpy_function, parse_expression
from pinnbo.oracles.dirichlet import (check_bounds, check_numbers, check_positive_field, check_reaction,
                                     check_tensor_field, checked_points, has_formula, parse_boundary,
                                     tensor_at_cells, tensor_function)
from pinnbo.oracles.field_cache import FIELDS, default_cache_dir
from pinnbo.problem import ProblemError

EDGES = ("left", "right", "bottom", "top")
DEFAULT_BOUNDS = ((0.0, 2.0 * math.pi), (0.0, 2.0 * math.pi))
# Points within this fraction of the box size from an edge count as on it.
EDGE_TOLERANCE = 1e-12
# The supremum search keeps this fraction of the edge length away from the corners, where the
# oracle returns the mean of two edges rather than either edge's data.
CORNER_OFFSET = 1e-9
# Bump when the cached data or the key changes meaning: old files are then ignored.
_CACHE_FORMAT = 1


def solve_dirichlet_laplace(
    bounds: tuple[tuple[float, float], tuple[float, float]],
    grid: int,
    edge_data: Mapping[str, np.ndarray],
    conductivity: tuple[float, float] = (1.0, 1.0),
) -> np.ndarray:
    """Solve k_x ∂²T/∂x² + k_y ∂²T/∂y² = 0 (∇²T = 0 by default) with py-pde on a ``grid``×``grid``
    cell-centred grid.

    ``edge_data[edge]`` holds the Dirichlet values at the boundary face midpoints, i.e. at the cell
    centres' coordinate along that edge (shape (grid,)). Returns the field at the cell centres,
    shape (grid, grid), indexed [i_x, i_y].
    """
    import pde  # imported here: loading a cached field does not need py-pde

    # In ξ = x/√k_x, η = y/√k_y the operator is ξ's and η's Laplacian; the cells map one to one.
    stretched = [[v / math.sqrt(k) for v in pair] for pair, k in zip(bounds, conductivity)]
    grid_obj = pde.CartesianGrid(stretched, [grid, grid])
    bc = {
        "x-": {"value": np.asarray(edge_data["left"], dtype=np.float64)},
        "x+": {"value": np.asarray(edge_data["right"], dtype=np.float64)},
        "y-": {"value": np.asarray(edge_data["bottom"], dtype=np.float64)},
        "y+": {"value": np.asarray(edge_data["top"], dtype=np.float64)},
    }
    field = pde.solve_laplace_equation(grid_obj, bc)
    return np.array(field.data, dtype=np.float64)


def solve_dirichlet_operator(
    bounds: tuple[tuple[float, float], tuple[float, float]],
    grid: int,
    edge_data: Mapping[str, np.ndarray],
    conductivity,
    velocity: tuple[float, float],
    reaction: float = 0.0,
) -> np.ndarray:
    """Solve ∇·(K∇T) − v·∇T + qT = k_xx ∂²T/∂x² + 2 k_xy ∂²T/∂x∂y + k_yy ∂²T/∂y² − v_x ∂T/∂x
    − v_y ∂T/∂y + qT = 0 on the cell-centred grid of :func:`solve_dirichlet_laplace`, with the same
    edge data and the same result's layout; ``conductivity`` (k_x, k_y) or the tensor ((k_xx, k_xy),
    (k_xy, k_yy)); ``reaction`` q, on the diagonal.

    Central differences, second order, as py-pde's Laplacian; the mixed derivative by the four
    diagonal neighbours. The Dirichlet data enter through a ghost cell beyond each edge,
    T_ghost = 2 g − T_cell, py-pde's rule for a value at a face, so with v = 0 and no k_xy the
    system is py-pde's; the ghost beyond a corner (the mixed derivative's only) extrapolates the
    two edges' ghosts, T(−1, −1) = T(−1, 0) + T(0, −1) − T(0, 0). Central differences of the flow
    stay monotone while the cell Péclet number |v| h / (2k) is below 1 (|v| < 2k/h: 81 k at 256
    cells over 2π), and the mixed derivative's stencil while |k_xy| stays below k_xx h_y/h_x and
    k_yy h_x/h_y. A ``conductivity`` that is a function of x and y (arrays in, arrays out) is a
    graded plate's, ∇·(k∇T) − v·∇T + qT = 0, by conservative differences instead; a
    :class:`TensorField`, a tensor that varies, the same differences with K at each cell and its
    own drift w_i = Σ_j ∂K_ij/∂z_j beside the flow (∇·(K∇T) = Σ K_ij ∂²T/∂z_i∂z_j + w·∇T).
    """
    if isinstance(conductivity, TensorField):
        (k_x, k_xy), (_, k_y), (w_x, w_y) = conductivity.at_cells(bounds, grid)
        velocity = (velocity[0] - w_x, velocity[1] - w_y)       # the tensor's own drift beside the flow
    elif callable(conductivity):
        return _solve_graded(bounds, grid, edge_data, conductivity, velocity, reaction)
    else:
        (k_x, k_xy), (_, k_y) = conductivity_tensor(conductivity)
    (x0, x1), (y0, y1) = bounds
    v_x, v_y = velocity
    h_x, h_y = (x1 - x0) / grid, (y1 - y0) / grid
    index = np.arange(grid * grid).reshape(grid, grid)                 # [i_x, i_y]
    I, J = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
    diagonal = np.full((grid, grid), -2 * k_x / h_x**2 - 2 * k_y / h_y**2 + reaction)
    rows, columns, values = [], [], []
    rhs = np.zeros(grid * grid)
    data = {edge: np.asarray(edge_data[edge], dtype=np.float64) for edge in EDGES}

    def at(weight, where):
        """A coefficient's values at the cells ``where``: one number, or a field's (grid, grid)."""
        return weight[where] if np.ndim(weight) == 2 else weight

    def add(where, to, weight):
        rows.append(index[where])
        columns.append(to)
        values.append(np.broadcast_to(at(weight, where), (int(where.sum()),)).astype(np.float64))

    for di, dj, weight, edge in ((-1, 0, k_x / h_x**2 + v_x / (2 * h_x), "left"),
                                 (1, 0, k_x / h_x**2 - v_x / (2 * h_x), "right"),
                                 (0, -1, k_y / h_y**2 + v_y / (2 * h_y), "bottom"),
                                 (0, 1, k_y / h_y**2 - v_y / (2 * h_y), "top")):
        ni, nj = I + di, J + dj
        inside = (ni >= 0) & (ni < grid) & (nj >= 0) & (nj < grid)
        add(inside, index[ni[inside], nj[inside]], weight)
        ghost = ~inside
        diagonal[ghost] -= at(weight, ghost)
        along = J[ghost] if edge in ("left", "right") else I[ghost]
        np.add.at(rhs, index[ghost], -2 * at(weight, ghost) * data[edge][along])
    if np.any(k_xy != 0.0):
        for di in (-1, 1):
            for dj in (-1, 1):
                weight = di * dj * k_xy / (2 * h_x * h_y)            # 2 k_xy ∂²T/∂x∂y
                x_edge, y_edge = ("left" if di < 0 else "right"), ("bottom" if dj < 0 else "top")
                ni, nj = I + di, J + dj
                in_x, in_y = (ni >= 0) & (ni < grid), (nj >= 0) & (nj < grid)
                both = in_x & in_y
                add(both, index[ni[both], nj[both]], weight)
                beyond_x = ~in_x & in_y                              # 2 g_x(y_nj) − T(i, nj)
                add(beyond_x, index[I[beyond_x], nj[beyond_x]], -weight)
                np.add.at(rhs, index[beyond_x], -2 * at(weight, beyond_x) * data[x_edge][nj[beyond_x]])
                beyond_y = in_x & ~in_y                              # 2 g_y(x_ni) − T(ni, j)
                add(beyond_y, index[ni[beyond_y], J[beyond_y]], -weight)
                np.add.at(rhs, index[beyond_y], -2 * at(weight, beyond_y) * data[y_edge][ni[beyond_y]])
                corner = ~in_x & ~in_y                               # 2 g_x(y_j) + 2 g_y(x_i) − 3 T(i, j)
                diagonal[corner] -= 3 * at(weight, corner)
                np.add.at(rhs, index[corner], -2 * at(weight, corner) * (data[x_edge][J[corner]]
                                                                          + data[y_edge][I[corner]]))
    return _solve_sparse(grid, diagonal, rows, columns, values, rhs)


class TensorField:
    """A conductivity tensor that varies over the plate, ``function(x, y)`` its entries
    (:func:`pinnbo.oracles.dirichlet.tensor_function`)."""

    def __init__(self, function) -> None:
        self.function = function

    def at_cells(self, bounds, grid: int):
        """K's entries at the cell centres and its drift w = (∂K_xx/∂x + ∂K_xy/∂y, ∂K_xy/∂x +
        ∂K_yy/∂y) (:func:`pinnbo.oracles.dirichlet.tensor_at_cells`)."""
        K, drift = tensor_at_cells(self.function, bounds, grid)
        return (K[0, 0], K[0, 1]), (K[1, 0], K[1, 1]), (drift[0], drift[1])


def _solve_graded(bounds, grid: int, edge_data: Mapping[str, np.ndarray], conductivity, velocity,
                  reaction: float = 0.0) -> np.ndarray:
    """Solve ∇·(k∇T) − v·∇T + qT = 0 (q: ``reaction``, on the diagonal) for a conductivity field
    ``conductivity`` (a function of x and y, arrays in, arrays out, positive) on the cell-centred
    grid of :func:`solve_dirichlet_laplace`, with the same edge data and the same result's layout.

    Conservative differences, second order: the flux through each cell face is k at the face's
    midpoint times the difference of the two cells across it, so a graded plate keeps the heat it
    conducts (a plain k ΔT + ∇k·∇T would not, where k changes quickly). The Dirichlet data enter
    through the ghost cell T_ghost = 2 g − T_cell, as in :func:`solve_dirichlet_operator`, with k at
    the edge's face; the flow by central differences (monotone while |v| h / (2k) < 1).
    """
    (x0, x1), (y0, y1) = bounds
    v_x, v_y = velocity
    h_x, h_y = (x1 - x0) / grid, (y1 - y0) / grid
    centres_x = x0 + (np.arange(grid) + 0.5) * h_x
    centres_y = y0 + (np.arange(grid) + 0.5) * h_y
    X, Y = np.meshgrid(centres_x, centres_y, indexing="ij")
    index = np.arange(grid * grid).reshape(grid, grid)                 # [i_x, i_y]
    I, J = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")
    diagonal = np.full((grid, grid), float(reaction))
    rows, columns, values = [], [], []
    rhs = np.zeros(grid * grid)
    data = {edge: np.asarray(edge_data[edge], dtype=np.float64) for edge in EDGES}
    for di, dj, edge in ((-1, 0, "left"), (1, 0, "right"), (0, -1, "bottom"), (0, 1, "top")):
        h = h_x if di else h_y
        v = v_x if di else v_y
        face = np.asarray(conductivity(X + di * h_x / 2, Y + dj * h_y / 2), dtype=np.float64) * np.ones_like(X)
        weight = face / h**2 - (di + dj) * v / (2 * h)
        ni, nj = I + di, J + dj
        inside = (ni >= 0) & (ni < grid) & (nj >= 0) & (nj < grid)
        rows.append(index[inside])
        columns.append(index[ni[inside], nj[inside]])
        values.append(weight[inside])
        diagonal -= face / h**2
        ghost = ~inside
        diagonal[ghost] -= weight[ghost]
        along = J[ghost] if edge in ("left", "right") else I[ghost]
        np.add.at(rhs, index[ghost], -2 * weight[ghost] * data[edge][along])
    return _solve_sparse(grid, diagonal, rows, columns, values, rhs)


def _solve_sparse(grid: int, diagonal: np.ndarray, rows: list, columns: list, values: list,
                  rhs: np.ndarray) -> np.ndarray:
    """The cells' field (grid, grid) from the diagonal (grid, grid) and the off-diagonal entries
    (row, column and value arrays per neighbour) of the finite-difference system, sparse LU."""
    import scipy.sparse as sparse
    import scipy.sparse.linalg as sparse_linalg

    index = np.arange(grid * grid)
    matrix = sparse.csc_matrix((np.concatenate([diagonal.ravel(), *values]),
                                (np.concatenate([index, *rows]), np.concatenate([index, *columns]))),
                               shape=(grid * grid, grid * grid))
    return sparse_linalg.spsolve(matrix, rhs).reshape(grid, grid)


class HeatPlate:
    """Steady temperature of a plate with Dirichlet data on its four edges.

    Parameters
    ----------
    boundary: formulas of ``x`` and ``y`` per edge: ``left`` = T(x0, y), ``right`` = T(x1, y),
        ``bottom`` = T(x, y0), ``top`` = T(x, y1). A formula may mention the other variable; it is
        evaluated at the edge's coordinate.
    bounds: ``((x0, x1), (y0, y1))``, default [0, 2π]².
    grid: cells per axis of the finite-volume solve.
    conductivity: ``(k_x, k_y)``, positive: the field solves k_x ∂²T/∂x² + k_y ∂²T/∂y² = 0; or a
        symmetric positive-definite tensor ``((k_xx, k_xy), (k_xy, k_yy))``: ∇·(K∇T) = 0, whose
        entries may be formulas of x and y (a graded composite, positive-definite on the whole
        closed plate); or a formula of x and y, positive on the plate: a graded plate, ∇·(k∇T) = 0.
    velocity: ``(v_x, v_y)``: the field solves k_x ∂²T/∂x² + k_y ∂²T/∂y² − v·∇T = 0, heat carried
        downstream by a flow.
    reaction: q, a number: + qT in the equation, heat released (q > 0) or lost (q < 0) in proportion
        to the temperature; q below the plate's first eigenvalue (:func:`pinnbo.oracles.dirichlet.first_eigenvalue`),
        above which the steady state is unstable, or for a tensor or a graded plate below its lower
        bound under the smallest conductivity (:func:`pinnbo.oracles.dirichlet.check_reaction`).
    cache_dir: where solved fields are kept as ``.npz``; default :func:`default_cache_dir`.

    Query with :meth:`temperature` (``(N, 2) -> (N,)``) or call with one point ``(2,) -> float``;
    see the module docstring for the value on edges and corners.
    """

    def __init__(
        self,
        boundary: Mapping[str, str],
        bounds=DEFAULT_BOUNDS,
        grid: int = 256,
        cache_dir: str | os.PathLike | None = None,
        conductivity=(1.0, 1.0),
        velocity=(0.0, 0.0),
        reaction=0.0,
    ) -> None:
        self.bounds = check_bounds(bounds, ("x", "y"))
        self.tensor_expressions = None
        if isinstance(conductivity, str):        # a graded plate: k(x, y), parsed, never evaluated
            self.conductivity = conductivity
            self.conductivity_expression = parse_expression(conductivity, ["x", "y"], "params.conductivity")
            self._conductivity_field = numpy_function(self.conductivity_expression, ["x", "y"])
            lowest = check_positive_field(self._conductivity_field, self.bounds, ("x", "y"), 513, self.conductivity,
                                          "plate")
        elif has_formula(conductivity):          # a tensor that varies: a graded composite
            self.conductivity = [list(row) for row in conductivity]
            self.conductivity_expression = None
            self.tensor_expressions, lowest = check_tensor_field(conductivity, self.bounds, ("x", "y"),
                                                                 CONDUCTIVITY)
            self._conductivity_field = TensorField(tensor_function(self.tensor_expressions, ("x", "y")))
        else:
            self.conductivity = check_conductivity(conductivity)
            self.conductivity_expression = None
            # two numbers have their exact eigenvalue; a constant tensor its bound
            lowest = None if not isinstance(self.conductivity[0], tuple) else \
                float(np.linalg.eigvalsh(np.array(self.conductivity)).min())
        self.velocity = check_velocity(velocity)
        self.reaction = check_reaction(reaction, self.bounds, self.velocity, "plate",
                                       self.conductivity if lowest is None else None, lowest)
        if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 4:
            raise ProblemError(f"params.grid: expected an integer >= 4, got {shown(grid)}")
        self.grid = int(grid)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()

        self.boundary, self.expressions = parse_boundary(boundary, EDGES, "edge", ("x", "y"))
        variables = ["x", "y"]
        self._functions = {edge: numpy_function(expr, variables) for edge, expr in self.expressions.items()}
        self._check_finite()

        (x0, x1), (y0, y1) = self.bounds
        self._tolerance = (
            EDGE_TOLERANCE * max(x1 - x0, abs(x0), abs(x1)),
            EDGE_TOLERANCE * max(y1 - y0, abs(y0), abs(y1)),
        )
        # Cell centres of the solve, where py-pde also evaluates the Dirichlet data (face midpoints).
        self.x_cells = x0 + (np.arange(self.grid) + 0.5) * (x1 - x0) / self.grid
        self.y_cells = y0 + (np.arange(self.grid) + 0.5) * (y1 - y0) / self.grid
        self.corner_values = {
            (0, 0): 0.5 * (self.edge_data("left", y0) + self.edge_data("bottom", x0)),
            (1, 0): 0.5 * (self.edge_data("right", y0) + self.edge_data("bottom", x1)),
            (0, 1): 0.5 * (self.edge_data("left", y1) + self.edge_data("top", x0)),
            (1, 1): 0.5 * (self.edge_data("right", y1) + self.edge_data("top", x1)),
        }
        self.cells = self._load_or_solve()
        self._interpolant = self._build_interpolant()
        self._gradient_interpolant: RegularGridInterpolator | None = None  # built on first use

    # ----------------------------------------------------------------------------- boundary data
    def boundary_continuous(self) -> bool:
        """Whether the two edges' data agree at every corner (to 1e-9 of the data's scale): where
        they do not, the solution jumps there and its supremum may be a limit beside the corner."""
        (x0, x1), (y0, y1) = self.bounds
        pairs = [(self.edge_data("left", y0), self.edge_data("bottom", x0)),
                 (self.edge_data("right", y0), self.edge_data("bottom", x1)),
                 (self.edge_data("left", y1), self.edge_data("top", x0)),
                 (self.edge_data("right", y1), self.edge_data("top", x1))]
        scale = max(1.0, max(abs(v) for pair in pairs for v in pair))
        return all(abs(a - b) <= 1e-9 * scale for a, b in pairs)

    def edge_data(self, edge: str, t) -> np.ndarray | float:
        """Dirichlet data of ``edge`` at coordinate ``t`` along it (y for left/right, x for bottom/top)."""
        (x0, x1), (y0, y1) = self.bounds
        t_arr = np.asarray(t, dtype=np.float64)
        fn = self._functions[edge]
        if edge == "left":
            out = fn(np.full_like(t_arr, x0), t_arr)
        elif edge == "right":
            out = fn(np.full_like(t_arr, x1), t_arr)
        elif edge == "bottom":
            out = fn(t_arr, np.full_like(t_arr, y0))
        elif edge == "top":
            out = fn(t_arr, np.full_like(t_arr, y1))
        else:
            raise KeyError(edge)
        return float(out) if out.ndim == 0 else out

    def edge_range(self, edge: str) -> tuple[float, float]:
        """The range of the coordinate along ``edge`` (y for left and right, x for bottom and top)."""
        return self.bounds[1] if edge in ("left", "right") else self.bounds[0]

    def _check_finite(self) -> None:
        for edge in EDGES:
            lo, hi = self.edge_range(edge)
            t = np.linspace(lo, hi, 4097)
            values = self.edge_data(edge, t)
            bad = ~np.isfinite(values)
            if bad.any():
                var = "y" if edge in ("left", "right") else "x"
                raise ProblemError(
                    f"params.boundary.{edge}: boundary data is not finite at {var} = "
                    f"{t[bad][0]:.6g} (formula {shown(self.boundary[edge])}); it must be real and "
                    f"finite on the whole closed edge [{lo:.6g}, {hi:.6g}]"
                )

    # ----------------------------------------------------------------------------- solve & cache
    @property
    def cache_key(self) -> str:
        """Canonical JSON of what determines the solved field."""
        key = {
            "oracle": "pinnbo.oracles.laplace",
            "format": _CACHE_FORMAT,
            "boundary": {edge: sp.srepr(self.expressions[edge]) for edge in EDGES},
            "bounds": [list(pair) for pair in self.bounds],
            "grid": self.grid,
            "conductivity": sp.srepr(self.conductivity_expression) if self.conductivity_expression is not None
            else [[sp.srepr(entry) for entry in row] for row in self.tensor_expressions]
            if self.tensor_expressions is not None
            else [list(v) if isinstance(v, tuple) else v for v in self.conductivity],
            "velocity": list(self.velocity),
        }
        if self.reaction:                     # only then: the keys of the plates without one stay
            key["reaction"] = self.reaction
        return json.dumps(key, sort_keys=True, separators=(",", ":"))

    @property
    def cache_path(self) -> Path:
        return FIELDS.path(self.cache_dir, "heat_plate", self.cache_key)

    def _load_or_solve(self) -> np.ndarray:
        def solve() -> np.ndarray:
            edge_data = {edge: self.edge_data(edge, self.y_cells if edge in ("left", "right") else self.x_cells)
                         for edge in EDGES}
            if self.conductivity_expression is not None or self.tensor_expressions is not None:
                return solve_dirichlet_operator(self.bounds, self.grid, edge_data, self._conductivity_field,
                                                self.velocity, self.reaction)
            if self.velocity != (0.0, 0.0) or isinstance(self.conductivity[0], tuple) or self.reaction:
                return solve_dirichlet_operator(self.bounds, self.grid, edge_data, self.conductivity, self.velocity,
                                                self.reaction)
            return solve_dirichlet_laplace(self.bounds, self.grid, edge_data, self.conductivity)

        return FIELDS.get(self.cache_key, self.cache_dir, "heat_plate", (self.grid, self.grid), solve,
                          {"x_cells": self.x_cells, "y_cells": self.y_cells})

    def _nodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(xs, ys, nodes)``: the cell centres extended by the edges, and the field on them (the
        solved cells inside, the Dirichlet data on the edges, the corner means at the corners)."""
        (x0, x1), (y0, y1) = self.bounds
        xs = np.concatenate([[x0], self.x_cells, [x1]])
        ys = np.concatenate([[y0], self.y_cells, [y1]])
        nodes = np.empty((self.grid + 2, self.grid + 2))
        nodes[1:-1, 1:-1] = self.cells
        nodes[0, 1:-1] = self.edge_data("left", self.y_cells)
        nodes[-1, 1:-1] = self.edge_data("right", self.y_cells)
        nodes[1:-1, 0] = self.edge_data("bottom", self.x_cells)
        nodes[1:-1, -1] = self.edge_data("top", self.x_cells)
        for (i, j), value in self.corner_values.items():
            nodes[-i, -j] = value  # index 0 -> first node, index 1 -> -1 -> last node
        return xs, ys, nodes

    def _build_interpolant(self) -> RegularGridInterpolator:
        xs, ys, nodes = self._nodes()
        # Linear, not cubic: a linear interpolant never exceeds its nodes, so the maximum principle
        # survives (the supremum is the boundary data's), while a cubic one overshoots it next to a
        # corner where the data jump; both are as accurate as the solve inside (docs/algorithms.md).
        return RegularGridInterpolator((xs, ys), nodes, method="linear")

    # ----------------------------------------------------------------------------- queries
    def _checked_points(self, points) -> np.ndarray:
        """``points`` as an (N, 2) float array; ValueError for another shape, a non-finite
        coordinate or a point outside the closed rectangle (beyond the edge tolerance)."""
        return checked_points(points, self.bounds, self._tolerance, "plate")

    def temperature(self, points) -> np.ndarray:
        """T at ``points`` of shape (N, 2) (or one point (2,)) in the closed rectangle; shape (N,).

        Interior: the interpolated field. On an edge: the Dirichlet data. At a corner: the mean
        of the two edges' data there. Outside (beyond the edge tolerance): ValueError.
        """
        pts = self._checked_points(points)
        (x0, x1), (y0, y1) = self.bounds
        tx, ty = self._tolerance
        x, y = pts[:, 0].copy(), pts[:, 1].copy()
        on_left, on_right = np.abs(x - x0) <= tx, np.abs(x - x1) <= tx
        on_bottom, on_top = np.abs(y - y0) <= ty, np.abs(y - y1) <= ty
        x[on_left], x[on_right] = x0, x1
        y[on_bottom], y[on_top] = y0, y1
        on_vertical, on_horizontal = on_left | on_right, on_bottom | on_top

        values = np.empty(len(pts))
        inside = ~(on_vertical | on_horizontal)
        if inside.any():
            values[inside] = self._interpolant(np.column_stack([x[inside], y[inside]]))
        for edge, mask, t in (
            ("left", on_left & ~on_horizontal, y),
            ("right", on_right & ~on_horizontal, y),
            ("bottom", on_bottom & ~on_vertical, x),
            ("top", on_top & ~on_vertical, x),
        ):
            if mask.any():
                values[mask] = self.edge_data(edge, t[mask])
        for (i, j), value in self.corner_values.items():
            mask = (on_right if i else on_left) & (on_top if j else on_bottom)
            values[mask] = value
        return values

    def gradient(self, points) -> np.ndarray:
        """∇T = (∂T/∂x, ∂T/∂y) at ``points`` of shape (N, 2) (or one point (2,)); shape (N, 2).

        Computed from the solved cells alone: second-order centred differences (second-order
        one-sided at the outermost cells, :func:`numpy.gradient`), extended to the edges and
        corners by linear extrapolation from the two outermost cells, and interpolated linearly
        on the same extended grid as T. Not from the edge nodes: the cell-centred solve carries an
        O(h²) error that is smooth inside but does not vanish at the edge, so a difference over the
        half cell between the outermost cell and the exact edge data would turn it into an O(h)
        gradient error (measured on the harmonic field eˣ sin y + xy at 256²: 8e-3 of max |∇T| that
        way, 7e-4 this way, second order in the grid). Edges and corners get the extrapolated
        gradient (no special case: where the data are discontinuous, at a corner, the true
        gradient is unbounded and the value is merely large). Outside the closed rectangle:
        ValueError, as for :meth:`temperature`.
        """
        pts = self._checked_points(points)
        (x0, x1), (y0, y1) = self.bounds
        x, y = pts[:, 0], pts[:, 1]
        if self._gradient_interpolant is None:
            self._gradient_interpolant = self._build_gradient_interpolant()
        clipped = np.column_stack([np.clip(x, x0, x1), np.clip(y, y0, y1)])
        return self._gradient_interpolant(clipped)

    def gradient_norm(self, points) -> np.ndarray:
        """|∇T| at ``points`` of shape (N, 2) (or (2,)); shape (N,). See :meth:`gradient`."""
        g = self.gradient(points)
        return np.hypot(g[:, 0], g[:, 1])

    def _build_gradient_interpolant(self) -> RegularGridInterpolator:
        (x0, x1), (y0, y1) = self.bounds
        xs = np.concatenate([[x0], self.x_cells, [x1]])
        ys = np.concatenate([[y0], self.y_cells, [y1]])
        gx, gy = np.gradient(self.cells, self.x_cells, self.y_cells, edge_order=2)
        values = np.stack([_extend_half_cell(gx), _extend_half_cell(gy)], axis=-1)
        return RegularGridInterpolator((xs, ys), values, method="linear")

    def __call__(self, point) -> float:
        """T at one point of shape (2,), as a float (the oracle a :class:`Problem` calls)."""
        point = np.asarray(point, dtype=np.float64)
        if point.shape != (2,):
            raise ValueError(f"point: expected shape (2,), got {point.shape}")
        return float(self.temperature(point[None, :])[0])

    def field(self, n: int = 201) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(xs, ys, values)`` on an n×n grid of the closed rectangle, for plots.

        ``values[j, i] = T(xs[i], ys[j])`` (rows are y, as ``matplotlib.contourf(xs, ys, values)``
        expects), with the edge and corner semantics of :meth:`temperature`.
        """
        (x0, x1), (y0, y1) = self.bounds
        xs, ys = np.linspace(x0, x1, n), np.linspace(y0, y1, n)
        X, Y = np.meshgrid(xs, ys)
        values = self.temperature(np.column_stack([X.ravel(), Y.ravel()])).reshape(n, n)
        return xs, ys, values

    def __reduce__(self):
        # Pickled by its data, not its lambdified formulas: unpickling re-parses them and finds the
        # field in the memory or disk cache (a worker process does not solve again).
        return (HeatPlate, (dict(self.boundary), self.bounds, self.grid, self.cache_dir, self.conductivity,
                            self.velocity, self.reaction))

    def __repr__(self) -> str:
        anisotropic = f", conductivity={shown(self.conductivity)}" if self.conductivity != (1.0, 1.0) else ""
        flow = f", velocity={shown(self.velocity)}" if self.velocity != (0.0, 0.0) else ""
        flow += f", reaction={self.reaction:g}" if self.reaction else ""
        return (f"HeatPlate(boundary={shown(self.boundary)}, bounds={shown(self.bounds)}, grid={self.grid}"
                f"{anisotropic}{flow})")


def check_max_gradient(value) -> float:
    """``value`` as a float, or ProblemError naming ``params.max_gradient`` (a finite number > 0)."""
    if (isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating))
            or not (math.isfinite(value) and value > 0)):
        raise ProblemError(f"params.max_gradient: expected a finite number > 0 (a bound on |grad T|), got {shown(value)}")
    return float(value)


class GradientLimitedPlate:
    """The heat plate as a constrained oracle: one point p -> ``(T(p), [|∇T(p)| − max_gradient])``.

    A thermal-stress limit: the temperature gradient at the chosen point must not exceed
    ``max_gradient`` (feasible iff the one constraint value is <= 0). Both outputs come from the
    same cached solve (:meth:`HeatPlate.temperature`, :meth:`HeatPlate.gradient_norm`), so a
    query costs what an unconstrained one does.
    """

    def __init__(self, plate: HeatPlate, max_gradient: float) -> None:
        self.plate = plate
        self.max_gradient = check_max_gradient(max_gradient)

    def constraint(self, points) -> np.ndarray:
        """|∇T| − max_gradient at ``points`` (N, 2); shape (N,)."""
        return self.plate.gradient_norm(points) - self.max_gradient

    def __call__(self, point) -> tuple[float, list[float]]:
        point = np.asarray(point, dtype=np.float64)
        if point.shape != (2,):
            raise ValueError(f"point: expected shape (2,), got {point.shape}")
        return float(self.plate.temperature(point[None, :])[0]), [float(self.constraint(point[None, :])[0])]

    def __reduce__(self):
        return (GradientLimitedPlate, (self.plate, self.max_gradient))

    def __repr__(self) -> str:
        return f"GradientLimitedPlate({shown(self.plate)}, max_gradient={shown(self.max_gradient)})"


CONDUCTIVITY = ("two positive numbers [k_x, k_y] or a symmetric positive-definite matrix [[k_xx, k_xy], [k_xy, k_yy]] "
                "of numbers or formulas of x and y, or a formula of x and y")


def check_conductivity(conductivity) -> tuple:
    """``(k_x, k_y)``, or ``((k_xx, k_xy), (k_xy, k_yy))`` for a tensor with k_xy ≠ 0, as floats;
    ProblemError unless two finite positive numbers or a symmetric positive-definite 2×2 matrix of
    finite numbers (a diagonal one is the pair of its diagonal: the same plate)."""
    if (isinstance(conductivity, (list, tuple)) and len(conductivity) == 2
            and all(isinstance(row, (list, tuple)) for row in conductivity)):
        (k_xx, k_xy), (k_yx, k_yy) = (_number_pair(row, "conductivity", CONDUCTIVITY, positive=False, shown_as=conductivity)
                                      for row in conductivity)
        if k_xy != k_yx or not (k_xx > 0 and k_xx * k_yy - k_xy**2 > 0):
            raise ProblemError(f"params.conductivity: expected {CONDUCTIVITY}, got {shown(conductivity)}"
                               + (" (not symmetric)" if k_xy != k_yx else " (not positive definite)"))
        return (k_xx, k_yy) if k_xy == 0.0 else ((k_xx, k_xy), (k_xy, k_yy))
    return _number_pair(conductivity, "conductivity", CONDUCTIVITY, positive=True)


def conductivity_tensor(conductivity) -> tuple[tuple[float, float], tuple[float, float]]:
    """The tensor of a checked conductivity (:func:`check_conductivity`): (k_x, k_y) is diagonal."""
    if isinstance(conductivity[0], tuple):
        return conductivity
    return (conductivity[0], 0.0), (0.0, conductivity[1])


def check_velocity(velocity) -> tuple[float, float]:
    """``(v_x, v_y)`` as floats; ProblemError unless two finite numbers."""
    return _number_pair(velocity, "velocity", "two numbers [v_x, v_y]", positive=False)


def _number_pair(value, field: str, expected: str, positive: bool, shown_as=None) -> tuple[float, float]:
    return check_numbers(value, 2, field, expected, positive, shown_as)


def _extend_half_cell(a: np.ndarray) -> np.ndarray:
    """Pad a cell-centred (n, m) array to the (n + 2, m + 2) grid extended by the edges, half a
    cell out, by linear extrapolation from the two outermost cells (corners: both ways)."""
    a = np.concatenate([1.5 * a[:1] - 0.5 * a[1:2], a, 1.5 * a[-1:] - 0.5 * a[-2:-1]], axis=0)
    return np.concatenate([1.5 * a[:, :1] - 0.5 * a[:, 1:2], a, 1.5 * a[:, -1:] - 0.5 * a[:, -2:-1]], axis=1)
