"""What a Dirichlet problem on a box reads from a case (the heat plate's and the heat box's): its
bounds, the formulas of its boundary data and its coefficients' numbers or formulas, each checked
with one line that names the field; and the cells its solvers share (their centres, a tensor
field's values and drift there)."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import sympy as sp

from pinnbo.errors import shown
from pinnbo.expressions import numpy_function, parse_expression
from pinnbo.problem import ProblemError

_COUNTS = {2: "two", 3: "three"}


def check_numbers(value, count: int, field: str, expected: str, positive: bool = False,
                  shown_as=None) -> tuple[float, ...]:
    """``value`` as ``count`` floats; ProblemError naming ``params.field`` and ``expected`` (showing
    ``shown_as`` where given, the whole of which ``value`` is a part) unless a list of that many
    finite numbers, each positive where ``positive``."""
    message = f"params.{field}: expected {expected}, got {shown(value if shown_as is None else shown_as)}"
    if (isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or len(value) != count
            or any(isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) for v in value)):
        raise ProblemError(message)
    numbers = tuple(float(v) for v in value)
    if not all(math.isfinite(v) and (v > 0 or not positive) for v in numbers):
        raise ProblemError(message)
    return numbers


def first_eigenvalue(conductivity: Sequence[float], bounds: Sequence[tuple[float, float]],
                     velocity: Sequence[float]) -> float:
    """The smallest λ with −(Σ k_i ∂²/∂z_i² − v·∇)T = λT, T = 0 on the box's sides: with
    T = e^{Σ v_i z_i/(2k_i)} w the operator is symmetric, w = Π sin(π z_i/L_i), and
    λ₁ = Σ k_i π²/L_i² + v_i²/(4k_i). A steady state with a reaction q ≥ λ₁ is unstable (q = λ₁:
    none exists)."""
    return sum(k * math.pi**2 / (hi - lo) ** 2 + v**2 / (4 * k) for k, (lo, hi), v in zip(conductivity, bounds, velocity))


def check_reaction(reaction, bounds: Sequence[tuple[float, float]], velocity: Sequence[float], body: str,
                   conductivity: Sequence[float] | None = None, lowest: float | None = None) -> float:
    """q as a float; ProblemError naming ``params.reaction`` unless a finite number below the
    ``body``'s (plate's, box's) first eigenvalue: exactly, under a diagonal ``conductivity`` (per-axis
    numbers, :func:`first_eigenvalue`); otherwise below its lower bound λ_min Σ π²/L_i², ``lowest``
    = λ_min the smallest conductivity on the body (a tensor's smallest eigenvalue): by Rayleigh's
    quotient ∫∇Tᵀ K ∇T ≥ λ_min ∫|∇T|² ≥ λ_min Σ π²/L_i² ∫T², and a uniform flow, whose term
    ∫T v·∇T vanishes, only raises the first eigenvalue. A graded or composite body's eigenvalue has
    no closed form; q between the bound and it is refused too."""
    (q,) = check_numbers([reaction], 1, "reaction", "a number", False, reaction)
    if not q:
        return q
    if conductivity is not None:
        if q >= (limit := first_eigenvalue(conductivity, bounds, velocity)):
            raise ProblemError(f"params.reaction: expected a number below {limit:.6g}, the {body}'s first "
                               f"eigenvalue (above it the steady state is unstable: thermal runaway), got "
                               f"{shown(reaction)}")
    elif q >= (limit := lowest * sum(math.pi**2 / (hi - lo) ** 2 for lo, hi in bounds)):
        raise ProblemError(f"params.reaction: expected a number below {limit:.6g}, a lower bound on the {body}'s "
                           f"first eigenvalue under its smallest conductivity, {lowest:.6g} (above the eigenvalue "
                           f"the steady state is unstable: thermal runaway), got {shown(reaction)}")
    return q


def check_positive_field(field, bounds: Sequence[tuple[float, float]], axes: Sequence[str], samples: int,
                         formula: str, body: str) -> float:
    """The smallest value of ``field`` (a function of the axes' arrays) sampled on the closed box
    ``bounds`` (``samples`` per axis, the sides included); ProblemError naming
    ``params.conductivity`` unless finite and positive there, the first bad point named; ``formula``
    is the formula as the case wrote it, ``body`` the box's name in the message (plate, box)."""
    grids = np.meshgrid(*(np.linspace(lo, hi, samples) for lo, hi in bounds), indexing="ij")
    with np.errstate(all="ignore"):
        k = np.asarray(field(*grids), dtype=np.float64) * np.ones_like(grids[0])
    bad = ~(np.isfinite(k) & (k > 0))
    if bad.any():
        at = tuple(np.argwhere(bad)[0])
        names = ", ".join(axes[:-1]) + " and " + axes[-1]
        raise ProblemError(f"params.conductivity: {shown(formula)} is {k[at]:.6g} at ({', '.join(axes)}) = "
                           f"({', '.join(f'{g[at]:.6g}' for g in grids)}); expected a formula of {names}, finite "
                           f"and positive on the whole closed {body}")
    return float(k.min())


def has_formula(tensor) -> bool:
    """Whether a conductivity given as a list of rows (a tensor) has a formula among its entries."""
    return isinstance(tensor, (list, tuple)) and any(
        isinstance(row, (list, tuple)) and any(isinstance(entry, str) for entry in row) for row in tensor)


def check_tensor_field(tensor, bounds: Sequence[tuple[float, float]], axes: Sequence[str], expected: str,
                       samples: int | None = None) -> tuple[tuple[tuple[sp.Expr, ...], ...], float]:
    """A conductivity tensor with formulas among its entries as rows of parsed expressions (numbers
    as constants; parsed, never evaluated), and its smallest eigenvalue on the samples (a reaction's
    bound, :func:`check_reaction`); ProblemError naming ``params.conductivity`` (``expected`` the
    text of what it takes) unless a d × d matrix of numbers and formulas of ``axes``, symmetric
    entry for entry (K_ij and K_ji the same expression) and positive-definite with finite entries
    on the closed box (``samples`` per axis, its sides included: 17 in three variables, 129 in two;
    the first bad point named)."""
    d = len(axes)
    if not isinstance(tensor, (list, tuple)) or len(tensor) != d or any(
            not isinstance(row, (list, tuple)) or len(row) != d for row in tensor):
        raise ProblemError(f"params.conductivity: expected {expected}, got {shown(tensor)}")
    K = tuple(tuple(parse_expression(entry, list(axes), f"params.conductivity[{i}][{j}]") for j, entry in enumerate(row))
              for i, row in enumerate(tensor))
    for i in range(d):
        for j in range(i + 1, d):
            if sp.expand(K[i][j] - K[j][i]) != 0:
                raise ProblemError(f"params.conductivity: expected a symmetric tensor, got [{i}][{j}] = "
                                   f"{shown(tensor[i][j])} and [{j}][{i}] = {shown(tensor[j][i])}")
    samples = samples or (17 if d == 3 else 129)
    grids = np.meshgrid(*(np.linspace(lo, hi, samples) for lo, hi in bounds), indexing="ij")
    with np.errstate(all="ignore"):
        values = np.moveaxis(tensor_values(tensor_function(K, axes), grids), (0, 1), (-2, -1))
        finite = np.isfinite(values).all(axis=(-2, -1))
        smallest = np.where(finite, np.linalg.eigvalsh(np.where(finite[..., None, None], values, 1.0))[..., 0], np.nan)
    bad = ~(finite & (smallest > 0))
    if bad.any():
        at = tuple(np.argwhere(bad)[0])
        raise ProblemError(f"params.conductivity: {shown(tensor)} is not finite and positive-definite at "
                           f"({', '.join(axes)}) = ({', '.join(f'{g[at]:.6g}' for g in grids)}); expected {expected}, "
                           "positive-definite on the whole closed " + ("box" if d == 3 else "plate"))
    return K, float(smallest.min())


def cell_centres(bounds, grid: int) -> tuple[list[float], list[np.ndarray]]:
    """``(h, cells)``: the cell width along each axis of the box ``bounds`` and the cell centres,
    ``grid`` per axis."""
    h = [(hi - lo) / grid for lo, hi in bounds]
    return h, [lo + (np.arange(grid) + 0.5) * step for (lo, _), step in zip(bounds, h)]


def tensor_at_cells(tensor, bounds, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """``(K, w)``: a tensor field's entries at the cell centres, (d, d, *cells), and its drift
    w_i = Σ_j ∂K_ij/∂z_j there, (d, *cells), each derivative the difference of K across the cell
    (at ± half a cell), second order: ∇·(K∇T) = Σ K_ij ∂²T/∂z_i∂z_j + w·∇T."""
    h, cells = cell_centres(bounds, grid)
    X = np.meshgrid(*cells, indexing="ij")
    K = tensor_values(tensor, X)
    drift = np.zeros((len(X),) + X[0].shape)
    for j in range(len(X)):
        ahead, behind = list(X), list(X)
        ahead[j], behind[j] = X[j] + h[j] / 2, X[j] - h[j] / 2
        drift += (tensor_values(tensor, ahead)[:, j] - tensor_values(tensor, behind)[:, j]) / h[j]
    return K, drift


def tensor_function(K, axes: Sequence[str]):
    """The entries of a tensor of expressions as a function of the axes' arrays: nested lists of
    arrays or numbers (:func:`tensor_values`)."""
    functions = [[numpy_function(entry, list(axes)) for entry in row] for row in K]
    return lambda *points: [[f(*points) for f in row] for row in functions]


def tensor_values(tensor, points) -> np.ndarray:
    """A tensor field's entries at ``points`` (one array per axis, of one shape): (d, d, *shape)."""
    rows = tensor(*points)
    return np.array([[np.asarray(entry, dtype=np.float64) * np.ones_like(points[0]) for entry in row]
                     for row in rows])


def check_bounds(bounds, axes: Sequence[str]) -> tuple[tuple[float, float], ...]:
    """``bounds`` as one (lower, upper) pair of floats per axis of ``axes``; ProblemError unless
    that many pairs of finite numbers with lower < upper."""
    order = f"{', '.join(axes[:-1])} then {axes[-1]}"
    message = (f"params.bounds: expected {_COUNTS[len(axes)]} [lower, upper] pairs ({order}) of finite numbers "
               "with lower < upper")
    try:
        pairs = [list(pair) for pair in bounds]
    except TypeError:
        raise ProblemError(f"{message}, got {shown(bounds)}") from None
    if len(pairs) != len(axes) or any(len(pair) != 2 for pair in pairs):
        raise ProblemError(f"{message}, got {shown(bounds)}")
    out = []
    for name, (lo, hi) in zip(axes, pairs):
        if any(isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) for v in (lo, hi)):
            raise ProblemError(f"{message}, got {shown(bounds)}")
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ProblemError(f"params.bounds: {name} range [{lo}, {hi}] must be finite with lower < upper")
        out.append((lo, hi))
    return tuple(out)


def parse_boundary(boundary, parts: Sequence[str], part: str,
                   variables: Sequence[str]) -> tuple[dict[str, str], dict[str, sp.Expr]]:
    """The text and the parsed formula (of ``variables``, never evaluated as code) of the data on
    each of ``parts`` (a box's edges or faces, called ``part``); ProblemError for a mapping that
    misses one, names another or holds a formula that does not parse."""
    if not isinstance(boundary, Mapping):
        raise ProblemError(f"params.boundary: expected a mapping with keys {', '.join(parts)}, "
                           f"got {type(boundary).__name__}")
    for key in boundary:
        if key not in parts:
            raise ProblemError(f"params.boundary.{key}: unknown {part}; expected one of {', '.join(parts)}")
    for name in parts:
        if name not in boundary:
            raise ProblemError(f"params.boundary.{name}: missing; every {part} needs Dirichlet data")
    exprs = {name: parse_expression(boundary[name], list(variables), f"params.boundary.{name}") for name in parts}
    return {name: str(boundary[name]) for name in parts}, exprs


def checked_points(points, bounds: Sequence[tuple[float, float]], tolerance, name: str) -> np.ndarray:
    """``points`` (or one point) as an (N, d) float array, d the number of ``bounds``; ValueError for
    another shape, a coordinate that is not finite or a point outside the closed ``name`` (a plate,
    a box) beyond ``tolerance`` (one per axis)."""
    d = len(bounds)
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim == 1:
        pts = pts[None, :]
    if pts.ndim != 2 or pts.shape[1] != d:
        raise ValueError(f"points: expected shape (N, {d}), got {np.shape(points)}")
    if not np.all(np.isfinite(pts)):
        raise ValueError("points: coordinates must be finite")
    lower, upper = np.array(bounds, dtype=np.float64).T
    tolerance = np.asarray(tolerance, dtype=np.float64)
    outside = np.any((pts < lower - tolerance) | (pts > upper + tolerance), axis=1)
    if outside.any():
        k = int(np.argmax(outside))
        point = ", ".join(f"{v:.17g}" for v in pts[k])
        extent = " x ".join(f"[{lo:.17g}, {hi:.17g}]" for lo, hi in bounds)
        raise ValueError(f"point ({point}) lies outside the {name} {extent}")
    return pts
