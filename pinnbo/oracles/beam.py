"""Non-uniform Euler–Bernoulli beam, (EI(x) w'')'' = q(x) on [a, b], solved by finite differences.

Formulation (docs/algorithms.md, "The beam"). The paper's stiffness EI = eˣ/ρ(x) is singular wherever ρ = 0
(26 sign changes on [0, 1]), so a fourth-order stencil on EI is ill-posed. We split the equation
at the bending moment M = EI·w'' into two second-order problems,

    M'' = q,        w'' − M·f = 0,        f = 1/EI (the flexibility),

which only ever need the flexibility f. For the paper f = ρ(x)·e^{−x} is smooth; it is obtained
symbolically (sympy distributes the power over the product, eˣ/ρ → ρ·e^{−x}), or given directly
by the user, so EI is never divided numerically where it is near zero.

Discretisation: uniform grid of n intervals, central second differences (h²/12 truncation), the
unknowns (M_i, w_i) interleaved so that the 2(n+1) × 2(n+1) sparse matrix is banded. Both
equations are always solved jointly: when M is given at both ends the matrix is block triangular
and the joint solve gives exactly the sequential one (M first, then w), and one code path covers
the cases that do not decouple (a clamped end fixes w and w' and nothing on M). Conditions on a
derivative use a ghost node eliminated with the equation at the end node, second-order accurate:
slope w'(a) = s gives 2w_1 − 2w_0 − h² f_0 M_0 = 2hs; shear V(a) = M'(a) = v gives
2M_1 − 2M_0 = h² q_0 + 2hv (mirrored at the right end).

Boundary conditions, two per end, named after the quantity they fix:
``w`` (deflection), ``slope`` (w'), ``M`` (bending moment EI·w''), ``V`` (shear force, here M' =
(EI w'')'; flip its sign if your convention is V = −M'). Examples: simply supported {w: 0, M: 0},
clamped {w: 0, slope: 0}, free {M: 0, V: 0}.

The deflection between nodes comes from a cubic spline through the nodal values (its error,
O(h⁴), is far below the scheme's). Solutions are cached in memory by their defining strings and n.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping

import numpy as np
import scipy.sparse as sparse
import sympy as sp
from scipy.interpolate import CubicSpline
from scipy.optimize import minimize_scalar
from scipy.sparse.linalg import splu

from pinnbo.errors import shown
from pinnbo.expressions import numpy_function, parse_expression
from pinnbo.problem import ProblemError

BOUNDARY_CONDITIONS = ("w", "slope", "M", "V")
_ENDS = ("left", "right")
_MOMENT_CONDITIONS = ("M", "V")

# 2^15 intervals: the differences' error falls as h², and at this h it is well inside the 1e-4
# asked of the paper's beam (its manufactured solution, docs/algorithms.md "The beam"), at the cost
# of one banded solve.
DEFAULT_INTERVALS = 32768
_MIN_INTERVALS = 8


class BeamSolution:
    """Finite-difference solution of one beam: nodal deflection and moment, and their interpolants.

    ``nodes``, ``deflection_nodes`` and ``moment_nodes`` have shape (n + 1,).
    """

    def __init__(self, nodes: np.ndarray, deflection: np.ndarray, moment: np.ndarray,
                 flexibility: sp.Expr, load: sp.Expr) -> None:
        self.nodes = nodes
        self.deflection_nodes = deflection
        self.moment_nodes = moment
        self.flexibility = flexibility
        self.load = load
        self.lower = float(nodes[0])
        self.upper = float(nodes[-1])
        self._deflection = CubicSpline(nodes, deflection)
        self._moment = CubicSpline(nodes, moment)

    @property
    def intervals(self) -> int:
        return len(self.nodes) - 1

    def _check(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError("beam: query positions must be finite")
        # Points a rounding error outside (a box's from_unit of 1.0) are the end itself.
        tol = 1e-12 * (self.upper - self.lower)
        if np.any(x < self.lower - tol) or np.any(x > self.upper + tol):
            bad = x[(x < self.lower - tol) | (x > self.upper + tol)].ravel()[0]
            raise ValueError(f"beam: x = {bad} is outside the beam [{self.lower}, {self.upper}]")
        return np.clip(x, self.lower, self.upper)

    def deflection(self, x: Any) -> np.ndarray | float:
        """w at x (scalar or array, inside [a, b]); ValueError outside."""
        x = self._check(x)
        out = self._deflection(x)
        return float(out) if out.ndim == 0 else out

    __call__ = deflection

    def moment(self, x: Any) -> np.ndarray | float:
        """Bending moment M = EI·w'' at x."""
        x = self._check(x)
        out = self._moment(x)
        return float(out) if out.ndim == 0 else out

    def extremum(self, sense: str = "minimize") -> tuple[float, float]:
        """(location, value) of the deflection's global min (or max): best node, then a bounded
        1-D refinement of the spline between its neighbours."""
        sign = -1.0 if sense == "maximize" else 1.0
        values = sign * self.deflection_nodes
        best = int(np.argmin(values))
        x_best, f_best = float(self.nodes[best]), float(values[best])
        lo = float(self.nodes[max(best - 1, 0)])
        hi = float(self.nodes[min(best + 1, self.intervals)])
        result = minimize_scalar(lambda t: sign * float(self._deflection(t)), bounds=(lo, hi),
                                 method="bounded", options={"xatol": 1e-12 * (self.upper - self.lower)})
        if result.success and float(result.fun) < f_best:
            x_best, f_best = float(result.x), float(result.fun)
        return x_best, sign * f_best


def parse_boundary_conditions(bc: Any, field: str = "params.bc") -> dict[str, dict[str, float]]:
    """Validate ``{left: {name: value, name: value}, right: {...}}`` and evaluate the values.

    Values are constant formulas (``"exp(1)"``, ``0``). Raises :class:`ProblemError` naming the
    offending field (``params.bc.left.w``).
    """
    if not isinstance(bc, Mapping):
        raise ProblemError(f"{field}: expected a mapping {{left: {{...}}, right: {{...}}}}, got {type(bc).__name__}")
    for end in bc:
        if end not in _ENDS:
            raise ProblemError(f"{field}.{end}: unknown end; expected 'left' and 'right'")
    conditions: dict[str, dict[str, float]] = {}
    for end in _ENDS:
        if end not in bc:
            raise ProblemError(f"{field}.{end}: missing; give two conditions (two of {', '.join(BOUNDARY_CONDITIONS)})")
        given = bc[end]
        if not isinstance(given, Mapping):
            raise ProblemError(f"{field}.{end}: expected a mapping of two conditions, e.g. {{w: 0, M: 0}}")
        for name in given:
            if name not in BOUNDARY_CONDITIONS:
                raise ProblemError(
                    f"{field}.{end}.{name}: unknown boundary condition; expected one of "
                    f"{', '.join(BOUNDARY_CONDITIONS)} (deflection, w', bending moment, shear M')"
                )
        if len(given) != 2:
            raise ProblemError(
                f"{field}.{end}: expected exactly two conditions, got {len(given)} "
                f"({', '.join(map(str, given)) or 'none'})"
            )
        conditions[end] = {}
        for name, text in given.items():
            expr = parse_expression(text, (), f"{field}.{end}.{name}")
            try:
                value = float(expr)
            except TypeError:
                value = math.nan
            if not math.isfinite(value):
                raise ProblemError(f"{field}.{end}.{name}: {shown(text)} is not a finite number")
            conditions[end][name] = value
    _check_supports(conditions, field)
    return conditions


def _check_supports(conditions: dict[str, dict[str, float]], field: str) -> None:
    """Reject condition sets that leave the beam undetermined (whatever EI): M'' = q takes at most
    two conditions on M, V; the deflection needs a w somewhere; V at both ends fixes no constant."""
    names = [(end, name) for end in _ENDS for name in conditions[end]]
    on_moment = [f"{end}.{name}" for end, name in names if name in _MOMENT_CONDITIONS]
    if len(on_moment) > 2:
        raise ProblemError(
            f"{field}: {len(on_moment)} conditions on M and V ({', '.join(on_moment)}) but M'' = q takes "
            "two: the beam is a mechanism; give w or slope at one of these ends"
        )
    if not any(name == "w" for _, name in names):
        raise ProblemError(f"{field}: no deflection w given at either end: the beam is free to translate")
    if sorted(on_moment) == ["left.V", "right.V"]:
        raise ProblemError(f"{field}: shear V at both ends leaves the bending moment undetermined; give M at one end")


def _field_values(expr: sp.Expr, nodes: np.ndarray, field: str, what: str) -> np.ndarray:
    values = numpy_function(expr, ("x",))(nodes)
    bad = ~np.isfinite(values)
    if np.any(bad):
        raise ProblemError(f"{field}: {what} is not finite at x = {nodes[bad][0]:.6g}")
    return values


def _assemble(nodes: np.ndarray, flex: np.ndarray, load: np.ndarray,
              conditions: dict[str, dict[str, float]]) -> tuple[sparse.csc_matrix, np.ndarray]:
    """The banded system for (M_0, w_0, M_1, w_1, ...); rows 2i, 2i+1 are node i's equations
    (M'' = q and w'' = f·M, scaled by h²), replaced at the end nodes by the four conditions."""
    n = len(nodes) - 1
    h = (nodes[-1] - nodes[0]) / n
    interior = np.arange(1, n)
    rows, cols, vals = [], [], []

    def add(r, c, v):
        rows.append(np.atleast_1d(r))
        cols.append(np.atleast_1d(c))
        vals.append(np.broadcast_to(np.asarray(v, dtype=np.float64), np.atleast_1d(r).shape))

    rhs = np.zeros(2 * (n + 1))
    for offset, coef in ((-1, 1.0), (0, -2.0), (1, 1.0)):
        add(2 * interior, 2 * (interior + offset), coef)
        add(2 * interior + 1, 2 * (interior + offset) + 1, coef)
    add(2 * interior + 1, 2 * interior, -h * h * flex[interior])
    rhs[2 * interior] = h * h * load[interior]

    for end, i, inner, direction in (("left", 0, 1, 1.0), ("right", n, n - 1, -1.0)):
        for row, name in zip((2 * i, 2 * i + 1), sorted(conditions[end])):
            value = conditions[end][name]
            if name == "w":
                add(row, 2 * i + 1, 1.0)
                rhs[row] = value
            elif name == "M":
                add(row, 2 * i, 1.0)
                rhs[row] = value
            elif name == "slope":  # ghost w_{-1} = w_1 − 2h·w' in w'' = f·M at the end node
                add(row, 2 * inner + 1, 2.0)
                add(row, 2 * i + 1, -2.0)
                add(row, 2 * i, -h * h * flex[i])
                rhs[row] = direction * 2.0 * h * value
            else:  # "V": ghost M_{-1} = M_1 − 2h·M' in M'' = q at the end node
                add(row, 2 * inner, 2.0)
                add(row, 2 * i, -2.0)
                rhs[row] = h * h * load[i] + direction * 2.0 * h * value
    size = 2 * (n + 1)
    matrix = sparse.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(size, size)
    )
    return matrix, rhs


@lru_cache(maxsize=16)
def _solve_cached(flex_text: str, flex_field: str, flex_is_inverse: bool, q_text: str,
                  bc_key: tuple, a: float, b: float, n: int, field: str) -> BeamSolution:
    conditions = {end: dict(items) for end, items in bc_key}
    expr = parse_expression(flex_text, ("x",), flex_field)
    # 1/EI symbolically: sympy inverts a product factor by factor (eˣ/ρ → ρ·e^{−x}), so a
    # singular EI never reaches floating point.
    flex_expr = sp.Pow(expr, -1) if flex_is_inverse else expr
    load_expr = parse_expression(q_text, ("x",), f"{field}.q")
    nodes = np.linspace(a, b, n + 1)
    flex = _field_values(flex_expr, nodes, flex_field, "the flexibility 1/EI" if flex_is_inverse else "the flexibility")
    load = _field_values(load_expr, nodes, f"{field}.q", "the load q")
    matrix, rhs = _assemble(nodes, flex, load, conditions)
    try:
        solution = splu(matrix).solve(rhs)
    except RuntimeError:
        solution = np.full_like(rhs, np.nan)
    if not np.all(np.isfinite(solution)):
        raise ProblemError(f"{field}.bc: these boundary conditions do not determine the deflection for this EI")
    solution.flags.writeable = False
    return BeamSolution(nodes, solution[1::2], solution[0::2], flex_expr, load_expr)


def _formula_key(text: Any, field: str) -> str:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ProblemError(f"{field}: expected a formula of x (string or number), got {type(text).__name__}")
    return str(text)


def solve_beam(EI: str | float | None = None, q: str | float = 0, bc: Mapping | None = None,
               bounds: Any = (0.0, 1.0), n: int = DEFAULT_INTERVALS, *,
               flexibility: str | float | None = None, field: str = "params") -> BeamSolution:
    """Solve (EI w'')'' = q on ``bounds`` with two conditions per end; cached.

    Give either ``EI`` or, better when EI can vanish or blow up, its reciprocal ``flexibility``
    (1/EI), as formulas of x. ``bc`` is ``{left: {w: ..., M: ...}, right: {...}}`` with names among
    w, slope, M, V. ``n`` is the number of grid intervals. Errors are :class:`ProblemError` naming
    ``{field}.EI``, ``{field}.bc.left.w``, etc.
    """
    if (EI is None) == (flexibility is None):
        raise ProblemError(f"{field}.EI: give the bending stiffness EI or the flexibility 1/EI, exactly one")
    if flexibility is None:
        flex_text, flex_field, inverse = _formula_key(EI, f"{field}.EI"), f"{field}.EI", True
    else:
        flex_text, flex_field, inverse = _formula_key(flexibility, f"{field}.flexibility"), f"{field}.flexibility", False
    q_text = _formula_key(q, f"{field}.q")
    if bc is None:
        raise ProblemError(f"{field}.bc: boundary conditions are required, e.g. {{left: {{w: 0, M: 0}}, right: {{w: 0, M: 0}}}}")
    conditions = parse_boundary_conditions(bc, f"{field}.bc")
    bc_key = tuple((end, tuple(sorted(conditions[end].items()))) for end in _ENDS)
    try:
        a, b = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise ProblemError(f"{field}.bounds: expected two numbers [a, b], got {shown(bounds)}") from None
    if not (math.isfinite(a) and math.isfinite(b) and a < b):
        raise ProblemError(f"{field}.bounds: expected finite a < b, got [{a}, {b}]")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < _MIN_INTERVALS:
        raise ProblemError(f"{field}.n: expected an integer number of grid intervals >= {_MIN_INTERVALS}, got {shown(n)}")
    return _solve_cached(flex_text, flex_field, inverse, q_text, bc_key, a, b, int(n), field)
