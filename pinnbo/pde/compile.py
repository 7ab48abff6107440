"""Compilation of a declared PDE to a torch residual operator.

Every derivative atom ``∂^α h`` (and ``h`` itself) stands for a placeholder symbol of the
declaration; the remaining algebra becomes a tree of torch closures. A tree walker rather than
``sympy.lambdify``: constants fold to floats at declaration time, no generated code runs, and an
unsupported construct is rejected while the user is still declaring. At call time each ``∂^α h`` is
obtained by successive ``torch.autograd.grad`` calls with ``create_graph=True`` and cached by
multi-index, so ``h_xx`` reuses ``h_x``; a model that offers its derivatives along the axes
(``axis_derivatives``, the networks' Taylor mode) gives them in one pass when the PDE has no mixed
derivative.
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Callable, Mapping, NamedTuple, Sequence

import sympy as sp
import torch
from sympy.core.function import AppliedUndef

from pinnbo.errors import PDEError

__all__ = ["MAX_ORDER", "Atoms", "MultiIndex", "Residual", "as_tensor", "build", "by_order", "multi_index"]

#: Highest total derivative order accepted (the Euler–Bernoulli beam needs 4).
MAX_ORDER = 4

MultiIndex = tuple[int, ...]

# A compiled node: (values of the placeholder/input symbols, (N,) reference tensor) -> value.
# Constant subtrees are folded to Python floats; everything else is an (N,) tensor.
Node = Callable[[Mapping[object, torch.Tensor], torch.Tensor], "torch.Tensor | float"]
#: The key of a residual's environment holding the inputs detached from the graph (Residual.forward).
_CONSTANT_INPUTS = "constant inputs"
#: ... and the one holding the input-only subtrees' values precomputed at the points.
_COEFFICIENT_VALUES = "coefficient values"


def by_order(alpha: MultiIndex) -> tuple:
    """Sort key of multi-indices: increasing total order, then lexicographic (parents before children)."""
    return sum(alpha), alpha


class Atoms(NamedTuple):
    """What compilation reads of a declaration: the unknown applied to its inputs, the inputs in the
    points' column order, and the placeholder symbol standing for each ``∂^α h``."""

    call: AppliedUndef
    symbols: tuple[sp.Symbol, ...]
    placeholders: Mapping[MultiIndex, sp.Dummy]

    def multi_index(self, derivative: sp.Derivative) -> MultiIndex:
        return multi_index(derivative, self.symbols)


def multi_index(derivative: sp.Derivative, symbols: Sequence[sp.Symbol]) -> MultiIndex:
    """α of a derivative ∂^α h of the unknown, one order per input."""
    alpha = [0] * len(symbols)
    for v, k in derivative.variable_count:
        alpha[list(symbols).index(v)] += int(k)
    return tuple(alpha)


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


def as_tensor(value: torch.Tensor | float | bool, ref: torch.Tensor) -> torch.Tensor:
    """Broadcast a folded constant (or pass a tensor through) to ``ref``'s (N,) shape, dtype, device."""
    if isinstance(value, torch.Tensor):
        return value.expand_as(ref) if value.shape != ref.shape else value
    if isinstance(value, bool):
        return torch.full(ref.shape, value, dtype=torch.bool, device=ref.device)
    return torch.full_like(ref, value)


def build(expr: sp.Basic, atoms: Atoms, coefficients: list[Node] | None = None) -> Node:
    """Turn a sympy tree into nested torch closures, constants folded to floats.

    With a ``coefficients`` list, each maximal subtree that is a function of the inputs alone (a
    coefficient such as the beam's EI(x), a source g) is compiled on its own and appended to it,
    and the returned tree reads its value from the environment when the caller precomputed it or
    evaluates it on the inputs detached from the graph (:class:`Residual`): training's backward
    pass then does not run through it, with values and parameter gradients unchanged.
    """
    if (coefficients is not None and isinstance(expr, sp.Expr) and expr.free_symbols
            and not expr.has(AppliedUndef) and not expr.has(sp.Derivative)):
        node, index = build(expr, atoms), len(coefficients)
        coefficients.append(node)

        def coefficient(env, ref):
            values = env.get(_COEFFICIENT_VALUES)
            return values[index] if values is not None else node(env.get(_CONSTANT_INPUTS, env), ref)

        return coefficient
    if expr == atoms.call:
        p = atoms.placeholders[(0,) * len(atoms.symbols)]
        return lambda env, ref: env[p]
    if isinstance(expr, sp.Derivative):
        if expr.expr != atoms.call:
            raise PDEError(f"unsupported derivative {expr}: only derivatives of {atoms.call} can be compiled")
        alpha = atoms.multi_index(expr)
        if sum(alpha) > MAX_ORDER:
            raise PDEError(f"derivative {expr} of {atoms.call.func.__name__} has order {sum(alpha)} > {MAX_ORDER}")
        p = atoms.placeholders[alpha]
        return lambda env, ref: env[p]
    if isinstance(expr, sp.Symbol):
        if expr not in atoms.symbols:  # the declaration checks free symbols; kept for bound variables
            raise PDEError(f"symbol {expr} is not an input of {atoms.call}")
        return lambda env, ref: env[expr]
    if isinstance(expr, sp.Expr) and not expr.free_symbols and not expr.has(AppliedUndef):
        return _constant(expr)
    if isinstance(expr, sp.Add):
        terms = [build(a, atoms, coefficients) for a in expr.args]
        return lambda env, ref: functools.reduce(operator.add, (t(env, ref) for t in terms))
    if isinstance(expr, sp.Mul):
        factors = [build(a, atoms, coefficients) for a in expr.args]
        return lambda env, ref: functools.reduce(operator.mul, (f(env, ref) for f in factors))
    if isinstance(expr, sp.Pow):
        base, exponent = build(expr.base, atoms, coefficients), build(expr.exp, atoms, coefficients)
        if expr.exp.is_Integer:
            n = int(expr.exp)  # tensor ** int keeps the exact polynomial derivative at base 0
            return lambda env, ref: base(env, ref) ** n
        return lambda env, ref: base(env, ref) ** exponent(env, ref)
    if isinstance(expr, sp.Piecewise):
        return _piecewise(expr, atoms, coefficients)
    if type(expr) in _REDUCTIONS:
        reduce_, args = _REDUCTIONS[type(expr)], [build(a, atoms, coefficients) for a in expr.args]
        return lambda env, ref: functools.reduce(reduce_, (as_tensor(a(env, ref), ref) for a in args))
    if type(expr) in _FUNCTIONS:
        fn, arities = _FUNCTIONS[type(expr)]
        if len(expr.args) not in arities:
            raise PDEError(f"function {type(expr).__name__} with {len(expr.args)} arguments is not supported")
        args = [build(a, atoms, coefficients) for a in expr.args]
        return lambda env, ref: fn(*(as_tensor(a(env, ref), ref) for a in args))
    raise PDEError(f"unsupported construct {type(expr).__name__}: {expr}")


def _constant(expr: sp.Expr) -> Node:
    value = complex(sp.N(expr, 30))
    if value.imag != 0 or not math.isfinite(value.real):
        raise PDEError(f"constant {expr} is not a finite real number")
    c = value.real
    return lambda env, ref: c


def _piecewise(expr: sp.Piecewise, atoms: Atoms, coefficients: list[Node] | None) -> Node:
    pieces = [(build(e, atoms, coefficients), _condition(c, atoms, coefficients)) for e, c in expr.args]

    def evaluate(env, ref):
        # sympy's Piecewise is undefined (nan) where no condition holds.
        out = torch.full_like(ref, math.nan)
        for value, cond in reversed(pieces):
            out = torch.where(as_tensor(cond(env, ref), ref), as_tensor(value(env, ref), ref), out)
        return out

    return evaluate


def _condition(cond: sp.Basic, atoms: Atoms, coefficients: list[Node] | None) -> Node:
    if cond is sp.true or cond is sp.false:
        flag = bool(cond)
        return lambda env, ref: flag
    if type(cond) in _RELATIONS:
        rel = _RELATIONS[type(cond)]
        lhs, rhs = build(cond.lhs, atoms, coefficients), build(cond.rhs, atoms, coefficients)
        return lambda env, ref: rel(as_tensor(lhs(env, ref), ref), as_tensor(rhs(env, ref), ref))
    if type(cond) in _LOGIC:
        logic, args = _LOGIC[type(cond)], [_condition(a, atoms, coefficients) for a in cond.args]
        return lambda env, ref: functools.reduce(logic, (as_tensor(a(env, ref), ref) for a in args))
    if isinstance(cond, sp.Not):
        arg = _condition(cond.args[0], atoms, coefficients)
        return lambda env, ref: torch.logical_not(as_tensor(arg(env, ref), ref))
    raise PDEError(f"unsupported condition {type(cond).__name__}: {cond}")


class Residual(torch.nn.Module):
    """``residual(model, points) -> N[h](z) - g(z)``, the compiled residual of a PDE's equations.

    ``model`` maps an (N, d) tensor to (N,) or (N, 1) values of ``h`` and must act row by row (no
    batch coupling such as batch norm: derivatives are read off the gradient of the summed output).
    ``points`` is (N, d), columns ordered as the PDE's inputs. The result is an (N, n_equations)
    tensor on ``points``' dtype and device, built with ``create_graph=True`` so a loss on it can be
    back-propagated to the model's parameters.

    A model may also offer ``axis_derivatives(points, orders) -> (h (N,), {i: (orders[i], N)})``,
    the pure derivatives ∂ᵏh/∂z_iᵏ, k = 1..orders[i]: when every derivative in the PDE is along
    one axis (no mixed ∂²h/∂x∂y) and the PDE is of order 2 or more, they are taken from it, in one
    pass.

    :meth:`coefficients` evaluates the PDE's functions of the inputs alone (the beam's EI(x) and
    its derivatives, a source g) at fixed points, an opaque tuple of (N,) tensors;
    ``residual(model, points[idx], tuple(c[idx] for c in values))`` then reuses them, as training
    does at its collocation points, each step a batch of them.
    """

    def __init__(self, atoms: Atoms, residuals: Sequence[sp.Expr], multi_indices: tuple[MultiIndex, ...],
                 description: str = "a PDE") -> None:
        super().__init__()
        coefficients: list[Node] = []
        self._equations = tuple(build(r, atoms, coefficients) for r in residuals)
        self._coefficient_nodes = tuple(coefficients)
        self._symbols = atoms.symbols
        self._placeholders = dict(atoms.placeholders)
        self._multi_indices = multi_indices
        self.dim = len(atoms.symbols)
        self.n_equations = len(self._equations)
        self._description = description
        # Highest order along each axis, when no derivative mixes two axes and one is of order 2 or
        # more (else None: autograd, whose one backward pass gives every first derivative at once).
        self._axis_orders = None
        if max(sum(a) for a in multi_indices) >= 2 and all(sum(1 for k in a if k) <= 1 for a in multi_indices):
            self._axis_orders = tuple(max((a[i] for a in multi_indices), default=0) for i in range(self.dim))

    def coefficients(self, points: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The PDE's input-only subtrees at ``points``, each (N,), for :meth:`forward` to reuse."""
        detached = points.detach()
        env, ref = {s: detached[:, i] for i, s in enumerate(self._symbols)}, detached[:, 0]
        return tuple(as_tensor(node(env, ref), ref) for node in self._coefficient_nodes)

    def forward(self, model: Callable[[torch.Tensor], torch.Tensor], points: torch.Tensor,
                coefficients: tuple[torch.Tensor, ...] | None = None) -> torch.Tensor:
        symbols, dim = self._symbols, self.dim
        if points.ndim != 2 or points.shape[1] != dim:
            raise ValueError(f"points must have shape (N, {dim}) for inputs {', '.join(s.name for s in symbols)}; "
                             f"got {tuple(points.shape)}")
        # Derivatives need a graph from the points; a detached copy keeps the caller's tensor untouched.
        jets = getattr(model, "axis_derivatives", None) if self._axis_orders is not None else None
        if jets is not None:
            z = points
            h, along = jets(z, self._axis_orders)
            derivatives = {}
            for alpha in self._multi_indices:     # each along one axis i: row alpha[i] − 1 of along[i]
                i = next((i for i, k in enumerate(alpha) if k), None)
                derivatives[alpha] = h if i is None else along[i][alpha[i] - 1]
        else:
            z = points if points.requires_grad else points.detach().clone().requires_grad_(True)
            h = model(z)
            if h.shape not in ((z.shape[0],), (z.shape[0], 1)):
                raise ValueError(f"model must return shape (N,) or (N, 1) with N={z.shape[0]}; got {tuple(h.shape)}")
            derivatives = derivatives_by_autograd(h.reshape(-1), z, self._multi_indices)
        env: dict[object, object] = {s: z[:, i] for i, s in enumerate(symbols)}
        env.update({self._placeholders[a]: derivatives[a] for a in self._multi_indices})
        if not points.requires_grad:     # nobody asks for d residual / d points: coefficients are constants
            detached = z.detach()
            env[_CONSTANT_INPUTS] = {s: detached[:, i] for i, s in enumerate(symbols)}
            if coefficients is not None:
                env[_COEFFICIENT_VALUES] = coefficients
        ref = z[:, 0].detach()
        columns = [as_tensor(eq(env, ref), ref) for eq in self._equations]
        return torch.stack(columns, dim=1).to(points.dtype)

    def extra_repr(self) -> str:
        return f"{self._description}: (N, {self.dim}) points -> (N, {self.n_equations})"


def derivatives_by_autograd(h: torch.Tensor, z: torch.Tensor,
                            needed: Sequence[MultiIndex]) -> dict[MultiIndex, torch.Tensor]:
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
