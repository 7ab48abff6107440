"""A design problem declared entirely in the case file, for a simulator or a lab that lives outside
Python: the box, the sense and optionally the PDE; the values come from the case's
``oracle: {command: ...}`` (``pinnbo run``) or from a person (``pinnbo ask`` / ``pinnbo tell``).

```yaml
problem: external
params:
  bounds: {x: [0, 1], y: [0, 2]}          # names become the command's placeholders and the PDE's inputs
  sense: maximize
  pde: "diff(u, x, 2) + diff(u, y, 2) = 0"  # optional; u is the unknown objective; a list for systems
  constraints: [stress, mass]             # optional: outputs of the same program, feasible iff each <= 0
oracle: {command: "./simulate {x} {y}", parse: float}   # with constraints: parse: json, printing
                                          # {"objective": f, "constraints": {"stress": ..., "mass": ...}}
```
"""

from __future__ import annotations

import math
import re
from typing import Any

import sympy as sp

from pinnbo.errors import shown
from pinnbo.expressions import RESERVED, FormulaError, expression_of
from pinnbo.pde import MAX_ORDER, PDE, PDEError
from pinnbo.problem import Box, Constraint, Problem, ProblemError, register_problem

UNKNOWN = "u"


@register_problem
def external(bounds: dict, sense: str = "minimize", pde: str | list | None = None,
             constraints: list | None = None) -> Problem:
    """A box declared in the case, measured outside pinnbo (oracle: command, or pinnbo ask/tell)."""
    names, lower, upper = parse_bounds(bounds)
    if sense not in ("minimize", "maximize"):
        raise ProblemError(f"params.sense: expected minimize or maximize, got {shown(sense)}")
    equation = None if pde is None else parse_pde(pde, names)
    outputs = _constraint_names(constraints, names)

    # No objective: measured outside pinnbo until the case gives an oracle (pinnbo ask / tell meanwhile).
    return Problem("external", Box(lower, upper, names), None, sense, pde=equation,
                   constraints=tuple(Constraint(n) for n in outputs), description="declared in the case file")


def _constraint_names(constraints: Any, variables: tuple[str, ...]) -> tuple[str, ...]:
    """The names of the black-box constraint outputs c_i (feasible iff c_i <= 0) the program or the
    lab reports with the objective."""
    if constraints is None:
        return ()
    if not isinstance(constraints, list) or not constraints:
        raise ProblemError("params.constraints: expected a list of names of the measured constraint outputs, "
                           "e.g. [stress, mass]")
    seen: list[str] = []
    for i, name in enumerate(constraints):
        field = f"params.constraints[{i}]"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ProblemError(f"{field}: constraint name {shown(name)} must be letters, digits and '_'")
        if name in variables:
            raise ProblemError(f"{field}: {shown(name)} is a design variable; name the constraint output otherwise")
        if name in seen:
            raise ProblemError(f"{field}: {shown(name)} is declared twice")
        seen.append(name)
    return tuple(seen)


def parse_bounds(bounds: Any) -> tuple[tuple[str, ...], list[float], list[float]]:
    """(names, lower, upper) of a case's ``params.bounds`` mapping {name: [lower, upper]}."""
    if not isinstance(bounds, dict) or not bounds:
        raise ProblemError("params.bounds: expected a mapping of variables to [lower, upper], e.g. {x: [0, 1]}")
    names, lower, upper = [], [], []
    for name, pair in bounds.items():
        field = f"params.bounds.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ProblemError(f"params.bounds: variable name {shown(name)} must be letters, digits and '_'")
        if name == UNKNOWN or name in RESERVED:
            raise ProblemError(f"{field}: {shown(name)} is reserved (the PDE's unknown or a function); rename the variable")
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or \
                not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair):
            raise ProblemError(f"{field}: expected [lower, upper], got {shown(pair)}")
        lo, hi = float(pair[0]), float(pair[1])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ProblemError(f"{field}: bounds must be finite, got [{lo}, {hi}]")
        if not lo < hi:
            raise ProblemError(f"{field}: lower bound {lo} must be below upper bound {hi}")
        names.append(name)
        lower.append(lo)
        upper.append(hi)
    return tuple(names), lower, upper


#: Largest derivative, in sympy operations, that ``diff`` in a case's PDE may build.
MAX_DERIVATIVE_OPERATIONS = 2000


def parse_pde(text: str | list, names: tuple[str, ...], field: str = "params.pde") -> PDE:
    """``"lhs = rhs"`` (or a list, one equation each) in the variables ``names`` and the unknown
    ``u``; derivatives as ``diff(u, x, 2)``. Parsed without evaluation
    (:mod:`pinnbo.expressions`): any other name is an error naming it."""
    items = text if isinstance(text, list) else [text]
    if not items or not all(isinstance(t, str) and t.strip() for t in items):
        raise ProblemError(f"{field}: expected an equation such as \"diff(u, x, 2) + diff(u, y, 2) = 0\" or a list of them")
    symbols = {name: sp.Symbol(name, real=True) for name in names}
    unknown = sp.Function(UNKNOWN)(*symbols.values())
    expected = f"a formula of {', '.join(symbols)} and the unknown {UNKNOWN}"

    def diff(args: list, name: str) -> sp.Expr:
        # diff(expr, x), diff(expr, x, 2), diff(expr, x, y): variables, each optionally with a count
        if len(args) < 2 or not isinstance(args[0], sp.Expr):
            raise FormulaError("diff takes an expression and the variables, e.g. diff(u, x, 2)")
        orders: list[list] = []   # [variable, order]
        for arg in args[1:]:
            if isinstance(arg, sp.Symbol) and arg in symbols.values():
                orders.append([arg, 1])
            elif isinstance(arg, sp.Integer) and orders and 1 <= int(arg) <= MAX_ORDER:
                orders[-1][1] = int(arg)
            else:
                raise FormulaError(f"diff: expected variables ({', '.join(symbols)}), each optionally followed by "
                                   f"an order from 1 to {MAX_ORDER}, got {shown(str(arg), 40)}")
        if sum(n for _, n in orders) > MAX_ORDER:
            raise FormulaError(f"diff: a derivative of order {sum(n for _, n in orders)}; at most {MAX_ORDER}")
        # One order at a time, each result's size checked: the derivatives of a nested formula
        # (tan(tan(tan(x)))) grow several-fold per order, and sympy would take minutes.
        result = args[0]
        for variable, n in orders:
            for _ in range(n):
                result = sp.diff(result, variable)
                if sp.count_ops(result) > MAX_DERIVATIVE_OPERATIONS:
                    raise FormulaError(f"diff: the derivative grows past {MAX_DERIVATIVE_OPERATIONS} operations; "
                                       "write it out, or simplify the expression")
        return result

    lhs, rhs = [], []
    for item in items:
        sides = re.split(r"(?<![<>=!])=(?!=)", item)
        if len(sides) > 2:
            raise ProblemError(f"{field}: {shown(item)} has more than one '='")
        parsed = [expression_of(side, {**symbols, UNKNOWN: unknown}, field, expected, specials={"diff": diff},
                                whole=item) for side in sides]
        for expr in parsed:
            others = sorted({type(f).__name__ for f in expr.atoms(sp.core.function.AppliedUndef)} - {UNKNOWN})
            if others:
                raise ProblemError(f"{field}: unknown function {shown(others[0])} in {shown(item)}; the unknown is {UNKNOWN}")
        lhs.append(parsed[0])
        rhs.append(parsed[1] if len(parsed) == 2 else sp.Integer(0))
    if not any(e.has(unknown) for e in lhs + rhs):
        raise ProblemError(f"{field}: the equation does not involve the unknown {shown(UNKNOWN)}")
    try:
        return PDE(lhs if isinstance(text, list) else lhs[0], rhs if isinstance(text, list) else rhs[0],
                   inputs=names)
    except PDEError as exc:
        raise ProblemError(f"{field}: {exc}") from None
