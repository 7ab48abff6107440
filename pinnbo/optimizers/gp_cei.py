"""GP-cEI: BoTorch's constrained expected improvement (Gardner et al. 2014), the baseline the
Neural-CBO paper compares against (docs/algorithms.md, "GP baselines").

One GP per black-box output, fitted together as a batched BoTorch ``SingleTaskGP``
(:func:`pinnbo.models.gp.fit_outputs`; output 0 the objective y, minimised, then the black-box
constraints in the problem's order), hyper-parameters refitted at every step from the previous
step's (checkpointed). Acquisition, maximised with ``optimize_acqf``:

- some observed design is feasible: ``LogConstrainedExpectedImprovement``, best_f the best feasible
  observed value, i.e. log EI(x) + Σ_i log P(c_i(x) <= 0);
- none yet: ``LogProbabilityOfFeasibility`` (EI has no incumbent; first find the feasible set);
- no black-box constraint: ``LogExpectedImprovement``.

Known constraints are exact, so they are applied exactly: the restarts start from the best
known-feasible points of a Sobol pool (BoTorch's Boltzmann selection) and the proposal is the best
candidate that satisfies every known constraint and repeats no evaluated design. The acquisitions
take their moments from flat chunks of points (:mod:`pinnbo.acquisition.analytic`).

With designs still being evaluated (asynchronous runs), the GPs are conditioned on their own means
there (:func:`pinnbo.models.gp.conditioned_on_pending`): the variance is exactly the one given
observations at those designs, the means unchanged, so the constrained EI there drops to nearly
zero (Ginsbourger et al.'s "kriging believer").
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from pinnbo.acquisition.analytic import FastLogCEI, FastLogEI, FastLogPoF
from pinnbo.acquisition.mixed import snapped_unit
from pinnbo.acquisition.optimize import maximize_acquisition
from pinnbo.acquisition.search import best_allowed
from pinnbo.models.gp import conditioned_on_pending, earlier_fit, fit_outputs, remember_fit
from pinnbo.optimizers.base import Optimizer
from pinnbo.optimizers.gp_settings import GPSettings
from pinnbo.streams import derived_seed, sobol_unit

#: L-BFGS-B stops when the relative decrease of −log ML falls below this (warm-started fits).
FIT_TOLERANCE = 1e-6


class GPCEI(Optimizer):
    """GP constrained expected improvement (BoTorch) ask/tell optimiser (minimises)."""

    name = "gp-cei"
    constrained_method = True
    Settings = GPSettings
    handles_constraints = True
    variable_kinds = ("real", "log", "integer", "choice")
    SMOKE_PARAMS = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu",
                 constraints=()):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter,
                         device=device, constraints=constraints)
        self.model = None           # the last fitted GP
        self.last_mode = ""         # "cei" | "feasibility" | "ei": the acquisition of the last proposal
        # Hyper-parameters of the two latest fits, (step, named parameters): a step starts from the
        # latest fit of an earlier step, so asking twice before a tell starts from the same values.
        self._fits: list[tuple[int, dict[str, torch.Tensor]]] = []

    # -- proposals ----------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        s = self.settings
        d = self.domain.dim
        X, y, C = self.observed_constrained()
        evaluated = self.evaluated_unit()
        if len(y) == 0:
            self.last_mode = "start"
            pool = snapped_unit(self.domain, sobol_unit(s.raw_samples, d, self.seed, self.name, self.ask_index, "start"))
            return self.domain.from_unit(best_allowed(pool, np.zeros(len(pool)), self.known_violation(pool),
                                                       evaluated, self.duplicate_tol))
        feasible = np.all(C <= 0.0, axis=1) if C.shape[1] else np.ones(len(y), dtype=bool)
        Y = np.column_stack([y] + [C[:, i] for i in self.blackbox])
        seed = derived_seed(self.seed, self.name, self.ask_index, "botorch")
        dtype = torch.float64
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            self.model = fit_outputs(self.domain.to_unit(X), Y, noise_free=s.noise_free and self.observation_noise is None,
                                     noise_floor=s.noise_floor,
                                     start=earlier_fit(self._fits, self.n_told), tolerance=FIT_TOLERANCE, dtype=dtype,
                                     device=self.device, categorical=self.domain.dims("choice"))
            self._fits = remember_fit(self._fits, self.n_told, self.model)
            # Designs being evaluated: the GPs' exact posterior variance given observations there.
            self.model = conditioned_on_pending(self.model, self.pending_unit())
            bounds = {i + 1: (None, 0.0) for i in range(len(self.blackbox))}
            if not self.blackbox:
                self.last_mode = "ei"
                best = float(np.min(y[feasible])) if feasible.any() else float(np.min(y))
                acq = FastLogEI(self.model, best_f=best, maximize=False)
            elif feasible.any():
                self.last_mode = "cei"
                acq = FastLogCEI(self.model, best_f=float(np.min(y[feasible])), objective_index=0,
                                 constraints=bounds, maximize=False)
            else:
                self.last_mode = "feasibility"
                acq = FastLogPoF(self.model, constraints=bounds)
            return self.domain.from_unit(self._maximise(acq, evaluated, seed))

    def _maximise(self, acq, evaluated: np.ndarray, seed: int) -> np.ndarray:
        """argmax of ``acq`` over the box among known-feasible, new designs (module docstring)."""
        s = self.settings
        pool = sobol_unit(s.raw_samples, self.domain.dim, self.seed, self.name, self.ask_index, "raw-samples")
        return maximize_acquisition(acq, pool, evaluated, num_restarts=s.num_restarts, maxiter=s.maxiter,
                                    duplicate_tol=self.duplicate_tol, violation=self.known_violation,
                                    device=self.device, domain=self.domain)

    # -- checkpoints ----------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"fits": copy.deepcopy(self._fits)}

    def load_state_dict(self, state: dict) -> None:
        self._fits = copy.deepcopy(state["fits"])
