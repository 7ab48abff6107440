"""Neural-CBO: constrained Bayesian optimisation with neural networks (EI under LCB constraints).

Paper: seed 004 (Neural-CBO, Algorithm 1) / thesis ch. 4; REFERENCES §3.

Problem: min f(x) s.t. c_i(x) <= 0, i = 1..K, coupled evaluation (one query returns f and every
black-box c_i). Algorithm 1 of the paper (minimisation throughout):

    1: initialise networks v(x; θ0) (objective) and u_i(x; ω_{i,0}) (each constraint), h(x; θ0) = 0
    2: U_{f,0} = λ I, U_{c_i,0} = λ I
    for t = 1..T:
    4:   x_t = argmax_x EI_f,t(x)  s.t.  LCB_{c_i,t}(x) = μ_{c_i}(x) − β_c σ_{c_i}(x) <= 0  for all i
    5:   observe y_t = f(x_t) + ε_t, z_{i,t} = c_i(x_t) + η_{i,t}
    7:   train every network on its own output
    8:   U_{a,t} = U_{a,t−1} + g_a(x_t) g_a(x_t)ᵀ for a = f, c_1..c_K

with σ_a²(x) = λ g_a(x)ᵀ U_a⁻¹ g_a(x), g_a(x) = ∇θ a(x; θ0) (Eq. 3–4; exactly Neural-BO's variance,
:class:`pinnbo.optimizers.neural_bo.NTKNetwork`: the same MLP, training loss ½Σ(h − ỹ)² + ½λ‖θ − θ0‖²,
warm-started Adam, Sherman–Morrison U⁻¹ or its diagonal; by default g is taken at the trained θ,
``features: current``, see "Defaults"), and the expected improvement (minimisation)

    EI_f(x) = σ_f(x) (z Φ(z) + φ(z)),   z = (f_best − μ_f(x)) / σ_f(x),
    EI_f(x) = max(f_best − μ_f(x), 0)   where σ_f(x) = 0  (the paper's ρ(u, 0) guard).

The paper's approximation-error term E(m) (added to the improvement and subtracted from the LCB)
is a width-dependent constant of the theory with no computable value; it is taken as 0.

Decisions (REFERENCES §3 marks them **decide**):

- Outputs. One NTK network per black-box output: the objective and each constraint whose
  ``Constraint.function`` is None. Each output is standardised for training, ỹ = (y − mean)/std
  (std 1 if the values are constant); μ and σ are mapped back to the output's own units for the
  LCB test against 0. Every network has its own initial weights (streams ``network-init/objective``
  and ``network-init/constraint/<name>``), hence its own features and U⁻¹. Known constraints
  (``function`` given) are evaluated exactly on every candidate (σ = 0): a candidate violating one
  is never proposed while the candidate set holds one that satisfies all of them.
- Incumbent f_best: the minimum of the *current* objective mean μ_f over the observed designs that
  were observed feasible (every observed c_i <= 0, known constraints exact). The paper's μ_t^+ takes
  the minimum over all past points, infeasible ones included, which puts the bar below anything
  reachable in the feasible set and starves EI; the authors' code uses the noisy minimum of the
  feasible y, which a single lucky noise draw corrupts. The mean at feasible points is robust to
  noise and consistent with μ_f in z.
- No feasible observation yet: EI has no incumbent, so the step searches for feasibility: it
  maximises the probability of feasibility of the black-box constraints,
  log PoF(x) = Σ_i log Φ(−μ_{c_i}(x)/σ_{c_i}(x)), over the candidates that satisfy the known
  constraints (if every constraint is known, PoF is 0 or 1 and the step is EI with the incumbent
  taken over all observations instead).
- No LCB-feasible candidate (after the duplicate guard): the same rule, maximise the joint PoF. It
  is the natural continuation of the LCB test: LCB_i(x) <= 0 ⇔ Φ(−μ_i/σ_i) >= Φ(−β_c), i.e. the
  LCB-feasible set is where every constraint's PoF clears Φ(−β_c) ≈ 0.31; when none does, we take
  the candidate most likely to be feasible. Unlike the alternative Σ max(LCB_i, 0) it needs no
  common scale across constraints (each is measured in its own σ) and it still explores: at equal
  predicted violation it prefers the less certain candidate. (The authors' code picks a random
  point and then corrupts f_best; we do neither.) Ties in PoF (all −∞ in floating point) are
  broken by the smallest total standardised violation of the means.
- β_c = 0.5 (``constraint_beta``): the authors' released code. The paper's β_{c,t} comes from the
  theory (RKHS norm bound, information gain) with unknown constants and would be huge; 0.5 admits
  candidates whose mean is infeasible by up to half a standard deviation, which lets the search
  approach the feasible boundary from outside without wandering into regions known to violate.
- σ_f in EI is multiplied by ``exploration_scale`` ν = 3 (the paper's EI has ν = 1): see "Defaults".
- Candidates (Neural-BO's, :func:`pinnbo.optimizers.neural_bo.candidate_pool`): ``n_candidates``
  scrambled Sobol points + ``local_candidates`` Gaussian perturbations of the 4 best observed
  designs, best meaning feasible by objective value first, then infeasible by least total
  standardised violation (so a search for feasibility refines around the nearest misses). The
  paper scores 10 000 random points. The EI winner is then refined locally (``refine_rounds`` = 6
  rounds of ``refine_candidates`` = 64 Gaussian perturbations of the current best, the standard
  deviation starting at half the pool's Sobol spacing and halving each round, accepted only if
  LCB-feasible, known-feasible, not a repeat and higher in EI): the pool's spacing (0.02 of the box
  in 2-D, 0.34 in 7-D) otherwise bounds how precisely the optimum is located, and EI under a hard
  LCB mask has no useful gradient at the mask's edge, where constrained optima sit. Each round
  also scores ``bound snaps`` of the current best (``refine_snap``): every coordinate moved alone to
  its lower and to its upper bound, and all coordinates within the round's step of a bound moved
  to it together. Engineering optima often have active box bounds (five of the speed reducer's
  seven coordinates, the gas compressor's first), which L-BFGS-B on a smooth acquisition reaches
  by projection (as BoTorch's does) and Gaussian steps only by luck. Designs within
  ``duplicate_tol`` (sup norm, unit box) of an evaluated one are skipped
  (:func:`pinnbo.acquisition.is_duplicate`, REFERENCES §6.1).
- K = 0: plain EI with the neural mean and NTK variance (every observation is feasible).
- ``residual_gp`` (none | mean | full): a batched GP (:func:`pinnbo.optimizers.gp_cbo.fit_outputs`:
  Matérn-5/2 ARD on the unit box, ``Standardize``, learned noise, hyper-parameters by marginal
  likelihood warm-started from the previous step's, checkpointed as gp-cei's) of every network's
  residuals at the observed designs, r_a(x_i) = ỹ_a,i − μ_a(x_i) in standardised units. The
  network's mean is a global shape; it is not an interpolant. On Branin at t = 100 its mean missed
  the observed values near x* by +0.05 to +0.07 (they differ from each other by 0.005), its
  minimum sat 0.09 off x* in x2, and the proposals ringed x* at 0.07–0.4 without closing in, because
  σ_net stays ≈ 0.11 standardised units even at the data. ``mean`` adds the GP's posterior mean
  m_r(x) to μ_a (the corrected mean interpolates the data to 1e-4); ``full`` also replaces σ by
      σ_a²(x) = σ_r²(x) + ρ_r(x) σ_net²(x),   ρ_r = σ_r²(x) / k_r(x, x) ∈ [0, 1],
  the GP's σ plus the network's σ discounted by the fraction of the GP's prior variance left at x:
  at the data both vanish (EI then resolves the optimum as a GP does), far from it σ_a² →
  k_r + σ_net² (the network's out-of-sample uncertainty keeps the exploration the NTK σ gives;
  the GP's σ alone, whose prior variance is the in-sample residual variance, trapped a Branin seed
  at the disc's edge next to an infeasible minimum). The same correction applies to the
  constraints' μ and σ, hence to the LCB test, and to the PINN objective with ``physics: true``.
  ``residual_lengthscale_floor`` c (default 0: off) bounds that GP's lengthscales below by
  c n^(−1/d) (unit box, n observations, d dimensions; never below BoTorch's 0.025). A trained
  network leaves residuals that look like white noise at the data's spacing, and maximum
  likelihood explains white noise by lengthscales at the 0.025 bound (on Hartmann-6 seed 5 at
  t = 100, three of six; on the gas compressor three of four, with ρ = 1 on a whole Sobol pool).
  The floor was meant to stop that; measured with c = 0.25 at 10 seeds it did not help (Hartmann-6
  seed 5 stayed at −1.34, gas 3.25e6 against 3.22e6 without; docs/benchmarks.md), so it is off.

``physics: true``: the objective network is PINN-BO's PINN (:class:`pinnbo.optimizers.pinn_bo.
PINNSurrogate`: data + PDE-residual loss on collocation points, per-point residual scales, the
data-consistency backoff of the PDE weight, trained exactly as PINN-BO trains it), which needs the
problem's PDE. Its σ is PINN-BO's Bayesian last layer: with φ(x) the last hidden layer of the
trained PINN (its NTK features for the output weights at the current θ),
    σ_f²(x) = φ(x)ᵀ U⁻¹ φ(x),   U = λ_p I + Σ_i φ(x_i) φ(x_i)ᵀ / σ_n²
(``prior_precision`` λ_p, ``noise_variance`` σ_n², standardised units), rebuilt every step because
φ moves with θ. The PDE shapes the mean and, through φ, the variance. Constraints stay NTK
networks (the PDE is the objective's).

Reproducibility (REFERENCES §7, :mod:`pinnbo.optimizers.base`): pools, local perturbations and
collocation batches come from streams named by (seed, method, step). ``ask`` restores the networks
to their state before this step's training if it is called again before the next tell, so asking
twice returns the same design; that snapshot is part of ``state_dict``, with every network's
weights and Adam moments (U is rebuilt from the told data).

Defaults (decided; measured on 2-D problems with 4 seeds, 6 initial points and 24–34 asks, and on
Hartmann-6 (c = ‖x‖ − 1) and Ackley-5 (two constraints, REFERENCES §6.4) with 3 seeds, 14/12
initial points and budget 60; mean gap of the best feasible value to f*, lower is better;
"disc" is x + y over a disc of radius 0.06 that no initial point hits):

| setting | x+y, xy>=½ | disc | Simionescu | Branin | Hartmann-6 | Ackley-5 |
|---|---|---|---|---|---|---|
| Neural-BO's network (β_b = 0.1, s = 5, θ0 features, ν = 1, width 128) | 0.166 | 0.088 (1 never feasible) | 0.0092 | 3.90 | — | — |
| β_b = 1, s = 1, θ0 features, ν = 1, width 128 | 0.0006 | 0.040 | 0.0007 | 3.62 | 0.950 | 3.11 |
| the same, ν = 10 | 0.0010 | 0.044 | 0.0006 | 1.65 | 0.686 | 2.32 |
| current features, ν = 3, width 128 | 0.0007 | 0.036 | 0.0007 | 0.185 | 0.644 | 1.50 |
| **current features, ν = 3, width 64 (default)** | 0.0018 | 0.019 | 0.0002 | 0.166 | 0.785 | 1.83 |
| gp-cei (for reference) | 0.0001 | 0.0022 | 0.0000 | 0.0014 | 0.714 | 1.91 |

- Bias scale β_b = 1 and input scale s = 1 (``bias_scale``, ``input_scale``; Neural-BO: 0.1 and 5):
  with Neural-BO's values the tanh units are nearly odd functions of the input (β_b = 0.1) or
  saturated steps (s = 5), and the networks fit smooth even shapes badly: on 40 random points the
  test RMSE of Branin's disc constraint was 1.4 standard deviations (worse than a constant), 0.09
  with β_b = 1, s = 1 (a GP: 0.05). Constraints must be extrapolated well for the LCB test to mean
  anything.
- ``features: current`` (g at the trained θ, every parameter, U rebuilt from all observations each
  step; the authors' code) instead of the paper's θ0 features: the θ0 last-layer features of a
  smooth network span few effective directions, σ collapses after a few dozen points (max σ_f
  0.07 standardised units at t = 30 on Branin, against a mean error of 0.3) and EI becomes greedy;
  the full-gradient features keep σ meaningful longer (table: Branin 3.6 → 0.17).
- ν = 3 on top (σ_f is still optimistic); ν = 2 or 5 were no better (ν = 1 with the polish below:
  Branin 0.57 over 3 seeds, it locks onto the boundary near an infeasible minimum).
- ``objective_warp``: ``power`` (default) or ``none``: a monotone Yeo-Johnson warp of the
  standardised objective (λ by maximum likelihood, HEBO's output transform) before the network
  and its residual GP are trained; EI is taken in the warped units (the warp is monotone, so the
  incumbent is the same design). Objectives with a heavy right tail (gas: 3e6 at the optimum, over 3e7 at some of
  the box's corners) leave the designs that matter a few percent of one standard deviation apart; the warp
  spreads the low end. Measured against ``none`` at 10 seeds with ``residual_gp: full``
  (docs/benchmarks.md): better mean best feasible on Hartmann-6 (−3.306 against −2.910; the seed
  trapped at −1.34 reaches −3.322), Ackley-5 (0.21 against 0.27) and gas (3.160e6 against 3.216e6),
  equal on Simionescu, worse on Branin (one seed of ten trapped at the disc's edge next to the
  infeasible minimum, 0.467) and slightly better on the speed reducer (2997.30 against 2997.52).
  Ignored with ``physics: true`` (the PDE constrains the unwarped output).
- ``polish_iterations`` = 50 full-batch L-BFGS iterations (strong Wolfe) after each fit's Adam
  steps. Adam at lr 0.01 stops at a noise floor of the loss, and the network's error near the
  optimum, not the acquisition, limited the final precision: on Branin, seeds 0–3, 46 of 100
  evaluations fell within 1 of x* and still the best was 0.425 (f* = 0.398). Mean best on seeds
  0–3 (budget 100): no polish 0.435 (refinement alone 0.427), 200 Adam steps per fit 0.407 at 2.5×
  the time, polish 0.404 at 1.6×; Simionescu −0.07180 → −0.07194 (f* −0.072).
- Width 64 (one hidden layer; p = 64 (d + 2) + 1 features, exact U⁻¹ up to d ≈ 75): ≈ 0.15 s per
  step at t = 100 in 2-D with one black-box constraint and ≈ 0.2 s at t = 200, on one core, before
  the polish (width 128: 0.27 s, and 4× the cost of every σ² for K + 1 networks); with the polish
  and the refinement, 0.23 s per step averaged over a 100-evaluation Branin run. λ = 1e-3, 400 Adam steps for the
  first fit then 50 per step at lr 0.01, 2048 Sobol + 256 local candidates, as Neural-BO.
- The physics PINN uses PINN-BO's defaults (two layers of 64, 1024 collocation points in batches
  of 256, 600 + 60 Adam steps at lr 5e-3, λ_p = 1, σ_n² = 0.01).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from scipy.special import erfcx, log_ndtr, ndtr

from pinnbo.acquisition import farthest_from, is_duplicate
from pinnbo.optimizers.base import (
    DTYPES, MethodError, MethodSettings, Optimizer, derived_seed, sobol_unit, torch_generator,
)
from pinnbo.optimizers.gp_cbo import GPPredictor, fit_residual_gp
from pinnbo.optimizers.neural_bo import FEATURES, NTKNetwork, candidate_pool, unit_to_z, update_precisions
from pinnbo.optimizers.pinn_bo import PINNSurrogate
from pinnbo.surrogates.ntk import INVERSE_MODES


# -- the acquisition, in numpy ------------------------------------------------------------------------
def expected_improvement(mu: np.ndarray, sigma: np.ndarray, best: float) -> np.ndarray:
    """EI for minimisation: σ (z Φ(z) + φ(z)), z = (best − μ)/σ; max(best − μ, 0) where σ = 0."""
    mu, sigma = np.broadcast_arrays(np.asarray(mu, dtype=np.float64), np.asarray(sigma, dtype=np.float64))
    out = np.maximum(best - mu, 0.0)
    pos = sigma > 0
    z = (best - mu[pos]) / sigma[pos]
    out[pos] = sigma[pos] * (z * ndtr(z) + np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi))
    return out


def log_expected_improvement(mu: np.ndarray, sigma: np.ndarray, best: float) -> np.ndarray:
    """log EI without underflow (ranking far below the incumbent, where EI rounds to 0).

    log EI = log σ + log h(z), h(z) = φ(z) + z Φ(z). For z < −1, h(z) = φ(z) (1 − t R(t)) with
    t = −z and Mills' ratio R(t) = Φ(−t)/φ(t) = √(π/2) erfcx(t/√2); beyond t = 1e6 the asymptote
    h ≈ φ(z)/t². σ = 0: log max(best − μ, 0) (−∞ where there is no improvement).
    """
    mu, sigma = np.broadcast_arrays(np.asarray(mu, dtype=np.float64), np.asarray(sigma, dtype=np.float64))
    out = np.full(mu.shape, -np.inf)
    gap = best - mu
    zero = sigma <= 0
    with np.errstate(divide="ignore"):
        out[zero] = np.log(np.maximum(gap[zero], 0.0))
    pos = ~zero
    z = gap[pos] / sigma[pos]
    log_phi = -0.5 * z * z - 0.5 * np.log(2.0 * np.pi)
    log_h = np.empty_like(z)
    big = z >= -1.0
    log_h[big] = np.log(z[big] * ndtr(z[big]) + np.exp(log_phi[big]))
    t = -z[~big]
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = 1.0 - t * np.sqrt(np.pi / 2.0) * erfcx(t / np.sqrt(2.0))
        log_tail = np.where((t < 1e6) & (tail > 0), np.log(np.where(tail > 0, tail, 1.0)), -2.0 * np.log(t))
    log_h[~big] = log_phi[~big] + log_tail
    out[pos] = np.log(sigma[pos]) + log_h
    return out


def log_probability_of_feasibility(mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Σ_i log Φ(−μ_i/σ_i) over the columns of ``mu``, ``sigma`` (N, K) → (N,); σ_i = 0 gives
    log 1 where μ_i <= 0 and −∞ elsewhere (exact constraints)."""
    mu = np.asarray(mu, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    out = np.zeros(mu.shape)
    pos = sigma > 0
    out[pos] = log_ndtr(-mu[pos] / sigma[pos])
    out[~pos & (mu > 0)] = -np.inf
    return out.sum(axis=1)


@dataclass
class NeuralCBOSettings(MethodSettings):
    """Documented defaults of Neural-CBO (override with ``method_params`` in a case)."""

    constraint_beta: float = 0.5           # β_c of LCB_i = μ_i − β_c σ_i <= 0 (authors' code: 0.5)
    exploration_scale: float = 3.0         # ν: EI uses ν σ_f (paper: 1; see "Defaults")
    hidden: tuple[int, ...] = (64,)        # hidden widths of every NTK network (authors: one layer, 32–1024)
    regularization: float = 1e-3           # λ: prior precision in U and weight of ½λ‖θ − θ0‖²
    features: str = "current"              # current: g at the trained θ (authors' code) | initial: at θ0 (paper)
    inverse: str = "auto"                  # auto | exact (Sherman–Morrison U⁻¹) | diagonal (diag U only)
    exact_max_parameters: int = 5000       # auto: exact U⁻¹ up to this many features
    initial_steps: int = 400               # Adam steps of each network's first fit
    steps_per_iteration: int = 50          # Adam steps per later fit (warm start)
    learning_rate: float = 1e-2
    polish_iterations: int = 50            # L-BFGS iterations after each fit's Adam steps (0: none)
    input_scale: float = 1.0               # network inputs z = input_scale · (2u − 1), u in the unit box
    bias_scale: float = 1.0                # β of the NTK layers' biases (Neural-BO: 0.1)
    n_candidates: int = 2048               # scrambled Sobol candidates per step
    local_candidates: int = 256            # Gaussian perturbations of the 4 best designs
    local_scale: float = 0.02              # their standard deviation, unit-box coordinates
    objective_warp: str = "power"          # power: Yeo-Johnson warp of the objective before training | none
    refine_rounds: int = 6                 # rounds of local refinement of the EI winner (0: none)
    refine_candidates: int = 64            # perturbations scored per refinement round
    refine_snap: bool = True               # also score the current best snapped to the box's bounds
    residual_gp: str = "full"              # none | mean: + a GP of each network's residuals | full: its σ too
    residual_fit_tolerance: float = 1e-6   # L-BFGS-B ftol of that GP's hyper-parameter fit
    residual_lengthscale_floor: float = 0.0    # c: that GP's lengthscales >= c n^(-1/d) (unit box; 0: BoTorch's 0.025)
    feature_batch: int = 512               # candidates per batched gradient (bounded memory)
    duplicate_tol: float = 1e-4            # sup-norm distance (unit box) that counts as a repeat
    dtype: str = "float64"
    # physics: true — the objective network is PINN-BO's PINN (needs the problem's PDE)
    physics: bool = False
    pinn_hidden: tuple[int, ...] = (64, 64)
    collocation_points: int = 1024
    collocation_batch: int = 256
    pinn_initial_steps: int = 600
    pinn_steps_per_iteration: int = 60
    pinn_learning_rate: float = 5e-3
    pde_weight: float = 1.0
    misfit_tolerance: float = 0.1
    prior_precision: float = 1.0           # λ_p of the PINN's last-layer posterior
    noise_variance: float = 1e-2           # σ_n² of the PINN's last-layer posterior (standardised units)

    POSITIVE = ("regularization", "learning_rate", "input_scale", "bias_scale", "n_candidates", "feature_batch",
                "exact_max_parameters", "collocation_points", "collocation_batch", "pinn_learning_rate",
                "misfit_tolerance", "prior_precision", "noise_variance", "residual_fit_tolerance")
    NON_NEGATIVE = ("constraint_beta", "exploration_scale", "local_scale", "duplicate_tol", "initial_steps",
                    "residual_lengthscale_floor",
                    "steps_per_iteration", "polish_iterations", "local_candidates", "refine_rounds", "refine_candidates",
                    "pinn_initial_steps", "pinn_steps_per_iteration", "pde_weight")
    CHOICES = {"objective_warp": ("none", "power"), "residual_gp": ("none", "mean", "full"), "features": tuple(FEATURES), "inverse": tuple(INVERSE_MODES), "dtype": tuple(DTYPES)}
    WIDTHS = ("hidden", "pinn_hidden")


class NeuralCBO(Optimizer):
    """Neural-CBO ask/tell optimiser (minimises f subject to every c_i <= 0)."""

    name = "neural-cbo"
    constrained_method = True
    Settings = NeuralCBOSettings
    handles_constraints = True
    SMOKE_PARAMS = {"hidden": [16], "initial_steps": 20, "steps_per_iteration": 5, "n_candidates": 128,
                    "local_candidates": 16, "pinn_hidden": [16, 16], "pinn_initial_steps": 20,
                    "pinn_steps_per_iteration": 5, "collocation_points": 64, "collocation_batch": 32}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu",
                 constraints=()):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter,
                         device=device, constraints=constraints)
        s: NeuralCBOSettings = self.settings
        self.dtype = DTYPES[s.dtype]
        if s.physics and pde is None:
            raise MethodError("method_params.physics: the problem declares no PDE")
        self.blackbox = [i for i, c in enumerate(self.constraints) if not c.known]
        self.known = [i for i, c in enumerate(self.constraints) if c.known]
        if s.physics:
            self.objective = PINNSurrogate(
                domain, self.seed, residual=pde.compile(), hidden=s.pinn_hidden,
                collocation_points=s.collocation_points, collocation_batch=s.collocation_batch,
                initial_steps=s.pinn_initial_steps, steps_per_iteration=s.pinn_steps_per_iteration,
                learning_rate=s.pinn_learning_rate, pde_weight=s.pde_weight, misfit_tolerance=s.misfit_tolerance,
                collocation_filter=collocation_filter, dtype=self.dtype, device=self.device,
                init_keys=("network-init", "objective"),
            )
        else:
            self.objective = self._ntk_network("objective")
        self.constraint_nets = [self._ntk_network("constraint", self.constraints[i].name) for i in self.blackbox]
        self._absorbed = 0             # told entries (failed included) already in every U
        self._before: tuple[int, dict] | None = None   # (step, networks before that step's training)
        self.last_mode = ""            # "ei" | "feasibility" | "start": what chose the last proposal
        self.last_refinement: dict | None = None   # log EI of the pool winner and of the refined design
        self._residual = None          # this step's GP of the networks' residuals (``residual_gp``)
        self._residual_cache = None    # (predictor, unit points, their moments): the last evaluation
        # Hyper-parameters of the residual GP's two latest fits, (step, named parameters), as gp-cei
        # keeps them: a step starts from an earlier step's fit, so asking twice gives the same design.
        self._residual_fits: list[tuple[int, dict[str, torch.Tensor]]] = []

    def _ntk_network(self, *keys: str) -> NTKNetwork:
        return NTKNetwork(self.domain.dim, self.settings, torch_generator(self.seed, "network-init", *keys),
                          dtype=self.dtype, device=self.device)

    @property
    def ntk_networks(self) -> list[NTKNetwork]:
        return ([] if self.settings.physics else [self.objective]) + self.constraint_nets

    # -- coordinates --------------------------------------------------------------------------------------
    def _unit_to_z(self, u: np.ndarray | torch.Tensor) -> torch.Tensor:
        return unit_to_z(u, self.settings.input_scale, self.dtype, self.device)

    def _known_values(self, unit: np.ndarray) -> np.ndarray:
        """Known constraints at unit-box points (N, d) → (N, K_known), exact."""
        X = self.domain.from_unit(unit)
        cols = [np.asarray(self.constraints[i].function(X), dtype=np.float64).reshape(len(X)) for i in self.known]
        return np.stack(cols, axis=1) if cols else np.zeros((len(X), 0))

    def _known_violation(self, unit: np.ndarray, violation_scale: np.ndarray) -> np.ndarray:
        """Total violation of the known constraints at unit points (N, d) → (N,), each constraint in
        units of its observed std (``violation_scale``, one entry per constraint); 0 where satisfied."""
        if not self.known:
            return np.zeros(len(unit))
        return (np.maximum(self._known_values(unit), 0.0) / violation_scale[self.known]).sum(axis=1)

    def _lcb_feasible(self, mu_c: np.ndarray, sigma_c: np.ndarray) -> np.ndarray:
        """Every black-box constraint's LCB μ − β_c σ <= 0, per row of the (N, K) moments → (N,)."""
        return np.all(mu_c - self.settings.constraint_beta * sigma_c <= 0.0, axis=1)

    # -- U over the told designs ----------------------------------------------------------------------------
    def _update_precisions(self, Z: torch.Tensor) -> None:
        """Bring every NTK network's U up to date with the observed designs ``Z`` (n, d)."""
        update_precisions(self, self.ntk_networks, Z)

    # -- the surrogates ---------------------------------------------------------------------------------------
    def _fit(self, X: np.ndarray, y: np.ndarray, C: np.ndarray) -> dict:
        """Train every network on its standardised output; returns the output scalings."""
        unit = self.domain.to_unit(X)
        Z = self._unit_to_z(unit)
        scalings = {}
        self._residual = None
        if self.settings.physics:
            gen = torch_generator(self.seed, self.name, self.n_told, "collocation-batches")
            target = y
            scalings["objective"] = self.objective.fit(X, y, gen)
        else:
            target = _power_warp(y) if self.settings.objective_warp == "power" else y   # monotone
            scalings["objective"] = _standardise(target)
            self.objective.fit(Z, self._targets(target, scalings["objective"]))
        scalings["constraints"] = []
        for net, i in zip(self.constraint_nets, self.blackbox):
            scaling = _standardise(C[:, i])
            net.fit(Z, self._targets(C[:, i], scaling))
            scalings["constraints"].append(scaling)
        self._update_precisions(Z)
        if self.settings.residual_gp != "none" and len(y) > 1:
            self._fit_residuals(unit, X, target, C, scalings)
        return scalings

    def _fit_residuals(self, unit: np.ndarray, X: np.ndarray, target: np.ndarray, C: np.ndarray,
                       scalings: dict) -> None:
        """Fit one batched GP (:func:`pinnbo.optimizers.gp_cbo.fit_outputs`) to the residuals of
        every network at the observed designs, in standardised units: column 0 the objective's
        ỹ − μ_f, then each black-box constraint's. Its posterior mean is added to the networks'
        means and, with ``residual_gp: full``, its σ replaces theirs (:meth:`_corrected`)."""
        mean, std = scalings["objective"]
        mu_f, _ = self._objective_moments(unit, X)
        columns = [(target - mean) / std - mu_f]
        if self.constraint_nets:
            mu_c, _ = self._constraint_moments(unit, scalings["constraints"])
            for k, (i, (_, c_std)) in enumerate(zip(self.blackbox, scalings["constraints"])):
                columns.append((C[:, i] - mu_c[:, k]) / c_std)
        model, self._residual_fits = fit_residual_gp(
            unit, np.column_stack(columns), self._residual_fits, self.n_told,
            derived_seed(self.seed, self.name, self.n_told, "residual-gp"),
            tolerance=self.settings.residual_fit_tolerance, device=self.device,
            lengthscale_floor=self._residual_lengthscale_floor(len(unit)))
        self._residual = GPPredictor(model)

    def _residual_lengthscale_floor(self, n: int) -> float:
        """The residual GP's lower bound on its lengthscales with n observations, c n^(-1/d) (unit
        box; see the module docstring): n points resolve no residual structure finer than a
        fraction of their typical spacing."""
        return self.settings.residual_lengthscale_floor * n ** (-1.0 / self.domain.dim)

    def _residual_moments(self, unit: np.ndarray) -> tuple[np.ndarray, ...] | None:
        """The residual GP's posterior mean, standard deviation and remaining fraction of its prior
        variance at unit points (N, d), each (N, 1 + K_blackbox), standardised units
        (:class:`GPPredictor`); None when there is no residual GP this step."""
        if self._residual is None:
            return None
        # Every candidate set is scored by the constraints and then by the objective: one
        # evaluation of all the GP's outputs serves both. Keyed on the predictor, so a refit
        # invalidates it without a reset.
        cached = self._residual_cache
        if cached is not None and cached[0] is self._residual and cached[1].shape == unit.shape \
                and np.array_equal(cached[1], unit):
            return cached[2]
        x = torch.as_tensor(unit, dtype=torch.float64, device=self.device)
        parts = zip(*(self._residual(x[i:i + 1024]) for i in range(0, len(x), 1024)))
        moments = tuple(np.concatenate(p) for p in parts)
        self._residual_cache = (self._residual, np.array(unit, copy=True), moments)
        return moments

    def _corrected(self, mu: torch.Tensor, var: torch.Tensor, residual, column: int) -> tuple[np.ndarray, np.ndarray]:
        """A network's (μ, σ²) at N points → (μ, σ) as numpy, standardised units, with the residual
        GP's mean added (``residual_gp``: mean, full) and, with ``full``, σ² = σ_r² + ρ σ_net²
        (σ_r the GP's σ, ρ the fraction of its prior variance that remains: see the module docstring)."""
        mu = mu.double().cpu().numpy()
        sigma = var.double().clamp_min(0).sqrt().cpu().numpy()
        if residual is None:
            return mu, sigma
        mean, std, remaining = (r[:, column] for r in residual)
        if self.settings.residual_gp == "full":
            sigma = np.sqrt(std ** 2 + remaining * sigma ** 2)
        return mu + mean, sigma

    def _targets(self, values: np.ndarray, scaling: tuple[float, float]) -> torch.Tensor:
        mean, std = scaling
        return torch.as_tensor((values - mean) / std, dtype=self.dtype, device=self.device)

    def _objective_moments(self, unit: np.ndarray, X_obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """μ_f and σ_f at unit points (N, d), standardised objective units."""
        if not self.settings.physics:
            return self._corrected(*self.objective.mean_and_variance(self._unit_to_z(unit)),
                                   self._residual_moments(unit), 0)
        s = self.settings
        pinn = self.objective
        with torch.no_grad():
            z = pinn.normalise(torch.as_tensor(self.domain.from_unit(unit), dtype=self.dtype, device=self.device))
            z_obs = pinn.normalise(torch.as_tensor(X_obs, dtype=self.dtype, device=self.device))
            mu = pinn.model(z)
            phi_obs = pinn.model.features(z_obs)                                   # (n, m)
            m = phi_obs.shape[1]
            U = s.prior_precision * torch.eye(m, dtype=self.dtype, device=self.device) \
                + phi_obs.T @ phi_obs / s.noise_variance
            L = torch.linalg.cholesky(U)
            v = torch.linalg.solve_triangular(L, pinn.model.features(z).T, upper=False)   # L⁻¹ φ(x)
            var = v.pow(2).sum(dim=0)                                               # φᵀ U⁻¹ φ
        return self._corrected(mu, var, self._residual_moments(unit), 0)

    def _constraint_moments(self, unit: np.ndarray, scalings: list) -> tuple[np.ndarray, np.ndarray]:
        """μ_ci and σ_ci of the black-box constraints at unit points (N, d), in their own units."""
        n = len(unit)
        mu = np.zeros((n, len(self.constraint_nets)))
        sigma = np.zeros((n, len(self.constraint_nets)))
        if not self.constraint_nets:
            return mu, sigma
        Z = self._unit_to_z(unit)
        residual = self._residual_moments(unit)
        for k, (net, (mean, std)) in enumerate(zip(self.constraint_nets, scalings)):
            m, s = self._corrected(*net.mean_and_variance(Z), residual, 1 + k)
            mu[:, k] = mean + std * m
            sigma[:, k] = std * s
        return mu, sigma

    # -- ask --------------------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        s = self.settings
        d = self.domain.dim
        X, y, C = self.observed_constrained()
        evaluated = self.evaluated_unit()
        self.last_refinement = None
        if len(y) == 0:
            # Nothing to learn from: the first known-feasible point of a Sobol pool.
            self.last_mode = "start"
            pool = sobol_unit(max(s.n_candidates, 1), d, self.seed, self.name, self.n_told, "start")
            return self.domain.from_unit(self._first_known_feasible(pool, evaluated))

        # ask() twice without a tell: train from the same state as the first time.
        if self._before is not None and self._before[0] == self.n_told:
            self._load_networks(self._before[1])
        else:
            self._before = (self.n_told, self._network_states())
        scalings = self._fit(X, y, C)

        violation_scale = np.array([_standardise(C[:, j])[1] for j in range(C.shape[1])])
        observed_violation = (np.maximum(C, 0.0) / violation_scale).sum(axis=1) if C.shape[1] else np.zeros(len(y))
        feasible = observed_violation == 0.0

        # Candidates: Sobol pool + perturbations of the 4 best designs (feasible by y, then least violation).
        rank = np.lexsort((np.where(feasible, y, 0.0), observed_violation))
        anchors = self.domain.to_unit(X[rank[:4]])
        seed = derived_seed(self.seed, self.name, self.n_told, "candidates") % (2**31)
        pool = candidate_pool(d, seed, s.n_candidates, anchors, s.local_candidates, s.local_scale,
                              self.rng("local-candidates"))

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

        if not feasible.any() and self.blackbox:
            self.last_mode = "feasibility"
            tiers = [(known_ok, feasibility), (~known_ok, last_resort)]
        else:
            self.last_mode = "ei"
            mu_f, sigma_f = self._objective_moments(pool, X)
            mu_obs, _ = self._objective_moments(self.domain.to_unit(X), X)
            incumbent = feasible if feasible.any() else np.ones(len(y), dtype=bool)
            f_best = float(mu_obs[incumbent].min())
            log_ei = log_expected_improvement(mu_f, s.exploration_scale * sigma_f, f_best)
            lcb_ok = self._lcb_feasible(mu_c, sigma_c) & known_ok
            tiers = [(lcb_ok, (-log_ei,)), (known_ok & ~lcb_ok, feasibility), (~known_ok, last_resort)]
        order = np.concatenate([np.flatnonzero(mask)[np.lexsort(tuple(key[mask] for key in keys))]
                                for mask, keys in tiers])
        for i in order:
            if not is_duplicate(pool[i], evaluated, s.duplicate_tol):
                if self.last_mode == "ei" and lcb_ok[i] and s.refine_rounds > 0:
                    refined, score = self._refine(pool[i], float(log_ei[i]), scalings, X, f_best, evaluated,
                                                  violation_scale)
                    self.last_refinement = {"pool_log_ei": float(log_ei[i]), "log_ei": score,
                                            "scalings": scalings}
                    return self.domain.from_unit(refined)
                return self.domain.from_unit(pool[i])
        return self.domain.from_unit(pool[farthest_from(pool, evaluated)])

    def _refine(self, start: np.ndarray, start_log_ei: float, scalings: dict, X: np.ndarray, f_best: float,
                evaluated: np.ndarray, violation_scale: np.ndarray) -> tuple[np.ndarray, float]:
        """Local refinement of the EI winner under the same LCB mask: a (1 + λ) search.

        The pool's Sobol spacing n^(−1/d) bounds how close a scored candidate can come to the EI
        maximiser (0.02 of the box in 2-D, 0.34 in 7-D), and EI under a hard LCB mask has no useful
        gradient at the mask's edge, so instead of L-BFGS: ``refine_rounds`` rounds of
        ``refine_candidates`` Gaussian perturbations (clipped to the box) of the current best, the
        standard deviation starting at half the Sobol spacing and halving each round; a perturbation
        replaces the current best only if it is LCB-feasible, satisfies the known constraints, repeats
        no evaluated design and has a higher log EI. start (d,) → (the design (d,), its log EI), unit box.
        """
        s = self.settings
        d = self.domain.dim
        rng = self.rng("refine")
        best, best_score = start, start_log_ei
        scale = 0.5 * s.n_candidates ** (-1.0 / d)
        for _ in range(s.refine_rounds):
            cand = np.clip(best + scale * rng.standard_normal((s.refine_candidates, d)), 0.0, 1.0)
            if s.refine_snap:
                cand = np.concatenate([cand, _bound_snaps(best, scale)])
            ok = self._lcb_feasible(*self._constraint_moments(cand, scalings["constraints"]))
            ok &= self._known_violation(cand, violation_scale) == 0.0
            mu_f, sigma_f = self._objective_moments(cand, X)
            score = np.where(ok, log_expected_improvement(mu_f, s.exploration_scale * sigma_f, f_best), -np.inf)
            for j in np.argsort(-score, kind="stable"):
                if score[j] <= best_score:
                    break
                if not is_duplicate(cand[j], evaluated, s.duplicate_tol):
                    best, best_score = cand[j], float(score[j])
                    break
            scale *= 0.5
        return best, best_score

    def _first_known_feasible(self, pool: np.ndarray, evaluated: np.ndarray) -> np.ndarray:
        """The first pool point that satisfies the known constraints (else the least violating)
        and repeats no evaluated design."""
        violation = np.maximum(self._known_values(pool), 0.0).sum(axis=1)
        for i in np.argsort(violation, kind="stable"):
            if not is_duplicate(pool[i], evaluated, self.settings.duplicate_tol):
                return pool[i]
        return pool[0]

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
        self._residual_fits = copy.deepcopy(state.get("residual_fits", []))   # absent before residual_gp


def _bound_snaps(u: np.ndarray, step: float) -> np.ndarray:
    """``u`` (d,) in the unit box with each coordinate alone moved to its lower and to its upper
    bound, and with every coordinate within ``step`` of a bound moved to it at once: at most
    (2d + 1, d) rows, the repeats of ``u`` (a coordinate already on that bound) removed."""
    d = len(u)
    single = np.repeat(u[None, :], 2 * d, axis=0)
    single[np.arange(d), np.arange(d)] = 0.0
    single[d + np.arange(d), np.arange(d)] = 1.0
    nearer = np.where(u < 0.5, 0.0, 1.0)
    together = np.where(np.abs(u - nearer) <= step, nearer, u)[None, :]
    snaps = np.concatenate([single, together])
    return snaps[np.any(snaps != u, axis=1)]


def _standardise(values: np.ndarray) -> tuple[float, float]:
    """(mean, std) of one output's observations; std 1 when they are constant (or single)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return 0.0, 1.0
    std = float(np.std(values))
    return float(np.mean(values)), (std if len(values) > 1 and std > 0 else 1.0)


def _power_warp(values: np.ndarray) -> np.ndarray:
    """Monotone Yeo-Johnson warp of standardised values, λ by maximum likelihood (HEBO's output
    transform): a heavy right tail is compressed so the network resolves the low end, where the
    minimum is. Minimising the warped output minimises the output. (n,) → (n,)."""
    from scipy.stats import yeojohnson
    mean, std = _standardise(values)
    z = (np.asarray(values, dtype=np.float64) - mean) / std
    if len(z) < 3 or np.ptp(z) == 0:
        return z
    warped, _ = yeojohnson(z)
    return warped
