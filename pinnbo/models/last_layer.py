"""A Bayesian linear model on a trained network's last hidden layer: PINN-BO's Thompson samples
and the σ of Neural-CBO's physics objective (docs/algorithms.md, "PINN-BO").

With φ(x) the last hidden layer of the trained network (its NTK features for the output weights at
the current θ), the output weights' posterior given the data (and, optionally, the PDE's
collocation points as pseudo-observations, PINN-BO's Eq. 4) has precision

    U = λ I + Σ_i φ(x_i) φ(x_i)ᵀ / σ_n² (+ the PDE's part),

so a perturbation δ ~ N(0, ν² U⁻¹) of the output weights is a posterior sample of the function
(f̃ = h + φᵀδ), and σ²(x) = φ(x)ᵀ U⁻¹ φ(x) its variance. λ = 1 and σ_n² in standardised units.
"""

from __future__ import annotations

import torch

#: λ, the prior precision of the output weights (standardised units).
PRIOR_PRECISION = 1.0


def precision(phi: torch.Tensor, noise_variance: float) -> torch.Tensor:
    """U = λ I + φᵀφ / σ_n² of the features ``phi`` (n, m) at the observed designs, (m, m)."""
    m = phi.shape[1]
    with torch.no_grad():
        return PRIOR_PRECISION * torch.eye(m, dtype=phi.dtype, device=phi.device) + phi.T @ phi / noise_variance


def thompson_weights(U: torch.Tensor, draws: int, generator: torch.Generator, scale: float) -> torch.Tensor:
    """``draws`` independent δ ~ N(0, scale² U⁻¹), shape (m, draws): U = L Lᵀ ⇒ δ = scale L⁻ᵀ ε.
    ε comes from ``generator`` in float64 whatever U's dtype, so a run is the same in float32."""
    with torch.no_grad():
        L = torch.linalg.cholesky(U)
        eps = torch.randn(U.shape[0], draws, generator=generator, dtype=torch.float64).to(U.device, U.dtype)
        return scale * torch.linalg.solve_triangular(L.T, eps, upper=True)


def variance(U: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
    """σ²(x) = φ(x)ᵀ U⁻¹ φ(x) for the rows of ``phi`` (N, m), shape (N,)."""
    with torch.no_grad():
        v = torch.linalg.solve_triangular(torch.linalg.cholesky(U), phi.T, upper=False)   # L⁻¹ φ(x)
        return v.pow(2).sum(dim=0)
