"""Formulas written by users (boundary data, coefficients, loads, constraints, PDEs in a case file),
parsed into sympy without ever evaluating the text.

A case file or a results folder must not be able to run code, and sympy's own parser does: it
``eval``\\s the text, and every sympy function re-parses a string argument with full builtins. So a
formula is NFKC-normalised (full-width letters become the ASCII ones Python itself would read),
parsed by :func:`ast.parse` and walked with a whitelist: numbers, the declared symbols, the
constants ``pi``/``E``/``e``, ``+ - * / ** ^``, calls of the fixed :data:`FUNCTIONS` table with
expression arguments only, and comparisons inside conditions. The sympy tree is built from those
nodes with sympy's own operators, so a formula gives exactly the tree ``parse_expr`` gave (numbers
as ``Integer`` and ``Float`` of their literal text). Anything else (attributes, subscripts, strings,
keywords, lambdas) is a one-line :class:`~pinnbo.problem.ProblemError` naming the field.

The cost is bounded before sympy sees a node: at most :data:`MAX_LENGTH` characters,
:data:`MAX_DEPTH` levels of nesting, numeric exponents within ±:data:`MAX_EXPONENT`, and exact
numbers (a power, a product of literals) of at most :data:`MAX_DIGITS` digits: ``9**9**9`` would
take minutes, and so would the exact square root of a 10 000-digit integer. A formula is real:
one whose value or condition involves the imaginary unit (``x*sqrt(-1)``, ``x < sqrt(-1)``) is
refused rather than cast to a real later.
"""

from __future__ import annotations

import ast
import math
import re
import unicodedata
from typing import Callable, Mapping, Sequence

import numpy as np
import sympy as sp

from pinnbo.errors import shown
from pinnbo.problem import ProblemError

#: Longest formula accepted, in characters.
MAX_LENGTH = 4096
#: Deepest nesting of operations and calls.
MAX_DEPTH = 100
#: Largest absolute value of a numeric exponent.
MAX_EXPONENT = 1000
#: Largest number of digits of an exact number (numerator or denominator) that a formula may build;
#: a double's range ends at about 10**308.
MAX_DIGITS = 400
_MAX_BITS = int(MAX_DIGITS * math.log2(10)) + 1

FUNCTIONS: dict[str, Callable[..., sp.Basic]] = {
    name: getattr(sp, name)
    for name in (
        "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
        "asinh", "acosh", "atanh", "exp", "log", "sqrt", "erf", "Abs", "sign", "Min", "Max", "floor",
        "ceiling", "Heaviside", "Piecewise",
    )
}
FUNCTIONS.update({"abs": sp.Abs, "min": sp.Min, "max": sp.Max, "ln": sp.log})
CONSTANTS: dict[str, sp.Basic] = {"pi": sp.pi, "E": sp.E, "e": sp.E}
#: Every name a formula may use besides its variables (a variable may not take one of them).
RESERVED = frozenset(FUNCTIONS) | frozenset(CONSTANTS)

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
               ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}
_COMPARISONS = {ast.Lt: sp.StrictLessThan, ast.LtE: sp.LessThan, ast.Gt: sp.StrictGreaterThan,
                ast.GtE: sp.GreaterThan, ast.Eq: sp.Eq, ast.NotEq: sp.Ne}
_SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


class FormulaError(Exception):
    """Why a formula was refused (the caller adds the field and the text)."""


#: ``handler(args, where)`` for a call that is not a plain function (``diff`` in a PDE).
Special = Callable[[list, str], sp.Basic]


class _Builder:
    """Walks the ast of one formula and builds its sympy tree (see the module docstring)."""

    def __init__(self, text: str, names: Mapping[str, sp.Basic], specials: Mapping[str, Special]) -> None:
        self.text = text
        self.names = names
        self.specials = specials

    def expression(self, node: ast.AST, depth: int = 0) -> sp.Basic:
        if depth > MAX_DEPTH:
            raise FormulaError(f"nested more than {MAX_DEPTH} levels deep")
        depth += 1
        if isinstance(node, ast.Constant):
            return self._number(node)
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            if node.id in FUNCTIONS or node.id in self.specials:
                raise FormulaError(f"function {node.id!r} needs arguments, e.g. {node.id}(x)")
            raise _Unknown("symbol", node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.expression(node.operand, depth)
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = self.expression(node.left, depth), self.expression(node.right, depth)
            if isinstance(node.op, ast.Pow):
                _check_power(left, right)
            return _checked_size(_ARITHMETIC[type(node.op)](left, right))
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Compare):
            raise FormulaError("a comparison is only allowed as a condition, e.g. Piecewise((x, x < 1), (1, True))")
        raise FormulaError(_describe(node))

    def condition(self, node: ast.AST, depth: int = 0) -> sp.Basic:
        """A condition of ``Piecewise``: comparisons (chains read as their conjunction), ``&``,
        ``|``, ``and``, ``or``, ``True``, ``False``."""
        if depth > MAX_DEPTH:
            raise FormulaError(f"nested more than {MAX_DEPTH} levels deep")
        depth += 1
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return sp.true if node.value else sp.false
        if isinstance(node, ast.Compare):
            terms, left = [], self.expression(node.left, depth)
            for op, comparator in zip(node.ops, node.comparators):
                if type(op) not in _COMPARISONS:
                    raise FormulaError(_describe(op))
                right = self.expression(comparator, depth)
                if left.has(sp.I) or right.has(sp.I):
                    raise FormulaError(f"the comparison {_source(node, self.text)!r} is between non-real values")
                try:
                    terms.append(_COMPARISONS[type(op)](left, right))
                except TypeError as exc:   # sympy's "Invalid comparison of non-real zoo"
                    raise FormulaError(f"the comparison {_source(node, self.text)!r} is not between real values "
                                       f"({exc})") from None
                left = right
            return terms[0] if len(terms) == 1 else sp.And(*terms)
        if isinstance(node, ast.BoolOp):
            parts = [self.condition(v, depth) for v in node.values]
            return sp.And(*parts) if isinstance(node.op, ast.And) else sp.Or(*parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            left, right = self.condition(node.left, depth), self.condition(node.right, depth)
            return sp.And(left, right) if isinstance(node.op, ast.BitAnd) else sp.Or(left, right)
        raise FormulaError(f"expected a condition such as x < 1, got {_source(node, self.text)!r}")

    def _number(self, node: ast.Constant) -> sp.Basic:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FormulaError(f"{type(value).__name__} values are not formulas" if not isinstance(value, str)
                               else "text in quotes is not a formula")
        if isinstance(value, int):
            return sp.Integer(value)
        # The literal's own digits, as sympy's parser read them (Float('0.4') has 15 digits).
        return sp.Float(_source(node, self.text))

    def _call(self, node: ast.Call, depth: int) -> sp.Basic:
        if not isinstance(node.func, ast.Name):
            raise FormulaError(_describe(node.func))
        name = node.func.id
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise FormulaError(f"{name}(...) takes plain arguments, no keywords or *")
        if name in self.specials:
            return self.specials[name]([self.expression(a, depth) for a in node.args], name)
        if name == "Piecewise":
            return self._piecewise(node, depth)
        if name not in FUNCTIONS:
            if name in self.names or name in CONSTANTS:
                raise FormulaError(f"{name!r} is not a function")
            raise _Unknown("function", name)
        args = [self.expression(a, depth) for a in node.args]
        try:
            return FUNCTIONS[name](*args)
        except (TypeError, ValueError) as exc:
            raise FormulaError(f"{name} with {len(args)} argument(s): {exc}") from None

    def _piecewise(self, node: ast.Call, depth: int) -> sp.Basic:
        pieces = []
        for arg in node.args:
            if not isinstance(arg, ast.Tuple) or len(arg.elts) != 2:
                raise FormulaError("Piecewise takes pairs (value, condition), e.g. Piecewise((x, x < 1), (1, True))")
            pieces.append((self.expression(arg.elts[0], depth), self.condition(arg.elts[1], depth)))
        if not pieces:
            raise FormulaError("Piecewise needs at least one (value, condition) pair")
        try:
            return sp.Piecewise(*pieces)
        except (TypeError, ValueError) as exc:
            raise FormulaError(f"Piecewise: {exc}") from None


class _Unknown(FormulaError):
    """A name that is neither a declared symbol nor a known function (the caller words it)."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(name)
        self.kind, self.name = kind, name


def _describe(node: ast.AST) -> str:
    kinds = {ast.Attribute: "attribute access (.name)", ast.Subscript: "indexing ([...])",
             ast.Call: "calling the result of an expression (only a named function is called, e.g. sin(x))",
             ast.Lambda: "lambda", ast.FloorDiv: "the operator //", ast.Mod: "the operator %",
             ast.MatMult: "the operator @", ast.LShift: "the operator <<", ast.RShift: "the operator >>",
             ast.BitAnd: "the operator & outside a condition", ast.BitOr: "the operator | outside a condition",
             ast.Not: "not", ast.Invert: "the operator ~", ast.IfExp: "if/else", ast.BoolOp: "and/or outside a condition",
             ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a mapping", ast.Set: "a set",
             ast.JoinedStr: "an f-string", ast.NamedExpr: ":=", ast.Starred: "*", ast.Is: "is", ast.IsNot: "is not",
             ast.In: "in", ast.NotIn: "not in"}
    node_type = type(getattr(node, "op", None)) if isinstance(node, (ast.BinOp, ast.UnaryOp)) else type(node)
    return f"{kinds.get(node_type, node_type.__name__)} is not allowed in a formula"


def _source(node: ast.AST, text: str) -> str:
    return ast.get_source_segment(text, node) or type(node).__name__


def _check_power(base: sp.Basic, exponent: sp.Basic) -> None:
    """Refuse numeric exponents and exact numeric powers whose size would take sympy minutes."""
    if not (isinstance(exponent, sp.Expr) and exponent.is_number):
        return
    try:
        size = abs(float(exponent))
    except (TypeError, ValueError, OverflowError):
        size = math.inf
    if not size <= MAX_EXPONENT:
        raise FormulaError(f"the exponent {shown(str(exponent), 40)} is larger than {MAX_EXPONENT} in size")
    if isinstance(base, sp.Rational) and base not in (0, 1, -1):
        bits = max(abs(base.p).bit_length(), base.q.bit_length())
        if (bits - 1) * size > _MAX_BITS:
            raise FormulaError(f"an exact power with about {(bits - 1) * size * math.log10(2):.0f} digits "
                               f"(at most {MAX_DIGITS})")


def _checked_size(value: sp.Basic) -> sp.Basic:
    """``value``, unless it is an exact number of more than :data:`MAX_DIGITS` digits (a product of
    literals grows without any single power being large)."""
    if isinstance(value, sp.Rational) and max(abs(value.p).bit_length(), value.q.bit_length()) > _MAX_BITS:
        raise FormulaError(f"an exact number of more than {MAX_DIGITS} digits")
    return value


def _tree(text: str) -> ast.AST:
    """The ast of ``text`` (NFKC-normalised, ``^`` read as ``**``), or a FormulaError."""
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"{len(text)} characters, more than {MAX_LENGTH}")
    normalised = unicodedata.normalize("NFKC", text).replace("^", "**")
    try:
        return ast.parse(normalised.strip(), mode="eval").body
    except SyntaxError as exc:
        raise FormulaError(f"SyntaxError: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise FormulaError("too deeply nested") from None


def build(text: str, names: Mapping[str, sp.Basic], *, specials: Mapping[str, Special] | None = None,
          condition: bool = False) -> sp.Basic:
    """The sympy tree of ``text`` over ``names`` (name -> sympy object), or a :class:`FormulaError`.
    ``condition``: the text is a comparison (a constraint's ``lhs <= rhs``)."""
    node = _tree(text)
    builder = _Builder(unicodedata.normalize("NFKC", text).replace("^", "**").strip(), names, specials or {})
    try:
        return builder.condition(node) if condition else builder.expression(node)
    except RecursionError:
        raise FormulaError("too deeply nested") from None


def parse_expression(text: str | float | int, variables: Sequence[str], field: str) -> sp.Expr:
    """Parse ``text`` into a sympy expression of ``variables`` (real symbols).

    ``^`` means power. Raises :class:`ProblemError` naming ``field`` when the text does not parse
    or uses a name that is neither a variable nor a known function.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ProblemError(f"{field}: expected a formula (string or number), got {type(text).__name__}")
    if isinstance(text, (int, float)):
        if isinstance(text, float) and not math.isfinite(text):
            raise ProblemError(f"{field}: expected a finite number, got {text!r}")
        return sp.Float(text) if isinstance(text, float) else sp.Integer(text)
    symbols = {name: sp.Symbol(name, real=True) for name in variables}
    return expression_of(text, symbols, field, f"a formula of {', '.join(variables) or 'no variables'}")


def expression_of(text: str, names: Mapping[str, sp.Basic], field: str, expected: str, *,
                  specials: Mapping[str, Special] | None = None, whole: str | None = None) -> sp.Expr:
    """:func:`build` of ``text`` as a numeric expression, its failures as one-line ProblemErrors
    naming ``field`` and quoting ``whole`` (default the text; a constraint's side quotes the whole
    inequality). ``expected`` ends an unknown-symbol message ("a formula of x, y")."""
    quoted = shown(whole if whole is not None else text)
    try:
        expr = build(text, names, specials=specials)
    except _Unknown as exc:
        if exc.kind == "symbol":
            raise ProblemError(f"{field}: unknown symbol {exc.name!r} in {quoted}; expected {expected}") from None
        raise ProblemError(f"{field}: unknown function {exc.name!r} in {quoted}; known functions: "
                           f"{', '.join(sorted(FUNCTIONS, key=str.lower))}") from None
    except FormulaError as exc:
        raise ProblemError(f"{field}: cannot parse formula {quoted} ({exc})") from None
    if not isinstance(expr, sp.Expr):
        raise ProblemError(f"{field}: {quoted} is not a numeric formula")
    if expr.has(sp.I, sp.zoo, sp.nan):
        raise ProblemError(f"{field}: {quoted} is not real-valued (it involves {'I' if expr.has(sp.I) else 'zoo'}: "
                           "a square root or logarithm of a negative number, or a division by zero); pinnbo "
                           "never casts it to a real")
    return expr


def split_relation(text: str) -> list[tuple[int, str]]:
    """(position, operator) of the comparisons outside brackets: ``Piecewise((x, x < 0.5), ...)``
    keeps its inner condition."""
    out, depth, i = [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text[i:i + 2] in ("<=", ">=", "==", "!="):
            out.append((i, text[i:i + 2]))
            i += 2
            continue
        elif depth == 0 and ch in "<>=":
            out.append((i, ch))
        i += 1
    return out


def numpy_function(expr: sp.Expr, variables: Sequence[str]) -> Callable[..., np.ndarray]:
    """Vectorised numpy evaluation of ``expr``; returns arrays broadcast to the inputs' shape.

    ``expr`` is a tree built by this module (whitelisted functions, validated symbol names), so
    the code sympy's printer generates from it calls numpy functions only."""
    for name in variables:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ProblemError(f"bounds: variable name {shown(name)} must be letters, digits and '_'")
    symbols = [sp.Symbol(name, real=True) for name in variables]
    # The generated code sees the variables as _v0, _v1, ...: lambdify puts every symbol's name in
    # the namespace of its code, so a variable named like a numpy function that the printer calls
    # (select for Piecewise, where, exp) would shadow it.
    placeholders = [sp.Symbol(f"_v{i}", real=True) for i in range(len(symbols))]
    fn = sp.lambdify(placeholders, expr.xreplace(dict(zip(symbols, placeholders))), modules="numpy")

    def evaluate(*args: np.ndarray) -> np.ndarray:
        arrays = [np.asarray(a, dtype=np.float64) for a in args]
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*arrays), dtype=np.float64)
        shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        return np.broadcast_to(out, shape).copy()

    return evaluate
