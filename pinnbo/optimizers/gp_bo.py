"""GP baselines: GP-EI, GP-UCB, and Kim & Sanz-Alonso's GP-UCB+, EXPLOIT+ and EXPLOIT.

References: REFERENCES §4 (seed 002) and §5. The surrogate (:func:`pinnbo.surrogates.gp.fit_gp`)
is a BoTorch SingleTaskGP of −y on the unit cube, Matérn-5/2 ARD kernel with BoTorch's
dimension-scaled priors, standardised outputs, hyper-parameters refit by maximum marginal
likelihood at every step. Acquisitions are maximised with ``botorch.optim.optimize_acqf``
(``raw_samples`` Sobol points, the best ``num_restarts`` refined by L-BFGS-B):

- ``gp-ei``: LogExpectedImprovement with best_f = the best observation; learned noise.
- ``gp-ucb``: UpperConfidenceBound μ + √β σ, β = 4 (β^{1/2} = 2 as in Kim & Sanz-Alonso); learned noise.
- ``gp-ucb+``: each iteration = the GP-UCB point AND a point drawn uniformly in D; noise-free GP.
- ``exploit+``: the same with the posterior-mean argmax (β = 0) instead of UCB; noise-free GP.
- ``exploit``: EXPLOIT+ without the random points; noise-free GP.

One-point ask/tell for the "+" methods: asks alternate, the ask after an acquisition point returns
the random point, with ``last_role = "exploration"`` so the runner records it apart (REFERENCES §4:
report the best value with and without the random points). The budget counts observations, so a
"+" run makes half as many acquisition steps. Which kind comes next is decided by how many asked
points have been told (initial-design tells do not count), so ``ask`` stays repeatable and the
count is checkpointed.

``kernel``: ``ard`` (the default, :func:`pinnbo.surrogates.gp.fit_gp`) or ``isotropic``, the GP
Kim & Sanz-Alonso's experiments describe (one Matérn-5/2 lengthscale by maximum likelihood, no
hyper-prior); their ordering of GP-UCB+ and EXPLOIT+ over GP-UCB and EXPLOIT was measured with both
(docs/benchmarks.md).

"Noise-free" (seed 002): the likelihood noise is fixed at ``noise_floor`` in standardised units
(1e-5 by default; GPyTorch rounds fixed noise below 1e-6 up anyway) rather than learned: a nugget
for the Cholesky, not a noise model.

Determinism: the raw samples are seeded through ``options={"seed": ...}`` and everything else that
might touch the global torch RNG (a restarted hyper-parameter fit) runs inside
``torch.random.fork_rng()`` seeded from the step's derived seed, so a run never perturbs, nor
depends on, the caller's RNG.

Repeats: if the best restart is a design already evaluated (the noise-free posterior mean peaks
at the incumbent, typically), the next-best restart is taken, then points nudged just beyond
``duplicate_tol`` of the optimum (pinnbo.acquisition), then the best point of a fresh Sobol pool.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch
from botorch.acquisition import LogExpectedImprovement, PosteriorMean, UpperConfidenceBound
from botorch.exceptions.warnings import BadInitialCandidatesWarning, OptimizationWarning
from botorch.optim import optimize_acqf

from pinnbo.acquisition import _nudged, farthest_from, is_duplicate
from pinnbo.history import EXPLORATION
from pinnbo.optimizers.base import MethodError, MethodSettings, Optimizer, derived_seed, sobol_unit
from pinnbo.surrogates.gp import KERNELS, fit_gp


@dataclass
class GPSettings(MethodSettings):
    """Documented defaults shared by the GP methods (override with ``method_params``)."""

    num_restarts: int = 10          # L-BFGS-B starts of optimize_acqf
    raw_samples: int = 512          # Sobol points scored to choose the starts
    maxiter: int = 200              # L-BFGS-B iterations per start
    noise_free: bool = False        # true: noise fixed at noise_floor; false: learned noise
    noise_floor: float = 1e-5       # fixed noise variance, standardised units (noise_free only)
    duplicate_tol: float = 1e-4     # sup-norm distance (unit box) that counts as a repeat
    kernel: str = "ard"             # ard: BoTorch's dimension-scaled ARD Matérn | isotropic: Kim & Sanz-Alonso's

    POSITIVE = ("num_restarts", "raw_samples", "maxiter", "noise_floor")
    NON_NEGATIVE = ("duplicate_tol",)
    CHOICES = {"kernel": KERNELS}

    def validate(self) -> None:
        super().validate()
        if self.raw_samples < self.num_restarts:
            raise MethodError("method_params.raw_samples: must be at least num_restarts "
                              f"({self.num_restarts}), got {self.raw_samples}")


@dataclass
class GPEISettings(GPSettings):
    """GP-EI: LogExpectedImprovement, learned noise."""


@dataclass
class GPUCBSettings(GPSettings):
    """GP-UCB: μ + √β σ; BoTorch's β (β = 4 ⇔ β^{1/2} = 2, Kim & Sanz-Alonso's benchmarks)."""

    beta: float = 4.0

    NON_NEGATIVE = GPSettings.NON_NEGATIVE + ("beta",)


@dataclass
class GPUCBPlusSettings(GPUCBSettings):
    """GP-UCB+: GP-UCB points alternating with uniform random points; noise-free GP."""

    noise_free: bool = True


@dataclass
class ExploitSettings(GPSettings):
    """EXPLOIT / EXPLOIT+: posterior-mean argmax; noise-free GP."""

    noise_free: bool = True


class GPBO(Optimizer):
    """Base of the GP methods; subclasses set ``acquisition`` and ``random_exploration``."""

    name = "gp"
    Settings = GPSettings
    acquisition = "ei"               # ei | ucb | mean
    random_exploration = False       # the "+" methods: alternate with uniform random points
    SMOKE_PARAMS = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        self.asked_told = 0        # asked points told so far (initial-design tells excluded)
        self._pending = False      # an ask awaits its tell
        self.model = None          # the last fitted GP (rebuilt from the data at every ask)
        self.last_role = "optimizer"

    # -- the role sequence ----------------------------------------------------------------------------
    def next_role(self) -> str:
        if self.random_exploration and self.asked_told % 2 == 1:
            return EXPLORATION
        return "optimizer"

    def ask(self) -> np.ndarray:
        x = super().ask()
        self._pending = True
        return x

    def tell(self, x: np.ndarray, y: float | None, c: np.ndarray | None = None) -> None:
        super().tell(x, y, c)
        if self._pending:
            self.asked_told += 1
            self._pending = False

    # -- proposals ------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        self.last_role = self.next_role()
        X, y = self.observed()
        evaluated = self.evaluated_unit()
        if self.last_role == EXPLORATION or len(y) == 0:
            rng = self.rng("exploration")
            u = rng.random(self.domain.dim)
            while is_duplicate(u, evaluated, self.settings.duplicate_tol):
                u = rng.random(self.domain.dim)
            return self.domain.from_unit(u)
        return self.domain.from_unit(self._acquisition_argmax(X, y, evaluated))

    def _acquisition_function(self, model, y: np.ndarray):
        if self.acquisition == "ei":
            return LogExpectedImprovement(model, best_f=float(-np.min(y)))
        if self.acquisition == "ucb":
            return UpperConfidenceBound(model, beta=self.settings.beta)
        return PosteriorMean(model)

    def _acquisition_argmax(self, X: np.ndarray, y: np.ndarray, evaluated: np.ndarray) -> np.ndarray:
        s = self.settings
        d = self.domain.dim
        dtype = torch.float64
        seed = derived_seed(self.seed, self.name, self.n_told, "botorch")
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            self.model = fit_gp(self.domain.to_unit(X), y, noise_free=s.noise_free, noise_floor=s.noise_floor,
                                dtype=dtype, device=self.device, kernel=s.kernel)
            acq = self._acquisition_function(self.model, y)
            bounds = torch.stack([torch.zeros(d, dtype=dtype), torch.ones(d, dtype=dtype)]).to(self.device)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizationWarning)
                # BoTorch retries a failed L-BFGS-B start itself (seeded, inside this fork_rng).
                warnings.filterwarnings("ignore", message="Optimization failed", category=RuntimeWarning)
                # A flat acquisition over the raw samples (a GP whose lengthscale collapsed to the
                # data's spacing: the mean is the prior's between the points) makes BoTorch start
                # from random raw samples, which is what we would do; the warning would flood the run.
                warnings.simplefilter("ignore", BadInitialCandidatesWarning)
                candidates, values = optimize_acqf(
                    acq, bounds=bounds, q=1, num_restarts=s.num_restarts, raw_samples=s.raw_samples,
                    options={"seed": seed % (2**31), "maxiter": s.maxiter}, return_best_only=False,
                )
            candidates = candidates.reshape(-1, d).detach().cpu().double().numpy().clip(0.0, 1.0)
            values = values.reshape(-1).detach().cpu().double().numpy()
            choice = _best_new(candidates, values, evaluated, s.duplicate_tol)
            if choice is not None:
                return choice
            # Every restart converged onto an evaluated design: look just beside the optima,
            # then over a fresh pool.
            for pool in (_nudged(candidates, evaluated, s.duplicate_tol),
                         sobol_unit(s.raw_samples, d, self.seed, self.name, self.n_told, "fallback-pool")):
                if len(pool) == 0:
                    continue
                with torch.no_grad():
                    pool_values = acq(torch.as_tensor(pool, dtype=dtype, device=self.device).unsqueeze(1))
                choice = _best_new(pool, pool_values.detach().cpu().double().numpy(), evaluated, s.duplicate_tol)
                if choice is not None:
                    return choice
        return pool[farthest_from(pool, evaluated)]

    # -- checkpoints ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"asked_told": self.asked_told}

    def load_state_dict(self, state: dict) -> None:
        self.asked_told = int(state.get("asked_told", 0))
        self._pending = False


def _best_new(points: np.ndarray, values: np.ndarray, evaluated: np.ndarray, tol: float) -> np.ndarray | None:
    """The highest-valued row of ``points`` (n, d) that is finite and not a repeat, or None."""
    for i in np.argsort(-values, kind="stable"):
        if np.isfinite(values[i]) and not is_duplicate(points[i], evaluated, tol):
            return points[i]
    return None


class GPEI(GPBO):
    """GP-EI (BoTorch LogExpectedImprovement)."""

    name = "gp-ei"
    Settings = GPEISettings
    acquisition = "ei"


class GPUCB(GPBO):
    """GP-UCB with constant β."""

    name = "gp-ucb"
    Settings = GPUCBSettings
    acquisition = "ucb"


class GPUCBPlus(GPBO):
    """GP-UCB+ (Kim & Sanz-Alonso, Algorithm 2): UCB points alternating with uniform random points."""

    name = "gp-ucb+"
    Settings = GPUCBPlusSettings
    acquisition = "ucb"
    random_exploration = True


class ExploitPlus(GPBO):
    """EXPLOIT+ (Kim & Sanz-Alonso, Algorithm 3): posterior-mean argmax alternating with random points."""

    name = "exploit+"
    Settings = ExploitSettings
    acquisition = "mean"
    random_exploration = True


class Exploit(GPBO):
    """EXPLOIT: the posterior-mean argmax alone (the paper's greedy baseline)."""

    name = "exploit"
    Settings = ExploitSettings
    acquisition = "mean"
