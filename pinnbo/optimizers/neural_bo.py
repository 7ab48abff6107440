"""Neural-BO: Thompson sampling with a neural mean and NTK-feature variance.

Paper: seed 001 (Neural-BO, Algorithms 1–2) / thesis ch. 3; REFERENCES §2.

At step t (minimisation; the paper maximises):
    σ²(x) = λ g(x)ᵀ U⁻¹ g(x),  U = λ I + Σ_{i<t} g(x_i) g(x_i)ᵀ,
    f̃(x) ~ N(h(x; θ_{t−1}), ν² σ²(x)) independently per candidate,   x_t = argmin f̃
over a scrambled Sobol candidate pool (plus Gaussian perturbations of the best designs seen:
an independent-per-point sample cannot be refined by gradients, and a pure global pool is too
coarse to exploit in a continuous box). The argmin skips designs already evaluated.

Features g(x) = ∇θ h(x; θ0) at the initial parameters (paper; ``features: current`` uses the
trained parameters as the authors' code did, rebuilding U from all observations every step).
Our network is NTK-parametrised, so the paper's ∇θ f/√m is the plain gradient here; see
:mod:`pinnbo.surrogates.ntk`. U⁻¹ is kept exactly by Sherman–Morrison when the network has at most
``exact_max_parameters`` parameters, otherwise only diag(U) (``inverse`` overrides).

Training (Algorithm 2): L(θ) = ½ Σ_i (h(z_i; θ) − ỹ_i)² + ½ λ ‖θ − θ0‖² on standardised
observations ỹ = (y − mean)/std, inputs z = s (2u − 1) for u in the unit box. The paper's ½ mλ‖θ − θ0‖² is written for
the standard parametrisation; with W = √m W_std it is exactly ½ λ‖θ − θ0‖² here, and the same λ
makes the trained net the kernel-ridge mean that matches σ² above. Adam, warm-started from the
previous step's parameters and moments (the paper re-runs gradient descent from θ0; near the lazy
NTK regime the loss is close to convex and a warm start reaches the same fit for a fraction of
the cost).

Initialisation (paper §4): the hidden layers are drawn as usual, the last layer is set to zero, so
h(x; θ0) = 0: the trained net carries no random prior draw and exploration comes from σ alone. At
θ0 every gradient but the last layer's is exactly zero (it flows through the zero weights), so with
``features: initial`` U and g are kept over the last layer's m + 1 parameters only: the other
coordinates of U never receive an update and never contribute to σ², so σ² is the same as with the
full p × p matrix, at (m + 1)² cost whatever the input dimension. ``features: current`` uses every
parameter (p = (d + 2) m + 1 for one hidden layer), so ``inverse: auto`` matters there.

Tuned defaults (decided; measured with 6 seeds, 10 initial + 40 asks, on a 2-D quadratic, Branin
and DropWave; mean best value, lower is better):

| setting | quadratic (f* 0) | Branin (f* 0.398) | DropWave (f* −1) |
|---|---|---|---|
| paper-like: ν = 1, λ = 0.01, s = 3 (3 seeds) | 0.304 | 0.871 | −0.536 |
| ν = 5, λ = 1e-3, s = 3 | 0.017 | 0.568 | −0.724 |
| **ν = 3, λ = 1e-3, s = 5 (default)** | 0.115 | 0.514 | −0.833 |
| random search (3 seeds, 60 evaluations) | — | 1.042 | −0.595 |

- Exploration scale ν = 3: with ν = 1 the posterior of a finite random-feature kernel collapses after
  a dozen points (max σ ≈ 0.15 in standardised units) and the search stalls at the incumbent. The
  paper grid-searched ν ∈ {0.1, 1, 10}.
- λ = 1e-3 instead of the paper's 0.01: with λ = 0.01 the regulariser stops the net at a training
  RMSE of ≈ 0.25 standardised units on 20 points of a quadratic (≈ 0.04 with 1e-3), and the mean's
  argmin sits visibly off the data's.
- Input scale s = 5: the network sees z = s (2u − 1) for u in the unit box. The paper feeds raw
  inputs (SFU boxes such as [−32.8, 32.8]^d); on z in [−1, 1]^d the tanh features are nearly
  linear, the kernel nearly a low-degree polynomial one, and σ collapses even faster.

Other settings: the paper used width 500 (one hidden layer), SGD (batch 50, 50 epochs, lr 1e-3);
the authors' config width 200, λ = 0.005, Adam, 100 epochs. We use one hidden layer of width 128
(129 θ0 features; with ``features: current`` p = 128 d + 257, exact U⁻¹ up to d ≈ 37), 400 Adam
steps for the first fit and 50 per later step at lr 0.01, and 2048 + 256 candidates: ≈ 0.1 s per
step at t = 30 in 2-D on one core.

One network with its features, U and training is :class:`NTKNetwork`; Neural-CBO
(pinnbo.optimizers.neural_cbo) uses one per output, with :func:`candidate_pool`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pinnbo.acquisition import farthest_from, is_duplicate
from pinnbo.optimizers.base import (
    DTYPES, MethodSettings, Optimizer, derived_seed, load_network_state, network_state, torch_generator,
)
from pinnbo.surrogates.mlp import MLP
from pinnbo.surrogates.ntk import (
    INVERSE_MODES, NTKPrecision, ntk_features, parameter_count, parameter_snapshot, resolve_inverse_mode,
)

FEATURES = ("initial", "current")


@dataclass
class NeuralBOSettings(MethodSettings):
    """Documented defaults of Neural-BO (override with ``method_params`` in a case)."""

    hidden: tuple[int, ...] = (128,)       # hidden layer widths (paper: (500,); authors' code: (200,))
    regularization: float = 1e-3           # λ: prior precision in U and the weight of ½λ‖θ − θ0‖² (paper 0.01)
    exploration_scale: float = 3.0         # ν (paper: grid over 0.1, 1, 10)
    features: str = "initial"              # initial: g at θ0 (paper) | current: g at the trained θ
    inverse: str = "auto"                  # auto | exact (Sherman–Morrison U⁻¹) | diagonal (diag U only)
    exact_max_parameters: int = 5000       # auto: exact U⁻¹ up to this many network parameters
    initial_steps: int = 400               # Adam steps of the first fit
    steps_per_iteration: int = 50          # Adam steps per later fit (warm start)
    learning_rate: float = 1e-2
    input_scale: float = 5.0               # network inputs z = input_scale · (2u − 1), u in the unit box
    n_candidates: int = 2048               # scrambled Sobol candidates per step
    local_candidates: int = 256            # Gaussian perturbations of the 4 best designs
    local_scale: float = 0.02              # their standard deviation, unit-box coordinates
    feature_batch: int = 512               # candidates per batched gradient (bounded memory)
    duplicate_tol: float = 1e-4            # sup-norm distance (unit box) that counts as a repeat
    dtype: str = "float64"

    POSITIVE = ("regularization", "learning_rate", "input_scale", "n_candidates", "feature_batch",
                "exact_max_parameters")
    NON_NEGATIVE = ("exploration_scale", "local_scale", "duplicate_tol", "initial_steps",
                    "steps_per_iteration", "local_candidates")
    CHOICES = {"features": tuple(FEATURES), "inverse": tuple(INVERSE_MODES), "dtype": tuple(DTYPES)}
    WIDTHS = ("hidden",)


def unit_to_z(u: np.ndarray | torch.Tensor, input_scale: float, dtype: torch.dtype, device) -> torch.Tensor:
    """Network coordinates z = s (2u − 1) of unit-box points ``u`` (n, d)."""
    return input_scale * (2.0 * torch.as_tensor(u, dtype=dtype, device=device) - 1.0)


def update_precisions(optimizer, networks: list, Z: torch.Tensor) -> None:
    """Bring every network's U up to date with ``optimizer``'s observed designs ``Z`` (n, d).

    ``features: current``: features move with θ, so U is rebuilt from every observation at the
    trained parameters. ``initial``: θ0 features never change, so only the observations told since
    the last update (``optimizer._absorbed``) are added, one at a time, so that rebuilding after a
    checkpoint load repeats the same floating-point operations exactly. Used by Neural-BO and by
    Neural-CBO's networks.
    """
    if optimizer.settings.features == "current":
        for net in networks:
            net.reset_precision()
            net.precision.update(net.features(Z))
    else:
        for i in range(optimizer._absorbed, optimizer.n_told):
            if optimizer.y[i] is None:
                continue
            z = optimizer._unit_to_z(optimizer.domain.to_unit(optimizer.X[i])[None, :])
            for net in networks:
                net.precision.update(net.features(z)[0])
    optimizer._absorbed = optimizer.n_told


class NTKNetwork:
    """One Neural-BO network on its own: the NTK-parametrised MLP with h(x; θ0) = 0, θ0, its Adam,
    the NTK features g and the precision U (module docstring).

    Used by :class:`NeuralBO` and, one per output, by Neural-CBO (:mod:`pinnbo.optimizers.neural_cbo`).
    ``settings`` supplies ``hidden``, ``regularization``, ``features``, ``inverse``,
    ``exact_max_parameters``, ``learning_rate``, ``initial_steps``, ``steps_per_iteration``,
    ``feature_batch`` and optionally ``bias_scale`` (default 0.1, :class:`pinnbo.surrogates.mlp.MLP`) and
    ``polish_iterations`` (default 0: no L-BFGS after Adam)
    (a :class:`NeuralBOSettings` or any object with those fields); ``generator``
    draws the initial weights. Inputs are network coordinates z (the caller maps the box there).
    """

    def __init__(self, dim: int, settings, generator: torch.Generator, *, dtype: torch.dtype = torch.float64,
                 device: torch.device | str = "cpu") -> None:
        s = settings
        self.settings = s
        self.dtype = dtype
        self.device = torch.device(device)
        self.model = MLP(dim, s.hidden, generator, getattr(s, "bias_scale", 0.1)).to(self.device, self.dtype)
        with torch.no_grad():   # paper §4: h(x; θ0) = 0 (module docstring)
            self.model.out.weight.zero_()
            self.model.out.bias.zero_()
        self.theta0 = parameter_snapshot(self.model)          # rebuilt from the seed, never checkpointed
        self.n_parameters = parameter_count(self.model)
        # The parameters g differentiates (module docstring): the last layer at θ0, else all.
        self.feature_names = (["out.weight", "out.bias"] if s.features == "initial"
                              else [name for name, _ in self.model.named_parameters()])
        self.n_features = sum(self.theta0[name].numel() for name in self.feature_names)
        self.inverse_mode = resolve_inverse_mode(s.inverse, self.n_features, s.exact_max_parameters)
        self.adam = torch.optim.Adam(self.model.parameters(), lr=s.learning_rate)
        self.fitted = False
        self.reset_precision()

    def reset_precision(self) -> None:
        """U = λ I (no observation absorbed)."""
        self.precision = NTKPrecision(self.n_features, self.settings.regularization, self.inverse_mode,
                                      dtype=self.dtype, device=self.device)

    # -- training -----------------------------------------------------------------------------------
    def fit(self, Z: torch.Tensor, targets: torch.Tensor) -> None:
        """Adam on ½ Σ (h(z_i) − ỹ_i)² + ½ λ ‖θ − θ0‖²: ``initial_steps`` the first time, then
        ``steps_per_iteration`` warm-started steps; then ``polish_iterations`` of L-BFGS if the
        settings have them (Neural-CBO)."""
        s = self.settings
        steps = s.steps_per_iteration if self.fitted else s.initial_steps
        theta0 = [self.theta0[name] for name, _ in self.model.named_parameters()]

        def loss() -> torch.Tensor:
            data = 0.5 * (self.model(Z) - targets).pow(2).sum()
            prior = sum((p - p0).pow(2).sum() for p, p0 in zip(self.model.parameters(), theta0))
            return data + 0.5 * s.regularization * prior

        for _ in range(steps):
            self.adam.zero_grad(set_to_none=True)
            loss().backward()
            self.adam.step()
        polish = getattr(s, "polish_iterations", 0)
        if polish > 0:
            # Adam at a fixed learning rate stalls at a noise floor of the loss; full-batch L-BFGS
            # from there converges on the same objective (a few hundred parameters, n <= a few hundred).
            lbfgs = torch.optim.LBFGS(self.model.parameters(), lr=1.0, max_iter=polish, history_size=20,
                                      line_search_fn="strong_wolfe", tolerance_grad=1e-10, tolerance_change=1e-14)

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
        s = self.settings
        params = self.theta0 if s.features == "initial" else {k: v.detach() for k, v in self.model.named_parameters()}
        return ntk_features(self.model, params, Z, s.feature_batch, wrt=self.feature_names)

    def mean_and_variance(self, Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h(z; θ) and σ²(z) for rows of ``Z`` (N, d) in network coordinates, in batches."""
        s = self.settings
        means, variances = [], []
        for i in range(0, len(Z), s.feature_batch):
            chunk = Z[i:i + s.feature_batch]
            with torch.no_grad():
                means.append(self.model(chunk))
            G = self.features(chunk)
            variances.append(self.precision.variance(G))
        return torch.cat(means), torch.cat(variances)

    # -- checkpoints --------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        # θ0 comes from the seed and U from the told data (rebuilt by the owner).
        return network_state(self.model, self.adam, fitted=self.fitted)

    def load_state_dict(self, state: dict) -> None:
        load_network_state(self.model, self.adam, state)
        self.fitted = state["fitted"]
        self.reset_precision()


def candidate_pool(dim: int, seed: int, n_candidates: int, anchors: np.ndarray, local_candidates: int,
                   local_scale: float, rng: np.random.Generator) -> np.ndarray:
    """Neural-BO's candidates in the unit box: ``n_candidates`` scrambled Sobol points (scrambled by
    ``seed``) followed by ``local_candidates`` Gaussian perturbations (std ``local_scale``, clipped
    to the box) of the rows of ``anchors`` (k, d), taken in turn; shape (n_candidates + local, d)."""
    engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
    pool = engine.draw(n_candidates, dtype=torch.float64).numpy()
    if local_candidates > 0 and len(anchors):
        noise = rng.standard_normal((local_candidates, dim)) * local_scale
        local = np.clip(anchors[np.arange(local_candidates) % len(anchors)] + noise, 0.0, 1.0)
        pool = np.concatenate([pool, local])
    return pool


class NeuralBO(Optimizer):
    """Neural-BO ask/tell optimiser (minimises)."""

    name = "neural-bo"
    Settings = NeuralBOSettings
    SMOKE_PARAMS = {"hidden": [16], "initial_steps": 20, "steps_per_iteration": 5, "n_candidates": 128,
                    "local_candidates": 16}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        s: NeuralBOSettings = self.settings
        self.dtype = DTYPES[s.dtype]
        self.net = NTKNetwork(domain.dim, s, torch_generator(self.seed, "network-init"), dtype=self.dtype,
                              device=self.device)
        self._absorbed = 0   # told entries (failed included) already added to U

    # The network's parts (NTKNetwork), under the names this class has always exposed.
    model = property(lambda self: self.net.model)
    adam = property(lambda self: self.net.adam)
    theta0 = property(lambda self: self.net.theta0)
    n_parameters = property(lambda self: self.net.n_parameters)
    feature_names = property(lambda self: self.net.feature_names)
    n_features = property(lambda self: self.net.n_features)
    inverse_mode = property(lambda self: self.net.inverse_mode)
    precision = property(lambda self: self.net.precision)
    fitted = property(lambda self: self.net.fitted)

    # -- U over the told designs --------------------------------------------------------------------
    def _reset_precision(self) -> None:
        self.net.reset_precision()
        self._absorbed = 0   # told entries (failed included) already added to U

    def _unit_to_z(self, u: np.ndarray | torch.Tensor) -> torch.Tensor:
        return unit_to_z(u, self.settings.input_scale, self.dtype, self.device)

    def _update_precision(self, Z: torch.Tensor) -> None:
        """Bring U up to date with the observed designs ``Z`` (n, d) in network coordinates."""
        update_precisions(self, [self.net], Z)

    # -- training -----------------------------------------------------------------------------------
    def _fit(self, Z: torch.Tensor, targets: torch.Tensor) -> None:
        self.net.fit(Z, targets)

    # -- scoring ------------------------------------------------------------------------------------
    def features(self, Z: torch.Tensor) -> torch.Tensor:
        """g(z) for rows of ``Z`` (N, d) → (N, n_features), at θ0 or at the trained θ."""
        return self.net.features(Z)

    def mean_and_variance(self, Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h(z; θ) and σ²(z) for rows of ``Z`` (N, d) in network coordinates, in batches."""
        return self.net.mean_and_variance(Z)

    def _candidates(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        s = self.settings
        seed = derived_seed(self.seed, self.name, self.n_told, "candidates") % (2**31)
        best = self.domain.to_unit(X[np.argsort(y, kind="stable")[:4]])
        return candidate_pool(self.domain.dim, seed, s.n_candidates, best, s.local_candidates, s.local_scale,
                              self.rng("local-candidates"))

    # -- ask ----------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        X, y = self.observed()
        if len(y) == 0:
            return self.domain.from_unit(self.rng("empty").random(self.domain.dim))
        s = self.settings
        mean = float(np.mean(y))
        std = float(np.std(y)) if len(y) > 1 and np.std(y) > 0 else 1.0
        Z = self._unit_to_z(self.domain.to_unit(X))
        targets = torch.as_tensor((y - mean) / std, dtype=self.dtype, device=self.device)
        self._fit(Z, targets)
        self._update_precision(Z)

        pool = self._candidates(X, y)
        mu, var = self.mean_and_variance(self._unit_to_z(pool))
        eps = torch.randn(len(pool), generator=self.generator("thompson"), dtype=torch.float64)
        sample = (mu.double() + s.exploration_scale * var.double().sqrt() * eps.to(self.device)).cpu().numpy()
        evaluated = self.evaluated_unit()
        for i in np.argsort(sample, kind="stable"):
            if not is_duplicate(pool[i], evaluated, s.duplicate_tol):
                return self.domain.from_unit(pool[i])
        return self.domain.from_unit(pool[farthest_from(pool, evaluated)])

    # -- checkpoints --------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        # θ0 comes from the seed and U from the told data (rebuilt on the next ask).
        return self.net.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state)
        self._reset_precision()
