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

from pinnbo.models.se_kernel import lengthscale_gradient, operator_block


@dataclass
class EvidenceData:
    """What the evidence conditions on: the observations' inputs ``X`` (n, d) and standardised
    values ``y``; the collocation points ``Z`` (m, d), the PDE's operator ``terms`` and its
    standardised targets ``t`` (all None without a PDE), with the blocks' coefficient products
    (:func:`pinnbo.models.se_kernel.coefficient_products`; K_fL's and K_LL's)."""

    X: torch.Tensor
    y: torch.Tensor
    Z: torch.Tensor | None = None
    terms: list | None = None
    t: torch.Tensor | None = None
    products: tuple | None = None


def negative_log_evidence(data: EvidenceData, lengthscale: torch.Tensor, outputscale: torch.Tensor,
                          noise: torch.Tensor, pde_noise: torch.Tensor) -> torch.Tensor:
    """−log p(y | L f̃ = t) (−log p(y) without a PDE), differentiable in the four hyper-parameters;
    inf where a covariance does not factorise."""
    return _Evidence.apply(lengthscale, outputscale, noise, pde_noise, data)


def _identity_products(d: int) -> list:
    return [[{(0,) * d: 1.0}]]


class _Evidence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, lengthscale, outputscale, noise, pde_noise, data: EvidenceData):
        X, y, n = data.X, data.y, len(data.y)
        K_raw = operator_block(X, X, lengthscale, outputscale, None, None)
        K = K_raw + noise * torch.eye(n, dtype=X.dtype, device=X.device)
        ctx.data, ctx.hyper = data, (lengthscale, outputscale, pde_noise)
        infinite = torch.tensor(math.inf, dtype=X.dtype, device=X.device)
        if data.Z is None:
            L, info = torch.linalg.cholesky_ex(K)
            if int(info) != 0:
                ctx.saved = None
                return infinite
            beta = torch.cholesky_solve(y[:, None], L)[:, 0]
            ctx.saved = (L, beta, K_raw, None)
            return 0.5 * (y @ beta) + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)
        K_fl = operator_block(X, data.Z, lengthscale, outputscale, None, data.terms, data.products[0])
        K_ll_raw = operator_block(data.Z, data.Z, lengthscale, outputscale, data.terms, data.terms, data.products[1])
        diagonal = torch.diagonal(K_ll_raw).clamp_min(1e-12)
        K_ll = K_ll_raw + torch.diag(pde_noise * diagonal)
        L, info = torch.linalg.cholesky_ex(K_ll)
        if int(info) != 0:
            ctx.saved = None
            return infinite
        A = torch.linalg.solve_triangular(L, K_fl.T, upper=False)                         # (rows, n)
        b = torch.linalg.solve_triangular(L, data.t[:, None], upper=False)
        S, r = K - A.T @ A, y - (A.T @ b)[:, 0]
        L_S, info = torch.linalg.cholesky_ex(S)
        if int(info) != 0:
            ctx.saved = None
            return infinite
        beta = torch.cholesky_solve(r[:, None], L_S)[:, 0]
        ctx.saved = (L_S, beta, K_raw, (L, A, b, K_fl, K_ll, diagonal))
        return 0.5 * (r @ beta) + torch.log(torch.diagonal(L_S)).sum() + 0.5 * n * math.log(2 * math.pi)

    @staticmethod
    def backward(ctx, grad):
        if ctx.saved is None:
            return None, None, None, None, None
        data, (lengthscale, outputscale, pde_noise) = ctx.data, ctx.hyper
        L_S, beta, K_raw, pde = ctx.saved
        X, d = data.X, data.X.shape[1]
        P = torch.cholesky_inverse(L_S) - beta[:, None] * beta[None, :]
        W_ff = 0.5 * P
        g_noise = torch.trace(W_ff)
        g_scale = (W_ff * K_raw).sum()
        g_length = lengthscale_gradient(X, X, lengthscale, outputscale, _identity_products(d), W_ff)
        g_pde = torch.zeros((), dtype=X.dtype, device=X.device)
        if pde is not None:
            L, A, b, K_fl, K_ll, diagonal = pde
            B = torch.linalg.solve_triangular(L.T, A, upper=True)                         # K_LL⁻¹ K_Lf
            a = torch.linalg.solve_triangular(L.T, b, upper=True)[:, 0]                  # K_LL⁻¹ t
            Bb = B @ beta
            W_fl = -(P @ B.T) - beta[:, None] * a[None, :]
            W_ll = 0.5 * (B @ P @ B.T) + Bb[:, None] * a[None, :]
            W_ll = 0.5 * (W_ll + W_ll.T)
            g_pde = (torch.diagonal(W_ll) * diagonal).sum()
            g_scale = g_scale + (W_fl * K_fl).sum() + (W_ll * K_ll).sum()
            # K_LL = K_raw + ε diag K_raw: the diagonal's weight counts 1 + ε times
            W_raw = W_ll + torch.diag(pde_noise * torch.diagonal(W_ll))
            g_length = g_length + lengthscale_gradient(X, data.Z, lengthscale, outputscale, data.products[0], W_fl) \
                + lengthscale_gradient(data.Z, data.Z, lengthscale, outputscale, data.products[1], W_raw)
        # every block is linear in the output scale
        return grad * g_length, grad * g_scale / outputscale, grad * g_noise, grad * g_pde, None
