"""The evidence of the observations given a linear PDE, −log p(y | L f̃ = t), with its gradient in
the kernel's hyper-parameters in closed form (docs/algorithms.md, "PDE-GP").

Given the PDE at the collocation points, y is Gaussian with mean Bᵀt and covariance
S = K_ff + σ²I − K_fL B, where B = K_LL⁻¹ K_Lf (K_LL with the PDE's noise ε on its diagonal). With
r = y − Bᵀt, β = S⁻¹r, a = K_LL⁻¹t and P = S⁻¹ − ββᵀ, the derivative of the negative log evidence
½ rᵀS⁻¹r + ½ log|S| along any hyper-parameter is the trace form (Rasmussen & Williams 2006, Eq. 5.9,
through the Schur complement)

    ½ tr(P ∂K_ff) − tr((P Bᵀ + β aᵀ)ᵀ ∂K_fL) + tr((½ B P Bᵀ + B β aᵀ)ᵀ ∂K_LL),

and each ∂K is a kernel block of the same shape (the squared exponential's derivatives in its
lengthscales, :func:`pinnbo.models.se_kernel.lengthscale_gradient`; the blocks themselves over the
output scale; I and diag K_LL for the two noises). A fit evaluates it at every L-BFGS step: a few
elementwise passes over the blocks and one inverse of S, where autograd would record and replay a
graph through every Hermite factor of every block and both Cholesky factors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pinnbo.models.se_kernel import SEDerivatives, lengthscale_gradient, operator_block, pairwise_differences


@dataclass
class EvidenceData:
    """What the evidence conditions on: the observations' inputs ``X`` (n, d) and standardised
    values ``y``; the collocation points ``Z`` (m, d), the PDE's operator ``terms`` and its
    standardised targets ``t`` (all None without a PDE), with the blocks' coefficient products
    (:func:`pinnbo.models.se_kernel.coefficient_products`; K_fL's and K_LL's); ``basis``: the
    values Φ (n, J) at ``X`` of functions the operator annihilates, each added to the prior with an
    amplitude of variance s², so K_ff gains s² ΦΦᵀ and the PDE's blocks nothing (None: no basis);
    ``basis_operator``: the operator applied to those functions at ``Z``, R (m, J), where they do not
    solve the PDE: K_fL then gains s² ΦRᵀ and K_LL s² RRᵀ (None: they solve it)."""

    X: torch.Tensor
    y: torch.Tensor
    Z: torch.Tensor | None = None
    terms: list | None = None
    t: torch.Tensor | None = None
    products: tuple | None = None
    basis: torch.Tensor | None = None
    basis_operator: torch.Tensor | None = None

    def __post_init__(self):
        # the points' differences behind the (X, X), (X, Z) and (Z, Z) blocks, the same in every
        # evaluation of a fit
        pairs = [(self.X, self.X)] + ([] if self.Z is None else [(self.X, self.Z), (self.Z, self.Z)])
        self.differences = tuple(pairwise_differences(A, B) for A, B in pairs)


@dataclass
class Covariance:
    """The covariance blocks of the observations and the collocation equations: K_ff + σ²I, K_fL
    and K_LL + ε diag K_LL (the last two None without a PDE), with what the gradient reuses: the
    noise-free K_ff, diag K_LL floored at 10⁻¹² (its PDE noise's scale) and the kernel's derivatives
    behind the (X, X), (X, Z) and (Z, Z) blocks."""

    ff: torch.Tensor
    fl: torch.Tensor | None
    ll: torch.Tensor | None
    ff_raw: torch.Tensor
    ll_diagonal: torch.Tensor | None
    derivatives: tuple


def covariance_blocks(data: EvidenceData, lengthscale: torch.Tensor, outputscale: torch.Tensor,
                      noise: torch.Tensor, pde_noise: torch.Tensor) -> Covariance:
    """The blocks of :class:`Covariance` under these hyper-parameters (differentiable in them)."""
    X, Z = data.X, data.Z
    ff = SEDerivatives(X, X, lengthscale, outputscale, data.differences[0])
    K_raw = operator_block(X, X, lengthscale, outputscale, None, None, derivatives=ff)
    if data.basis is not None:      # linear in s² like the kernel: the gradient's output-scale term holds
        K_raw = K_raw + outputscale * (data.basis @ data.basis.T)
    K = _plus_diagonal(K_raw, noise.expand(len(X)))
    if Z is None:
        return Covariance(K, None, None, K_raw, None, (ff,))
    fl = SEDerivatives(X, Z, lengthscale, outputscale, data.differences[1])
    ll = SEDerivatives(Z, Z, lengthscale, outputscale, data.differences[2])
    K_fl = operator_block(X, Z, lengthscale, outputscale, None, data.terms, data.products[0], fl)
    K_ll = operator_block(Z, Z, lengthscale, outputscale, data.terms, data.terms, data.products[1], ll,
                          symmetric=True)
    if data.basis_operator is not None:     # linear in s² too
        R = data.basis_operator
        K_fl = K_fl + outputscale * (data.basis @ R.T)
        K_ll = K_ll + outputscale * (R @ R.T)
    diagonal = torch.diagonal(K_ll).clamp_min(1e-12)
    return Covariance(K, K_fl, _plus_diagonal(K_ll, pde_noise * diagonal), K_raw, diagonal, (ff, fl, ll))


def _plus_diagonal(A: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """A + diag(values), adding to the diagonal alone rather than a whole matrix of zeros."""
    out = A.clone()
    out.diagonal().add_(values)
    return out


def negative_log_evidence(data: EvidenceData, lengthscale: torch.Tensor, outputscale: torch.Tensor,
                          noise: torch.Tensor, pde_noise: torch.Tensor) -> torch.Tensor:
    """−log p(y | L f̃ = t) (−log p(y) without a PDE), differentiable in the four hyper-parameters;
    inf where a covariance does not factorise."""
    return _Evidence.apply(lengthscale, outputscale, noise, pde_noise, data)


class _Evidence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, lengthscale, outputscale, noise, pde_noise, data: EvidenceData):
        y, n = data.y, len(data.y)
        blocks = covariance_blocks(data, lengthscale, outputscale, noise, pde_noise)
        ctx.data, ctx.hyper, ctx.saved = data, (outputscale, pde_noise), None
        infinite = torch.tensor(math.inf, dtype=y.dtype, device=y.device)
        if blocks.fl is None:
            L_S, info = torch.linalg.cholesky_ex(blocks.ff)
            if int(info) != 0:
                return infinite
            r, pde = y, None
        else:
            L, info = torch.linalg.cholesky_ex(blocks.ll)
            if int(info) != 0:
                return infinite
            A = torch.linalg.solve_triangular(L, blocks.fl.T, upper=False)                    # (rows, n)
            b = torch.linalg.solve_triangular(L, data.t[:, None], upper=False)
            S, r = blocks.ff - A.T @ A, y - (A.T @ b)[:, 0]
            L_S, info = torch.linalg.cholesky_ex(S)
            if int(info) != 0:
                return infinite
            pde = (L, A, b)
        beta = torch.cholesky_solve(r[:, None], L_S)[:, 0]
        ctx.saved = (L_S, beta, blocks, pde)
        return 0.5 * (r @ beta) + torch.log(torch.diagonal(L_S)).sum() + 0.5 * n * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, grad):
        if ctx.saved is None:
            return None, None, None, None, None
        data, (outputscale, pde_noise) = ctx.data, ctx.hyper
        L_S, beta, blocks, pde = ctx.saved
        P = torch.cholesky_inverse(L_S) - beta[:, None] * beta[None, :]
        W_ff = 0.5 * P
        g_noise = torch.trace(W_ff)
        g_scale = (W_ff * blocks.ff_raw).sum()
        g_length = lengthscale_gradient(blocks.derivatives[0], None, W_ff)
        g_pde = torch.zeros((), dtype=P.dtype, device=P.device)
        if pde is not None:
            L, A, b = pde
            B = torch.linalg.solve_triangular(L.T, A, upper=True)                         # K_LL⁻¹ K_Lf
            a = torch.linalg.solve_triangular(L.T, b, upper=True)[:, 0]                  # K_LL⁻¹ t
            Bb = B @ beta
            W_fl = -(P @ B.T) - beta[:, None] * a[None, :]
            W_ll = 0.5 * (B @ P @ B.T) + Bb[:, None] * a[None, :]
            W_ll = 0.5 * (W_ll + W_ll.T)
            g_pde = (torch.diagonal(W_ll) * blocks.ll_diagonal).sum()
            g_scale = g_scale + (W_fl * blocks.fl).sum() + (W_ll * blocks.ll).sum()
            # K_LL = K_raw + ε diag K_raw: the diagonal's weight counts 1 + ε times; W and ∂K_LL are
            # both symmetric, so the weights folded onto the lower triangle (twice below the diagonal)
            # give the same sum from half the entries
            W_raw = _plus_diagonal(2.0 * torch.tril(W_ll, -1), (1.0 + pde_noise) * torch.diagonal(W_ll))
            g_length = g_length + lengthscale_gradient(blocks.derivatives[1], data.products[0], W_fl) \
                + lengthscale_gradient(blocks.derivatives[2], data.products[1], W_raw, lower=True)
        # every block is linear in the output scale
        return grad * g_length, grad * g_scale / outputscale, grad * g_noise, grad * g_pde, None
