"""Neural-tangent features and the precision matrix U of Neural-BO (REFERENCES §2).

Features. g(x) = ∇θ h(x; θ) for one network output, flattened over every parameter tensor in
``model.named_parameters()`` order, shape (p,). The paper writes g(x) = ∇θ f(x; θ0)/√m for a
network in the *standard* parametrisation (weights N(0, 1/m), output √m W_2 σ(W_1 x)). Our
networks (:mod:`pinnbo.surrogates.mlp`) are in the NTK parametrisation, W = √m W_std with
W ~ N(0, 1): the chain rule gives ∇_W h = ∇_{W_std} f / √m, so the paper's features are the plain
gradients here and ⟨g(x), g(x')⟩ is the (finite-width) NTK with O(1) entries. Dividing once more
by √m would shrink every variance by the width and switch exploration off.

Per-sample gradients are computed with ``torch.func.vmap(grad(...))`` over chunks of ``batch``
inputs, so memory stays O(batch · p) whatever the number of candidates.

Precision. U_0 = λ I, U_t = U_{t−1} + g(x_t) g(x_t)ᵀ, σ²(x) = λ g(x)ᵀ U⁻¹ g(x): with λ read as the
observation-noise variance, this is the posterior variance of a GP with the NTK kernel
(k(x, x) − k_xᵀ (K + λI)⁻¹ k_x). Two storage modes:

- ``exact``: U⁻¹ itself, p × p, updated by Sherman–Morrison,
  U⁻¹ ← U⁻¹ − (U⁻¹g)(U⁻¹g)ᵀ / (1 + gᵀU⁻¹g); O(p²) per observation.
- ``diagonal``: diag(U) only, p entries (never a p × p tensor); σ²(x) ≈ λ Σ_k g_k² / U_kk, the
  approximation of the authors' code for large networks (p × p float64 is 19 GiB at p = 51 000).

Scoring uses the row-wise product ((G U⁻¹) ⊙ G).sum(1), never G U⁻¹ Gᵀ.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from pinnbo.errors import shown

INVERSE_MODES = ("auto", "exact", "diagonal")


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def parameter_snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    """Detached copies of the parameters, by name: θ0 for the initial-parameter features."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def ntk_features(model: nn.Module, params: dict[str, torch.Tensor], z: torch.Tensor,
                 batch: int = 512, wrt: Sequence[str] | None = None) -> torch.Tensor:
    """g(z) = ∇θ h(z; θ) at ``params`` for each row of ``z`` (N, d) → (N, p).

    ``model`` maps (n, d) → (n,); only its architecture is used, the values come from ``params``.
    ``wrt`` restricts θ to the named parameters (in that order; the others are held at their
    ``params`` values), p being their total size; default: every parameter, in ``params`` order.
    """
    names = list(params) if wrt is None else list(wrt)
    detached = {k: v.detach() for k, v in params.items()}
    fixed = {k: v for k, v in detached.items() if k not in names}
    free = {k: detached[k] for k in names}

    def single(p: dict[str, torch.Tensor], zi: torch.Tensor) -> torch.Tensor:
        return functional_call(model, {**fixed, **p}, (zi.unsqueeze(0),)).squeeze(0)

    per_sample = vmap(grad(single), in_dims=(None, 0))
    chunks = []
    for i in range(0, len(z), batch):
        grads = per_sample(free, z[i:i + batch])
        chunks.append(torch.cat([grads[n].reshape(grads[n].shape[0], -1) for n in names], dim=1))
    if not chunks:
        return torch.zeros(0, sum(free[n].numel() for n in names), dtype=z.dtype, device=z.device)
    return torch.cat(chunks)


def resolve_inverse_mode(mode: str, n_parameters: int, exact_max_parameters: int) -> str:
    """``auto`` → ``exact`` for p ≤ ``exact_max_parameters``, else ``diagonal``."""
    if mode == "auto":
        return "exact" if n_parameters <= exact_max_parameters else "diagonal"
    return mode


class NTKPrecision:
    """U = λ I + Σ_i g_i g_iᵀ kept as U⁻¹ (``exact``) or as diag(U) (``diagonal``)."""

    def __init__(self, n_parameters: int, regularization: float, mode: str, *,
                 dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> None:
        if mode not in ("exact", "diagonal"):
            raise ValueError(f"mode must be 'exact' or 'diagonal', got {shown(mode)}")
        self.p = n_parameters
        self.regularization = float(regularization)
        self.mode = mode
        self.count = 0
        if mode == "exact":
            self.inverse: torch.Tensor | None = torch.eye(n_parameters, dtype=dtype, device=device) / regularization
            self.diagonal: torch.Tensor | None = None
        else:
            self.inverse = None
            self.diagonal = torch.full((n_parameters,), float(regularization), dtype=dtype, device=device)

    def update(self, g: torch.Tensor) -> None:
        """Add g gᵀ for each row of ``g`` ((p,) or (k, p)), one Sherman–Morrison step per row."""
        for row in g.reshape(-1, self.p):
            if self.inverse is not None:
                v = self.inverse @ row                                  # U⁻¹ g (U⁻¹ symmetric)
                self.inverse -= torch.outer(v, v) / (1.0 + row @ v)
            else:
                self.diagonal += row * row
            self.count += 1

    def variance(self, G: torch.Tensor) -> torch.Tensor:
        """σ²(x) = λ g(x)ᵀ U⁻¹ g(x) for rows of ``G`` (N, p) → (N,), clamped at 0 (round-off)."""
        if self.inverse is not None:
            quad = ((G @ self.inverse) * G).sum(dim=1)
        else:
            quad = (G * G / self.diagonal).sum(dim=1)
        return (self.regularization * quad).clamp_min(0.0)
