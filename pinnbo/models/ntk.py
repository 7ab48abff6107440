"""Neural-tangent features, the precision matrix U of Neural-BO, and one NTK network with both
(docs/algorithms.md, "Neural-BO").

Features. g(x) = ∇θ h(x; θ) for one network output, flattened over every parameter tensor in
``model.named_parameters()`` order, shape (p,). The paper writes g(x) = ∇θ f(x; θ0)/√m for a
network in the *standard* parametrisation (weights N(0, 1/m), output √m W_2 σ(W_1 x)). Our
networks (:mod:`pinnbo.models.mlp`) are in the NTK parametrisation, W = √m W_std with
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

Network (:class:`NTKNetwork`). Neural-BO's model of one output: the MLP with its last layer set to
zero, so h(x; θ0) = 0 and exploration comes from σ alone (Neural-BO §4), trained on
½ Σ (h(z_i) − ỹ_i)² + ½ λ ‖θ − θ0‖² by warm-started Adam (the paper's ½ mλ‖θ − θ0‖² in the standard
parametrisation is exactly this one here). At θ0 every gradient but the last layer's is zero, so
with features at θ0 U is kept over the last layer's m + 1 parameters only; with features at the
trained θ (Neural-CBO's choice) over every parameter, rebuilt from all observations each step.
"""

from __future__ import annotations

import copy

from typing import Sequence

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad, vmap

from pinnbo.errors import shown
from pinnbo.models.mlp import MLP, adam_steps, load_network_state, network_state

INVERSE_MODES = ("auto", "exact", "diagonal")
#: Network parameters up to which U⁻¹ is kept exactly (auto mode); above, only diag(U).
EXACT_MAX_PARAMETERS = 5000
#: Candidates per batched gradient, bounding memory.
FEATURE_BATCH = 512


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


def inverse_mode(n_parameters: int, exact_max_parameters: int) -> str:
    """How U is kept: ``exact`` (U⁻¹, O(p²) memory) for p ≤ ``exact_max_parameters``, else
    ``diagonal``."""
    return "exact" if n_parameters <= exact_max_parameters else "diagonal"


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


def unit_to_z(u: np.ndarray | torch.Tensor, input_scale: float, dtype: torch.dtype, device) -> torch.Tensor:
    """Network coordinates z = s (2u − 1) of unit-box points ``u`` (n, d)."""
    return input_scale * (2.0 * torch.as_tensor(u, dtype=dtype, device=device) - 1.0)


class NTKNetwork:
    """One output's NTK-parametrised MLP with h(x; θ0) = 0, θ0, its Adam, its features g and its
    precision U (module docstring). Inputs are network coordinates z (the owner maps the box there).

    ``features_at``: ``initial`` (g at θ0, the last layer only; Neural-BO) or ``current`` (g at the
    trained θ, every parameter; Neural-CBO). ``polish_iterations`` > 0: that many full-batch L-BFGS
    iterations after each fit's Adam steps (Adam at a fixed learning rate stalls at a noise floor
    of the loss). ``generator`` draws the initial weights.
    """

    def __init__(self, dim: int, generator: torch.Generator, *, hidden: Sequence[int], regularization: float,
                 learning_rate: float, initial_steps: int, steps_per_iteration: int, features_at: str = "initial",
                 bias_scale: float = 0.1, polish_iterations: int = 0, dtype: torch.dtype = torch.float64,
                 device: torch.device | str = "cpu") -> None:
        self.regularization = float(regularization)
        self.initial_steps, self.steps_per_iteration = initial_steps, steps_per_iteration
        self.features_at = features_at
        self.polish_iterations = polish_iterations
        self.dtype = dtype
        self.device = torch.device(device)
        self.model = MLP(dim, hidden, generator, bias_scale).to(self.device, self.dtype)
        with torch.no_grad():   # Neural-BO §4: h(x; θ0) = 0
            self.model.out.weight.zero_()
            self.model.out.bias.zero_()
        self.theta0 = parameter_snapshot(self.model)          # rebuilt from the seed, never checkpointed
        # The parameters g differentiates: the last layer at θ0, else all.
        self.feature_names = (["out.weight", "out.bias"] if features_at == "initial"
                              else [name for name, _ in self.model.named_parameters()])
        self.n_features = sum(self.theta0[name].numel() for name in self.feature_names)
        self.inverse_mode = inverse_mode(self.n_features, EXACT_MAX_PARAMETERS)
        self.adam = torch.optim.Adam(self.model.parameters(), lr=learning_rate)
        self.fitted = False
        self.reset_precision()

    def reset_precision(self) -> None:
        """U = λ I (no observation absorbed)."""
        self.precision = NTKPrecision(self.n_features, self.regularization, self.inverse_mode,
                                      dtype=self.dtype, device=self.device)
        self._pending_precision = None   # (U, its count, pending bytes, U given them): _given

    def absorb(self, Z_new: torch.Tensor, Z_all: torch.Tensor) -> None:
        """Bring U up to date: with features at θ0 add the rows of ``Z_new`` (k, d), the designs told
        since the last call, one at a time (so a rebuild after a checkpoint repeats the same
        floating-point operations); at the trained θ rebuild U from all observed designs ``Z_all``."""
        if self.features_at == "current":
            self.reset_precision()
            self.precision.update(self.features(Z_all))
            return
        for z in Z_new:
            self.precision.update(self.features(z[None])[0])

    # -- training -----------------------------------------------------------------------------------
    def fit(self, Z: torch.Tensor, targets: torch.Tensor) -> None:
        """Adam on ½ Σ (h(z_i) − ỹ_i)² + ½ λ ‖θ − θ0‖²: ``initial_steps`` the first time, then
        ``steps_per_iteration`` warm-started steps; then the L-BFGS polish."""
        steps = self.steps_per_iteration if self.fitted else self.initial_steps
        theta0 = [self.theta0[name] for name, _ in self.model.named_parameters()]

        def loss() -> torch.Tensor:
            data = 0.5 * (self.model(Z) - targets).pow(2).sum()
            prior = sum((p - p0).pow(2).sum() for p, p0 in zip(self.model.parameters(), theta0))
            return data + 0.5 * self.regularization * prior

        adam_steps(self.adam, loss, steps)
        if self.polish_iterations > 0:
            # Full-batch L-BFGS from Adam's noise floor converges on the same objective (a few
            # hundred parameters, n at most a few hundred).
            lbfgs = torch.optim.LBFGS(self.model.parameters(), lr=1.0, max_iter=self.polish_iterations,
                                      history_size=20, line_search_fn="strong_wolfe", tolerance_grad=1e-10,
                                      tolerance_change=1e-14)

            def closure() -> torch.Tensor:
                lbfgs.zero_grad(set_to_none=True)
                value = loss()
                value.backward()
                return value

            lbfgs.step(closure)
        self.fitted = True

    # -- scoring ------------------------------------------------------------------------------------
    def features(self, Z: torch.Tensor) -> torch.Tensor:
        """g(z) for rows of ``Z`` (N, d) → (N, n_features), at θ0 or at the trained θ."""
        params = self.theta0 if self.features_at == "initial" else \
            {k: v.detach() for k, v in self.model.named_parameters()}
        return ntk_features(self.model, params, Z, FEATURE_BATCH, wrt=self.feature_names)

    def mean_and_variance(self, Z: torch.Tensor, pending: torch.Tensor | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        """h(z; θ) and σ²(z) for rows of ``Z`` (N, d) in network coordinates, in batches.
        ``pending`` (p, d): designs being evaluated, whose gradients join U for this call only (the
        posterior variance given observations there, exact, needs no value)."""
        precision = self.precision if pending is None or not len(pending) else self._given(pending)
        means, variances = [], []
        for i in range(0, len(Z), FEATURE_BATCH):
            chunk = Z[i:i + FEATURE_BATCH]
            with torch.no_grad():
                means.append(self.model(chunk))
            variances.append(precision.variance(self.features(chunk)))
        return torch.cat(means), torch.cat(variances)

    def _given(self, pending: torch.Tensor) -> "NTKPrecision":
        """U with the gradients at ``pending`` added, kept while U and ``pending`` stay the same: an
        acquisition scores candidates in many calls (Neural-CBO's refinement rounds) given the same
        pending designs, and a copy of U per call would cost more than the scoring."""
        key = (self.precision, self.precision.count, pending.detach().cpu().numpy().tobytes())
        if self._pending_precision is None or self._pending_precision[0] is not key[0] \
                or self._pending_precision[1:3] != key[1:]:
            given = copy.deepcopy(self.precision)
            given.update(self.features(pending))
            self._pending_precision = (*key, given)
        return self._pending_precision[3]

    # -- checkpoints --------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        # θ0 comes from the seed and U from the told data (rebuilt by the owner).
        return network_state(self.model, self.adam, fitted=self.fitted)

    def load_state_dict(self, state: dict) -> None:
        load_network_state(self.model, self.adam, state)
        self.fitted = state["fitted"]
        self.reset_precision()
