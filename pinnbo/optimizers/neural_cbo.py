"""Neural-CBO: constrained Bayesian optimisation with neural networks, EI under LCB constraints
(Phan-Trong, Tran-The, Gupta; docs/algorithms.md, "Neural-CBO").

min f(x) s.t. c_i(x) <= 0, coupled evaluation. One NTK network per black-box output
(:class:`pinnbo.models.ntk.NTKNetwork`, σ_a²(x) = λ g_a(x)ᵀ U_a⁻¹ g_a(x)), and (Algorithm 1)

    x_t = argmax_x EI_f(x)   s.t.  μ_ci(x) − β_c σ_ci(x) <= 0 for every i,
    EI_f(x) = ν σ_f (z Φ(z) + φ(z)),  z = (f_best − μ_f)/(ν σ_f),

with f_best the lowest current mean over the designs observed feasible. Until one is feasible, and
whenever no candidate passes the LCB test, the candidate with the highest probability of
feasibility Π_i Φ(−μ_ci/σ_ci); known constraints are exact and never violated while a candidate
satisfies them. The candidates: a Sobol pool plus perturbations of the four best designs, and the
EI winner refined by rounds of Gaussian steps and bound snaps under the same mask (a hard LCB mask
leaves EI no gradient at its edge, where constrained optima sit).

Each network's mean is corrected by a GP of its residuals (``residual_gp``,
:mod:`pinnbo.models.residual_gp`): μ_a + m_r and σ_a² = σ_r² + ρ_r σ_a,net², so the means
interpolate the data and σ vanishes there while the network's σ keeps the exploration far from it.
``physics``: the objective is PINN-BO's PINN (``pinn:`` its settings, the problem's PDE) with the
Bayesian last layer's σ (:mod:`pinnbo.models.last_layer`).

Decided (measured, docs/archive/benchmarks.md): β_c = 0.5 (the authors' code; the theory's is
huge), ν = 3, features g at the trained θ (the authors' code; at θ0 σ collapses after a few dozen
points), bias scale 1 and inputs in [−1, 1] (even shapes such as a disc constraint are otherwise
fitted badly), width 64, a Yeo-Johnson warp of the objective (a heavy right tail otherwise squeezes
the designs that matter together), 50 L-BFGS iterations after each fit's Adam steps.

With designs still being evaluated (asynchronous runs), their features join every network's U for
the proposal (the variances given observations there, exact without their values), so EI and the
constraints' LCBs no longer favour them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch

from pinnbo.acquisition.analytic import log_expected_improvement, log_probability_of_feasibility
from pinnbo.acquisition.search import (candidate_pool, farthest_from, is_duplicate, perturbation_search,
                                      tiered_order)
from pinnbo.errors import MethodError
from pinnbo.models.gp import GPPredictor
from pinnbo.models.ntk import NTKNetwork, unit_to_z
from pinnbo.models.pinn import PINNSettings, PINNSurrogate
from pinnbo.models.residual_gp import fit_residual_gp
from pinnbo.models.transforms import power_warp, standardise
from pinnbo.optimizers.base import DTYPES, MethodSettings, Optimizer
from pinnbo.streams import derived_seed, sobol_unit, torch_generator

POLISH_ITERATIONS = 50      # L-BFGS iterations after each network's Adam steps
BIAS_SCALE = 1.0            # β of the NTK layers' biases (Neural-BO: 0.1)
LOCAL_CANDIDATES = 256      # Gaussian perturbations of the 4 best designs in the pool ...
LOCAL_SCALE = 0.02          # ... with this standard deviation (unit box)
REFINE_ROUNDS = 6           # rounds of the EI winner's refinement ...
REFINE_CANDIDATES = 64      # ... of this many perturbations each
RESIDUAL_FIT_TOLERANCE = 1e-6


@dataclass
class NeuralCBOSettings(MethodSettings):
    """Documented defaults of Neural-CBO (override with ``method_params`` in a case)."""

    constraint_beta: float = 0.5           # β_c of LCB_i = μ_i − β_c σ_i <= 0 (the authors' code)
    exploration_scale: float = 3.0         # ν: EI uses ν σ_f (paper: 1)
    hidden: tuple[int, ...] = (64,)        # hidden widths of every NTK network
    regularization: float = 1e-3           # λ: prior precision in U and weight of ½λ‖θ − θ0‖²
    initial_steps: int = 400               # Adam steps of each network's first fit
    steps_per_iteration: int = 50          # Adam steps per later fit (warm start)
    learning_rate: float = 1e-2
    n_candidates: int = 2048               # scrambled Sobol candidates per step
    residual_gp: bool = True               # correct each network by a GP of its residuals (module docstring)
    duplicate_tol: float = 1e-4            # sup-norm distance (unit box) that counts as a repeat
    dtype: str = "float64"
    physics: bool = False                  # the objective is PINN-BO's PINN (needs the problem's PDE) ...
    pinn: PINNSettings = field(default_factory=PINNSettings)   # ... with these settings

    POSITIVE = ("regularization", "learning_rate", "n_candidates")
    NON_NEGATIVE = ("constraint_beta", "exploration_scale", "duplicate_tol", "initial_steps", "steps_per_iteration")
    CHOICES = {"dtype": tuple(DTYPES)}
    INTERNAL = ("learning_rate", "n_candidates", "residual_gp", "duplicate_tol")
    WIDTHS = ("hidden",)


class NeuralCBO(Optimizer):
    """Neural-CBO ask/tell optimiser (minimises f subject to every c_i <= 0)."""

    name = "neural-cbo"
    constrained_method = True
    Settings = NeuralCBOSettings
    residual_only = True
    handles_constraints = True
    SMOKE_PARAMS = {"hidden": [16], "initial_steps": 20, "steps_per_iteration": 5, "n_candidates": 128,
                    "pinn": {"hidden": [16, 16], "initial_steps": 20, "steps_per_iteration": 5,
                             "collocation_points": 64, "collocation_batch": 32}}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu",
                 constraints=()):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter,
                         device=device, constraints=constraints)
        s: NeuralCBOSettings = self.settings
        self.dtype = DTYPES[s.dtype]
        if s.physics and pde is None:
            raise MethodError("method_params.physics: the problem declares no PDE")
        if s.physics:
            self.objective = PINNSurrogate(domain, self.seed, residual=pde.compile(), settings=s.pinn,
                                           collocation_filter=collocation_filter, dtype=self.dtype, device=self.device,
                                           init_keys=("network-init", "objective"))
        else:
            self.objective = self._ntk_network("objective")
        self.constraint_nets = [self._ntk_network("constraint", self.constraints[i].name) for i in self.blackbox]
        self.networks = ([] if s.physics else [self.objective]) + self.constraint_nets
        self._absorbed = 0             # told entries (failed included) already in every U
        self._before: tuple[int, dict] | None = None   # (step, networks before that step's training)
        self._residual: GPPredictor | None = None      # this step's GP of the networks' residuals
        self._residual_cache = None    # (predictor, unit points, their moments): the last evaluation
        self._residual_fits: list[tuple[int, dict[str, torch.Tensor]]] = []
        self.last_mode = ""            # "ei" | "feasibility" | "start": what chose the last proposal

    def _ntk_network(self, *keys: str) -> NTKNetwork:
        s = self.settings
        return NTKNetwork(self.domain.dim, torch_generator(self.seed, "network-init", *keys), hidden=s.hidden,
                          regularization=s.regularization, learning_rate=s.learning_rate,
                          initial_steps=s.initial_steps, steps_per_iteration=s.steps_per_iteration,
                          features_at="current", bias_scale=BIAS_SCALE, polish_iterations=POLISH_ITERATIONS,
                          dtype=self.dtype, device=self.device)

    def _known_values(self, unit: np.ndarray) -> np.ndarray:
        """Known constraints at unit-box points (N, d) → (N, K_known), exact."""
        X = self.domain.from_unit(unit)
        cols = [np.asarray(self.constraints[i].function(X), dtype=np.float64).reshape(len(X)) for i in self.known]
        return np.stack(cols, axis=1) if cols else np.zeros((len(X), 0))

    def _known_violation(self, unit: np.ndarray, violation_scale: np.ndarray) -> np.ndarray:
        """Known constraints' total violation at unit points (N, d) → (N,), each in units of its
        observed std (``violation_scale``); 0 where satisfied."""
        if not self.known:
            return np.zeros(len(unit))
        return (np.maximum(self._known_values(unit), 0.0) / violation_scale[self.known]).sum(axis=1)

    def _lcb_feasible(self, mu_c: np.ndarray, sigma_c: np.ndarray) -> np.ndarray:
        return np.all(mu_c - self.settings.constraint_beta * sigma_c <= 0.0, axis=1)

    # -- the surrogates ---------------------------------------------------------------------------------------
    def _fit(self, X: np.ndarray, y: np.ndarray, C: np.ndarray) -> dict:
        """Train every network on its standardised output; returns the output scalings."""
        unit = self.domain.to_unit(X)
        Z = unit_to_z(unit, 1.0, self.dtype, self.device)
        scalings: dict = {}
        self._residual = None
        if self.settings.physics:
            target = y
            scalings["objective"] = self.objective.fit(
                X, y, torch_generator(self.seed, self.name, self.ask_index, "collocation-batches"))
        else:
            target = power_warp(y)   # monotone: the same designs are best
            scalings["objective"] = standardise(target)
            self.objective.fit(Z, self._targets(target, scalings["objective"]))
        scalings["constraints"] = []
        for net, i in zip(self.constraint_nets, self.blackbox):
            scaling = standardise(C[:, i])
            net.fit(Z, self._targets(C[:, i], scaling))
            scalings["constraints"].append(scaling)
        new = [x for x, v in zip(self.X[self._absorbed:], self.y[self._absorbed:]) if v is not None]
        Z_new = unit_to_z(self.domain.to_unit(np.stack(new)), 1.0, self.dtype, self.device) if new else Z[:0]
        for net in self.networks:
            net.absorb(Z_new, Z)
        self._absorbed = self.n_told
        if self.settings.residual_gp and len(y) > 1:
            self._fit_residuals(unit, X, target, C, scalings)
        return scalings

    def _fit_residuals(self, unit: np.ndarray, X: np.ndarray, target: np.ndarray, C: np.ndarray,
                       scalings: dict) -> None:
        """One batched GP of every network's residuals at the observed designs, standardised: column
        0 the objective's ỹ − μ_f, then each black-box constraint's (:meth:`_corrected`)."""
        mean, std = scalings["objective"]
        mu_f, _ = self._objective_moments(unit, X)
        columns = [(target - mean) / std - mu_f]
        if self.constraint_nets:
            mu_c, _ = self._constraint_moments(unit, scalings["constraints"])
            for k, (i, (_, c_std)) in enumerate(zip(self.blackbox, scalings["constraints"])):
                columns.append((C[:, i] - mu_c[:, k]) / c_std)
        model, self._residual_fits = fit_residual_gp(
            unit, np.column_stack(columns), self._residual_fits, self.n_told,
            derived_seed(self.seed, self.name, self.ask_index, "residual-gp"), tolerance=RESIDUAL_FIT_TOLERANCE,
            device=self.device)
        self._residual = GPPredictor(model)

    def _residual_moments(self, unit: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """The residual GP's mean, σ and remaining fraction of its prior variance at unit points (N, d),
        each (N, 1 + K_blackbox); None without one this step. The constraints and the objective score
        the same candidates in turn: one evaluation serves both."""
        if self._residual is None:
            return None
        cached = self._residual_cache
        if cached is not None and cached[0] is self._residual and cached[1].shape == unit.shape \
                and np.array_equal(cached[1], unit):
            return cached[2]
        x = torch.as_tensor(unit, dtype=torch.float64, device=self.device)
        parts = zip(*(self._residual(x[i:i + 1024]) for i in range(0, len(x), 1024)))
        moments = tuple(np.concatenate(p) for p in parts)
        self._residual_cache = (self._residual, np.array(unit, copy=True), moments)
        return moments

    @staticmethod
    def _corrected(mu: torch.Tensor, var: torch.Tensor, residual, column: int) -> tuple[np.ndarray, np.ndarray]:
        """A network's (μ, σ²) at N points → (μ + m_r, √(σ_r² + ρ σ²)) as numpy, standardised units."""
        mu = mu.double().cpu().numpy()
        sigma = var.double().clamp_min(0).sqrt().cpu().numpy()
        if residual is None:
            return mu, sigma
        mean, std, remaining = (r[:, column] for r in residual)
        return mu + mean, np.sqrt(std ** 2 + remaining * sigma ** 2)

    def _targets(self, values: np.ndarray, scaling: tuple[float, float]) -> torch.Tensor:
        mean, std = scaling
        return torch.as_tensor((values - mean) / std, dtype=self.dtype, device=self.device)

    def _objective_moments(self, unit: np.ndarray, X_obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """μ_f and σ_f at unit points (N, d), standardised objective units."""
        if not self.settings.physics:
            return self._corrected(*self.objective.mean_and_variance(unit_to_z(unit, 1.0, self.dtype, self.device),
                                                                     self._pending_z()),
                                   self._residual_moments(unit), 0)
        # designs being evaluated join U too: the variance given observations there (exact, no value)
        given = np.concatenate([X_obs, np.asarray(self.pending).reshape(-1, X_obs.shape[1])])
        mu, var = self.objective.mean_and_variance(
            torch.as_tensor(self.domain.from_unit(unit), dtype=self.dtype, device=self.device),
            torch.as_tensor(given, dtype=self.dtype, device=self.device))
        return self._corrected(mu, var, self._residual_moments(unit), 0)

    def _pending_z(self) -> torch.Tensor | None:
        """The designs being evaluated in the NTK networks' coordinates, or None."""
        return unit_to_z(self.pending_unit(), 1.0, self.dtype, self.device) if self.pending else None

    def _constraint_moments(self, unit: np.ndarray, scalings: list) -> tuple[np.ndarray, np.ndarray]:
        """μ_ci and σ_ci of the black-box constraints at unit points (N, d), in their own units."""
        mu = np.zeros((len(unit), len(self.constraint_nets)))
        sigma = np.zeros((len(unit), len(self.constraint_nets)))
        if not self.constraint_nets:
            return mu, sigma
        Z = unit_to_z(unit, 1.0, self.dtype, self.device)
        residual = self._residual_moments(unit)
        for k, (net, (mean, std)) in enumerate(zip(self.constraint_nets, scalings)):
            m, s = self._corrected(*net.mean_and_variance(Z, self._pending_z()), residual, 1 + k)
            mu[:, k] = mean + std * m
            sigma[:, k] = std * s
        return mu, sigma

    # -- ask --------------------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        s = self.settings
        d = self.domain.dim
        X, y, C = self.observed_constrained()
        evaluated = self.evaluated_unit()
        if len(y) == 0:   # nothing to learn from: the first known-feasible point of a Sobol pool
            self.last_mode = "start"
            pool = sobol_unit(max(s.n_candidates, 1), d, self.seed, self.name, self.ask_index, "start")
            violation = np.maximum(self._known_values(pool), 0.0).sum(axis=1)
            first = next((i for i in np.argsort(violation, kind="stable")
                          if not is_duplicate(pool[i], evaluated, self.duplicate_tol)), 0)
            return self.domain.from_unit(pool[first])
        # ask() twice without a tell: train from the same state as the first time.
        if self._before is not None and self._before[0] == self.n_told:
            self._load_networks(self._before[1])
        else:
            self._before = (self.n_told, self._network_states())
        scalings = self._fit(X, y, C)

        violation_scale = np.array([standardise(C[:, j])[1] for j in range(C.shape[1])])
        observed_violation = (np.maximum(C, 0.0) / violation_scale).sum(axis=1) if C.shape[1] else np.zeros(len(y))
        feasible = observed_violation == 0.0
        # Candidates: Sobol pool + perturbations of the 4 best designs (feasible by y, then least violation).
        rank = np.lexsort((np.where(feasible, y, 0.0), observed_violation))
        seed = derived_seed(self.seed, self.name, self.ask_index, "candidates") % (2**31)
        pool = candidate_pool(d, seed, s.n_candidates, self.domain.to_unit(X[rank[:4]]), LOCAL_CANDIDATES,
                              LOCAL_SCALE, self.rng("local-candidates"))

        mu_c, sigma_c = self._constraint_moments(pool, scalings["constraints"])
        known_violation = self._known_violation(pool, violation_scale)
        known_ok = known_violation == 0.0
        log_pof = log_probability_of_feasibility(mu_c, sigma_c)
        mean_violation = (np.maximum(mu_c, 0.0) / violation_scale[self.blackbox]).sum(axis=1) if self.blackbox \
            else np.zeros(len(pool))
        # Tiers, best first; each ranked by its keys (last key most significant, as np.lexsort):
        # known violations are never accepted while a known-feasible candidate remains.
        last_resort = (known_violation,)
        feasibility = (mean_violation, -log_pof)
        searching = not feasible.any() and bool(self.blackbox)
        self.last_mode = "feasibility" if searching else "ei"
        if searching:
            tiers = [(known_ok, feasibility), (~known_ok, last_resort)]
        else:
            mu_f, sigma_f = self._objective_moments(pool, X)
            mu_obs, _ = self._objective_moments(self.domain.to_unit(X), X)
            f_best = float(mu_obs[feasible if feasible.any() else np.ones(len(y), dtype=bool)].min())
            log_ei = log_expected_improvement(mu_f, s.exploration_scale * sigma_f, f_best)
            lcb_ok = self._lcb_feasible(mu_c, sigma_c) & known_ok
            tiers = [(lcb_ok, (-log_ei,)), (known_ok & ~lcb_ok, feasibility), (~known_ok, last_resort)]
        for i in tiered_order(tiers):
            if not is_duplicate(pool[i], evaluated, self.duplicate_tol):
                if not searching and lcb_ok[i]:
                    return self.domain.from_unit(self._refine(pool[i], float(log_ei[i]), scalings, X, f_best,
                                                              evaluated, violation_scale))
                return self.domain.from_unit(pool[i])
        return self.domain.from_unit(pool[farthest_from(pool, evaluated)])

    def _refine(self, start: np.ndarray, start_log_ei: float, scalings: dict, X: np.ndarray, f_best: float,
                evaluated: np.ndarray, violation_scale: np.ndarray) -> np.ndarray:
        """The EI winner ``start`` (d,, unit box) refined under the same mask
        (:func:`~pinnbo.acquisition.search.perturbation_search`, the step starting at half the
        pool's Sobol spacing): a candidate must be LCB-feasible and known-feasible."""
        s = self.settings

        def score(cand: np.ndarray) -> np.ndarray:
            ok = self._lcb_feasible(*self._constraint_moments(cand, scalings["constraints"]))
            ok &= self._known_violation(cand, violation_scale) == 0.0
            mu_f, sigma_f = self._objective_moments(cand, X)
            return np.where(ok, log_expected_improvement(mu_f, s.exploration_scale * sigma_f, f_best), -np.inf)

        return perturbation_search(start, start_log_ei, score, evaluated, self.duplicate_tol, self.rng("refine"),
                                   0.5 * s.n_candidates ** (-1.0 / self.domain.dim), REFINE_ROUNDS, REFINE_CANDIDATES)

    # -- checkpoints ------------------------------------------------------------------------------------------
    def _network_states(self) -> dict:
        return {"objective": self.objective.state_dict(),
                "constraints": [net.state_dict() for net in self.constraint_nets]}

    def _load_networks(self, state: dict) -> None:
        self.objective.load_state_dict(state["objective"])
        for net, st in zip(self.constraint_nets, state["constraints"]):
            net.load_state_dict(st)
        self._absorbed = 0   # load_state_dict reset every U: rebuild from the told data

    def state_dict(self) -> dict:
        # θ0 comes from the seed and U from the told data (rebuilt on the next ask).
        return {**self._network_states(), "before": copy.deepcopy(self._before),
                "residual_fits": copy.deepcopy(self._residual_fits)}

    def load_state_dict(self, state: dict) -> None:
        if len(state["constraints"]) != len(self.constraint_nets):
            raise ValueError(f"checkpoint has {len(state['constraints'])} constraint networks, "
                             f"this problem {len(self.constraint_nets)}")
        self._load_networks(state)
        self._before = copy.deepcopy(state["before"])
        self._residual_fits = copy.deepcopy(state["residual_fits"])
