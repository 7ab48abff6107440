"""A PDE's linear and linearised forms, and the maximum-principle analysis pde-gp and PINN-BO use.

A Gaussian process stays Gaussian under a linear operator only: :func:`linear_form` reads a linear
PDE as coefficients c_α(z) of each ∂^α h and a source g(z); :func:`linearised_form` writes a
nonlinear one as the Gauss–Newton linearisation about a function h₀ (Chen, Hosseini, Owhadi &
Stuart 2021); :func:`minimum_on_boundary` says when the weak maximum principle puts a solution's
minimum on the boundary of a box; :func:`constant_operator` reads an elliptic operator with constant
coefficients.
"""

from __future__ import annotations

import itertools
import math
from typing import Callable, Mapping, NamedTuple

import numpy as np
import sympy as sp
import torch

from pinnbo.errors import PDEError
from pinnbo.pde.compile import Atoms, MultiIndex, as_tensor, build, by_order

__all__ = ["Expanded", "EvaluatedForm", "LinearForm", "LinearisedForm", "constant_operator", "divergence_form",
           "expand", "is_linear", "linear_form", "linearised_form", "minimum_on_boundary"]


class Expanded(NamedTuple):
    """One equation R(z, ∂h) = 0 with each ∂^α h written as its placeholder P_α: the pairs
    (α, ∂R/∂P_α), the source Σ_α P_α ∂R/∂P_α − R, and whether any of them still holds a P_α (the
    equation is nonlinear in h). For a linear equation the pairs are its coefficients and the source
    is g; for a nonlinear one, evaluated at a function h₀, they are its Gauss–Newton linearisation
    about h₀."""

    terms: list[tuple[MultiIndex, sp.Expr]]
    source: sp.Expr
    nonlinear: bool


def expand(atoms: Atoms, residuals: tuple[sp.Expr, ...]) -> tuple[Expanded, ...]:
    """Each residual ``lhs - rhs`` as an :class:`Expanded` equation."""
    call, dim = atoms.call, len(atoms.symbols)
    equations = []
    for e in residuals:
        # the unknown first, then its derivatives by order and multi-index: the terms' order is
        # that of the sums the kernel blocks add up, and a set of atoms iterates in an order
        # that follows the string hashes Python salts per process
        met: dict[MultiIndex, sp.Dummy] = {}

        def placeholder(alpha: MultiIndex, met=met) -> sp.Dummy:
            return met.setdefault(alpha, atoms.placeholders[alpha])

        replaced = {call: placeholder((0,) * dim)} if e.has(call) else {}
        derivatives = {d: atoms.multi_index(d) for d in e.atoms(sp.Derivative)}
        for d, alpha in sorted(derivatives.items(), key=lambda item: by_order(item[1])):
            replaced[d] = placeholder(alpha)
        # Derivatives first: replacing the bare unknown inside them would leave Derivative(P, x).
        e = e.xreplace({d: p for d, p in replaced.items() if d != call})
        e = sp.expand(e.xreplace({call: replaced[call]} if call in replaced else {}))
        unknowns = set(met.values())
        terms = [(alpha, c) for alpha, p in met.items() if (c := sp.diff(e, p)) != 0]
        nonlinear = any(c.free_symbols & unknowns for _, c in terms)
        if nonlinear:
            source = sp.expand(sum((c * met[alpha] for alpha, c in terms), sp.S.Zero) - e)
        else:
            # from sympy's zero: a bare derivative (f'' = 0) xreplaces to the Python int 0
            source = sp.S.Zero - e.xreplace({p: 0 for p in unknowns})
        equations.append(Expanded(terms, source, nonlinear))
    return tuple(equations)


def is_linear(expanded: tuple[Expanded, ...]) -> bool:
    """Whether every equation is linear in the unknown and its derivatives."""
    return not any(e.nonlinear for e in expanded)


def _linear_equations(expanded: tuple[Expanded, ...], pde) -> list[tuple[list[tuple[MultiIndex, sp.Expr]], sp.Expr]]:
    equations = []
    for i, e in enumerate(expanded):
        if e.nonlinear:
            raise PDEError(f"equation {i}: {pde.lhs[i]} = {pde.rhs[i]} is not linear in the unknown {pde.atoms.call} "
                           "(a product or a function of its derivatives)")
        equations.append((e.terms, e.source))
    return equations


def linear_form(pde) -> "LinearForm":
    """The PDE as L[h] = g with L linear: per equation, the coefficient c_α(z) of each derivative
    ∂^α h, and the source g(z), compiled like the residual. A PDEError naming the first equation
    that is not linear in the unknown (a product of derivatives, the unknown inside a function):
    only a linear operator keeps a Gaussian process Gaussian."""
    atoms = pde.atoms
    equations = [(tuple((alpha, build(c, atoms)) for alpha, c in terms), None if g == 0 else build(g, atoms))
                 for terms, g in _linear_equations(pde.expanded, pde)]
    return LinearForm(atoms.symbols, tuple(equations))


def linearised_form(pde) -> "LinearisedForm":
    """The PDE linearised about a function h₀ (Gauss–Newton): R(z, ∂h) ≈ R(z, ∂h₀) +
    Σ_α ∂R/∂(∂^α h)|h₀ (∂^α h − ∂^α h₀) = 0, a linear PDE Σ_α c_α ∂^α h = g with
    c_α = ∂R/∂(∂^α h)|h₀ and g = Σ_α c_α ∂^α h₀ − R(z, ∂h₀). Its coefficients and source are
    compiled like the residual, as functions of the inputs and of h₀'s derivatives; for a linear PDE
    they are its :func:`linear_form`'s, whatever h₀."""
    atoms = pde.atoms
    call, symbols, placeholders = atoms.call, atoms.symbols, atoms.placeholders
    # each P_α back to ∂^α h, which the compiler reads as a value from the environment
    back = {p: call if not any(alpha) else sp.Derivative(call, *[(v, k) for v, k in zip(symbols, alpha) if k])
            for alpha, p in placeholders.items()}
    equations, needed = [], set()
    for terms, source, _ in pde.expanded:
        for expr in [c for _, c in terms] + [source]:
            needed |= {alpha for alpha, p in placeholders.items() if expr.has(p)}
        equations.append((tuple((alpha, build(c.xreplace(back), atoms)) for alpha, c in terms),
                          None if source == 0 else build(source.xreplace(back), atoms)))
    used = {alpha: placeholders[alpha] for alpha in sorted(needed, key=by_order)}
    return LinearisedForm(symbols, tuple(equations), used)


def _one_linear_equation(pde):
    """The (terms, source) of a PDE of one linear equation; None for a system or a nonlinear one."""
    if pde.n_equations != 1:
        return None
    try:
        ((terms, source),) = _linear_equations(pde.expanded, pde)
    except PDEError:
        return None
    return terms, source


def minimum_on_boundary(pde, bounds=None, with_source: bool = True) -> bool:
    """Whether every solution's minimum over a closed box lies on the box's boundary, by the weak
    maximum principle (Gilbarg & Trudinger, Theorem 3.1; Evans, §6.4.1): one linear equation
    L[h] = Σ a_ij ∂_i∂_j h + Σ b_i ∂_i h = g with no zero-order term, a definite matrix (a_ij),
    b_i bounded on the box and a source of the sign that makes h a supersolution (s·g ≤ 0, s the
    sign of (a_ij)). Laplace's equation qualifies for both the minimum and, through the negated PDE,
    the maximum; Helmholtz's (a zero-order term), the beam's (fourth order) and any nonlinear PDE do
    not. Without ``bounds`` the a_ij and g must be constant and the b_i polynomials; with ``bounds``
    (input name -> (lower, upper), the box) they may vary, and each is bounded on the box by
    interval arithmetic (sympy's ``AccumBounds``, an enclosure that can only be wider than the true
    range): uniform ellipticity asks the enclosures of a_11, ..., of the leading minors to lie above
    zero (below, alternating, for a negative definite one), and the b_i's to be finite. A graded
    conductor, ∇·(k∇h) with k > 0 on the box, qualifies. Conservative: False whenever the
    conditions cannot be read off the symbols. ``with_source`` False: of the equation without its
    source, L[h] = 0, that is whether the operator keeps the principle, whatever the source's sign."""
    equation = _one_linear_equation(pde)
    if equation is None:
        return False
    terms, source = equation
    if not with_source:
        source = sp.Integer(0)
    symbols = pde.atoms.symbols
    box = None
    if bounds is not None and all(s.name in bounds for s in symbols):
        box = {s: sp.AccumBounds(*(sp.Float(v) for v in bounds[s.name])) for s in symbols}
    if any(sum(alpha) == 0 or sum(alpha) > 2 for alpha, _ in terms):    # before any enclosure: they cost
        return False
    a = sp.zeros(pde.dim, pde.dim)
    for alpha, c in terms:
        order = sum(alpha)
        if order == 1 and not (c.is_polynomial(*symbols) if box is None else _finite_on(c, box)):
            return False
        if order == 2:
            if c.free_symbols and box is None:
                return False
            axes = [i for i, k in enumerate(alpha) for _ in range(k)]
            i, j = axes
            if i == j:
                a[i, i] = c
            else:
                a[i, j] = a[j, i] = c / 2
    if a.free_symbols or source.free_symbols:
        return box is not None and _definite_supersolution(a, source, box)
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


def _enclosure(expr: sp.Expr, box: dict) -> tuple[float, float] | None:
    """(lower, upper) enclosing ``expr`` over ``box`` (symbols -> AccumBounds); None where interval
    arithmetic gives no finite real enclosure."""
    try:
        value = expr.subs(box)
        if isinstance(value, sp.AccumBounds):
            low, high = float(sp.N(value.min)), float(sp.N(value.max))
        else:
            low = high = float(sp.N(value))
    except (TypeError, ValueError, AttributeError):
        return None
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def _tightest(expr: sp.Expr, box: dict) -> tuple[float, float] | None:
    """The intersection of the enclosures of ``expr`` as written, factored, and with its
    non-constant part factored: interval arithmetic counts each occurrence of a variable apart
    (x² − 2x + 1 on [2, 3] encloses [−1, 6], (x − 1)² [1, 4]), and each is a true enclosure."""
    constant = sp.expand(expr).as_coeff_Add()[0]
    forms = (expr, sp.factor(expr), sp.factor(sp.expand(expr) - constant) + constant)
    found = [e for e in (_enclosure(form, box) for form in forms) if e is not None]
    if not found:
        return None
    return max(e[0] for e in found), min(e[1] for e in found)


#: Bisections of the box :func:`_proven` may spend on one sign before it gives up (conservative).
SIGN_BISECTIONS = 64


def _proven(expr: sp.Expr, box: dict, holds, budget: list | None = None) -> bool:
    """Whether ``holds(lower, upper)`` for the enclosure of ``expr`` on every part of ``box``:
    where the whole box's enclosure is too wide, its widest side is halved and each half tried,
    at most ``SIGN_BISECTIONS`` times in all (an enclosure narrows with its box)."""
    if budget is None:
        if _refuted(expr, box, holds):
            return False
        budget = [SIGN_BISECTIONS]
    enclosure = _tightest(expr, box)
    if enclosure is None:
        return False
    if holds(*enclosure):
        return True
    if budget[0] <= 0:
        return False
    budget[0] -= 1
    widest = max(box, key=lambda s: float(box[s].max - box[s].min) if isinstance(box[s], sp.AccumBounds) else 0.0)
    low, high = box[widest].min, box[widest].max
    middle = (low + high) / 2
    return all(_proven(expr, {**box, widest: sp.AccumBounds(a, b)}, holds, budget)
               for a, b in ((low, middle), (middle, high)))


def _refuted(expr: sp.Expr, box: dict, holds) -> bool:
    """Whether ``expr`` breaks ``holds`` at a point of ``box`` (the quarters of each side, every
    combination in up to 3 variables, else the centre and its moves along each axis): a sign that
    changes inside the box is refused at once, not after :func:`_proven`'s halvings."""
    symbols = list(box)
    quarters = {s: [float(box[s].min + f * (box[s].max - box[s].min)) for f in (0.25, 0.5, 0.75)] for s in symbols}
    if len(symbols) <= 3:
        points = [dict(zip(symbols, p)) for p in itertools.product(*(quarters[s] for s in symbols))]
    else:
        centre = {s: quarters[s][1] for s in symbols}
        points = [centre] + [{**centre, s: quarters[s][k]} for s in symbols for k in (0, 2)]
    for point in points:
        try:
            value = float(sp.N(expr.subs(point)))
        except (TypeError, ValueError):
            continue
        if math.isfinite(value) and not holds(value, value):
            return True
    return False


def _finite_on(expr: sp.Expr, box: dict) -> bool:
    return _enclosure(expr, box) is not None


def _definite_supersolution(a: sp.Matrix, source: sp.Expr, box: dict) -> bool:
    """Whether (a_ij) is uniformly definite on ``box`` and the source has the supersolution's sign
    there (:func:`minimum_on_boundary`), by the enclosures of the leading minors and of g, on
    halves of the box where the whole one's are too wide (:func:`_proven`)."""
    minors = [a[:k, :k].det() for k in range(1, a.rows + 1)]
    for sign in (1, -1):
        # a definite matrix of sign s: the k-th leading minor has the sign s^k (Sylvester's criterion)
        if all(_proven(m, box, (lambda low, high: low > 0) if sign ** k > 0 else (lambda low, high: high < 0))
               for k, m in enumerate(minors, 1)):
            return _proven(source, box, (lambda low, high: high <= 0) if sign > 0 else (lambda low, high: low >= 0))
    return False


def divergence_form(pde) -> tuple[sp.Expr, tuple[tuple[float, ...], ...], tuple[float, ...], float] | None:
    """``(k, A, b, c)`` of a PDE that is one linear equation ∇·(k(z) A ∇h) + b·∇h + c h = g: a
    constant symmetric definite matrix A with A_11 = 1, a coefficient k(z) that varies, the
    first-order terms the divergence's (Σ_j ∂_j (k A_ij)) plus constants b_i (a flow; zeros without
    one) and a constant zero-order term c (a reaction; 0 without one): a graded conductor, its
    conductivity k(z) times a fixed tensor; None for anything else, constant coefficients
    included. With h = w/√k the operator is
    √k(∇·(A∇w) − w ∇·(A∇√k)) + b·∇h (Liouville's transformation), whose principal part no longer
    varies: the corner functions of such a plate at rest are those of ∇·(A∇·) divided by √k
    (:mod:`pinnbo.models.corners`)."""
    equation = _one_linear_equation(pde)
    if equation is None:
        return None
    terms, _ = equation
    coefficients = dict(terms)
    dim, symbols = pde.dim, pde.atoms.symbols
    zero = coefficients.get((0,) * dim, sp.S.Zero)
    if any(sum(alpha) > 2 for alpha in coefficients) or zero.free_symbols:
        return None
    second = {}
    for alpha, c in coefficients.items():
        if sum(alpha) == 2:
            i, j = (k for k, n in enumerate(alpha) for _ in range(n))
            second[i, j] = second[j, i] = c if i == j else c / 2
    k = second.get((0, 0))
    if k is None or not k.free_symbols:
        return None
    try:
        A = [[sp.simplify(second.get((i, j), 0) / k) for j in range(dim)] for i in range(dim)]
        if any(a.free_symbols for row in A for a in row):
            return None
        flow = []
        for i in range(dim):
            slope = tuple(1 if n == i else 0 for n in range(dim))
            divergence = sum(sp.diff(k * A[i][j], symbols[j]) for j in range(dim))
            rest = sp.simplify(coefficients.get(slope, 0) - divergence)
            if rest.free_symbols:
                return None
            flow.append(float(rest) + 0.0)                              # + 0.0: no −0.0
        matrix = tuple(tuple(float(a) for a in row) for row in A)
        reaction = float(zero) + 0.0
    except (TypeError, ValueError):
        return None
    if not all(np.linalg.eigvalsh(np.array(matrix)) > 0):
        return None
    return k, matrix, tuple(flow), reaction


def constant_operator(pde, at: Mapping[str, float] | None = None
                      ) -> tuple[tuple[tuple[float, ...], ...], tuple[float, ...], float] | None:
    """``(A, b, c)`` of a PDE that is one linear equation Σ_ij A_ij ∂²h/∂z_i∂z_j + Σ b_i ∂h/∂z_i + c h
    = g with constant coefficients and (A_ij) symmetric and definite (Laplace's and Poisson's
    equations, a conductor whose conductivity is a tensor, heat carried by a uniform flow, a uniform
    loss or source); None for anything else. A_ij (i ≠ j) is half the coefficient of ∂²h/∂z_i∂z_j.
    ``at`` (input name -> value): the operator frozen at that point, its coefficients' values there
    (a graded conductor's at a corner of its plate).
    With h = e^{α·z} v, α = −½ A⁻¹b, and ζ = M⁻¹z for any M with A = MMᵀ the operator becomes
    e^{α·z}(Δ_ζ v + μ v) up to its sign, μ = (c − ¼ bᵀA⁻¹b) sgn A, so the solutions of its
    homogeneous part are known in closed form where they matter: the corner functions of a plate
    whose boundary data jump at a corner (:mod:`pinnbo.models.corners`)."""
    equation = _one_linear_equation(pde)
    if equation is None:
        return None
    terms, _ = equation
    dim = pde.dim
    slopes = [tuple(1 if j == i else 0 for j in range(dim)) for i in range(dim)]
    zero = (0,) * dim
    coefficients = dict(terms)
    if any(sum(alpha) > 2 for alpha in coefficients):
        return None
    if at is not None:
        point = {symbol: sp.Float(at[symbol.name]) for symbol in pde.atoms.symbols if symbol.name in at}
        coefficients = {alpha: c.subs(point) for alpha, c in coefficients.items()}
    try:
        values = {alpha: sp.simplify(c) for alpha, c in coefficients.items()}
        if any(c.free_symbols for c in values.values()):
            return None
        number = {alpha: float(sp.N(c)) for alpha, c in values.items()}
    except (TypeError, ValueError):
        return None
    A = [[0.0] * dim for _ in range(dim)]
    for alpha, value in number.items():
        if sum(alpha) == 2:
            i, j = (k for k, n in enumerate(alpha) for _ in range(n))
            A[i][j] = A[j][i] = value if i == j else value / 2
    eigenvalues = np.linalg.eigvalsh(np.array(A))
    if not (all(eigenvalues > 0) or all(eigenvalues < 0)):
        return None
    return tuple(tuple(row) for row in A), tuple(number.get(alpha, 0.0) for alpha in slopes), number.get(zero, 0.0)


def oscillates(pde) -> bool:
    """Whether ``pde`` is one linear equation with a constant operator (:func:`constant_operator`)
    whose reduced term μ = (c − ¼ bᵀA⁻¹b) sgn A is positive: with h = e^{α·z} v the operator is
    e^{α·z}(Δ_ζ v + μ v), a Helmholtz operator, whose own solutions oscillate with wavenumber √μ,
    so that a solution has extrema inside the box, one basin beside another (no maximum principle)."""
    operator = constant_operator(pde)
    if operator is None:
        return False
    A, b = np.array(operator[0]), np.array(operator[1])
    return bool((operator[2] - b @ np.linalg.solve(A, b) / 4) * np.sign(A[0, 0]) > 0)


class LinearForm:
    """A linear PDE, L[h] = g, as data a Gaussian process can use (:func:`linear_form`).

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
            {alpha for terms, _ in equations for alpha, _ in terms}, key=by_order))
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
    return [[(alpha, as_tensor(c(env, ref), ref)) for alpha, c in terms] for terms, _ in equations]


def _source(equations: tuple, env: dict, ref: torch.Tensor) -> torch.Tensor:
    """Compiled sources evaluated in ``env``, (N, n_equations); None is a zero source."""
    return torch.stack([torch.zeros_like(ref) if g is None else as_tensor(g(env, ref), ref)
                        for _, g in equations], dim=1)


class LinearisedForm:
    """A PDE linearised about a function h₀ (:func:`linearised_form`). ``multi_indices`` are the
    derivatives of h₀ its coefficients and source need; ``at(points, derivatives)``, with
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
