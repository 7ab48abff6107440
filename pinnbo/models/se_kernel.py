"""The squared-exponential kernel and its derivatives in either argument, in closed form: what a
Gaussian process needs to be conditioned on a linear PDE (docs/algorithms.md, "PDE-GP").

    k(a, b) = s² Π_i φ(u_i),   u_i = (a_i − b_i)/ℓ_i,   φ(u) = exp(−u²/2).

Each factor depends on a_i − b_i only, and φ⁽ⁿ⁾(u) = (−1)ⁿ Heₙ(u) φ(u) with Heₙ the probabilists'
Hermite polynomials (He₀ = 1, He₁ = u, Heₙ₊₁ = u Heₙ − n Heₙ₋₁), so

    ∂ᵃ_a ∂ᵝ_b k(a, b) = k(a, b) Π_i (−1)^{α_i} ℓ_i^{−(α_i+β_i)} He_{α_i+β_i}(u_i)

for any multi-indices α (in a) and β (in b) and any order, exactly, with no symbolic expansion that
would grow with the dimension. The squared exponential is smooth enough for every order; a Matérn
kernel is not (Matérn-5/2 has only two derivatives on each side).
"""

from __future__ import annotations

import functools
from typing import Sequence

import torch

from pinnbo.models import se_fused

MultiIndex = tuple[int, ...]
#: A contiguous range [start, stop) of points; None: all of them.
Span = tuple[int, int] | None
#: The rows and columns of a block where a coefficient product is nonzero; None: all of it.
Window = tuple[Span, Span] | None


def _slice(span: Span) -> slice:
    return slice(None) if span is None else slice(*span)


def _slices(window: Window) -> tuple[slice, slice]:
    return (slice(None), slice(None)) if window is None else (_slice(window[0]), _slice(window[1]))


def pairwise_differences(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """a_i − b_i for every pair, shape (d, N, M): each input's differences contiguous, so the
    Hermite recursions and the sum of squares run over whole (N, M) slabs instead of strided views.
    A fit's evaluations share them (:class:`SEDerivatives`' ``differences``)."""
    return A.T[:, :, None] - B.T[:, None, :]


class SEDerivatives:
    """∂ᵃ_a ∂ᵝ_b k between two point sets A (N, d) and B (M, d) for many (α, β), sharing the
    kernel matrix and each (dimension, order) Hermite factor between them. ``differences``: the
    points' :func:`pairwise_differences`, where the caller keeps them."""

    def __init__(self, A: torch.Tensor, B: torch.Tensor, lengthscale: torch.Tensor, outputscale: torch.Tensor,
                 differences: torch.Tensor | None = None):
        self.lengthscale = lengthscale
        if differences is None:
            differences = pairwise_differences(A, B)
        self.u = differences / lengthscale[:, None, None]                          # (d, N, M)
        self.u2 = self.u ** 2
        squared = self.u2[0]
        for i in range(1, len(self.u2)):      # slab by slab: a reduction across slabs is far slower
            squared = squared + self.u2[i]
        self.k = outputscale * torch.exp(-0.5 * squared)                           # (N, M)
        self._hermite: dict[tuple[int, int, Window], torch.Tensor] = {}
        # u_i Heₙ(u_i), a step of the recursion that the lengthscale derivative reuses (:meth:`correction`)
        self._u_hermite: dict[tuple[int, int, Window], torch.Tensor] = {}
        self._combined: dict[tuple[MultiIndex, Window], torch.Tensor] = {}

    def _he(self, i: int, n: int, window: Window = None) -> torch.Tensor:
        key = (i, n, window)
        value = self._hermite.get(key)
        if value is None:
            u = self.u[i][_slices(window)]
            if n == 0:
                value = torch.ones_like(u)
            elif n == 1:
                value = u
            elif n == 2:      # u He₁ − 1·He₀, the product by one and the matrix of ones left out (both exact)
                value = self._u_he(i, 1, window) - 1.0
            else:
                value = self._u_he(i, n - 1, window) - (n - 1) * self._he(i, n - 2, window)
            self._hermite[key] = value
        return value

    def _u_he(self, i: int, n: int, window: Window = None) -> torch.Tensor:
        """u_i Heₙ(u_i) (u_i itself for n = 0: the product by ones is exact)."""
        key = (i, n, window)
        value = self._u_hermite.get(key)
        if value is None:
            u = self.u[i][_slices(window)]
            value = u if n == 0 else u * self._he(i, n, window)
            self._u_hermite[key] = value
        return value

    def __call__(self, alpha: MultiIndex, beta: MultiIndex) -> torch.Tensor:
        """∂ᵃ_a ∂ᵝ_b k(A, B), shape (N, M)."""
        return (-1.0) ** sum(alpha) * self.combined(tuple(a + b for a, b in zip(alpha, beta)))

    def combined(self, gamma: MultiIndex, window: Window = None) -> torch.Tensor:
        """k(A, B) Π_i ℓ_i^{−γ_i} He_{γ_i}(u_i): ∂ᵃ_a ∂ᵝ_b k up to the sign (−1)^{|α|} for every
        (α, β) with α + β = γ, shape (N, M), or that of ``window``'s rows and columns."""
        key = (gamma, window)
        out = self._combined.get(key)
        if out is None:
            out = self.k[_slices(window)]
            for i, n in enumerate(gamma):
                if n:
                    out = out * self.lengthscale[i] ** (-n) * self._he(i, n, window)
            self._combined[key] = out
        return out

    def squares(self) -> torch.Tensor:
        """u_i² for each input, shape (d, N·M): one matrix product sums a weighted block against
        every input's at once."""
        return self.u2.reshape(len(self.u2), -1)

    def correction(self, i: int, n: int, window: Window = None) -> torch.Tensor:
        """−n ℓ_i^{−n−1} (u_i He_{n−1}(u_i) + Heₙ(u_i)): what an input of order n > 0 adds to the
        lengthscale derivative of its factor beyond u_i²/ℓ_i (:func:`lengthscale_gradient`)."""
        return -n * self.lengthscale[i] ** (-n - 1) * (self._u_he(i, n - 1, window) + self._he(i, n, window))


Operator = Sequence[Sequence[tuple[MultiIndex, "torch.Tensor | None"]]]


def _span(c: torch.Tensor | None) -> Span:
    """The range of points between a coefficient's first and last nonzero value (None: all of
    them; (0, 0): none)."""
    if c is None:
        return None
    nonzero = torch.nonzero(c).flatten()
    if not len(nonzero):
        return (0, 0)
    start, stop = int(nonzero[0]), int(nonzero[-1]) + 1
    return None if (start, stop) == (0, len(c)) else (start, stop)


class Products(list):
    """Per pair of equations, the coefficient groups {(γ, window): C_γ} (:func:`coefficient_products`);
    ``factors``, the same nesting of {(γ, window): [(sign, c_α or None, c'_β or None), ...]}, the
    products C_γ sums, in order; and the fused kernels' plan of them for each size of block."""

    factors: list

    @functools.cached_property
    def order(self) -> int:
        """The largest order of a kernel factor in any group (0: the kernel itself, nothing to fuse)."""
        return max((max(gamma, default=0) for row in self for groups in row for gamma, _ in groups), default=0)

    @functools.cached_property
    def _plans(self) -> dict:
        return {}

    def plan(self, N: int, M: int, d: int) -> se_fused.Plan:
        if (N, M) not in self._plans:
            self._plans[(N, M)] = se_fused.Plan(self.factors, N, M, d)
        return self._plans[(N, M)]


def _empty(span: Span) -> bool:
    return span is not None and span[0] == span[1]


def coefficient_products(left: Operator, right: Operator) -> Products:
    """Per pair of equations, {(γ, window): Σ_{α+β=γ} (−1)^{|α|} c_α ⊗ c'_β}: the part of L_a L'_b k
    that does not depend on the hyper-parameters, each of its window's shape, (N, 1), (1, M) or a
    number. Grouping the pairs (α, β) by γ leaves one kernel factor per γ (the beam's K_LL: 5
    instead of 9), and a fit computes the products once for all its evaluations. The window is
    where c_α and c'_β are nonzero: stacked points where a derivative is read on some of them only
    (a PDE's interior and its boundary conditions, :mod:`pinnbo.pde.boundary`) compute that
    derivative's kernel factor on those points' rows and columns alone."""
    products = Products()
    products.factors = []
    for terms_a in left:
        row, factor_row = [], []
        for terms_b in right:
            groups: dict[tuple[MultiIndex, Window], torch.Tensor | float] = {}
            factors: dict[tuple[MultiIndex, Window], list] = {}
            for alpha, ca in terms_a:
                for beta, cb in terms_b:
                    rows, columns = _span(ca), _span(cb)
                    if _empty(rows) or _empty(columns):      # a coefficient zero everywhere
                        continue
                    window = None if rows is None and columns is None else (rows, columns)
                    key = (tuple(a + b for a, b in zip(alpha, beta)), window)
                    sign = (-1.0) ** sum(alpha)
                    c = sign
                    if ca is not None:
                        c = c * ca[_slice(rows), None]
                    if cb is not None:
                        c = c * cb[None, _slice(columns)]
                    groups[key] = groups[key] + c if key in groups else c
                    factors.setdefault(key, []).append(
                        (sign, None if ca is None else ca[_slice(rows)], None if cb is None else cb[_slice(columns)]))
            row.append(groups)
            factor_row.append(factors)
        products.append(row)
        products.factors.append(factor_row)
    return products


def _products(d: int, left: Operator | None, right: Operator | None, products: Products | None) -> list:
    """``products``, or the coefficient products of ``left`` and ``right`` (None: the identity)."""
    if products is not None:
        return products
    if left is None and right is None:
        return _identity_products(d)
    identity = [[((0,) * d, None)]]
    return coefficient_products(left or identity, right or identity)


@functools.cache
def _identity_products(d: int) -> Products:
    """The kernel itself in d inputs, one number and no point-set data: every K_ff of a fit and of
    the posterior shares it."""
    return coefficient_products([[((0,) * d, None)]], [[((0,) * d, None)]])


def _add_into(total: torch.Tensor | None, window: Window, values: torch.Tensor, like: torch.Tensor,
              shape: tuple[int, int]) -> torch.Tensor:
    """``total`` (None: zeros of ``shape``, ``like``'s dtype and device) with ``values`` added into
    ``window``: a first term that covers the whole matrix becomes the sum's storage (``values`` must
    be a fresh tensor), with no zeros to fill and add."""
    if total is None:
        if window is None and values.shape == shape:
            return values
        total = like.new_zeros(shape)
    total[_slices(window)] += values
    return total


def operator_block(A: torch.Tensor, B: torch.Tensor, lengthscale: torch.Tensor, outputscale: torch.Tensor,
                   left: Operator | None, right: Operator | None,
                   products: Products | None = None,
                   derivatives: SEDerivatives | None = None, symmetric: bool = False) -> torch.Tensor:
    """cov(L_a f(A), L'_b f(B)) for linear operators given as, per equation, (α, c_α at the points)
    pairs (``None``: the identity, f itself). Shape (E·N, E'·M), equations stacked equation-major.
    ``products``: :func:`coefficient_products` of the two operators, where the caller keeps them;
    ``derivatives``: the kernel's between A and B, where the caller reuses them
    (:func:`lengthscale_gradient`); ``symmetric``: the caller's promise that A is B and L is L', so
    the block is symmetric: its lower triangle is kept and mirrored, exactly symmetric, and the
    fused kernels compute that triangle alone (the Cholesky factor reads no other entry)."""
    products = _products(A.shape[1], left, right, products)
    if derivatives is None:
        derivatives = SEDerivatives(A, B, lengthscale, outputscale)
    N, M = derivatives.k.shape
    if products.order and se_fused.usable(derivatives.u, derivatives.k):
        return se_fused.block(derivatives, products.plan(N, M, A.shape[1]), symmetric)
    rows = []
    for groups_row in products:
        row = []
        for groups in groups_row:
            block = None
            for (gamma, window), c in groups.items():
                block = _add_into(block, window, derivatives.combined(gamma, window) * c, derivatives.k, (N, M))
            row.append(block if block is not None else derivatives.k.new_zeros(N, M))
        rows.append(torch.cat(row, dim=1))
    block = torch.cat(rows, dim=0)
    if symmetric:       # x + 0 is x: the lower triangle to the bit
        block = torch.tril(block) + torch.tril(block, -1).T
    return block


def gradient_products(d: int, right: Operator) -> Products:
    """The coefficient products of :func:`point_block`'s gradient: d equations, the first
    derivative in each input, on the left of ``right``."""
    return coefficient_products([[(tuple(int(j == i) for j in range(d)), None)] for i in range(d)], right)


def point_block(P: torch.Tensor, Z: torch.Tensor, lengthscale: torch.Tensor, outputscale: torch.Tensor,
                right: Operator, products: Products, gradients: Products) -> torch.Tensor:
    """cov(f(P), L f(Z)), :func:`operator_block` with the identity on the left, differentiable in
    the points P (an acquisition's search moves them) by the closed form

        ∂/∂P_ai cov(f(P_a), L f(Z_b)) = cov(∂_i f(P_a), L f(Z_b)),

    one block of d equations (``gradients``: :func:`gradient_products` of ``right``) in place of
    autograd through every Hermite step, whose small tensor operations cost more than their
    arithmetic; on the CPU both blocks take the fused kernels. The hyper-parameters are fixed here
    (a fitted posterior's): where they or Z are differentiated, autograd through the tensor code."""
    if not (torch.is_grad_enabled() and P.requires_grad) or \
            any(t.requires_grad for t in (Z, lengthscale, outputscale)):
        return operator_block(P, Z, lengthscale, outputscale, None, right, products)
    return _PointBlock.apply(P, Z, lengthscale, outputscale, right, products, gradients)


class _PointBlock(torch.autograd.Function):
    """:func:`point_block`'s block and its gradient in P."""

    @staticmethod
    def forward(ctx, P, Z, lengthscale, outputscale, right, products, gradients):
        ctx.save_for_backward(P, Z, lengthscale, outputscale)
        ctx.right, ctx.gradients = right, gradients
        return operator_block(P, Z, lengthscale, outputscale, None, right, products)

    @staticmethod
    def backward(ctx, grad):
        # under create_graph (a mean's Laplacian by autograd) the block of d equations is itself
        # built by the differentiable tensor code, so higher derivatives flow too
        P, Z, lengthscale, outputscale = ctx.saved_tensors
        N, d = P.shape
        rows = operator_block(P, Z, lengthscale, outputscale, None, ctx.right, ctx.gradients)     # (d·N, M)
        return (rows.reshape(d, N, -1) * grad).sum(-1).T, None, None, None, None, None, None


def lengthscale_gradient(derivatives: SEDerivatives, products: Products | None,
                         weights: torch.Tensor, lower: bool = False) -> torch.Tensor:
    """Σ_ab W_ab ∂K_ab/∂ℓ_i for each input i, shape (d,), with K the :func:`operator_block` of these
    ``products`` (None: the identity on both sides) built on ``derivatives`` and W = ``weights`` of
    K's shape: the lengthscales' part of a gradient by the trace formula, with no autograd graph
    through the blocks. In one input, with u = δ/ℓ,

        ∂/∂ℓ [ℓ^{−n} Heₙ(u) e^{−u²/2}] = ℓ^{−n−1} (u Heₙ₊₁(u) − n Heₙ(u)) e^{−u²/2}
            = ℓ^{−n} Heₙ(u) e^{−u²/2} · u²/ℓ − n ℓ^{−n−1} (u Heₙ₋₁(u) + Heₙ(u)) e^{−u²/2}

    since (Heₙ e^{−u²/2})' = −Heₙ₊₁ e^{−u²/2} and Heₙ₊₁ = u Heₙ − n Heₙ₋₁. The first term is the
    block times u²/ℓ whatever the order, so every γ's weighted block is summed before one product
    with u²; the second is one correction per input of positive order. ``lower``: W is zero above
    the diagonal of the equations stacked (a symmetric block's weights folded onto its lower
    triangle), so the fused kernels leave those entries out; the sums are the tensor code's."""
    lengthscale = derivatives.lengthscale
    d, N, M = derivatives.u.shape
    products = _products(d, None, None, products)
    if products.order and se_fused.usable(derivatives.u, derivatives.k, weights):
        total, corrections = se_fused.gradient_terms(derivatives, products.plan(N, M, d), weights, lower)
    else:
        total, corrections = _gradient_terms(derivatives, products, weights)
    gradient = derivatives.squares() @ total.reshape(-1) / lengthscale
    return gradient + torch.stack([torch.as_tensor(c, dtype=gradient.dtype, device=gradient.device)
                                   for c in corrections])


def _gradient_terms(derivatives: SEDerivatives, products: Products, weights: torch.Tensor) -> tuple:
    """The weighted block Σ_γ W_γ ∘ K_γ and each input's correction (:func:`lengthscale_gradient`),
    by whole-matrix operations."""
    d, N, M = derivatives.u.shape
    # Σ_(e,f) W_ef ∘ c_ef,γ for each γ: the equation pairs share the kernel's derivatives
    weighted: dict[tuple[MultiIndex, Window], torch.Tensor] = {}
    for e, groups_row in enumerate(products):
        for f, groups in enumerate(groups_row):
            W_block = weights[e * N:(e + 1) * N, f * M:(f + 1) * M]
            for key, c in groups.items():
                W = W_block[_slices(key[1])] * c
                weighted[key] = weighted[key] + W if key in weighted else W
    corrections = [0.0] * d
    total = None
    for (gamma, window), W in weighted.items():
        total = _add_into(total, window, W * derivatives.combined(gamma, window), weights, (N, M))
        for i, n in enumerate(gamma):
            if n:
                others = derivatives.combined(gamma[:i] + (0,) + gamma[i + 1:], window)
                corrections[i] = corrections[i] + (W * others * derivatives.correction(i, n, window)).sum()
    if total is None:
        total = weights.new_zeros(N, M)
    return total, corrections
