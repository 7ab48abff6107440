"""GP-EHVI: several objectives, BoTorch's log noisy expected hypervolume improvement (qLogNEHVI;
Daulton et al. 2021, Ament et al. 2023), Ax's default for multi-objective problems
(docs/algorithms.md, "Several objectives").

One GP per objective and per black-box constraint, fitted together as a batched BoTorch
``SingleTaskGP`` (:func:`pinnbo.models.gp.fit_outputs`, warm-started from the previous step's
hyper-parameters as gp-cei's; BoTorch's mixed GP with choice variables). The acquisition is the
expected improvement of the hypervolume dominated by the Pareto front of the evaluated designs,
integrated over the GPs' joint posterior at those designs ("noisy": no observed value is taken as
exact), weighted by the probability that each black-box constraint holds (c <= 0). The reference
point is the problem's or the case's; otherwise it is inferred at each step from the observed
values, as Ax does (:func:`pinnbo.pareto.inferred_reference`). Known constraints and the duplicate
rule are applied to the candidates exactly, as for gp-cei.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import torch
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from botorch.acquisition.multi_objective.objective import IdentityMCMultiOutputObjective
from botorch.exceptions.warnings import BadInitialCandidatesWarning, NumericsWarning
from botorch.sampling import SobolQMCNormalSampler
from linear_operator.utils.warnings import NumericalWarning

from pinnbo.acquisition.mixed import snapped_unit
from pinnbo.acquisition.optimize import maximize_acquisition
from pinnbo.acquisition.search import best_allowed
from pinnbo.models.gp import earlier_fit, fit_outputs, remember_fit
from pinnbo.optimizers.base import Optimizer
from pinnbo.optimizers.gp_settings import GPSettings
from pinnbo.pareto import inferred_reference
from pinnbo.streams import derived_seed, sobol_unit

#: L-BFGS-B stops when the relative decrease of −log ML falls below this (warm-started fits).
FIT_TOLERANCE = 1e-6
#: Quasi-Monte Carlo samples of the joint posterior per acquisition value.
MC_SAMPLES = 64


class GPEHVI(Optimizer):
    """qLogNEHVI on independent GPs of the objectives (and black-box constraints); minimises each."""

    name = "gp-ehvi"
    Settings = GPSettings
    handles_constraints = True
    multi_objective = True
    several_objectives_only = True
    variable_kinds = ("real", "log", "integer", "choice")
    SMOKE_PARAMS = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu",
                 constraints=()):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter,
                         device=device, constraints=constraints)
        self.model = None
        self._fits: list[tuple[int, dict[str, torch.Tensor]]] = []

    def propose(self) -> np.ndarray:
        s = self.settings
        d = self.domain.dim
        X, Y, C = self.observed_constrained()
        evaluated = self.evaluated_unit()
        if len(Y) < 2:
            pool = snapped_unit(self.domain, sobol_unit(s.raw_samples, d, self.seed, self.name, self.ask_index, "start"))
            return self.domain.from_unit(best_allowed(pool, np.zeros(len(pool)), self.known_violation(pool),
                                                       evaluated, self.duplicate_tol))
        Y = Y.reshape(len(Y), -1)
        m = Y.shape[1]
        feasible = np.all(C <= 0.0, axis=1) if C.shape[1] else np.ones(len(Y), dtype=bool)
        reference = np.asarray(self.reference, dtype=np.float64) if self.reference is not None else \
            inferred_reference(Y[feasible] if feasible.any() else Y)
        outputs = np.column_stack([-Y] + [C[:, i] for i in self.blackbox])   # maximised objectives, then c
        seed = derived_seed(self.seed, self.name, self.ask_index, "botorch")
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            unit = self.domain.to_unit(X)
            self.model = fit_outputs(unit, outputs, noise_free=s.noise_free and self.observation_noise is None,
                                     noise_floor=s.noise_floor, start=earlier_fit(self._fits, self.n_told),
                                     tolerance=FIT_TOLERANCE, device=self.device,
                                     categorical=self.domain.dims("choice"))
            self._fits = remember_fit(self._fits, self.n_told, self.model)
            constraints = [lambda Z, j=m + k: Z[..., j] for k in range(len(self.blackbox))]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NumericsWarning)
                warnings.simplefilter("ignore", NumericalWarning)   # jitter on a near-repeat (below)
                acq = qLogNoisyExpectedHypervolumeImprovement(
                    self.model, ref_point=(-reference).tolist(),
                    X_baseline=torch.as_tensor(unit, dtype=torch.float64, device=self.device),
                    sampler=SobolQMCNormalSampler(torch.Size([MC_SAMPLES]), seed=seed % (2**31)),
                    objective=IdentityMCMultiOutputObjective(outcomes=list(range(m))),
                    constraints=constraints or None, prune_baseline=True,
                    X_pending=torch.as_tensor(self.pending_unit(), dtype=torch.float64, device=self.device)
                    if self.pending else None)
            pool = sobol_unit(s.raw_samples, d, self.seed, self.name, self.ask_index, "raw-samples")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", BadInitialCandidatesWarning)
                # The joint posterior over the baseline and a candidate that nearly repeats one of its
                # designs is singular to rounding; the jitter gpytorch adds is the right answer, and
                # its warning on every such candidate would bury the live display.
                warnings.simplefilter("ignore", NumericalWarning)
                best = maximize_acquisition(acq, pool, evaluated, num_restarts=s.num_restarts, maxiter=s.maxiter,
                                            duplicate_tol=self.duplicate_tol, violation=self.known_violation,
                                            device=self.device, domain=self.domain)
            return self.domain.from_unit(best)

    def state_dict(self) -> dict:
        return {"fits": copy.deepcopy(self._fits)}

    def load_state_dict(self, state: dict) -> None:
        self._fits = copy.deepcopy(state["fits"])
