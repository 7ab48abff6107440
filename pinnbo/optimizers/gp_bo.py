"""GP baselines: GP-EI, GP-UCB, and Kim & Sanz-Alonso's GP-UCB+, EXPLOIT+ and EXPLOIT
(docs/algorithms.md, "GP baselines").

A BoTorch SingleTaskGP of −y (:func:`pinnbo.models.gp.fit_gp`), hyper-parameters refitted by
maximum marginal likelihood at every step; acquisitions maximised with ``optimize_acqf``:

- ``gp-ei``: LogExpectedImprovement with best_f the best observation; learned noise.
- ``gp-ucb``: UpperConfidenceBound μ + √β σ, β = 4 (β^½ = 2 as in Kim & Sanz-Alonso); learned noise.
- ``gp-ucb+``: each iteration the GP-UCB point and a point drawn uniformly in the box
  (Kim & Sanz-Alonso, Algorithm 2); noise-free GP.
- ``exploit+``: the same with the posterior-mean argmax (β = 0) instead of UCB (Algorithm 3).
- ``exploit``: EXPLOIT+ without the random points.

One point per ask: the "+" methods' asks alternate, the ask after an acquisition point returning
the random point with phase ``exploration``, so a run reports the best with and without them.
Which kind comes next is decided by how many asked points have been told or are pending
(initial-design tells do not count), so ``ask`` stays repeatable; the count is checkpointed. The
budget counts observations, so a "+" run makes half as many acquisition steps.

With pending designs (asynchronous runs) GP-EI and GP-UCB maximise BoTorch's MC q-acquisitions,
qLogExpectedImprovement and qUpperConfidenceBound, of the one new point jointly with ``X_pending``
(:mod:`pinnbo.acquisition.pending`), and EXPLOIT qSimpleRegret: its posterior mean alone would
propose the same design again beside each pending one.

If the best restart repeats an evaluated design (a noise-free posterior mean peaks at its
incumbent), the next-best restart is taken, then points nudged just beyond ``duplicate_tol`` of the
optimum, then the best point of a fresh Sobol pool. Every call that may touch the global torch RNG
runs inside ``torch.random.fork_rng`` seeded from the step's stream.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from botorch.acquisition import LogExpectedImprovement, PosteriorMean, UpperConfidenceBound
from botorch.exceptions.warnings import BadInitialCandidatesWarning, OptimizationWarning
from botorch.optim import optimize_acqf

from pinnbo.acquisition.mixed import maximize_mixed, snapped_unit
from pinnbo.acquisition.optimize import best_new_or_beside
from pinnbo.acquisition.pending import pending_log_ei, pending_mean, pending_ucb
from pinnbo.acquisition.search import is_duplicate
from pinnbo.models.gp import KERNELS, earlier_fit, fit_gp, remember_fit
from pinnbo.errors import MethodError
from pinnbo.optimizers.base import Optimizer
from pinnbo.optimizers.gp_settings import GPSettings
from pinnbo.streams import derived_seed, sobol_unit

#: The phase of the "+" methods' uniformly random points.
EXPLORATION = "exploration"


@dataclass
class GPBOSettings(GPSettings):
    """The GP methods of this module: the shared settings and the kernel."""

    kernel: str = "ard"             # ard: BoTorch's dimension-scaled ARD Matérn | isotropic: Kim & Sanz-Alonso's

    CHOICES = {"kernel": KERNELS}


@dataclass
class GPEISettings(GPBOSettings):
    """GP-EI: LogExpectedImprovement, learned noise."""


@dataclass
class GPUCBSettings(GPBOSettings):
    """GP-UCB: μ + √β σ; BoTorch's β (β = 4 ⇔ β^{1/2} = 2, Kim & Sanz-Alonso's benchmarks)."""

    beta: float = 4.0

    NON_NEGATIVE = GPBOSettings.NON_NEGATIVE + ("beta",)


@dataclass
class GPUCBPlusSettings(GPUCBSettings):
    """GP-UCB+: GP-UCB points alternating with uniform random points; noise-free GP."""

    noise_free: bool = True


@dataclass
class ExploitSettings(GPBOSettings):
    """EXPLOIT / EXPLOIT+: posterior-mean argmax; noise-free GP."""

    noise_free: bool = True


class GPBO(Optimizer):
    """Base of the GP methods; subclasses set ``acquisition`` and ``random_exploration``."""

    name = "gp"
    Settings = GPBOSettings
    variable_kinds = ("real", "log", "integer", "choice")
    acquisition = "ei"               # ei | ucb | mean
    random_exploration = False       # the "+" methods: alternate with uniform random points
    SMOKE_PARAMS = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        if self.domain.dims("choice") and self.settings.kernel == "isotropic":
            raise MethodError("method_params.kernel: isotropic has one lengthscale for every input and no form for "
                              f"choices ({self.domain.names[self.domain.dims('choice')[0]]}); use ard")
        self.asked_told = 0        # asked points told so far (initial-design tells excluded)
        self._pending = False      # an ask awaits its tell
        self.model = None          # the last fitted GP (rebuilt from the data at every ask)
        # With choice variables, the mixed GP's latest fits (step, hyper-parameters): each step's
        # fit starts from an earlier step's, as gp-cei's (checkpointed).
        self._fits: list[tuple[int, dict]] = []
        self.phase = "optimizer"

    # -- the role sequence ----------------------------------------------------------------------------
    def next_phase(self) -> str:
        if self.random_exploration and (self.asked_told + self.n_pending_proposed) % 2 == 1:
            return EXPLORATION
        return "optimizer"

    def ask(self, pending=()) -> np.ndarray:
        x = super().ask(pending)
        self._pending = True
        return x

    def tell(self, x: np.ndarray, y: float | None, c: np.ndarray | None = None, *,
             proposed: bool | None = None, sd: float | None = None) -> None:
        super().tell(x, y, c, sd=sd)
        if self._pending if proposed is None else proposed:
            self.asked_told += 1
        if proposed is None:
            self._pending = False

    # -- proposals ------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        self.phase = self.next_phase()
        X, y = self.observed()
        evaluated = self.evaluated_unit()
        if self.phase == EXPLORATION or len(y) == 0:
            rng = self.rng("exploration")
            u = self._valid(rng.random(self.domain.dim))
            while is_duplicate(u, evaluated, self.duplicate_tol):
                u = self._valid(rng.random(self.domain.dim))
            return self.domain.from_unit(u)
        return self.domain.from_unit(self._acquisition_argmax(X, y, evaluated))

    def _valid(self, u: np.ndarray) -> np.ndarray:
        """``u`` (unit) moved to a valid design: discrete variables at a level (:mod:`pinnbo.space`)."""
        return snapped_unit(self.domain, u)

    def _acquisition_function(self, model, y: np.ndarray, seed: int):
        if self.pending and self.acquisition == "ei":
            return pending_log_ei(model, float(-np.min(y)), self.pending_unit(), seed, self.device)
        if self.pending and self.acquisition == "ucb":
            return pending_ucb(model, self.settings.beta, self.pending_unit(), seed, self.device)
        if self.pending:
            return pending_mean(model, self.pending_unit(), seed, self.device)
        if self.acquisition == "ei":
            return LogExpectedImprovement(model, best_f=float(-np.min(y)))
        if self.acquisition == "ucb":
            return UpperConfidenceBound(model, beta=self.settings.beta)
        return PosteriorMean(model)

    def _acquisition_argmax(self, X: np.ndarray, y: np.ndarray, evaluated: np.ndarray) -> np.ndarray:
        s = self.settings
        d = self.domain.dim
        dtype = torch.float64
        seed = derived_seed(self.seed, self.name, self.ask_index, "botorch")
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            # Declared observation noise overrides a noise-free setting: a known sd fixes the
            # likelihood's noise, "learned" fits it.
            categorical = self.domain.dims("choice")
            self.model = fit_gp(self.domain.to_unit(X), y, noise_free=s.noise_free and self.observation_noise is None,
                                noise_floor=s.noise_floor, dtype=dtype, device=self.device, kernel=s.kernel,
                                categorical=categorical, noise_sd=self.known_noise(),
                                start=earlier_fit(self._fits, self.n_told) if categorical else None)
            if categorical:
                self._fits = remember_fit(self._fits, self.n_told, self.model)
            acq = self._acquisition_function(self.model, y, seed)
            fallback = lambda: sobol_unit(s.raw_samples, d, self.seed, self.name, self.ask_index, "fallback-pool")  # noqa: E731
            if not self.domain.numeric:
                return maximize_mixed(acq, self.domain, evaluated, raw_samples=s.raw_samples,
                                      num_restarts=s.num_restarts, maxiter=s.maxiter, duplicate_tol=self.duplicate_tol,
                                      fallback_pool=fallback, device=self.device)
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
            return best_new_or_beside(acq, candidates, values, evaluated, self.duplicate_tol, fallback, self.device)

    # -- checkpoints ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"asked_told": self.asked_told, **({"fits": copy.deepcopy(self._fits)} if self._fits else {})}

    def load_state_dict(self, state: dict) -> None:
        self.asked_told = int(state.get("asked_told", 0))
        self._fits = copy.deepcopy(state.get("fits", []))
        self._pending = False


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
