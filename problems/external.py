"""A design problem declared entirely in the case file, for a simulator or a lab that lives outside
Python: the box, the sense and optionally the PDE; the values come from the case's
``oracle: {command: ...}`` (``pinnbo run``) or from a person (``pinnbo ask`` / ``pinnbo tell``).

```yaml
problem: external
params:
  variables: {x: [0, 1], y: [0, 2]}       # names become the command's placeholders and the PDE's inputs;
                                          # also {log: [1e-4, 1e-1]}, {integer: [2, 12]}, {choices: [a, b]}
  sense: maximize
  pde: "diff(u, x, 2) + diff(u, y, 2) = 0"  # optional; u is the unknown objective; a list for systems
  pde_variables: [x, y]                   # optional: the PDE's own variables; the others are parameters
  pde_boundary: ["u = 0 at x = 0", "diff(u, y) = 0 at y = 2"]   # optional: boundary conditions (pde-gp)
  constraints: [stress, mass]             # optional: outputs of the same program, feasible iff each <= 0
  objectives: {cost: minimize, life: maximize}   # optional, instead of sense: several outputs, parse: json
  reference: {cost: 100, life: 1}         # optional: the hypervolume's reference point (else inferred)
                                          # with objectives, pde: {cost: "...", life: "..."} (each optional)
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
from pinnbo.problem import Box, Constraint, Problem, ProblemError, Variable, plane_outside, register_problem

UNKNOWN = "u"


@register_problem
def external(bounds: dict | None = None, sense: str = "minimize", pde: str | list | dict | None = None,
             constraints: list | None = None, variables: dict | None = None,
             pde_variables: list | None = None, objectives: dict | None = None,
             reference: dict | None = None, pde_boundary: list | None = None) -> Problem:
    """Design variables declared in the case, measured outside pinnbo (oracle: command, or pinnbo ask/tell)."""
    if bounds is None and variables is None:
        raise ProblemError("params.variables: required parameter of problem 'external' (the design variables, "
                           "e.g. {x: [0, 1], n: {integer: [2, 12]}}; bounds: is its older name)")
    if bounds is not None and variables is not None:
        raise ProblemError("params.bounds: the design variables are given twice; keep variables: (bounds: is its "
                           "older name)")
    if variables is not None:
        domain = Box.of(parse_variables(variables))
    else:
        names, lower, upper = parse_bounds(bounds)
        domain = Box(lower, upper, names)
    names = domain.names
    if sense not in ("minimize", "maximize"):
        raise ProblemError(f"params.sense: expected minimize or maximize, got {shown(sense)}")
    equation = None
    own = _pde_variables(pde_variables, pde, names)
    if pde is not None:
        others = [v for v in domain.variables if v.kind != "real" and v.name in own]
        if others:
            hint = "" if pde_variables is not None else " (name the PDE's own variables with pde_variables: [x, y])"
            raise ProblemError(f"params.pde: the PDE's variables are real; {others[0].name} is "
                               f"{'a ' + others[0].kind if others[0].kind != 'log' else 'on a log scale'}{hint}")
        if isinstance(pde, dict):   # several objectives: an equation per objective that has one
            if pde_boundary is not None:
                raise ProblemError("params.pde_boundary: boundary conditions are for one PDE; with an equation per "
                                   "objective leave them out")
            equation = {str(name): parse_pde(text, own, f"params.pde.{name}") for name, text in pde.items()}
        else:
            equation = parse_pde(pde, own, boundary=pde_boundary)
            outside = plane_outside(equation.boundary, domain)
            if outside is not None:
                raise ProblemError(f"params.pde_boundary[{outside[0]}]: {outside[1]}")
    elif pde_boundary is not None:
        raise ProblemError("params.pde_boundary: boundary conditions of a PDE, and the case has no pde")
    outputs = _constraint_names(constraints, names)
    several = _objectives(objectives, names, outputs, sense)
    if reference is not None and not several:
        raise ProblemError("params.reference: a hypervolume reference point is for several objectives (params.objectives)")
    if several and equation is not None and not isinstance(equation, dict):
        raise ProblemError("params.pde: with several objectives, give an equation per objective that has one, "
                           f"{{name: equation}} with names among {', '.join(several)}")
    if isinstance(equation, dict) and not several:
        raise ProblemError("params.pde: an equation per objective is for several objectives (params.objectives)")
    if isinstance(equation, dict) and not set(equation) <= set(several):
        unknown = sorted(set(equation) - set(several))[0]
        raise ProblemError(f"params.pde.{unknown}: not an objective; expected names among {', '.join(several)}")

    # No objective: measured outside pinnbo until the case gives an oracle (pinnbo ask / tell meanwhile).
    return Problem("external", domain, None, sense, pde=equation,
                   constraints=tuple(Constraint(n) for n in outputs), description="declared in the case file",
                   objectives=several, reference=_reference(reference, several))


def _objectives(objectives: Any, variables: tuple[str, ...], constraints: tuple[str, ...], sense: str) -> dict:
    """``params.objectives``, {name: minimize | maximize}: two or more outputs of the program."""
    if objectives is None:
        return {}
    if sense != "minimize":
        raise ProblemError("params.sense: with several objectives each has its own sense in params.objectives")
    if not isinstance(objectives, dict) or len(objectives) < 2:
        raise ProblemError(f"params.objectives: expected two or more outputs {{name: minimize or maximize}}, e.g. "
                           f"{{mass: minimize, deflection: minimize}}, got {shown(objectives)}")
    for name, direction in objectives.items():
        field = f"params.objectives.{name}"
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise ProblemError(f"params.objectives: objective name {shown(name)} must be letters, digits and '_'")
        if name in variables or name in constraints:
            raise ProblemError(f"{field}: {shown(name)} is a design variable or a constraint; name the objective otherwise")
        if direction not in ("minimize", "maximize"):
            raise ProblemError(f"{field}: expected minimize or maximize, got {shown(direction)}")
    return dict(objectives)


def _reference(reference: Any, objectives: dict) -> dict | None:
    """``params.reference``, {objective: value}: the hypervolume's reference point."""
    if reference is None:
        return None
    if not isinstance(reference, dict) or sorted(reference) != sorted(objectives):
        raise ProblemError(f"params.reference: expected a value for each objective ({', '.join(objectives)}), "
                           f"got {shown(reference)}")
    for name, value in reference.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ProblemError(f"params.reference.{name}: expected a finite number, got {shown(value)}")
    return {name: float(reference[name]) for name in objectives}


def _pde_variables(given: Any, pde: Any, names: tuple[str, ...]) -> tuple[str, ...]:
    """The variables the PDE holds in (``params.pde_variables``; default every design variable): the
    others are its parameters, and the PDE holds in these for each of their values."""
    if given is None:
        return names
    if pde is None:
        raise ProblemError("params.pde_variables: names the PDE's own variables, and the case has no pde")
    if not isinstance(given, list) or not given or not all(isinstance(n, str) for n in given):
        raise ProblemError(f"params.pde_variables: expected a list of design variables, e.g. [x, y], got {shown(given)}")
    for i, name in enumerate(given):
        if name not in names:
            raise ProblemError(f"params.pde_variables[{i}]: {shown(name)} is not a design variable "
                               f"({', '.join(names)})")
        if given.index(name) != i:
            raise ProblemError(f"params.pde_variables[{i}]: {shown(name)} is named twice")
    return tuple(given)


def parse_variables(variables: Any) -> tuple[Variable, ...]:
    """The variables of a case's ``params.variables`` mapping: ``name: [lower, upper]`` (real),
    ``{log: [lower, upper]}``, ``{integer: [lower, upper]}`` or ``{choices: [name, ...]}``."""
    expected = "[lower, upper], {log: [lower, upper]}, {integer: [lower, upper]} or {choices: [name, ...]}"
    if not isinstance(variables, dict) or not variables:
        raise ProblemError(f"params.variables: expected a mapping of variable names to {expected}")
    out = []
    for name, spec in variables.items():
        field = f"params.variables.{name}"
        _check_name(name, field, "params.variables")
        if isinstance(spec, list):
            kind, value = "real", spec
        elif isinstance(spec, dict) and len(spec) == 1 and next(iter(spec)) in ("log", "integer", "choices"):
            kind, value = next(iter(spec.items()))
            field = f"{field}.{kind}"
        else:
            raise ProblemError(f"{field}: expected {expected}, got {shown(spec)}")
        if kind == "choices":
            if not isinstance(value, list) or len(value) < 2 or \
                    not all(isinstance(c, str) and re.fullmatch(r"[A-Za-z0-9_.+-]+", c) for c in value):
                raise ProblemError(f"{field}: expected a list of at least two names (letters, digits, _ . + -), "
                                   f"got {shown(value)}")
            out.append(Variable(name, "choice", choices=tuple(value)))
            continue
        lo, hi = _interval(value, field)
        if kind == "integer" and not all(float(v).is_integer() for v in value):
            raise ProblemError(f"{field}: expected integer bounds [lower, upper], got {shown(value)}")
        if kind == "log" and lo <= 0:
            raise ProblemError(f"{field}: a log scale needs bounds > 0, got [{lo:g}, {hi:g}]")
        out.append(Variable(name, {"log": "log", "integer": "integer"}.get(kind, "real"), lo, hi))
    return tuple(out)


def _interval(pair: Any, field: str) -> tuple[float, float]:
    """``[lower, upper]``: two finite numbers, lower below upper; a ProblemError naming ``field``."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2 or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair):
        raise ProblemError(f"{field}: expected [lower, upper], got {shown(pair)}")
    lo, hi = float(pair[0]), float(pair[1])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ProblemError(f"{field}: bounds must be finite, got [{lo}, {hi}]")
    if not lo < hi:
        raise ProblemError(f"{field}: lower bound {lo} must be below upper bound {hi}")
    return lo, hi


def _check_name(name: Any, field: str, parent: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
        raise ProblemError(f"{parent}: variable name {shown(name)} must be letters, digits and '_'")
    if name == UNKNOWN or name in RESERVED:
        raise ProblemError(f"{field}: {shown(name)} is reserved (the PDE's unknown or a function); rename the variable")


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
        _check_name(name, field, "params.bounds")
        lo, hi = _interval(pair, field)
        names.append(name)
        lower.append(lo)
        upper.append(hi)
    return tuple(names), lower, upper


#: Largest derivative, in sympy operations, that ``diff`` in a case's PDE may build.
MAX_DERIVATIVE_OPERATIONS = 2000


def parse_pde(text: str | list, names: tuple[str, ...], field: str = "params.pde",
              boundary: list | None = None) -> PDE:
    """``"lhs = rhs"`` (or a list, one equation each) in the variables ``names`` and the unknown
    ``u``; derivatives as ``diff(u, x, 2)``; ``boundary`` its conditions, each ``"lhs = rhs at x =
    value"``. Parsed without evaluation (:mod:`pinnbo.expressions`): any other name is an error
    naming it."""
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

    def sides(item: str, where: str) -> tuple[sp.Expr, sp.Expr]:
        parts = re.split(r"(?<![<>=!])=(?!=)", item)
        if len(parts) > 2:
            raise ProblemError(f"{where}: {shown(item)} has more than one '='")
        parsed = [expression_of(side, {**symbols, UNKNOWN: unknown}, where, expected, specials={"diff": diff},
                                whole=item) for side in parts]
        for expr in parsed:
            others = sorted({type(f).__name__ for f in expr.atoms(sp.core.function.AppliedUndef)} - {UNKNOWN})
            if others:
                raise ProblemError(f"{where}: unknown function {shown(others[0])} in {shown(item)}; the unknown is {UNKNOWN}")
        return parsed[0], parsed[1] if len(parsed) == 2 else sp.Integer(0)

    lhs, rhs = zip(*[sides(item, field) for item in items])
    if not any(e.has(unknown) for e in lhs + rhs):
        raise ProblemError(f"{field}: the equation does not involve the unknown {shown(UNKNOWN)}")
    conditions = None if boundary is None else _conditions(boundary, symbols, sides)
    try:
        return PDE(list(lhs) if isinstance(text, list) else lhs[0], list(rhs) if isinstance(text, list) else rhs[0],
                   inputs=names, boundary=conditions)
    except PDEError as exc:
        # the PDE names a condition boundary[i]: in the case file that is params.pde_boundary[i]
        where = "params.pde_" if conditions is not None and str(exc).startswith("boundary") else f"{field}: "
        raise ProblemError(f"{where}{exc}") from None


def _conditions(boundary: Any, symbols: dict, sides) -> list[tuple]:
    """``params.pde_boundary``: each ``"lhs = rhs at x = value"`` as the PDE's (input, at,
    condition), the value a formula of numbers and constants."""
    if not isinstance(boundary, list) or not all(isinstance(b, str) for b in boundary):
        raise ProblemError(f"params.pde_boundary: expected a list of conditions such as \"u = 0 at x = 0\", got "
                           f"{shown(boundary)}")
    conditions = []
    for i, item in enumerate(boundary):
        where = f"params.pde_boundary[{i}]"
        condition, at, plane = item.rpartition(" at ")
        name, equals, value = plane.partition("=")
        if not at or not equals or name.strip() not in symbols:
            raise ProblemError(f"{where}: expected \"condition at variable = value\" with a variable among "
                               f"{', '.join(symbols)}, e.g. \"u = 0 at {next(iter(symbols))} = 0\", got {shown(item)}")
        lhs, rhs = sides(condition, where)
        place = expression_of(value, {}, where, "a number", whole=item)
        conditions.append((symbols[name.strip()], place, sp.Eq(lhs, rhs, evaluate=False)))
    return conditions
