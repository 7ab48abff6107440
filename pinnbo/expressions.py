"""User-written formulas (boundary data, coefficients, loads) parsed safely with sympy.

Strings come from case files, so they are parsed by sympy's parser with a closed namespace of
known functions and the declared variables: any other name is an error naming the field.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import sympy as sp
from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

from pinnbo.problem import ProblemError

FUNCTIONS = {
    name: getattr(sp, name)
    for name in (
        "sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
        "exp", "log", "sqrt", "Abs", "sign", "Min", "Max", "floor", "ceiling", "pi", "E",
        "Heaviside", "Piecewise",
    )
}
FUNCTIONS.update({"abs": sp.Abs, "min": sp.Min, "max": sp.Max, "e": sp.E, "ln": sp.log})
_TRANSFORMS = standard_transformations + (convert_xor,)


def parse_closed(text: str, namespace: dict) -> object:
    """sympy's parser confined to ``namespace`` (plus sympy's number classes, no builtins), with
    ``^`` as power. Raises whatever sympy raises on malformed text; callers name the field."""
    return parse_expr(text, local_dict=dict(namespace), global_dict={"__builtins__": {}, **{
        k: getattr(sp, k) for k in ("Integer", "Float", "Rational", "Symbol", "Function")
    }}, transformations=_TRANSFORMS, evaluate=True)


def parse_expression(text: str | float | int, variables: Sequence[str], field: str) -> sp.Expr:
    """Parse ``text`` into a sympy expression of ``variables``.

    ``^`` means power. Raises :class:`ProblemError` naming ``field`` when the text does not parse
    or uses a name that is neither a variable nor a known function.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ProblemError(f"{field}: expected a formula (string or number), got {type(text).__name__}")
    if isinstance(text, (int, float)):
        return sp.Float(text) if isinstance(text, float) else sp.Integer(text)
    symbols = {name: sp.Symbol(name, real=True) for name in variables}
    namespace = {**FUNCTIONS, **symbols}
    try:
        expr = parse_closed(text, namespace)
    except Exception as exc:  # sympy raises many types for malformed text
        raise ProblemError(f"{field}: cannot parse formula {text!r} ({type(exc).__name__})") from None
    if not isinstance(expr, sp.Expr):
        raise ProblemError(f"{field}: {text!r} is not a numeric formula")
    unknown = sorted(str(s) for s in expr.free_symbols if str(s) not in symbols)
    if unknown:
        raise ProblemError(
            f"{field}: unknown symbol {unknown[0]!r} in {text!r}; expected a formula of "
            f"{', '.join(variables) or 'no variables'}"
        )
    undefined = sorted({type(f).__name__ for f in expr.atoms(sp.Function) if isinstance(f, sp.core.function.AppliedUndef)})
    if undefined:
        raise ProblemError(f"{field}: unknown function {undefined[0]!r} in {text!r}")
    return expr


def numpy_function(expr: sp.Expr, variables: Sequence[str]) -> Callable[..., np.ndarray]:
    """Vectorised numpy evaluation of ``expr``; returns arrays broadcast to the inputs' shape."""
    symbols = [sp.Symbol(name, real=True) for name in variables]
    fn = sp.lambdify(symbols, expr, modules="numpy")

    def evaluate(*args: np.ndarray) -> np.ndarray:
        arrays = [np.asarray(a, dtype=np.float64) for a in args]
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*arrays), dtype=np.float64)
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        return np.broadcast_to(out, shape).copy()

    return evaluate
