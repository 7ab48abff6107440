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

from typing import Sequence

import torch

MultiIndex = tuple[int, ...]


class SEDerivatives:
    """∂ᵃ_a ∂ᵝ_b k between two point sets A (N, d) and B (M, d) for many (α, β), sharing the
    kernel matrix and each (dimension, order) Hermite factor between them."""

    def __init__(self, A: torch.Tensor, B: torch.Tensor, lengthscale: torch.Tensor, outputscale: torch.Tensor):
        self.lengthscale = lengthscale
        self.u = (A[:, None, :] - B[None, :, :]) / lengthscale                  # (N, M, d)
        self.k = outputscale * torch.exp(-0.5 * (self.u ** 2).sum(-1))         # (N, M)
        self._hermite: dict[tuple[int, int], torch.Tensor] = {}

    def _he(self, i: int, n: int) -> torch.Tensor:
        if (i, n) not in self._hermite:
            u = self.u[..., i]
            if n == 0:
                value = torch.ones_like(u)
            elif n == 1:
                value = u
            else:
                value = u * self._he(i, n - 1) - (n - 1) * self._he(i, n - 2)
            self._hermite[(i, n)] = value
        return self._hermite[(i, n)]

    def __call__(self, alpha: MultiIndex, beta: MultiIndex) -> torch.Tensor:
        """∂ᵃ_a ∂ᵝ_b k(A, B), shape (N, M)."""
        out = self.k
        for i, (a, b) in enumerate(zip(alpha, beta)):
            n = a + b
            if n:
                out = out * (((-1.0) ** a) * self.lengthscale[i] ** (-n)) * self._he(i, n)
        return out


def operator_block(A: torch.Tensor, B: torch.Tensor, lengthscale: torch.Tensor, outputscale: torch.Tensor,
                   left: Sequence[Sequence[tuple[MultiIndex, torch.Tensor]]] | None,
                   right: Sequence[Sequence[tuple[MultiIndex, torch.Tensor]]] | None) -> torch.Tensor:
    """cov(L_a f(A), L'_b f(B)) for linear operators given as, per equation, (α, c_α at the points)
    pairs (``None``: the identity, f itself). Shape (E·N, E'·M), equations stacked equation-major."""
    d = A.shape[1]
    identity = [[((0,) * d, None)]]
    left, right = left or identity, right or identity
    derivatives = SEDerivatives(A, B, lengthscale, outputscale)
    rows = []
    for terms_a in left:
        row = []
        for terms_b in right:
            block = 0.0
            for alpha, ca in terms_a:
                for beta, cb in terms_b:
                    term = derivatives(alpha, beta)
                    if ca is not None:
                        term = ca[:, None] * term
                    if cb is not None:
                        term = term * cb[None, :]
                    block = block + term
            row.append(block)
        rows.append(torch.cat(row, dim=1))
    return torch.cat(rows, dim=0)
