"""Steady heat in a box: ∇·(k∇T) − v·∇T = 0 on [x0, x1] × [y0, y1] × [z0, z1] with Dirichlet data
on each of its six faces (docs/algorithms.md, "The heat box"), the heat plate's problem in three
variables; the conductivity k is 1 and v, a uniform flow carrying the heat downstream, is 0 by
default.

The field is solved once per boundary set on a cell-centred grid, by the same second-order
differences as py-pde's Laplacian, with the Dirichlet data at the face midpoints entering through a
ghost cell beyond each face, T_ghost = 2 g − T_cell (py-pde's rule for a value at a face). Along one
axis that operator is the tridiagonal (1, −2, 1)/h² with −3 at both ends, whose eigenvectors are the
sines sin(πk(i + ½)/n) of a type-II discrete sine transform, with eigenvalues −4 sin²(πk/2n)/h²; so
the three-dimensional system is solved exactly, in O(n³ log n), by the transform, a division by the
sum of the three axes' eigenvalues and the inverse transform, where py-pde's sparse LU of the
7-point matrix fills in (O(n⁶) operations even in a nested-dissection order). A flow is taken out
by T = e^{v·(x − c)/2} w (c the box's centre): then ∇²T − v·∇T = e^{v·(x − c)/2} (∇²w − |v|²/4 w),
so w solves a screened Laplace equation with data g e^{−v·(x − c)/2}, by the same transform with
|v|²/4 taken off every eigenvalue; a reaction, + qT (heat released or lost in proportion to T),
adds q to every eigenvalue. A conductivity that varies over the box, ∇·(k∇T) − v·∇T = 0, is
differenced conservatively, as the graded plate's (:mod:`pinnbo.oracles.heat_plate`), and solved
by BiCGSTAB preconditioned with the transform's solve of k̄∇²T − v·∇T, k̄ the cells' mean
conductivity: the preconditioned operator's spectrum spans about max k / min k, so a few dozen
iterations reach the solve's tolerance. The field is kept in memory and on disk
(:mod:`pinnbo.oracles.field_cache`).

What the oracle returns where, as the heat plate's (:mod:`pinnbo.oracles.heat_plate`):

* strictly inside the box: the solved field, interpolated trilinearly on the grid of cell centres
  extended by the faces (whose nodes carry the Dirichlet data), the edges and the vertices;
* exactly on a face (within 1e-12 relative to the box size), away from its edges: the face's data,
  evaluated exactly from its formula;
* on an edge: the mean of the two faces' data there; at a vertex, the mean of the three;
* outside the closed box: :class:`ValueError`.

Trilinear interpolation never exceeds its nodes, so the supremum over the closed box is the
supremum of the faces' data (maximum principle), which :func:`box_supremum` finds; with a reaction
that releases heat it may lie inside, at a node of the solved field.
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
from pinnbo.oracles.dirichlet import (cell_centres, check_bounds, check_numbers, check_positive_field,
                                      check_reaction, check_tensor_field, checked_points, has_formula,
                                      parse_boundary, tensor_at_cells, tensor_function)
from pinnbo.oracles.field_cache import FIELDS, default_cache_dir
from pinnbo.problem import ProblemError

#: The faces, py-pde's names: ``x-`` is the face x = x0, ``x+`` the face x = x1, and so on.
FACES = ("x-", "x+", "y-", "y+", "z-", "z+")
AXES = ("x", "y", "z")
# Points within this fraction of the box size from a face count as on it.
FACE_TOLERANCE = 1e-12
# The supremum search keeps this fraction of a face's sides away from its edges, where the oracle
# returns the mean of two faces rather than either face's data.
EDGE_OFFSET = 1e-9
#: The most flow across the box, Σ |v_i| (x1_i − x0_i): the factor e^{v·(x − c)/2} of the solve then
#: spans at most e^{±10} over the box, and the transform keeps its digits.
MOST_FLOW = 40.0
# Bump when the cached data or the key changes meaning: old files are then ignored.
_CACHE_FORMAT = 1


def face_axis(face: str) -> tuple[int, int]:
    """``(axis, side)`` of a face: ``x+`` is (0, 1)."""
    return AXES.index(face[0]), int(face[1] == "+")


def solve_dirichlet_box(bounds, grid: int, face_data: Mapping[str, np.ndarray],
                        velocity=(0.0, 0.0, 0.0), reaction: float = 0.0) -> np.ndarray:
    """Solve ∇²T − v·∇T + qT = 0 (v: ``velocity``, q: ``reaction``) on a ``grid``³ cell-centred
    grid of the box ``bounds`` (three (lower, upper) pairs) exactly in the discrete sense, by type-II
    sine transforms (module docstring; with a flow, of the screened equation of w = T e^{−v·(x − c)/2}).

    ``face_data[face]`` holds the Dirichlet values at the face's cell midpoints, shape (grid, grid),
    indexed by the other two axes in order (``x-``: [i_y, i_z]). Returns the field at the cell
    centres, shape (grid, grid, grid), indexed [i_x, i_y, i_z].
    """
    from scipy.fft import dstn, idstn

    h, cells = cell_centres(bounds, grid)
    v = np.asarray(velocity, dtype=np.float64)
    centre = np.array([(lo + hi) / 2 for lo, hi in bounds])
    rhs = np.zeros((grid, grid, grid))
    for face in FACES:
        axis, side = face_axis(face)
        index = [slice(None)] * 3
        index[axis] = -1 if side else 0
        data = np.asarray(face_data[face], dtype=np.float64)
        if v.any():      # w's data, e^{−v·(x − c)/2} g, at the face's cell midpoints
            first, second = (cells[a] - centre[a] for a in range(3) if a != axis)
            others = [v[a] for a in range(3) if a != axis]
            exponent = v[axis] * (bounds[axis][side] - centre[axis]) + others[0] * first[:, None] + others[1] * second[None, :]
            data = data * np.exp(-exponent / 2)
        rhs[tuple(index)] -= 2.0 * data / h[axis] ** 2
    field = idstn(dstn(rhs, type=2, norm="ortho") / (_eigenvalues(h, grid, v) + reaction), type=2, norm="ortho")
    if v.any():
        field *= _flow_factor(cells, centre, v)
    return field


def _eigenvalues(h, grid: int, v: np.ndarray) -> np.ndarray:
    """The eigenvalues of the screened operator ∇²_h − |v|²/4 on the type-II sines, (grid,)*3."""
    k = np.arange(1, grid + 1)
    eigen = [-4.0 * np.sin(np.pi * k / (2 * grid)) ** 2 / step**2 for step in h]
    return eigen[0][:, None, None] + eigen[1][None, :, None] + eigen[2][None, None, :] - float(v @ v) / 4


def _flow_factor(cells, centre: np.ndarray, v: np.ndarray) -> np.ndarray:
    """e^{v·(x − c)/2} at the cell centres, (grid,)*3."""
    offsets = [v[a] * (cells[a] - centre[a]) for a in range(3)]
    return np.exp((offsets[0][:, None, None] + offsets[1][None, :, None] + offsets[2][None, None, :]) / 2)


def solve_graded_box(bounds, grid: int, face_data: Mapping[str, np.ndarray], conductivity,
                     velocity=(0.0, 0.0, 0.0), reaction: float = 0.0, rtol: float = 1e-11) -> np.ndarray:
    """Solve ∇·(k∇T) − v·∇T + qT = 0 (q: ``reaction``) for a conductivity field ``conductivity`` (a
    function of x, y and z, arrays in, arrays out, positive) on the cell-centred grid and with the
    face data of :func:`solve_dirichlet_box`, the same result's layout.

    Conservative differences, second order: the flux through each cell face is k at the face's
    midpoint times the difference of the two cells across it; the data enter through the ghost
    cell T_ghost = 2 g − T_cell with k at the box's face, the flow by central differences (module
    docstring for the solve)."""
    h, cells = cell_centres(bounds, grid)
    v = np.asarray(velocity, dtype=np.float64)
    X = np.meshgrid(*cells, indexing="ij")
    shape = (grid,) * 3
    weights, constant = [], np.zeros(shape)
    for axis in range(3):
        for side in (0, 1):
            at_face = [c.copy() for c in X]
            at_face[axis] = at_face[axis] + (h[axis] if side else -h[axis]) / 2
            k = np.asarray(conductivity(*at_face), dtype=np.float64) * np.ones(shape)
            weight = k / h[axis] ** 2 + (-1 if side else 1) * v[axis] / (2 * h[axis])
            weights.append((axis, side, k / h[axis] ** 2, weight))
            index = [slice(None)] * 3
            index[axis] = -1 if side else 0
            face = FACES[2 * axis + side]
            constant[tuple(index)] += 2 * weight[tuple(index)] * np.asarray(face_data[face], dtype=np.float64)

    def neighbour(T, axis, side):
        """The neighbour's value across each cell's face, −T beyond the box (the ghost's linear part)."""
        if side:
            beyond = -np.take(T, [-1], axis=axis)
            return np.concatenate([np.take(T, range(1, grid), axis=axis), beyond], axis=axis)
        beyond = -np.take(T, [0], axis=axis)
        return np.concatenate([beyond, np.take(T, range(grid - 1), axis=axis)], axis=axis)

    def apply(flat):
        T = flat.reshape(shape)
        out = reaction * T
        for axis, side, diffusion, weight in weights:
            out += weight * neighbour(T, axis, side) - diffusion * T
        return out.ravel()

    mean = float(np.mean([np.mean(w[2]) * h[w[0]] ** 2 for w in weights]))
    return _preconditioned_solve(apply, -constant, bounds, grid, mean, v, rtol, reaction)


def _preconditioned_solve(apply, rhs: np.ndarray, bounds, grid: int, mean: float, v: np.ndarray,
                          rtol: float, reaction: float = 0.0) -> np.ndarray:
    """The cells' field (grid,)*3 solving ``apply(T) = rhs`` (flattened), by BiCGSTAB preconditioned
    with the transform's solve of ``mean`` ∇²T − v·∇T + qT (module docstring)."""
    from scipy.fft import dstn, idstn
    from scipy.sparse.linalg import LinearOperator, bicgstab

    h, cells = cell_centres(bounds, grid)
    centre = np.array([(lo + hi) / 2 for lo, hi in bounds])
    drift = v / mean
    eigen, factor = _eigenvalues(h, grid, drift) + reaction / mean, _flow_factor(cells, centre, drift)
    shape = (grid,) * 3

    def precondition(flat):
        r = flat.reshape(shape) / mean / factor
        return (idstn(dstn(r, type=2, norm="ortho") / eigen, type=2, norm="ortho") * factor).ravel()

    n = grid**3
    solution, info = bicgstab(LinearOperator((n, n), matvec=apply), rhs.ravel(), rtol=rtol, atol=0.0,
                              maxiter=2000, M=LinearOperator((n, n), matvec=precondition))
    if info != 0:
        raise RuntimeError(f"the box's iterative solve did not converge ({info} iterations)")
    return solution.reshape(shape)


def solve_tensor_box(bounds, grid: int, face_data: Mapping[str, np.ndarray], tensor,
                     velocity=(0.0, 0.0, 0.0), reaction: float = 0.0, rtol: float = 1e-11) -> np.ndarray:
    """Solve ∇·(K∇T) − v·∇T + qT = 0 (q: ``reaction``) for a symmetric positive-definite ``tensor``
    K on the cell-centred grid and with the face data of :func:`solve_dirichlet_box`, the same
    result's layout. K is constant (3 × 3), or a field: a function of x, y and z (arrays in)
    returning the 3 × 3 entries, each an array or a number; then ∇·(K∇T) = Σ K_ij ∂²T/∂z_i∂z_j +
    w·∇T with w_i = Σ_j ∂K_ij/∂z_j, each derivative the difference of K across the cell (at ± half
    a cell), second order.

    Central differences, second order, as the plate's tensor (:mod:`pinnbo.oracles.heat_plate`):
    each mixed derivative by the four diagonal neighbours in its plane, the data through the ghost
    cell T_ghost = 2 g − T_cell beyond each face, and the ghost beyond an edge (the mixed
    derivatives' only) extrapolated from its two faces' ghosts, T(−1, −1) = T(−1, 0) + T(0, −1) −
    T(0, 0) in the plane across the edge."""
    h, _ = cell_centres(bounds, grid)
    v = np.asarray(velocity, dtype=np.float64)
    if callable(tensor):
        K, drift = tensor_at_cells(tensor, bounds, grid)
        v = v[:, None, None, None] - drift          # the tensor's own drift, −w, beside the flow's
        mean = float(np.mean(K[0, 0] + K[1, 1] + K[2, 2])) / 3
    else:
        K = np.asarray(tensor, dtype=np.float64)
        mean = float(np.trace(K)) / 3
    data = {face: np.asarray(face_data[face], dtype=np.float64) for face in FACES}

    def padded(T, with_data: bool):
        P = np.zeros((grid + 2,) * 3)
        P[1:-1, 1:-1, 1:-1] = T
        for face in FACES:
            axis, side = face_axis(face)
            ghost, cell = [slice(1, -1)] * 3, [slice(1, -1)] * 3
            ghost[axis], cell[axis] = (-1, -2) if side else (0, 1)
            P[tuple(ghost)] = (2 * data[face] if with_data else 0.0) - P[tuple(cell)]
        for a in range(3):                  # the edges' ghosts, across axes a < b
            for b in range(a + 1, 3):
                for ga, ca in ((0, 1), (-1, -2)):
                    for gb, cb in ((0, 1), (-1, -2)):
                        def at(i, j):
                            index = [slice(1, -1)] * 3
                            index[a], index[b] = i, j
                            return tuple(index)
                        P[at(ga, gb)] = P[at(ga, cb)] + P[at(ca, gb)] - P[at(ca, cb)]
        return P

    def stencil(P):
        def shifted(offsets):
            return P[tuple(slice(1 + o, grid + 1 + o) for o in offsets)]
        centre = shifted((0, 0, 0))
        out = reaction * centre
        for i in range(3):
            step = [0, 0, 0]
            step[i] = 1
            ahead, behind = shifted(step), shifted([-o for o in step])
            out += K[i, i] * (ahead - 2 * centre + behind) / h[i] ** 2 - v[i] * (ahead - behind) / (2 * h[i])
            for j in range(i + 1, 3):
                if not np.any(K[i, j]):
                    continue
                corners = 0.0
                for si in (1, -1):
                    for sj in (1, -1):
                        offset = [0, 0, 0]
                        offset[i], offset[j] = si, sj
                        corners = corners + si * sj * shifted(offset)
                out += 2 * K[i, j] * corners / (4 * h[i] * h[j])
        return out

    zero = np.zeros((grid,) * 3)
    constant = stencil(padded(zero, True))
    apply = lambda flat: stencil(padded(flat.reshape((grid,) * 3), False)).ravel()  # noqa: E731
    return _preconditioned_solve(apply, -constant, bounds, grid, mean, np.asarray(velocity, dtype=np.float64), rtol,
                                 reaction)


TENSOR = ("a formula of x, y and z or a symmetric positive-definite tensor [[k_xx, k_xy, k_xz], "
          "[k_xy, k_yy, k_yz], [k_xz, k_yz, k_zz]] of numbers or formulas of x, y and z")


def check_tensor(tensor) -> tuple[tuple[float, float, float], ...]:
    """A constant conductivity tensor as three rows of floats; ProblemError unless a 3 × 3
    symmetric positive-definite matrix of finite numbers (the heat then flows down every gradient)."""
    if isinstance(tensor, (str, bytes)) or not isinstance(tensor, (list, tuple)) or len(tensor) != 3:
        raise ProblemError(f"params.conductivity: expected {TENSOR}, got {shown(tensor)}")
    K = np.array([check_numbers(row, 3, "conductivity", TENSOR, shown_as=tensor) for row in tensor])
    if not np.array_equal(K, K.T) or np.linalg.eigvalsh(K).min() <= 0:
        raise ProblemError(f"params.conductivity: expected {TENSOR}, got {shown(tensor)}")
    return tuple(tuple(float(v) + 0.0 for v in row) for row in K)


def check_flow(velocity, bounds) -> tuple[float, float, float]:
    """``velocity`` as three floats; ProblemError unless three finite numbers whose flow across the
    box, Σ |v_i| (x1_i − x0_i), is at most :data:`MOST_FLOW`."""
    v = tuple(c + 0.0 for c in check_numbers(velocity, 3, "velocity", "three numbers [v_x, v_y, v_z]"))
    flow = sum(abs(c) * (hi - lo) for c, (lo, hi) in zip(v, bounds))
    if flow > MOST_FLOW:
        raise ProblemError(f"params.velocity: the flow across the box, |v_x| (x1 - x0) + |v_y| (y1 - y0) + "
                           f"|v_z| (z1 - z0), must be at most {MOST_FLOW:g}, got {flow:.6g}")
    return v


class HeatBox:
    """Steady temperature of a box with Dirichlet data on its six faces, ∇·(k∇T) − v·∇T + qT = 0.

    Parameters
    ----------
    boundary: formulas of ``x``, ``y`` and ``z`` per face (:data:`FACES`): ``x-`` = T(x0, y, z),
        ``x+`` = T(x1, y, z), ``y-`` = T(x, y0, z), and so on. A formula is evaluated on its face
        (its own axis's variable at the face's bound).
    bounds: three (lower, upper) pairs, x then y then z; default the unit cube.
    grid: cells per axis of the solve.
    velocity: ``(v_x, v_y, v_z)``, a uniform flow carrying the heat downstream (:func:`check_flow`);
        default none.
    reaction: q, + qT: heat released (q > 0) or lost (q < 0) in proportion to the temperature, q
        below the box's first eigenvalue, or for a graded or composite box below its lower bound
        under the smallest conductivity (:func:`pinnbo.oracles.dirichlet.check_reaction`).
    conductivity: a formula of x, y and z, finite and positive on the closed box: a graded box,
        ∇·(k∇T) − v·∇T = 0; or a tensor ``[[k_xx, k_xy, k_xz], [k_xy, k_yy, k_yz], [k_xz, k_yz,
        k_zz]]``, symmetric positive-definite, of numbers (:func:`check_tensor`) or numbers and
        formulas (:func:`check_tensor_field`): ∇·(K∇T) − v·∇T = 0; default none (k = 1).
    cache_dir: where solved fields are kept as ``.npz``; default :func:`default_cache_dir`.

    Query with :meth:`temperature` (``(N, 3) -> (N,)``) or call with one point ``(3,) -> float``;
    the module docstring says what is returned on faces, edges and vertices.
    """

    def __init__(self, boundary: Mapping[str, str], bounds=((0.0, 1.0),) * 3, grid: int = 96,
                 cache_dir: str | os.PathLike | None = None, velocity=(0.0, 0.0, 0.0),
                 conductivity: str | list | None = None, reaction=0.0) -> None:
        self.bounds = check_bounds(bounds, AXES)
        if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 4:
            raise ProblemError(f"params.grid: expected an integer >= 4, got {shown(grid)}")
        self.grid = int(grid)
        self.velocity = check_flow(velocity, self.bounds)
        self.conductivity, self.conductivity_expression, self.tensor = conductivity, None, None
        self.tensor_expressions = None
        lowest = None                          # the smallest conductivity, where it varies or is a tensor
        if isinstance(conductivity, str):      # parsed, never evaluated
            self.conductivity_expression = parse_expression(conductivity, list(AXES), "params.conductivity")
            self._conductivity_field = numpy_function(self.conductivity_expression, list(AXES))
            lowest = check_positive_field(self._conductivity_field, self.bounds, AXES, 65, conductivity, "box")
        elif has_formula(conductivity):
            self.tensor_expressions, lowest = check_tensor_field(conductivity, self.bounds, AXES, TENSOR)
            self._tensor_field = tensor_function(self.tensor_expressions, AXES)
            self.conductivity = [list(row) for row in conductivity]
        elif conductivity is not None:
            self.tensor = check_tensor(conductivity)
            self.conductivity = [list(row) for row in self.tensor]
            lowest = float(np.linalg.eigvalsh(np.array(self.tensor)).min())
        self.reaction = check_reaction(reaction, self.bounds, self.velocity, "box",
                                       (1.0, 1.0, 1.0) if lowest is None else None, lowest)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self.boundary, self.expressions = parse_boundary(boundary, FACES, "face", AXES)
        self._functions = {face: numpy_function(expr, list(AXES)) for face, expr in self.expressions.items()}
        self._tolerance = np.array([FACE_TOLERANCE * max(hi - lo, abs(lo), abs(hi)) for lo, hi in self.bounds])
        self.cells_at = [lo + (np.arange(self.grid) + 0.5) * (hi - lo) / self.grid for lo, hi in self.bounds]
        self._check_finite()
        self.cells = self._load_or_solve()
        self._interpolant = RegularGridInterpolator(self._node_axes(), self._nodes(), method="linear")

    # ----------------------------------------------------------------------------- boundary data
    def face_data(self, face: str, points) -> np.ndarray:
        """The data of ``face`` at ``points`` (N, 3), each taken onto the face (its own axis's
        coordinate set to the face's bound); shape (N,)."""
        axis, side = face_axis(face)
        pts = np.array(points, dtype=np.float64, ndmin=2)
        pts[:, axis] = self.bounds[axis][side]
        out = np.asarray(self._functions[face](pts[:, 0], pts[:, 1], pts[:, 2]), dtype=np.float64)
        return np.broadcast_to(out, (len(pts),)).copy()

    def face_grid(self, face: str, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """The data of ``face`` on the grid ``first`` × ``second`` of its other two axes, in order;
        shape (len(first), len(second))."""
        axis, _ = face_axis(face)
        A, B = np.meshgrid(first, second, indexing="ij")
        points = np.zeros((A.size, 3))
        others = [a for a in range(3) if a != axis]
        points[:, others[0]], points[:, others[1]] = A.ravel(), B.ravel()
        return self.face_data(face, points).reshape(A.shape)

    def boundary_continuous(self, samples: int = 257) -> bool:
        """Whether every two faces' data agree along their shared edge (to 1e-9 of the data's
        scale, ``samples`` points per edge): where they do not, the solution jumps there."""
        pairs = []
        for a, face in enumerate(FACES):
            for other in FACES[a + 1:]:
                if face[0] == other[0]:
                    continue
                points = self._edge_points(face, other, samples)
                pairs.append((self.face_data(face, points), self.face_data(other, points)))
        scale = max(1.0, max(float(np.max(np.abs(np.concatenate(p)))) for p in pairs))
        return all(np.all(np.abs(a - b) <= 1e-9 * scale) for a, b in pairs)

    def _edge_points(self, face: str, other: str, samples: int) -> np.ndarray:
        (axis, side), (other_axis, other_side) = face_axis(face), face_axis(other)
        along = 3 - axis - other_axis
        points = np.zeros((samples, 3))
        points[:, axis] = self.bounds[axis][side]
        points[:, other_axis] = self.bounds[other_axis][other_side]
        points[:, along] = np.linspace(*self.bounds[along], samples)
        return points

    def _check_finite(self, samples: int = 257) -> None:
        for face in FACES:
            axis, _ = face_axis(face)
            first, second = (np.linspace(*self.bounds[a], samples) for a in range(3) if a != axis)
            values = self.face_grid(face, first, second)
            bad = ~np.isfinite(values)
            if bad.any():
                i, j = np.argwhere(bad)[0]
                names = [AXES[a] for a in range(3) if a != axis]
                raise ProblemError(
                    f"params.boundary.{face}: boundary data is not finite at ({names[0]}, {names[1]}) = "
                    f"({first[i]:.6g}, {second[j]:.6g}) (formula {shown(self.boundary[face])}); it must be real "
                    f"and finite on the whole closed face")

    # ----------------------------------------------------------------------------- solve & cache
    @property
    def cache_key(self) -> str:
        """Canonical JSON of what determines the solved field (a box without a flow keeps the key
        it had before the flow was a parameter)."""
        key = {"oracle": "pinnbo.oracles.heat_box", "format": _CACHE_FORMAT,
               "boundary": {face: sp.srepr(self.expressions[face]) for face in FACES},
               "bounds": [list(pair) for pair in self.bounds], "grid": self.grid}
        if any(self.velocity):
            key["velocity"] = list(self.velocity)
        if self.reaction:
            key["reaction"] = self.reaction
        if self.conductivity_expression is not None:
            key["conductivity"] = sp.srepr(self.conductivity_expression)
        if self.tensor is not None:
            key["conductivity"] = [list(row) for row in self.tensor]
        if self.tensor_expressions is not None:
            key["conductivity"] = [[sp.srepr(entry) for entry in row] for row in self.tensor_expressions]
        return json.dumps(key, sort_keys=True, separators=(",", ":"))

    @property
    def cache_path(self) -> Path:
        return FIELDS.path(self.cache_dir, "heat_box", self.cache_key)

    def _load_or_solve(self) -> np.ndarray:
        def solve() -> np.ndarray:
            data = {}
            for face in FACES:
                axis, _ = face_axis(face)
                data[face] = self.face_grid(face, *(self.cells_at[a] for a in range(3) if a != axis))
            if self.conductivity_expression is not None:
                return solve_graded_box(self.bounds, self.grid, data, self._conductivity_field, self.velocity,
                                        self.reaction)
            if self.tensor is not None:
                return solve_tensor_box(self.bounds, self.grid, data, self.tensor, self.velocity, self.reaction)
            if self.tensor_expressions is not None:
                return solve_tensor_box(self.bounds, self.grid, data, self._tensor_field, self.velocity,
                                        self.reaction)
            return solve_dirichlet_box(self.bounds, self.grid, data, self.velocity, self.reaction)

        return FIELDS.get(self.cache_key, self.cache_dir, "heat_box", (self.grid,) * 3, solve,
                          {f"{a}_cells": c for a, c in zip(AXES, self.cells_at)})

    def _node_axes(self) -> list[np.ndarray]:
        return [np.concatenate([[lo], cells, [hi]]) for (lo, hi), cells in zip(self.bounds, self.cells_at)]

    def _nodes(self) -> np.ndarray:
        """The field on the cell centres extended by the faces: the solved cells inside, and on the
        boundary what :meth:`temperature` returns there (:meth:`_on_faces`)."""
        axes = self._node_axes()
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        _, values, _ = self._on_faces(grid)
        nodes = values.reshape((self.grid + 2,) * 3)
        nodes[1:-1, 1:-1, 1:-1] = self.cells
        return nodes

    def _on_faces(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(points, values, count)``: the points (N, 3) moved onto each face they lie on (within
        the face tolerance), the mean of those faces' data at each (0 where it lies on none) and how
        many faces that is (one on a face, two on an edge, three at a vertex)."""
        pts = points.copy()
        lower, upper = np.array(self.bounds).T
        on = {}
        for face in FACES:
            axis, side = face_axis(face)
            bound = (lower, upper)[side][axis]
            on[face] = np.abs(pts[:, axis] - bound) <= self._tolerance[axis]
            pts[on[face], axis] = bound
        count = sum(mask.astype(int) for mask in on.values())
        values = np.zeros(len(pts))
        for face, mask in on.items():
            if mask.any():
                values[mask] += self.face_data(face, pts[mask]) / count[mask]
        return pts, values, count

    # ----------------------------------------------------------------------------- queries
    def _checked_points(self, points) -> np.ndarray:
        """``points`` as an (N, 3) float array; ValueError for another shape, a non-finite
        coordinate or a point outside the closed box (beyond the face tolerance)."""
        return checked_points(points, self.bounds, self._tolerance, "box")

    def temperature(self, points) -> np.ndarray:
        """T at ``points`` (N, 3) (or one point (3,)) in the closed box; shape (N,). Inside: the
        interpolated field; on the boundary: the mean of the data of the faces the point lies on."""
        pts, values, count = self._on_faces(self._checked_points(points))
        inside = count == 0
        if inside.any():
            values[inside] = self._interpolant(pts[inside])
        return values

    def __call__(self, point) -> float:
        """T at one point of shape (3,), as a float (the oracle a :class:`Problem` calls)."""
        point = np.asarray(point, dtype=np.float64)
        if point.shape != (3,):
            raise ValueError(f"point: expected shape (3,), got {point.shape}")
        return float(self.temperature(point[None, :])[0])

    def __reduce__(self):
        # Pickled by its data, not its lambdified formulas: unpickling re-parses them and finds the
        # field in the memory or disk cache (a worker process does not solve again).
        return (HeatBox, (dict(self.boundary), self.bounds, self.grid, self.cache_dir, self.velocity,
                          self.conductivity, self.reaction))

    def __repr__(self) -> str:
        flow = f", velocity={shown(list(self.velocity))}" if any(self.velocity) else ""
        flow += f", reaction={self.reaction:g}" if self.reaction else ""
        graded = f", conductivity={shown(self.conductivity)}" if self.conductivity is not None else ""
        return f"HeatBox(boundary={shown(self.boundary)}, bounds={shown(self.bounds)}, grid={self.grid}{flow}{graded})"


def box_supremum(box: HeatBox, samples: int = 1025) -> tuple[float, np.ndarray]:
    """``(f_star, location)``: the supremum of :meth:`HeatBox.temperature` over the closed box.

    Candidates: the largest solved cell (trilinear interpolation never exceeds its nodes) and each
    face's data on the open face, sampled on a ``samples``² grid from ``EDGE_OFFSET`` of its sides
    past one edge to as far before the other, the best sample refined by a bounded quasi-Newton
    search between the samples beside it. Where the data rise towards an edge whose other face is lower
    the supremum is a limit no point attains: the location then sits ``EDGE_OFFSET`` of the side
    from that edge, and ``f_star`` is the value there (so ``box(location) == f_star``).
    """
    from scipy.optimize import minimize

    i = np.unravel_index(int(np.argmax(box.cells)), box.cells.shape)
    candidates = [(float(box.cells[i]), np.array([box.cells_at[a][i[a]] for a in range(3)]))]
    for face in FACES:
        axis, side = face_axis(face)
        others = [a for a in range(3) if a != axis]
        ranges = [box.bounds[a] for a in others]
        inner = [(lo + EDGE_OFFSET * (hi - lo), hi - EDGE_OFFSET * (hi - lo)) for lo, hi in ranges]
        first, second = (np.linspace(a, b, samples) for a, b in inner)
        values = box.face_grid(face, first, second)
        m, n = np.unravel_index(int(np.argmax(values)), values.shape)

        def point(uv, axis=axis, side=side, others=others):
            p = np.empty(3)
            p[axis] = box.bounds[axis][side]
            p[others[0]], p[others[1]] = uv
            return p

        best, where = float(values[m, n]), point((first[m], second[n]))
        near = [(grid[max(k - 1, 0)], grid[min(k + 1, samples - 1)]) for grid, k in ((first, m), (second, n))]
        result = minimize(lambda uv: -float(box.face_data(face, point(uv))[0]), x0=[first[m], second[n]],
                          method="L-BFGS-B", bounds=near, options={"ftol": 1e-15, "gtol": 1e-12})
        if result.success and math.isfinite(result.fun) and -result.fun > best:
            best, where = float(-result.fun), point(result.x)
        candidates.append((best, where))
    return max(candidates, key=lambda c: c[0])
