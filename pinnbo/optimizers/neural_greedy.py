"""NeuralGreedy: minimise a network fit to randomly perturbed targets (docs/algorithms.md,
"Neural baselines").

Reference: Paria, Póczos, Ravikumar, Schneider, Suggala, "Be greedy — a simple algorithm for
blackbox optimization using neural networks" (ICML 2022 workshop); described in the Neural-BO
paper (§6) as "fits a neural network to the current set of observations, where the function
values are randomly perturbed before learning the neural network; the learnt network is then used
as the acquisition function". The perturbation is the only source of exploration: each step the
network is trained towards ỹ_i + ε_i, ε_i ~ N(0, σ²) drawn afresh from the step's random stream,
σ = ``perturbation`` in units of std(y) (ỹ are the standardised observations), and its argmin
over the box (pinnbo.acquisition: Sobol pool + perturbed incumbents, top-k, L-BFGS-B, no repeats)
is the next design.

Decided (the reference's own settings, Appendix F.2 of Paria et al., are not reproduced here):
the NTK-parametrised tanh MLP of pinnbo.models.mlp with two hidden layers of 64 on inputs in
[−1, 1]^d, mean-squared loss, Adam warm-started from the previous step (weights and moments
checkpointed), 500 steps for the first fit and 50 per later step at lr 0.01, σ = 0.2 std(y).
σ and the learning rate were chosen on a quadratic, Branin and DropWave (docs/archive/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pinnbo.acquisition.search import minimize_surrogate
from pinnbo.models.mlp import MLP, adam_steps, load_network_state, network_state
from pinnbo.models.transforms import standardise
from pinnbo.optimizers.base import DTYPES, MethodSettings, Optimizer
from pinnbo.streams import derived_seed, torch_generator


@dataclass
class NeuralGreedySettings(MethodSettings):
    """Documented defaults of NeuralGreedy (override with ``method_params`` in a case)."""

    hidden: tuple[int, ...] = (64, 64)     # hidden layer widths
    perturbation: float = 0.2              # σ of the target perturbation, in units of std(y)
    initial_steps: int = 500               # Adam steps of the first fit
    steps_per_iteration: int = 50          # Adam steps per later fit (warm start)
    learning_rate: float = 1e-2
    n_pool: int = 2048
    top_k: int = 8
    refine_iterations: int = 40
    duplicate_tol: float = 1e-4            # sup-norm distance (unit box) that counts as a repeat
    dtype: str = "float64"

    POSITIVE = ("learning_rate", "n_pool", "top_k")
    NON_NEGATIVE = ("perturbation", "duplicate_tol", "initial_steps", "steps_per_iteration", "refine_iterations")
    CHOICES = {"dtype": tuple(DTYPES)}
    INTERNAL = ("learning_rate", "n_pool", "top_k", "refine_iterations", "duplicate_tol")
    WIDTHS = ("hidden",)


class NeuralGreedy(Optimizer):
    """NeuralGreedy ask/tell optimiser (minimises)."""

    name = "neural-greedy"
    Settings = NeuralGreedySettings
    SMOKE_PARAMS = {"hidden": [16, 16], "initial_steps": 20, "steps_per_iteration": 5, "n_pool": 128,
                    "top_k": 2, "refine_iterations": 5}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        s = self.settings
        self.dtype = DTYPES[s.dtype]
        self.model = MLP(self.domain.dim, s.hidden, torch_generator(self.seed, "network-init")).to(self.device,
                                                                                                  self.dtype)
        self.adam = torch.optim.Adam(self.model.parameters(), lr=s.learning_rate)
        self.fitted = False

    def _fit(self, Z: torch.Tensor, targets: torch.Tensor) -> None:
        s = self.settings
        adam_steps(self.adam, lambda: (self.model(Z) - targets).pow(2).mean(),
                   s.steps_per_iteration if self.fitted else s.initial_steps)
        self.fitted = True

    def propose(self) -> np.ndarray:
        X, y = self.observed()
        if len(y) == 0:
            return self.random_design()
        s = self.settings
        mean, std = standardise(y)
        perturbed = (y - mean) / std + s.perturbation * self.rng("perturbation").standard_normal(len(y))
        unit = self.domain.to_unit(X)
        Z = torch.as_tensor(2.0 * unit - 1.0, dtype=self.dtype, device=self.device)
        self._fit(Z, torch.as_tensor(perturbed, dtype=self.dtype, device=self.device))

        model = self.model

        def surrogate(u: torch.Tensor) -> torch.Tensor:
            return model(2.0 * u - 1.0)

        best = np.argsort(y, kind="stable")[:3]
        noise = self.rng("local-starts").standard_normal((len(best), 16, self.domain.dim))
        local = unit[best][:, None, :] + 0.02 * noise
        proposal = minimize_surrogate(
            surrogate, self.domain.dim, seed=derived_seed(self.seed, self.name, self.ask_index, "pool"),
            evaluated_unit=self.evaluated_unit(), n_pool=s.n_pool, top_k=s.top_k,
            refine_iterations=s.refine_iterations, duplicate_tol=self.duplicate_tol,
            local_starts=local.reshape(-1, self.domain.dim), dtype=self.dtype, device=self.device,
        )
        return self.domain.from_unit(proposal.unit_x)

    def state_dict(self) -> dict:
        return network_state(self.model, self.adam, fitted=self.fitted)

    def load_state_dict(self, state: dict) -> None:
        load_network_state(self.model, self.adam, state)
        self.fitted = state["fitted"]
