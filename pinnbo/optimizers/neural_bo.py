"""Neural-BO: Thompson sampling with a neural mean and NTK-feature variance (Phan-Trong, Tran-The,
Gupta; docs/algorithms.md, "Neural-BO").

At step t (minimisation; the paper maximises), Algorithms 1–2:

    σ²(x) = λ g(x)ᵀ U⁻¹ g(x),  U = λ I + Σ_{i<t} g(x_i) g(x_i)ᵀ,
    f̃(x) ~ N(h(x; θ_{t−1}), ν² σ²(x)) independently per candidate,   x_t = argmin f̃

over a scrambled Sobol pool plus Gaussian perturbations of the four best designs (an
independent-per-point sample cannot be refined by gradients, and a pure global pool is too coarse
to exploit), never a repeat. g(x) = ∇θ h(x; θ0) at the initial parameters, the network
(:class:`pinnbo.models.ntk.NTKNetwork`) trained on the standardised observations by warm-started
Adam. Defaults, measured against the paper's on a quadratic, Branin and DropWave: ν = 3 (ν = 1
collapses σ after a dozen points), λ = 1e-3 (0.01 stops the fit at a visible error), network inputs
z = 5 (2u − 1) (on [−1, 1]^d the tanh features are nearly linear and σ collapses faster), one hidden
layer of 128.

With designs still being evaluated (asynchronous runs), their g(x) join U for the proposal (the
variance given observations there, exact without their values), and each proposal draws afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pinnbo.acquisition.search import candidate_pool, farthest_from, is_duplicate
from pinnbo.models.ntk import NTKNetwork, unit_to_z
from pinnbo.models.transforms import standardise
from pinnbo.optimizers.base import DTYPES, MethodSettings, Optimizer
from pinnbo.streams import derived_seed, torch_generator

#: Network inputs z = INPUT_SCALE · (2u − 1) for u in the unit box.
INPUT_SCALE = 5.0
#: Gaussian perturbations of the four best designs added to the pool, and their standard deviation.
LOCAL_CANDIDATES = 256
LOCAL_SCALE = 0.02


@dataclass
class NeuralBOSettings(MethodSettings):
    """Documented defaults of Neural-BO (override with ``method_params`` in a case)."""

    hidden: tuple[int, ...] = (128,)       # hidden layer widths (paper: (500,))
    regularization: float = 1e-3           # λ: prior precision in U and the weight of ½λ‖θ − θ0‖² (paper 0.01)
    exploration_scale: float = 3.0         # ν (paper: a grid over 0.1, 1, 10)
    initial_steps: int = 400               # Adam steps of the first fit
    steps_per_iteration: int = 50          # Adam steps per later fit (warm start)
    learning_rate: float = 1e-2
    n_candidates: int = 2048               # scrambled Sobol candidates per step
    duplicate_tol: float = 1e-4            # sup-norm distance (unit box) that counts as a repeat
    dtype: str = "float64"

    POSITIVE = ("regularization", "learning_rate", "n_candidates")
    NON_NEGATIVE = ("exploration_scale", "duplicate_tol", "initial_steps", "steps_per_iteration")
    CHOICES = {"dtype": tuple(DTYPES)}
    INTERNAL = ("learning_rate", "n_candidates", "duplicate_tol")
    WIDTHS = ("hidden",)


class NeuralBO(Optimizer):
    """Neural-BO ask/tell optimiser (minimises)."""

    name = "neural-bo"
    Settings = NeuralBOSettings
    SMOKE_PARAMS = {"hidden": [16], "initial_steps": 20, "steps_per_iteration": 5, "n_candidates": 128}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        s: NeuralBOSettings = self.settings
        self.dtype = DTYPES[s.dtype]
        self.net = NTKNetwork(domain.dim, torch_generator(self.seed, "network-init"), hidden=s.hidden,
                              regularization=s.regularization, learning_rate=s.learning_rate,
                              initial_steps=s.initial_steps, steps_per_iteration=s.steps_per_iteration,
                              features_at="initial", dtype=self.dtype, device=self.device)
        self._absorbed = 0   # told entries (failed included) already added to U

    def _unit_to_z(self, u: np.ndarray | torch.Tensor) -> torch.Tensor:
        return unit_to_z(u, INPUT_SCALE, self.dtype, self.device)

    def propose(self) -> np.ndarray:
        X, y = self.observed()
        if len(y) == 0:
            return self.random_design()
        s = self.settings
        mean, std = standardise(y)
        Z = self._unit_to_z(self.domain.to_unit(X))
        self.net.fit(Z, torch.as_tensor((y - mean) / std, dtype=self.dtype, device=self.device))
        new = [x for x, v in zip(self.X[self._absorbed:], self.y[self._absorbed:]) if v is not None]
        self.net.absorb(self._unit_to_z(self.domain.to_unit(np.stack(new))) if new else Z[:0], Z)
        self._absorbed = self.n_told

        seed = derived_seed(self.seed, self.name, self.ask_index, "candidates") % (2**31)
        anchors = self.domain.to_unit(X[np.argsort(y, kind="stable")[:4]])
        pool = candidate_pool(self.domain.dim, seed, s.n_candidates, anchors, LOCAL_CANDIDATES, LOCAL_SCALE,
                              self.rng("local-candidates"))
        pending = self._unit_to_z(self.pending_unit()) if self.pending else None
        mu, var = self.net.mean_and_variance(self._unit_to_z(pool), pending)
        eps = torch.randn(len(pool), generator=self.generator("thompson"), dtype=torch.float64)
        sample = (mu.double() + s.exploration_scale * var.double().sqrt() * eps.to(self.device)).cpu().numpy()
        evaluated = self.evaluated_unit()
        for i in np.argsort(sample, kind="stable"):
            if not is_duplicate(pool[i], evaluated, self.duplicate_tol):
                return self.domain.from_unit(pool[i])
        return self.domain.from_unit(pool[farthest_from(pool, evaluated)])

    # -- checkpoints --------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        # θ0 comes from the seed and U from the told data (rebuilt on the next ask).
        return self.net.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state)
        self._absorbed = 0
