"""Symbolic PDE declaration (sympy) and its compilation to a torch residual operator.

A user declares ``N[h] = g`` with sympy, in the field's own notation::

    x, y = sp.symbols("x y")
    T = sp.Function("T")(x, y)
    heat = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
    residual = heat.compile()
    r = residual(model, points)        # (N, 2) points -> (N, 1) residual N[h](z) - g(z)

The unknown's arguments are the inputs, in order: column ``i`` of ``points`` is argument ``i``.

How compilation works: every derivative atom ``∂^α h`` (and ``h`` itself) is replaced by a
placeholder symbol; the remaining algebra is turned once into a tree of torch closures (a small
tree walker rather than ``sympy.lambdify``: under sympy 1.14 lambdify's torch printer returns
Python ints for constant terms, passes ints to ``torch.sqrt`` for ``sqrt(2)`` and floats to
``torch.heaviside``/``torch.min`` and fails; the walker folds constants to floats at declaration
time, runs no generated code, and can reject unsupported constructs while the user is still
declaring). At call time each ``∂^α h`` is obtained by successive ``torch.autograd.grad`` calls with
``create_graph=True`` and cached by multi-index, so ``h_xx`` reuses ``h_x``; a model that offers its
derivatives along the axes (``axis_derivatives``, e.g. the networks' Taylor mode) gives them in one
pass when the PDE has no mixed derivative.

Every bad declaration raises :class:`PDEError` from ``PDE(...)`` with a one-line message naming the
offending symbol.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Callable, Iterable, Mapping, Sequence

import sympy as sp
import torch
from sympy.core.function import AppliedUndef

from pinnbo.errors import PDEError, shown

__all__ = ["PDE", "PDEError", "MAX_ORDER"]

#: Highest total derivative order accepted (the Euler–Bernoulli beam needs 4).
MAX_ORDER = 4

MultiIndex = tuple[int, ...]


def _by_order(alpha: MultiIndex) -> tuple:
    """Sort key of multi-indices: increasing total order, then lexicographic (parents before children)."""
    return sum(alpha), alpha
# A compiled node: (values of the placeholder/input symbols, (N,) reference tensor) -> value.
# Constant subtrees are folded to Python floats; everything else is an (N,) tensor.
_Node = Callable[[Mapping[sp.Symbol, torch.Tensor], torch.Tensor], "torch.Tensor | float"]
#: The key of a residual's environment holding the inputs detached from the graph (PDE._build).
_CONSTANT_INPUTS = "constant inputs"
#: ... and the one holding the input-only subtrees' values precomputed at the points.
_COEFFICIENT_VALUES = "coefficient values"


def _heaviside(x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
    # torch.heaviside has no autograd formula; the where-form has the correct (zero) derivative.
    return torch.where(x > 0, torch.ones_like(x), torch.where(x < 0, torch.zeros_like(x), h0))


# sympy function class -> (torch implementation, accepted argument counts).
_FUNCTIONS: dict[type, tuple[Callable[..., torch.Tensor], tuple[int, ...]]] = {
    sp.sin: (torch.sin, (1,)),
    sp.cos: (torch.cos, (1,)),
    sp.tan: (torch.tan, (1,)),
    sp.cot: (lambda a: 1.0 / torch.tan(a), (1,)),
    sp.sec: (lambda a: 1.0 / torch.cos(a), (1,)),
    sp.csc: (lambda a: 1.0 / torch.sin(a), (1,)),
    sp.asin: (torch.asin, (1,)),
    sp.acos: (torch.acos, (1,)),
    sp.atan: (torch.atan, (1,)),
    sp.atan2: (torch.atan2, (2,)),
    sp.sinh: (torch.sinh, (1,)),
    sp.cosh: (torch.cosh, (1,)),
    sp.tanh: (torch.tanh, (1,)),
    sp.asinh: (torch.asinh, (1,)),
    sp.acosh: (torch.acosh, (1,)),
    sp.atanh: (torch.atanh, (1,)),
    sp.exp: (torch.exp, (1,)),
    sp.log: (torch.log, (1,)),
    sp.erf: (torch.erf, (1,)),
    sp.Abs: (torch.abs, (1,)),
    sp.sign: (torch.sign, (1,)),
    sp.floor: (torch.floor, (1,)),
    sp.ceiling: (torch.ceil, (1,)),
    sp.Heaviside: (lambda a, h0=None: _heaviside(a, 0.5 * torch.ones_like(a) if h0 is None else h0), (1, 2)),
}
# n-ary lattice functions reduce pairwise.
_REDUCTIONS: dict[type, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    sp.Min: torch.minimum,
    sp.Max: torch.maximum,
}
_RELATIONS: dict[type, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    sp.StrictLessThan: torch.lt,
    sp.LessThan: torch.le,
    sp.StrictGreaterThan: torch.gt,
    sp.GreaterThan: torch.ge,
    sp.Equality: torch.eq,
    sp.Unequality: torch.ne,
}
_LOGIC: dict[type, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    sp.And: torch.logical_and,
    sp.Or: torch.logical_or,
    sp.Xor: torch.logical_xor,
}


def _as_tensor(value: torch.Tensor | float | bool, ref: torch.Tensor) -> torch.Tensor:
    """Broadcast a folded constant (or pass a tensor through) to ``ref``'s (N,) shape, dtype, device."""
    if isinstance(value, torch.Tensor):
        return value.expand_as(ref) if value.shape != ref.shape else value
    if isinstance(value, bool):
        return torch.full(ref.shape, value, dtype=torch.bool, device=ref.device)
    return torch.full_like(ref, value)


def _sympify(value: object, where: str) -> sp.Basic:
    if isinstance(value, torch.Tensor):
        raise PDEError(f"{where}: a torch tensor; write coefficients and sources as sympy expressions or numbers "
                       "(e.g. 2.0 or sp.exp(x)): the residual is compiled to torch from them")
    # strict=True: numbers and sympy objects only, so no user string reaches sympy's eval-based parser.
    try:
        return sp.sympify(value, strict=True)
    except (sp.SympifyError, TypeError):
        raise PDEError(
            f"{where}: expected a sympy expression or a number, got {type(value).__name__} {shown(value)}"
        ) from None


def _as_list(value: object) -> list | None:
    if isinstance(value, (list, tuple)):
        return list(value)
    return None


class PDE:
    """A PDE ``N[h](z) = g(z)`` (or a system of them) in one unknown function ``h``.

    Args:
        lhs: the operator ``N[h]`` as a sympy expression in the unknown (e.g. ``T(x, y)``), its
            derivatives and the inputs; or a list of such expressions, one per equation.
        rhs: the source ``g``: a number or sympy expression of the inputs (it may contain the
            unknown too; the residual is ``lhs - rhs`` either way), or a list as long as ``lhs``.
            A single rhs with a list ``lhs`` applies to every equation.
        inputs: optional names of the inputs, checked against the unknown's arguments (same names,
            same order) so that a mismatch with the points' column order fails early.
        params: named constants substituted into ``lhs`` and ``rhs`` (e.g. ``{"k": 2.0}`` for a
            symbol ``k``); any other symbol that is not an input is an error.

    Attributes:
        inputs: tuple of input names, the order of ``points``' columns.
        unknown: the unknown function's name.
        dim: number of inputs ``d``.
        n_equations: number of equations, i.e. residual columns.
        max_order: highest total derivative order that appears (0 if none).
        lhs, rhs: tuples of the sympy expressions after substitution and ``doit()``.

    Raises:
        PDEError: on any declaration that cannot be compiled, naming the offending symbol.
    """

    #: Whether _build wraps the next input-only subtree (off while building inside one).
    _split_coefficients = True

    def __init__(
        self,
        lhs: sp.Expr | Sequence[sp.Expr],
        rhs: sp.Expr | float | Sequence[sp.Expr | float] = 0,
        *,
        inputs: Sequence[str] | None = None,
        params: Mapping[str, float | sp.Expr] | None = None,
    ) -> None:
        lhs_list = _as_list(lhs)
        lhs_items = [lhs] if lhs_list is None else lhs_list
        if not lhs_items:
            raise PDEError("lhs: expected at least one equation, got an empty list")
        rhs_list = _as_list(rhs)
        if rhs_list is None:
            rhs_items = [rhs] * len(lhs_items)
        elif len(rhs_list) != len(lhs_items):
            raise PDEError(f"rhs: {len(rhs_list)} right-hand sides for {len(lhs_items)} equations")
        else:
            rhs_items = rhs_list

        raw_lhs = [self._expression(e, "lhs", i, lhs_list is not None) for i, e in enumerate(lhs_items)]
        raw_rhs = [self._expression(e, "rhs", i, lhs_list is not None) for i, e in enumerate(rhs_items)]
        raw = raw_lhs + raw_rhs
        if not any(e.has(AppliedUndef) for e in raw) and any(e == 0 for e in raw_lhs):
            # sympy differentiates T(x) with respect to y to 0 as the user writes it: say so.
            raise PDEError("lhs: is 0, with no unknown in it: sympy folds a derivative of the unknown with respect "
                           "to a symbol it is not applied to into 0; apply the unknown to every input, e.g. "
                           "T = sp.Function('T')(x, y)")

        raw = self._substitute_params(raw, params or {})
        call = self._find_unknown(raw)
        self._call = call
        self._symbols: tuple[sp.Symbol, ...] = tuple(call.args)
        self.inputs: tuple[str, ...] = tuple(s.name for s in self._symbols)
        self.unknown: str = call.func.__name__
        self.dim: int = len(self._symbols)
        self.n_equations: int = len(lhs_items)
        if inputs is not None and tuple(str(n) for n in inputs) != self.inputs:
            raise PDEError(
                f"inputs={shown(list(inputs))} do not match the arguments of {call}: expected "
                f"{shown(list(self.inputs))} (the points' column order)"
            )
        self._check_symbols(raw)

        # doit() expands derivatives of products that sympy leaves unevaluated, e.g. the beam's
        # (EI(x) w'')'' becomes EI w'''' + 2 EI' w''' + EI'' w''.
        done = [e.doit() for e in raw]
        self.lhs: tuple[sp.Expr, ...] = tuple(done[: self.n_equations])
        self.rhs: tuple[sp.Expr, ...] = tuple(done[self.n_equations :])
        self._find_unknown(done)  # doit() must not have introduced other undefined functions

        # Placeholder per multi-index α (α = 0 is h itself); Dummy so they never clash with user names.
        self._placeholders: dict[MultiIndex, sp.Dummy] = {}
        self._expanded: list | None = None     # _expanded_equations', computed on first use
        self._coefficients: list[_Node] = []    # input-only subtrees, in the order _build meets them
        self._equations: list[_Node] = []
        for i, (l, r) in enumerate(zip(self.lhs, self.rhs)):
            residual = l - r
            if not residual.has(call):
                raise PDEError(f"equation {i}: {l} = {r} does not involve the unknown {call}")
            self._equations.append(self._build(residual))
        self._n_equation_coefficients = len(self._coefficients)   # linear_form's come after
        self.max_order: int = max(sum(a) for a in self._placeholders)
        # Multi-indices in increasing total order, so parents are computed before children.
        self._multi_indices: tuple[MultiIndex, ...] = tuple(sorted(self._placeholders, key=_by_order))

    # ---------------------------------------------------------------- declaration checks
    @staticmethod
    def _expression(value: object, side: str, index: int, indexed: bool) -> sp.Expr:
        where = f"{side}[{index}]" if indexed else side
        expr = _sympify(value, where)
        if expr.has(sp.Subs):
            # What sympy makes of d/dx T(2x, y): a Subs over a dummy symbol the user never wrote.
            raise PDEError(f"{where}: the unknown is differentiated at an argument other than the inputs "
                           "themselves (e.g. T(2*x, y).diff(x)); apply the unknown to the inputs and write the "
                           "chain rule out, e.g. 2*T(x, y).diff(x)")
        # Symbol subclasses Boolean in sympy, so "boolean" means Boolean and not an Expr.
        if isinstance(expr, sp.logic.boolalg.Boolean) and not isinstance(expr, sp.Expr):
            raise PDEError(
                f"{where}: {expr} is a relation/boolean, not an expression; write PDE(lhs, rhs=...)"
            )
        if not isinstance(expr, sp.Expr):
            raise PDEError(f"{where}: unsupported object {type(expr).__name__} {expr}")
        return expr

    @staticmethod
    def _substitute_params(exprs: list[sp.Expr], params: Mapping[str, object]) -> list[sp.Expr]:
        if not params:
            return exprs
        values = {str(name): _sympify(v, f"params[{shown(name)}]") for name, v in params.items()}
        for name, v in values.items():
            if not isinstance(v, sp.Expr):
                raise PDEError(f"params[{shown(name)}]: expected a number or expression, got {v}")
        arguments = {a for e in exprs for call in e.atoms(AppliedUndef) for a in call.args}
        for a in arguments:
            if isinstance(a, sp.Symbol) and a.name in values:
                raise PDEError(f"params[{shown(a.name)}]: {a.name} is an input (an argument of the unknown), not a constant")
        used = {s.name for e in exprs for s in e.free_symbols}
        for name in values:
            if name not in used:
                raise PDEError(f"params[{shown(name)}]: the PDE has no symbol {name}; its symbols are "
                               f"{', '.join(sorted(used)) or 'none'}")
        # Match by name: the user's symbol may carry assumptions (real=True) that Symbol(name) lacks.
        out = []
        for e in exprs:
            mapping = {s: values[s.name] for s in e.free_symbols if s.name in values}
            out.append(e.xreplace(mapping) if mapping else e)
        return out

    @staticmethod
    def _find_unknown(exprs: Iterable[sp.Expr]) -> AppliedUndef:
        calls: set[AppliedUndef] = set()
        for e in exprs:
            calls |= e.atoms(AppliedUndef)
        if not calls:
            raise PDEError(
                "no unknown function: declare one, e.g. T = sp.Function('T')(x, y), and use it in lhs"
            )
        names = sorted({c.func.__name__ for c in calls})
        if len(names) > 1:
            raise PDEError(
                f"undefined functions {', '.join(names)}: a PDE has exactly one unknown; write "
                "coefficients as explicit expressions of the inputs"
            )
        if len(calls) > 1:
            shown = ", ".join(sorted(str(c) for c in calls))
            raise PDEError(f"unknown {names[0]} is applied to different arguments: {shown}")
        call = next(iter(calls))
        for arg in call.args:
            if not isinstance(arg, sp.Symbol):
                raise PDEError(f"unknown {call}: argument {arg} is not a plain symbol")
        repeated = [a for a in call.args if call.args.count(a) > 1]
        if repeated:
            raise PDEError(f"unknown {call}: argument {repeated[0]} is repeated")
        if not call.args:
            raise PDEError(f"unknown {call.func.__name__}() has no arguments: apply it to the inputs")
        return call

    def _check_symbols(self, exprs: list[sp.Expr]) -> None:
        inputs = set(self._symbols)
        # Derivatives w.r.t. a non-input are checked before doit(), which would silently make them 0.
        for e in exprs:
            for d in sorted(e.atoms(sp.Derivative), key=sp.default_sort_key):   # the same one named every run
                for v in d.variables:
                    if v not in inputs:
                        raise PDEError(
                            f"derivative {d} is taken w.r.t. {v}, which is not an input of "
                            f"{self._call}"
                        )
        strangers = set().union(*(e.free_symbols for e in exprs)) - inputs
        if strangers:
            names = sorted(s.name for s in strangers)
            raise PDEError(
                f"symbol {names[0]} is not an input of {self._call}: pass its value with "
                f"params={{{shown(names[0])}: ...}}" + (f" (also undeclared: {', '.join(names[1:])})" if names[1:] else "")
            )

    # ---------------------------------------------------------------- compilation (once)
    def _multi_index(self, derivative: sp.Derivative) -> MultiIndex:
        """α of a derivative ∂^α h of the unknown, one order per input."""
        alpha = [0] * self.dim
        for v, k in derivative.variable_count:
            alpha[self._symbols.index(v)] += int(k)
        return tuple(alpha)

    def _placeholder(self, alpha: MultiIndex) -> sp.Dummy:
        if alpha not in self._placeholders:
            label = self.unknown + "".join(self.inputs[i] * k for i, k in enumerate(alpha))
            # real: the unknown is a real function, so that sympy differentiates |∂h| to sign(∂h)
            # for the linearisation instead of through complex parts the compiler cannot read
            self._placeholders[alpha] = sp.Dummy(label, real=True)
        return self._placeholders[alpha]

    def _build(self, expr: sp.Basic) -> _Node:
        """Turn a sympy tree into nested torch closures; constants are folded to floats here."""
        if (self._split_coefficients and isinstance(expr, sp.Expr) and expr.free_symbols
                and not expr.has(AppliedUndef) and not expr.has(sp.Derivative)):
            # A function of the inputs alone (a coefficient such as the beam's EI(x), a source g):
            # evaluated on the detached inputs when the caller does not differentiate in them, so
            # training's backward pass does not run through it (values and parameter gradients unchanged).
            self._split_coefficients = False
            try:
                node = self._build(expr)
            finally:
                self._split_coefficients = True
            index = len(self._coefficients)
            self._coefficients.append(node)

            def coefficient(env, ref):
                values = env.get(_COEFFICIENT_VALUES)    # precomputed at these points (compile's docstring)
                return values[index] if values is not None else node(env.get(_CONSTANT_INPUTS, env), ref)

            return coefficient
        if expr == self._call:
            p = self._placeholder((0,) * self.dim)
            return lambda env, ref: env[p]
        if isinstance(expr, sp.Derivative):
            if expr.expr != self._call:
                raise PDEError(f"unsupported derivative {expr}: only derivatives of {self._call} can be compiled")
            alpha = self._multi_index(expr)
            if sum(alpha) > MAX_ORDER:
                raise PDEError(
                    f"derivative {expr} of {self.unknown} has order {sum(alpha)} > {MAX_ORDER}"
                )
            p = self._placeholder(alpha)
            return lambda env, ref: env[p]
        if isinstance(expr, sp.Symbol):
            if expr not in self._symbols:  # guarded by _check_symbols; kept for bound variables
                raise PDEError(f"symbol {expr} is not an input of {self._call}")
            return lambda env, ref: env[expr]
        if isinstance(expr, sp.Expr) and not expr.free_symbols and not expr.has(AppliedUndef):
            return self._constant(expr)
        if isinstance(expr, sp.Add):
            terms = [self._build(a) for a in expr.args]
            return lambda env, ref: functools.reduce(operator.add, (t(env, ref) for t in terms))
        if isinstance(expr, sp.Mul):
            factors = [self._build(a) for a in expr.args]
            return lambda env, ref: functools.reduce(operator.mul, (f(env, ref) for f in factors))
        if isinstance(expr, sp.Pow):
            base, exponent = self._build(expr.base), self._build(expr.exp)
            if expr.exp.is_Integer:
                n = int(expr.exp)  # tensor ** int keeps the exact polynomial derivative at base 0
                return lambda env, ref: base(env, ref) ** n
            return lambda env, ref: base(env, ref) ** exponent(env, ref)
        if isinstance(expr, sp.Piecewise):
            return self._piecewise(expr)
        if type(expr) in _REDUCTIONS:
            reduce_, args = _REDUCTIONS[type(expr)], [self._build(a) for a in expr.args]
            return lambda env, ref: functools.reduce(reduce_, (_as_tensor(a(env, ref), ref) for a in args))
        if type(expr) in _FUNCTIONS:
            fn, arities = _FUNCTIONS[type(expr)]
            if len(expr.args) not in arities:
                raise PDEError(f"function {type(expr).__name__} with {len(expr.args)} arguments is not supported")
            args = [self._build(a) for a in expr.args]
            return lambda env, ref: fn(*(_as_tensor(a(env, ref), ref) for a in args))
        raise PDEError(f"unsupported construct {type(expr).__name__}: {expr}")

    @staticmethod
    def _constant(expr: sp.Expr) -> _Node:
        value = complex(sp.N(expr, 30))
        if value.imag != 0 or not math.isfinite(value.real):
            raise PDEError(f"constant {expr} is not a finite real number")
        c = value.real
        return lambda env, ref: c

    def _piecewise(self, expr: sp.Piecewise) -> _Node:
        pieces = [(self._build(e), self._condition(c)) for e, c in expr.args]

        def evaluate(env, ref):
            # sympy's Piecewise is undefined (nan) where no condition holds.
            out = torch.full_like(ref, math.nan)
            for value, cond in reversed(pieces):
                out = torch.where(_as_tensor(cond(env, ref), ref), _as_tensor(value(env, ref), ref), out)
            return out

        return evaluate

    def _condition(self, cond: sp.Basic) -> _Node:
        if cond is sp.true or cond is sp.false:
            flag = bool(cond)
            return lambda env, ref: flag
        if type(cond) in _RELATIONS:
            rel, lhs, rhs = _RELATIONS[type(cond)], self._build(cond.lhs), self._build(cond.rhs)
            return lambda env, ref: rel(_as_tensor(lhs(env, ref), ref), _as_tensor(rhs(env, ref), ref))
        if type(cond) in _LOGIC:
            logic, args = _LOGIC[type(cond)], [self._condition(a) for a in cond.args]
            return lambda env, ref: functools.reduce(logic, (_as_tensor(a(env, ref), ref) for a in args))
        if isinstance(cond, sp.Not):
            arg = self._condition(cond.args[0])
            return lambda env, ref: torch.logical_not(_as_tensor(arg(env, ref), ref))
        raise PDEError(f"unsupported condition {type(cond).__name__}: {cond}")

    # ---------------------------------------------------------------- evaluation
    def compile(self) -> Callable[[Callable[[torch.Tensor], torch.Tensor], torch.Tensor], torch.Tensor]:
        """Return ``residual(model, points) -> N[h](z) - g(z)``.

        ``model`` maps an (N, d) tensor to (N,) or (N, 1) values of ``h`` and must act row by row
        (no batch coupling such as batch norm: derivatives are read off the gradient of the summed
        output). ``points`` is (N, d), columns ordered as :attr:`inputs`. The result is an
        (N, n_equations) tensor on ``points``' dtype and device, built with ``create_graph=True`` so
        a loss on it can be back-propagated to the model's parameters.

        A model may also offer ``axis_derivatives(points, orders) -> (h (N,), {i: (orders[i], N)})``,
        the pure derivatives ∂ᵏh/∂z_iᵏ, k = 1..orders[i]: when every derivative in the PDE is
        along one axis (no mixed ∂²h/∂x∂y) and the PDE is of order 2 or more, they are taken from
        it, in one pass.

        ``residual.coefficients(points)`` evaluates the PDE's functions of the inputs alone (the
        beam's EI(x) and its derivatives, a source g) at fixed points, an opaque tuple of (N,)
        tensors; ``residual(model, points[idx], coefficients=tuple(c[idx] for c in values))`` then
        reuses them, as training does at its collocation points, each step a batch of them.
        """
        equations, symbols, placeholders = list(self._equations), self._symbols, dict(self._placeholders)
        coefficient_nodes = tuple(self._coefficients[:self._n_equation_coefficients])
        multi_indices, dim = self._multi_indices, self.dim
        # Highest order along each axis, when no derivative mixes two axes and one is of order 2 or
        # more (else None: autograd, whose one backward pass gives every first derivative at once).
        axis_orders = None
        if self.max_order >= 2 and all(sum(1 for k in alpha if k) <= 1 for alpha in multi_indices):
            axis_orders = tuple(max((alpha[i] for alpha in multi_indices), default=0) for i in range(dim))

        def coefficients(points: torch.Tensor) -> tuple[torch.Tensor, ...]:
            detached = points.detach()
            env, ref = {s: detached[:, i] for i, s in enumerate(symbols)}, detached[:, 0]
            return tuple(_as_tensor(node(env, ref), ref) for node in coefficient_nodes)

        def residual(model: Callable[[torch.Tensor], torch.Tensor], points: torch.Tensor,
                     coefficients: tuple[torch.Tensor, ...] | None = None) -> torch.Tensor:
            if points.ndim != 2 or points.shape[1] != dim:
                raise ValueError(
                    f"points must have shape (N, {dim}) for inputs {', '.join(s.name for s in symbols)}; "
                    f"got {tuple(points.shape)}"
                )
            # Derivatives need a graph from the points; a detached copy keeps the caller's tensor untouched.
            jets = getattr(model, "axis_derivatives", None) if axis_orders is not None else None
            if jets is not None:
                z = points
                h, along = jets(z, axis_orders)
                derivatives = {}
                for alpha in multi_indices:     # each along one axis i: row alpha[i] − 1 of along[i]
                    i = next((i for i, k in enumerate(alpha) if k), None)
                    derivatives[alpha] = h if i is None else along[i][alpha[i] - 1]
            else:
                z = points if points.requires_grad else points.detach().clone().requires_grad_(True)
                h = model(z)
                if h.shape not in ((z.shape[0],), (z.shape[0], 1)):
                    raise ValueError(f"model must return shape (N,) or (N, 1) with N={z.shape[0]}; got {tuple(h.shape)}")
                derivatives = _derivatives(h.reshape(-1), z, multi_indices)
            env = {s: z[:, i] for i, s in enumerate(symbols)}
            env.update({placeholders[a]: derivatives[a] for a in multi_indices})
            if not points.requires_grad:     # nobody asks for d residual / d points: coefficients are constants
                detached = z.detach()
                env[_CONSTANT_INPUTS] = {s: detached[:, i] for i, s in enumerate(symbols)}
                if coefficients is not None:
                    env[_COEFFICIENT_VALUES] = coefficients
            ref = z[:, 0].detach()
            columns = [_as_tensor(eq(env, ref), ref) for eq in equations]
            return torch.stack(columns, dim=1).to(points.dtype)

        residual.__doc__ = f"Residual of {shown(self)}: (N, {dim}) points -> (N, {self.n_equations})."
        residual.coefficients = coefficients
        return residual

    def negated(self) -> "PDE":
        """The PDE that −h satisfies: every optimiser minimises, so a maximised objective f reaches it
        as v = −f, which obeys N[−v] = g (for a linear N, −N[v] = g: the source changes sign)."""
        flipped = {self._call: -self._call}
        return PDE([e.xreplace(flipped).doit() for e in self.lhs], [e.xreplace(flipped).doit() for e in self.rhs])

    def linear_form(self) -> "LinearForm":
        """The PDE as L[h] = g with L linear: per equation, the coefficient c_α(z) of each derivative
        ∂^α h, and the source g(z), compiled like the residual. A PDEError naming the first equation
        that is not linear in the unknown (a product of derivatives, the unknown inside a function):
        only a linear operator keeps a Gaussian process Gaussian."""
        equations = [(tuple((alpha, self._build(c)) for alpha, c in terms), None if g == 0 else self._build(g))
                     for terms, g in self._linear_equations()]
        return LinearForm(self._symbols, tuple(equations))

    def _linear_equations(self) -> list[tuple[list[tuple[MultiIndex, sp.Expr]], sp.Expr]]:
        """Per equation, the symbolic pairs (α, c_α) of L[h] = Σ c_α ∂^α h and the source g; a
        PDEError naming the first equation that is not linear in the unknown."""
        equations = []
        for i, (terms, source, nonlinear) in enumerate(self._expanded_equations()):
            if nonlinear:
                raise PDEError(f"equation {i}: {self.lhs[i]} = {self.rhs[i]} is not linear in the unknown {self._call} "
                               "(a product or a function of its derivatives)")
            equations.append((terms, source))
        return equations

    def _expanded_equations(self) -> list[tuple[list[tuple[MultiIndex, sp.Expr]], sp.Expr, bool]]:
        """Per equation R(z, ∂h) = 0, with each ∂^α h written as :meth:`_placeholder`'s symbol P_α:
        the pairs (α, ∂R/∂P_α), the source Σ_α P_α ∂R/∂P_α − R, and whether any of them still holds
        a P_α (the equation is nonlinear in h). For a linear equation the pairs are its coefficients
        and the source is g; for a nonlinear one, evaluated at a function h₀, they are its
        Gauss–Newton linearisation about h₀ (:meth:`linearised_form`). Expanded once: the equations
        do not change, and a method asks for them several ways (linearity, the form, the maximum
        principle)."""
        if self._expanded is None:
            self._expanded = self._expand()
        return self._expanded

    def _expand(self) -> list[tuple[list[tuple[MultiIndex, sp.Expr]], sp.Expr, bool]]:
        equations = []
        for l, r in zip(self.lhs, self.rhs):
            e = l - r
            # the unknown first, then its derivatives by order and multi-index: the terms' order is
            # that of the sums the kernel blocks add up, and a set of atoms iterates in an order
            # that follows the string hashes Python salts per process
            met: dict[MultiIndex, sp.Dummy] = {}

            def placeholder(alpha: MultiIndex) -> sp.Dummy:
                return met.setdefault(alpha, self._placeholder(alpha))

            atoms = {self._call: placeholder((0,) * self.dim)} if e.has(self._call) else {}
            derivatives = {d: self._multi_index(d) for d in e.atoms(sp.Derivative)}
            for d, alpha in sorted(derivatives.items(), key=lambda item: _by_order(item[1])):
                atoms[d] = placeholder(alpha)
            # Derivatives first: replacing the bare unknown inside them would leave Derivative(P, x).
            e = e.xreplace({d: p for d, p in atoms.items() if d != self._call})
            e = sp.expand(e.xreplace({self._call: atoms[self._call]} if self._call in atoms else {}))
            unknowns = set(met.values())
            terms = [(alpha, c) for alpha, p in met.items() if (c := sp.diff(e, p)) != 0]
            nonlinear = any(c.free_symbols & unknowns for _, c in terms)
            if nonlinear:
                source = sp.expand(sum((c * met[alpha] for alpha, c in terms), sp.S.Zero) - e)
            else:
                # from sympy's zero: a bare derivative (f'' = 0) xreplaces to the Python int 0
                source = sp.S.Zero - e.xreplace({p: 0 for p in unknowns})
            equations.append((terms, source, nonlinear))
        return equations

    def is_linear(self) -> bool:
        """Whether every equation is linear in the unknown and its derivatives."""
        return not any(nonlinear for _, _, nonlinear in self._expanded_equations())

    def linearised_form(self) -> "LinearisedForm":
        """The PDE linearised about a function h₀ (Gauss–Newton; Chen, Hosseini, Owhadi & Stuart
        2021): R(z, ∂h) ≈ R(z, ∂h₀) + Σ_α ∂R/∂(∂^α h)|h₀ (∂^α h − ∂^α h₀) = 0, a linear PDE
        Σ_α c_α ∂^α h = g with c_α = ∂R/∂(∂^α h)|h₀ and g = Σ_α c_α ∂^α h₀ − R(z, ∂h₀). Its
        coefficients and source are compiled like the residual, as functions of the inputs and of
        h₀'s derivatives; for a linear PDE they are its :meth:`linear_form`'s, whatever h₀."""
        # each P_α back to ∂^α h, which _build compiles to a read of its value
        back = {p: self._call if not any(alpha) else
                sp.Derivative(self._call, *[(v, k) for v, k in zip(self._symbols, alpha) if k])
                for alpha, p in self._placeholders.items()}
        equations, needed = [], set()
        for terms, source, _ in self._expanded_equations():
            for expr in [c for _, c in terms] + [source]:
                needed |= {alpha for alpha, p in self._placeholders.items() if expr.has(p)}
            equations.append((tuple((alpha, self._build(c.xreplace(back))) for alpha, c in terms),
                              None if source == 0 else self._build(source.xreplace(back))))
        placeholders = {alpha: self._placeholders[alpha] for alpha in sorted(needed, key=_by_order)}
        return LinearisedForm(self._symbols, tuple(equations), placeholders)

    def minimum_on_boundary(self) -> bool:
        """Whether every solution's minimum over a closed box lies on the box's boundary, by the weak
        maximum principle (Gilbarg & Trudinger, Theorem 3.1; Evans, §6.4.1): one linear equation
        L[h] = Σ a_ij ∂_i∂_j h + Σ b_i ∂_i h = g with no zero-order term, a constant definite
        matrix (a_ij), polynomial b_i (bounded on the box) and a constant source of the sign that
        makes h a supersolution (s·g ≤ 0, s the sign of (a_ij)). Laplace's equation qualifies for
        both the minimum and, through :meth:`negated`, the maximum; Helmholtz's (a zero-order
        term), the beam's (fourth order) and any nonlinear PDE do not. Conservative: False
        whenever the conditions cannot be read off the symbols."""
        if self.n_equations != 1:
            return False
        try:
            ((terms, source),) = self._linear_equations()
        except PDEError:
            return False
        a = sp.zeros(self.dim, self.dim)
        for alpha, c in terms:
            order = sum(alpha)
            if order == 0 or order > 2:
                return False
            if order == 1 and not c.is_polynomial(*self._symbols):
                return False
            if order == 2:
                if c.free_symbols:
                    return False
                axes = [i for i, k in enumerate(alpha) for _ in range(k)]
                i, j = axes
                if i == j:
                    a[i, i] = c
                else:
                    a[i, j] = a[j, i] = c / 2
        if source.free_symbols:
            return False
        try:
            eigenvalues = [complex(sp.N(v)).real for v in a.eigenvals(multiple=True)]
            g = float(sp.N(source))
        except (TypeError, ValueError):
            return False
        if all(v > 0 for v in eigenvalues):
            sign = 1.0
        elif all(v < 0 for v in eigenvalues):
            sign = -1.0
        else:
            return False
        return sign * g <= 0.0

    def for_variables(self, names: Sequence[str]) -> "PDE":
        """This PDE with its inputs matched to design variables ``names`` by name: itself when they
        come in that order, the same equations with the unknown's arguments reordered when they come
        in another, a PDEError naming both lists when they are not the same names. (Matching by
        position would train on the transposed physics when ``u(y, x)`` meets a box ``(x, y)``.)"""
        names = tuple(str(n) for n in names)
        if self.inputs == names:
            return self
        if sorted(self.inputs) != sorted(names):
            raise PDEError(f"the unknown {self._call} has inputs ({', '.join(self.inputs)}) but the design "
                           f"variables are ({', '.join(names)}); name the unknown's arguments after the design "
                           "variables, one for each")
        by_name = {s.name: s for s in self._symbols}
        call = self._call.func(*(by_name[n] for n in names))
        swap = {self._call: call}
        return PDE([e.xreplace(swap) for e in self.lhs], [e.xreplace(swap) for e in self.rhs])

    def __repr__(self) -> str:
        eqs = "; ".join(f"{l} = {r}" for l, r in zip(self.lhs, self.rhs))
        return f"PDE({eqs}, unknown={self._call})"


class LinearForm:
    """A linear PDE, L[h] = g, as data a Gaussian process can use (:meth:`PDE.linear_form`).

    ``terms(points)`` gives, per equation, the pairs (α, c_α(points)) with each coefficient (N,)
    on the points' dtype and device; ``source(points)`` the (N, n_equations) right-hand sides g.
    Both keep their latest evaluation: a run's collocation points are fixed, and a compiled
    coefficient (the beam's EI and its derivatives) costs more to evaluate than a GP's solve.
    """

    def __init__(self, symbols: tuple[sp.Symbol, ...], equations: tuple) -> None:
        self._symbols = symbols
        self._equations = equations
        self._latest: dict[str, tuple[tuple, object]] = {}
        self.n_equations = len(equations)
        self.multi_indices: tuple[MultiIndex, ...] = tuple(sorted(
            {alpha for terms, _ in equations for alpha, _ in terms}, key=_by_order))
        self.max_order = max((sum(a) for a in self.multi_indices), default=0)

    def _env(self, points: torch.Tensor) -> tuple[dict, torch.Tensor]:
        return {s: points[:, i] for i, s in enumerate(self._symbols)}, points[:, 0]

    def _evaluated(self, kind: str, points: torch.Tensor, evaluate: Callable[[], object]):
        key = (points.shape, points.dtype, str(points.device), points.detach().cpu().numpy().tobytes())
        latest = self._latest.get(kind)
        if latest is None or latest[0] != key:
            latest = self._latest[kind] = (key, evaluate())
        return latest[1]

    def terms(self, points: torch.Tensor) -> list[list[tuple[MultiIndex, torch.Tensor]]]:
        return self._evaluated("terms", points, lambda: _terms(self._equations, *self._env(points)))

    def source(self, points: torch.Tensor) -> torch.Tensor:
        return self._evaluated("source", points, lambda: _source(self._equations, *self._env(points)))


def _terms(equations: tuple, env: dict, ref: torch.Tensor) -> list[list[tuple[MultiIndex, torch.Tensor]]]:
    """Compiled (α, c_α) pairs per equation evaluated in ``env``: each coefficient (N,)."""
    return [[(alpha, _as_tensor(c(env, ref), ref)) for alpha, c in terms] for terms, _ in equations]


def _source(equations: tuple, env: dict, ref: torch.Tensor) -> torch.Tensor:
    """Compiled sources evaluated in ``env``, (N, n_equations); None is a zero source."""
    return torch.stack([torch.zeros_like(ref) if g is None else _as_tensor(g(env, ref), ref)
                        for _, g in equations], dim=1)


class LinearisedForm:
    """A PDE linearised about a function h₀ (:meth:`PDE.linearised_form`). ``multi_indices`` are
    the derivatives of h₀ its coefficients and source need; ``at(points, derivatives)``, with
    ``derivatives`` {α: ∂^α h₀ at the points, (N,)}, is the linear PDE there, with the
    :class:`LinearForm`'s ``terms`` and ``source`` at those points."""

    def __init__(self, symbols: tuple[sp.Symbol, ...], equations: tuple, placeholders: dict) -> None:
        self._symbols = symbols
        self._equations = equations
        self._placeholders = placeholders
        self.n_equations = len(equations)
        self.multi_indices: tuple[MultiIndex, ...] = tuple(placeholders)

    def at(self, points: torch.Tensor, derivatives: Mapping[MultiIndex, torch.Tensor]) -> "EvaluatedForm":
        env, ref = {s: points[:, i] for i, s in enumerate(self._symbols)}, points[:, 0]
        env.update({p: derivatives[alpha] for alpha, p in self._placeholders.items()})
        return EvaluatedForm(points, _terms(self._equations, env, ref), _source(self._equations, env, ref))


class EvaluatedForm:
    """A linear PDE's coefficients and source evaluated at fixed points, with :class:`LinearForm`'s
    ``terms`` and ``source`` (at those points only)."""

    def __init__(self, points: torch.Tensor, terms: list, source: torch.Tensor) -> None:
        self._points, self._terms, self._source = points, terms, source
        self.n_equations = source.shape[1]

    def _check(self, points: torch.Tensor) -> None:
        if points.shape != self._points.shape or not torch.equal(points, self._points):
            raise ValueError("an evaluated linearisation is defined at the points it was evaluated at only")

    def terms(self, points: torch.Tensor) -> list[list[tuple[MultiIndex, torch.Tensor]]]:
        self._check(points)
        return self._terms

    def source(self, points: torch.Tensor) -> torch.Tensor:
        self._check(points)
        return self._source


def _derivatives(h: torch.Tensor, z: torch.Tensor, needed: Sequence[MultiIndex]) -> dict[MultiIndex, torch.Tensor]:
    """All ``∂^α h`` for α in ``needed``, each (N,), from successive first-order autograd.grad calls.

    One backward pass of a cached ``∂^β h`` yields all d children ``∂^(β+e_i) h`` at once (row n of
    h depends on row n of z only), so every child is cached and reused: h_xx and h_xy share h_x.
    """
    dim = z.shape[1]
    cache: dict[MultiIndex, torch.Tensor] = {(0,) * dim: h}
    expanded: set[MultiIndex] = set()

    def get(alpha: MultiIndex) -> torch.Tensor:
        if alpha in cache:
            return cache[alpha]
        parents = [tuple(a - (j == i) for j, a in enumerate(alpha)) for i in range(dim) if alpha[i] > 0]
        # Prefer a parent already available; otherwise the canonical one (drop the last input first).
        parent = next((p for p in parents if p in cache), parents[-1])
        value = get(parent)
        if parent not in expanded:
            expanded.add(parent)
            if value.requires_grad:
                (grad,) = torch.autograd.grad(value.sum(), z, create_graph=True, allow_unused=True)
            else:
                grad = None
            if grad is None:  # ∂^β h does not depend on z (e.g. h linear): its derivatives are 0
                grad = torch.zeros_like(z)
            for i in range(dim):
                child = tuple(a + (j == i) for j, a in enumerate(parent))
                cache.setdefault(child, grad[:, i])
        return cache[alpha]

    return {alpha: get(alpha) for alpha in needed}
