"""The declaration of a PDE ``N[h] = g`` in one unknown function, and its checks.

A user declares the PDE with sympy, in the field's own notation::

    x, y = sp.symbols("x y")
    T = sp.Function("T")(x, y)
    heat = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
    residual = heat.compile()
    r = residual(model, points)        # (N, 2) points -> (N, 1) residual N[h](z) - g(z)

The unknown's arguments are the inputs, in order: column ``i`` of ``points`` is argument ``i``.
Every bad declaration raises :class:`PDEError` from ``PDE(...)`` with a one-line message naming the
offending symbol. Compilation is :mod:`pinnbo.pde.compile`; the linear and linearised forms and the
maximum principle are :mod:`pinnbo.pde.forms`.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Iterable, Mapping, Sequence

import sympy as sp
import torch
from sympy.core.function import AppliedUndef

import pinnbo.pde.forms as forms
from pinnbo.errors import PDEError, shown
from pinnbo.pde.boundary import Condition
from pinnbo.pde.compile import Atoms, MultiIndex, Residual, by_order, multi_index

__all__ = ["PDE"]


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
        boundary: boundary conditions, a list of ``(input, at, condition)``: on the plane where the
            input (a symbol or its name) equals the number ``at``, the unknown equals ``condition``
            (a number or an expression of the inputs), or, for a condition ``sp.Eq(lhs, rhs)``,
            ``lhs`` (linear in the unknown and its derivatives) equals ``rhs``. A PDE of one equation
            only; pde-gp conditions on them (:mod:`pinnbo.pde.boundary`).

    Attributes:
        inputs: tuple of input names, the order of ``points``' columns.
        own_inputs: the inputs the equations hold in: all of them, unless :meth:`for_variables`
            added parameters (design variables the PDE does not differentiate in).
        unknown: the unknown function's name.
        dim: number of inputs ``d``.
        n_equations: number of equations, i.e. residual columns.
        max_order: highest total derivative order that appears (0 if none).
        lhs, rhs: tuples of the sympy expressions after substitution and ``doit()``.
        boundary: the boundary conditions, :class:`~pinnbo.pde.boundary.Condition` each.
        atoms: the unknown applied to its inputs, the input symbols and a placeholder symbol per
            derivative ``∂^α h`` (:class:`~pinnbo.pde.compile.Atoms`): what compilation reads.

    Raises:
        PDEError: on any declaration that cannot be compiled, naming the offending symbol.
    """

    def __init__(
        self,
        lhs: sp.Expr | Sequence[sp.Expr],
        rhs: sp.Expr | float | Sequence[sp.Expr | float] = 0,
        *,
        inputs: Sequence[str] | None = None,
        params: Mapping[str, float | sp.Expr] | None = None,
        boundary: Sequence[tuple] | None = None,
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

        raw = self._substitute_params(raw, params or {}, _names_in(boundary))
        call = self._find_unknown(raw)
        self._call = call
        self._symbols: tuple[sp.Symbol, ...] = tuple(call.args)
        self.inputs: tuple[str, ...] = tuple(s.name for s in self._symbols)
        # The inputs the equations hold in; the others are parameters (for_variables).
        self.own_inputs: tuple[str, ...] = self.inputs
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
        residuals = [l - r for l, r in zip(self.lhs, self.rhs)]
        for i, (l, r) in enumerate(zip(self.lhs, self.rhs)):
            if not residuals[i].has(call):
                raise PDEError(f"equation {i}: {l} = {r} does not involve the unknown {call}")

        # The α of each ∂^α h the equations read (α = 0 is h itself), in increasing total order so
        # that parents are computed before children.
        met = self._derivatives_met(residuals)
        self._multi_indices: tuple[MultiIndex, ...] = tuple(sorted(met, key=by_order))
        self.max_order: int = max(sum(a) for a in met)
        # A placeholder per α, and one for h itself for the linearisation: Dummy so they never clash
        # with user names, real so that sympy differentiates |∂h| to sign(∂h) for the linearisation
        # instead of through complex parts the compiler cannot read.
        labels = {alpha: self.unknown + "".join(self.inputs[i] * k for i, k in enumerate(alpha))
                  for alpha in met + [(0,) * self.dim]}
        self.atoms = Atoms(call, self._symbols, {alpha: sp.Dummy(label, real=True) for alpha, label in labels.items()})
        # Compiled here, once: an unsupported construct is refused while the user declares.
        self.boundary: tuple[Condition, ...] = ()
        self._residual = Residual(self.atoms, residuals, self._multi_indices, description=repr(self))
        self.boundary = self._conditions(boundary, params or {})

    def _derivatives_met(self, residuals: list[sp.Expr]) -> list[MultiIndex]:
        """The α of each ``∂^α h`` in the equations, in the order a walk of their trees meets them."""
        met: list[MultiIndex] = []
        for residual in residuals:
            walk = sp.preorder_traversal(residual)
            for node in walk:
                if node == self._call:
                    alpha = (0,) * self.dim
                elif isinstance(node, sp.Derivative) and node.expr == self._call:
                    alpha = multi_index(node, self._symbols)
                else:
                    continue
                walk.skip()
                if alpha not in met:
                    met.append(alpha)
        return met

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
    def _substitute_params(exprs: list[sp.Expr], params: Mapping[str, object],
                           elsewhere: frozenset[str] = frozenset()) -> list[sp.Expr]:
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
        used = {s.name for e in exprs for s in e.free_symbols} | elsewhere
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

    def _conditions(self, declared, params: Mapping[str, object]) -> tuple[Condition, ...]:
        """The ``boundary`` argument's conditions, each checked (the class docstring)."""
        if declared is None:
            return ()
        if not isinstance(declared, (list, tuple)):
            raise PDEError(f"boundary: expected a list of (input, at, condition), got {shown(declared)}")
        if declared and self.n_equations != 1:
            raise PDEError(f"boundary: conditions take a PDE of one equation; this one has {self.n_equations}")
        if declared and not self.is_linear():
            try:
                self.linearised_form()
            except PDEError as exc:
                raise PDEError(f"boundary: pde-gp, the method that conditions on them, cannot linearise this PDE "
                               f"({exc})") from None
        values = {str(name): _sympify(v, f"params[{shown(name)}]") for name, v in params.items()}
        return tuple(self._condition(f"boundary[{i}]", item, values) for i, item in enumerate(declared))

    def _condition(self, where: str, item: object, params: Mapping[str, sp.Expr]) -> Condition:
        if not isinstance(item, (list, tuple)) or len(item) != 3:
            raise PDEError(f"{where}: expected (input, at, condition), got {shown(item)}")
        name, at, condition = item
        name = name.name if isinstance(name, sp.Symbol) else name
        if name not in self.inputs:
            raise PDEError(f"{where}: {shown(name)} is not an input of {self._call}; expected one of "
                           f"{', '.join(self.inputs)}")

        def substituted(value, part: str) -> sp.Basic:
            expr = _sympify(value, f"{where}: {part}")
            return expr.xreplace({s: params[s.name] for s in expr.free_symbols if s.name in params})

        plane = substituted(at, "at")
        try:
            value = float(plane)
        except TypeError:
            raise PDEError(f"{where}: at: expected a number, got {plane}") from None
        if not math.isfinite(value):
            raise PDEError(f"{where}: at: expected a finite number, got {plane}")
        if isinstance(condition, sp.Equality):
            lhs, rhs = substituted(condition.lhs, "condition"), substituted(condition.rhs, "condition")
        else:
            lhs, rhs = self._call, substituted(condition, "condition")
            if rhs.has(AppliedUndef):
                raise PDEError(f"{where}: condition {rhs} holds the unknown: write a condition on it as "
                               "sp.Eq(lhs, rhs), e.g. sp.Eq(T.diff(x), 0)")
        try:
            law = PDE(lhs, rhs)
        except PDEError as exc:
            raise PDEError(f"{where}: {exc}") from None
        if law._call != self._call:
            raise PDEError(f"{where}: the condition's unknown {law._call} is not the PDE's {self._call}")
        if not law.is_linear():
            raise PDEError(f"{where}: {law.lhs[0]} = {law.rhs[0]} is not linear in the unknown {self._call}")
        law.own_inputs = self.own_inputs
        return Condition(name, value, law)

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

    # ---------------------------------------------------------------- compilation and forms
    def compile(self) -> Residual:
        """The residual operator ``residual(model, points) -> N[h](z) - g(z)``, a torch module
        (:class:`~pinnbo.pde.compile.Residual`)."""
        return self._residual

    @cached_property
    def expanded(self) -> tuple[forms.Expanded, ...]:
        """Each equation's derivative coefficients and source (:func:`pinnbo.pde.forms.expand`),
        expanded once: the equations do not change, and a method asks for them several ways."""
        return forms.expand(self.atoms, tuple(l - r for l, r in zip(self.lhs, self.rhs)))

    def is_linear(self) -> bool:
        """Whether every equation is linear in the unknown and its derivatives."""
        return forms.is_linear(self.expanded)

    def linear_form(self) -> forms.LinearForm:
        """The PDE as L[h] = g with L linear (:func:`pinnbo.pde.forms.linear_form`)."""
        return forms.linear_form(self)

    def linearised_form(self) -> forms.LinearisedForm:
        """The PDE linearised about a function h₀ (:func:`pinnbo.pde.forms.linearised_form`)."""
        return forms.linearised_form(self)

    def derivative_orders(self) -> dict[str, int]:
        """Input name -> the highest order of the unknown's derivatives in it that the equations
        read (0 where none: a parameter, or an input the unknown is not differentiated in)."""
        return {name: max(alpha[i] for alpha in self._multi_indices) for i, name in enumerate(self.inputs)}

    def minimum_on_boundary(self, bounds=None, with_source: bool = True) -> bool:
        """Whether every solution's minimum over a box lies on its boundary (the weak maximum
        principle, :func:`pinnbo.pde.forms.minimum_on_boundary`); ``bounds``, input name ->
        (lower, upper), the box, where the coefficients may vary; ``with_source`` False: every
        solution of the equation without its source (whether the operator keeps the principle)."""
        return forms.minimum_on_boundary(self, bounds, with_source)

    def constant_operator(self, at=None) -> tuple[tuple[tuple[float, ...], ...], tuple[float, ...], float] | None:
        """``(A, b, c)`` where the PDE is Σ A_ij ∂²h/∂z_i∂z_j + Σ b_i ∂h/∂z_i + c h = g with constants
        and (A_ij) definite; None otherwise (:func:`pinnbo.pde.forms.constant_operator`); ``at``
        (input name -> value): the operator frozen at that point."""
        return forms.constant_operator(self, at)

    def oscillates(self) -> bool:
        """Whether the operator is a constant one whose own solutions oscillate, a Helmholtz operator
        (:func:`pinnbo.pde.forms.oscillates`)."""
        return forms.oscillates(self)

    def divergence_form(self):
        """``(k, A, b, c)`` where the PDE is ∇·(k(z) A ∇h) + b·∇h + c h = g with k varying, A
        constant, A_11 = 1, and b and c constant; None otherwise
        (:func:`pinnbo.pde.forms.divergence_form`)."""
        return forms.divergence_form(self)

    def negated(self) -> "PDE":
        """The PDE that −h satisfies: every optimiser minimises, so a maximised objective f reaches it
        as v = −f, which obeys N[−v] = g (for a linear N, −N[v] = g: the source changes sign)."""
        flipped = {self._call: -self._call}
        negated = PDE([e.xreplace(flipped).doit() for e in self.lhs], [e.xreplace(flipped).doit() for e in self.rhs])
        negated.own_inputs = self.own_inputs
        negated.boundary = tuple(c._replace(pde=c.pde.negated()) for c in self.boundary)
        return negated

    def for_variables(self, names: Sequence[str]) -> "PDE":
        """This PDE with its inputs matched to design variables ``names`` by name: itself when they
        come in that order, the same equations with the unknown's arguments reordered when they come
        in another. (Matching by position would train on the transposed physics when ``u(y, x)``
        meets a box ``(x, y)``.) A design variable that is not one of the unknown's arguments is a
        parameter: the unknown becomes a function of it too, and the equations, which never
        differentiate in it, hold in the PDE's own inputs for each value of the parameters
        (docs/algorithms.md, "Physics in some inputs"); :attr:`own_inputs` keeps those. An input
        that is not a design variable is a PDEError naming both lists."""
        names = tuple(str(n) for n in names)
        if self.inputs == names:
            return self
        missing = [n for n in self.inputs if n not in names]
        if missing or len(set(names)) != len(names):
            raise PDEError(f"the unknown {self._call} has inputs ({', '.join(self.inputs)}) but the design "
                           f"variables are ({', '.join(names)}); name the unknown's arguments after design "
                           "variables")
        # A declaration's only free symbols are its inputs, so a parameter's new symbol meets no other.
        by_name = {s.name: s for s in self._symbols}
        call = self._call.func(*(by_name.get(n) or sp.Symbol(n, real=True) for n in names))
        swap = {self._call: call}
        pde = PDE([e.xreplace(swap) for e in self.lhs], [e.xreplace(swap) for e in self.rhs])
        pde.own_inputs = self.own_inputs
        pde.boundary = tuple(c._replace(pde=c.pde.for_variables(names)) for c in self.boundary)
        return pde

    def __repr__(self) -> str:
        eqs = "; ".join([f"{l} = {r}" for l, r in zip(self.lhs, self.rhs)] + [str(c) for c in self.boundary])
        return f"PDE({eqs}, unknown={self._call})"


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


def _names_in(boundary: object) -> frozenset[str]:
    """The symbols' names in boundary conditions (a parameter may appear there only); whatever is
    malformed is left to the conditions' own checks."""
    names: set[str] = set()
    for item in boundary if isinstance(boundary, (list, tuple)) else ():
        for value in item[1:] if isinstance(item, (list, tuple)) else ():
            try:
                names |= {s.name for s in _sympify(value, "boundary").free_symbols}
            except PDEError:
                pass
    return frozenset(names)


def _as_list(value: object) -> list | None:
    if isinstance(value, (list, tuple)):
        return list(value)
    return None
