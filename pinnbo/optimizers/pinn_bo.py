"""PINN-BO: Bayesian optimisation with a physics-informed neural network surrogate.

Paper: seed 003 (PINN-BO) / thesis ch. 5; REFERENCES §1.

Surrogate. An NTK-parametrised tanh MLP h(z; θ) on normalised inputs z = 2(x − lo)/(hi − lo) − 1
reads, in physical units, f(x) = μ_y + s_y · h(z(x)) with (μ_y, s_y) the mean and standard deviation
of the observations. The PDE residual N[f](x) − g(x) is computed by autograd on this physical
function, so the chain rule through the input normalisation is exact for any box (the authors'
code evaluated the PDE on normalised inputs, which is wrong off symmetric domains).
``input_scale`` s multiplies z (z = s(2(x − lo)/(hi − lo) − 1); the chain rule carries it) and
``bias_scale`` β is the NTK layers' bias scale (:mod:`pinnbo.surrogates.mlp`). The defaults are the
measured ones: s = 1 (s = 2 or 3 overfits), and β = 0.1 below ``HIGH_DIMENSION`` = 5 design variables,
1 from there up (``bias_scale: 0``, the default; a number overrides it). β scales the biases' Adam
steps as well as their initial spread, so at 0.1 they barely move and the tanh units stay nearly
odd functions of the input. In 5 to 50 dimensions β = 1 learned more from 50 points (held-out
correlation on Styblinski-Tang-10 0.06 → 0.16, on Cosine Mixture-50 0.23 → 0.39; 8 seeds each)
and gave a better mean best at budget 100 on all four synthetic cases with d ≥ 5 (Cosine Mixture-50
11.10 → 7.90, Rastrigin-20 221.8 → 200.5, Styblinski-Tang −265.2 → −273.0, Michalewicz-30 −6.66 →
−6.71; 10 seeds each), while in 1-D and 2-D it moved one heat_bc3 seed off the corner's neighbour
(885.06 against 885.09 on every seed) and changed the beam by 5e-6 (docs/benchmarks.md, "cosine_mixture").

Loss (Eq. 1, with our decided weighting):
    L(θ) = mean_i (h(x_i) − ỹ_i)² + w_pde · mean_{j∈batch} ‖r_j‖² / (s_y · s_r(z_j))²
with ỹ the standardised observations, r_j = N[f](z_j) − g(z_j) ∈ R^K at collocation points drawn
once from the seed (K equations of a system, one for a scalar PDE), and s_r(z_j) the prior
root-mean-square of ‖r‖/s_y at z_j over a few freshly initialised networks. Means over points (not
the paper's sums) keep the data term from being swamped by N_r ≫ t collocation terms; the
per-point s_r makes the PDE term dimensionless and stops points where the operator's coefficients
are huge (the beam's singular EI) from drowning the rest. The norm sums a system's equations, so a
point weighs the same whatever K (splitting one equation into K copies trains the same network);
until 2026-11-25 the code averaged over them, dividing w_pde by K (docs/benchmarks.md).

First fit (decided). The first fit takes ``initial_steps`` Adam steps and, from
``HIGH_DIMENSION`` design variables up and with a PDE, goes on in windows of 200 steps while the
window's mean loss is more than ``fit_tolerance`` (2 %) below the previous window's, up to
``initial_max_steps`` (0: 5000 from 5 variables up, none below). Without a PDE the data alone
would be fitted ever closer to interpolation, which leaves the residual GP nothing to learn
(docs/benchmarks.md, "GP-EI at 400 evaluations"), so that first fit stays ``initial_steps``.
Why: in the NTK parametrisation the input layer's weights enter divided by √d, so Adam moves the
first layer √d times slower in d dimensions, and a PDE that carries the whole function is
learned far more slowly than the data. On Cosine
Mixture-50 (the PDE gives the whole gradient) the whitened PDE loss was still 0.92 of its prior
value after 600 steps, 0.59 after 2000 (2 % per window by then); the held-out correlation rose
from 0.33 to 0.76, and the trained network's minimum, reached by gradient steps from the best
initial design, went from f = 28 (worse than every initial point: 11.3) to 1.8. Below 5
variables every run is unchanged (the 1-D and 2-D tables were measured with 600 steps).
Later fits stay warm-started ``steps_per_iteration`` steps.

Data-consistency backoff (decided). A PDE whose solutions the network cannot reach in a few
hundred steps (the paper's beam: ~30 oscillations and a singular EI) makes a flat function the
easy minimum of the residual term, and the PINN then ignores its data. After each fit, if the
median absolute misfit on the standardised data exceeds ``misfit_tolerance``, the PDE weight is
halved for the next fit; once the data fit with room to spare it doubles back towards
``pde_weight``. The PDE thus shapes the surrogate wherever it is consistent with the
measurements and never overrules them, at no extra training cost. The weight is checkpointed.

Exploration (decided; REFERENCES §1 "where exploration comes from"). A warm-started network with
one fixed θ0 reads as a single Thompson sample forever, i.e. greedy search, and stalls. We keep the
trained PINN as the posterior mean and draw, at every step, a fresh sample of a Bayesian linear
model on its last-layer features φ(x) (the NTK features of the output layer at the current θ):
    U = λ I + Σ_i φ(x_i) φ(x_i)ᵀ / σ_n²,   δ ~ N(0, ν² U⁻¹),   f̃(x) = h(x) + φ(x)ᵀ δ,
and minimise f̃ (a whole function sample, so it can be refined by gradients). ν is the exploration
scale. The authors ran ν = 1; with σ_n² = 0.01 the last-layer posterior then collapses within a
dozen points and the search locks into one basin: on the beam (10 seeds, budget 100, no PDE) the
best design landed within 0.01 of x* in 3/10 seeds at ν = 1, 5/10 at ν = 3 and 7/10 at ν = 10, so
ν = 10 where there is no trust region, below 5 design variables (docs/benchmarks.md; from 5 up see
below). The features are shaped by the PDE through training, so physics
enters the variance through φ; from ``pde_variance_min_dim`` = 5 design variables up (``pde_variance``)
it also enters U directly, as REFERENCES §1's NTK-PINN posterior has it: each collocation point
is a pseudo-observation of its whitened residual, U += w_pde Σ_j Ω_jᵀ Ω_j / σ_n² with Ω_j the
residual's Jacobian in the last-layer weights (:meth:`PINNSurrogate.pde_precision`; at most about
0.7 s more per ask up to d = 50, measured). Why from 5 up: there 50 points leave most of the m = 64
feature directions at their prior variance ν²/λ, and a sample of that size buries what the PDE taught the network. On Cosine
Mixture-50 (the PDE gives the whole gradient) the trained network's greedy minimum reached 0.8
in a seed where the Thompson sample searched at random and ended at 9.7; with Ω in U the
sample's spread between the data halves (1.18 → 0.55 standard deviations, seed 2) and that seed
ends at 0.81 (docs/benchmarks.md, "The PDE in the posterior"). Below 5 variables the data cover the
features, and the 1-D and 2-D runs (and their cost, measured at t = 200 on DropWave) are unchanged.
``thompson_draws`` K (4 where there is no trust region): K independent draws (δ_k and, with the
residual GP, its path k), and the function minimised is their pointwise minimum min_k f̃_k(x),
whose minimiser is the minimiser of the draw that promises the most: a more optimistic Thompson
sampling, as a UCB's quantile grows with K. At the data the draws agree (ρ and the GP's sd vanish),
so only proposals in the gaps move. Why: one draw leaves a basin narrower than the gaps to chance,
step after step, once an incumbent's basin is known; replaying the beam's one trapped seed, a
single draw's minimum fell in x*'s basin with probability 0.04, 0.06, 0.013 at n = 25, 35, 60 and
the best of four with 0.11, 0.21, 0.04. Measured at 10 seeds (docs/benchmarks.md, "Four draws by
default"): K = 4 puts every beam seed at x* (mean 0.057623, at least as good as every baseline's;
one draw: 9/10, 0.100) and keeps the heat plates; DropWave (−0.9295 against −0.9472: one seed on
the second ring) and Styblinski-Tang (−265.2 against −279.2) are worse by about one standard error
(one-sided Welch p = 0.18 each). Its cost is the residual GP's (the more optimistic proposals make the
leave-one-out screen refit more often), held to 1.7–3.0× GP-EI's seconds per step at t = 200 on
DropWave (by how it is timed; 2.6–2.8× over 8 asks of a fresh optimiser) by ``residual_outlier_memory``
and a warm-started fit's ``residual_fit_tolerance`` 1e-4 (4.1× without them).
Where the trust region applies (from ``trust_region_min_dim`` = 5 design variables up) the sample
is TuRBO's plain Thompson sample: ν = 1 and one draw (``exploration_scale`` and ``thompson_draws``
0, the defaults; a value > 0 overrides; :meth:`PINNBO.exploration`). Why: ν = 10 and four draws
were chosen in 1-D, where the sample itself must leave a basin; from 5 up the region's restarts
carry the global search, and in d dimensions a sample of prior-sized spread is minimised on the
region's faces, where every coordinate moves by L/2. On Cosine Mixture-50 (f* = −3.15, the
initial designs' best about 11) 16 to 40 of each seed's 50 proposals scored worse than 8, in seed 0
every one on the region's face; with one draw at ν = 1, 0 or 1 in nine seeds of ten. Measured at
10 seeds, budget 100, against ν = 10 with four draws (docs/benchmarks.md, "TuRBO's Thompson sample from 5 design variables up"): Cosine
Mixture-50 1.51 → 0.69, Rastrigin-20 204.2 → 192.5, Michalewicz-30 −6.80 → −7.01, better by mean
(one-sided Welch p = 0.086, 0.13, 0.26), Styblinski-Tang-10 −271.1 → −254.0, worse (p = 0.09 for
worse); below 5 variables nothing changes.

Trust region (decided; TuRBO, Eriksson et al. 2019, as the rule). The sample is minimised over
a cube of side L (unit coordinates) centred at the best design observed, clipped to the box, not
over the whole box. Without it, in 10-D with 50 points the last-layer posterior leaves most
feature directions at their prior variance ν²/λ, the sample's minimum sits on a face of the box,
and on Styblinski-Tang no proposal of any seed improved on the initial design (docs/benchmarks.md).
L follows TuRBO's rule, replayed from the told values at each ask (so resume and ask/tell stay
exact, and L is checkpointed): L starts at 0.8; 3 successes in a row (a new best by more than
10⁻³·|best|) double it up to 1.6 (the whole box from any centre); max(4, d) failures in a row halve
it; below 2⁻⁷ it restarts at 0.8. TuRBO's restart draws a fresh initial design; ours keeps every
evaluation and only resets L, since our evaluations are the expensive part.
The region applies from ``trust_region_min_dim`` = 5 design variables up (TuRBO's regime; a smaller
value or ``trust_region: false`` is a parameter away). Below that, ~100 points cover the
features, the sample is well behaved over the whole box, and a region centred at the incumbent costs
the global search the low-dimensional cases need: on the 1-D beam (10 seeds) it left 4 seeds in a
wrong basin against 2 without, mean best 1.01 against 0.34; on Styblinski-Tang 10-D it lifted the
mean best from −226.9 to −265.5 (docs/benchmarks.md). Without the region the acquisition is the
authors' (the whole box).

Residual GP (``residual_gp``: none | mean | path | full; ``full`` by default). The PINN is a
global shape, not an interpolant: a 2 × 64 tanh network fitted by a few hundred Adam steps does
not follow the beam's ~30 oscillations, and two of ten beam seeds ended in a wrong basin. A GP
(:func:`pinnbo.optimizers.gp_cbo.fit_outputs`: Matérn-5/2 ARD on the unit box, ``Standardize``, a
fitted output scale, learned noise, hyper-parameters by marginal likelihood warm-started from the
previous step's and checkpointed, observations its leave-one-out prediction misses left out) is fitted to the PINN's residuals at the observed designs, r_i = ỹ_i − h(x_i)
(standardised units), and enters the sample:
    mean:  f̃(x) = h(x) + m_r(x) + ν φ(x)ᵀ δ
    path:  f̃(x) = h(x) + g̃(x) + ν φ(x)ᵀ δ
    full:  f̃(x) = h(x) + g̃(x) + ν √ρ(x) φ(x)ᵀ δ
with m_r the GP's posterior mean, g̃ one posterior sample path of it (Matheron's rule on 1024
random Fourier features, BoTorch's ``draw_matheron_paths``, so the sample stays differentiable;
with ``full`` evaluated with ρ from one k(x, X), :meth:`pinnbo.optimizers.gp_cbo.GPPredictor.moments_and_paths`)
and ρ(x) the fraction of the GP's prior variance left at x (the network's exploration vanishes at
the data, as Neural-CBO's ``full`` does with σ). Measured at 10 seeds (docs/benchmarks.md): ``full``
put every beam seed at x* (mean best 0.057616, better than every baseline's), ``path`` nine of
ten, while ``mean`` left 4 of 8 in a wrong basin: the GP's sample, not its mean, finds the
basin. But the sample costs the heat plates: at the discontinuous corner the evaluated corner
point itself is cold (443.7 on BC2 against 880.0 at its admissible neighbour 1e-4 away), the
residual GP interpolates that spike (lengthscales at BoTorch's bound 0.025, noise 1e-4), the
sample near the corner is pulled down with it, and the search crawls along the edge instead of
stepping beside the corner (heat_bc2 848.9 ± 6.9 with ``full``, 855.9 ± 5.4 with ``path``, against
879.99 on every seed without). The network alone cannot represent a one-point spike and keeps
pointing at the corner. Two settings below fix both sides, and with them ``full`` is the default.
``residual_lengthscale_floor`` c > 0 bounds that GP's lengthscales below by c n^(−1/d) (unit box,
as Neural-CBO's). With c = 1 it absorbed the corner point as noise but spread a cold point of the
neighbouring edge over the corner instead (heat_bc2: 9/10 seeds at the corner, one crawling up the
edge) and left one beam seed in a wrong basin while it still bound early on; off by default.
``residual_outlier_fraction`` f > 0 gives that GP a sparse-outlier likelihood instead: each
observation may carry its own extra noise ρ_i, on a support of at most ⌈f n⌉ points chosen by
forward relevance pursuit and Bayesian model comparison (Ament et al., "Robust Gaussian Processes
via Relevance Pursuit", NeurIPS 2024; :func:`pinnbo.optimizers.gp_cbo.fit_outlier_robust`), so a
one-point spike such as the cold corner is explained as noise while smooth structure is not. The
fitted per-point noise is then fixed in a plain GP, which the moments and the Matheron path both
use. Measured with ``full`` and f = 0.05 at 10 seeds (docs/benchmarks.md): every heat-plate seed
ends at the corner's admissible neighbour, but one beam seed stays in the basin at 2.44 and one
DropWave seed on the second ring; and one Gaussian fit per candidate support size costs 8–11 s at
n = 200. ``residual_outlier_method: loo`` (the default, with f = 0.05) does the corner's job for one
or two Gaussian fits (:func:`pinnbo.optimizers.gp_cbo.fit_loo_screened`): while the largest
closed-form leave-one-out residual |z_i| = |[K⁻¹r]_i| / √[K⁻¹]_ii (Rasmussen & Williams Eq. 5.12)
exceeds ``residual_outlier_z`` = 5, that observation leaves the GP (the network still trains on it)
and the GP is refit, at most ⌈f n⌉ times. The cold corner, beside a warm neighbour that agrees
with the rest, has the larger |z| and goes first. ``residual_outlier_memory`` (default true) starts
each step's screen from the observations the last step's left out, taking back any that the others
now predict within the threshold: from scratch, every step refits once per outlier it rediscovers
(DropWave at t = 200 with four draws: 13 fits in 8 steps; with the memory 10). The fit is warm-started
from the last step's hyper-parameters, which one more observation barely moves, so it stops at a
relative decrease of ``residual_fit_tolerance`` = 1e-4 per L-BFGS-B iteration rather than 1e-6
(2.6× against 2.8× GP-EI's seconds per step at t = 200 on DropWave, with four draws).
``residual_prior_scale``: ``data`` standardises the residuals by their own spread, so the GP's prior
sd between the data is the sample sd of the network's errors on the data it was trained on;
``objective`` keeps it at least one standard deviation of the objective; ``learned`` (the default)
fits it by marginal likelihood (a ``ScaleKernel``, :func:`pinnbo.optimizers.gp_cbo.residual_kernel`).
A sample sd collapses when the search piles evaluations onto one spot, because each near-zero
residual there counts as much as a spread-out one; that kept a beam seed's samples beside its
incumbent (the probability that a sample's minimum lay in x*'s basin fell to 0 by n = 30; with the
fitted scale on the same data, 0.07–0.5). These three (``full``, ``loo`` with f = 0.05,
``learned``) with one Thompson draw, at 10 seeds (docs/benchmarks.md, "A fitted prior scale"): beam
0.10047 (9/10 at x*, against 0.340, 8/10, without the GP), heat plates unchanged (every seed at the
corner's neighbour), DropWave unchanged (−0.9472), Styblinski-Tang −279.2 (against −265.5); 2.5×
GP-EI's seconds per iteration at t = 200 on DropWave.
``residual_refit_growth`` g > 0 refits that GP's hyper-parameters only when n crosses the grid
(1 + g)^k (:func:`residual_refit`; every step while n < 1/g, about every g·n steps after) and
otherwise conditions the GP on the data with the last fit's: the fit (0.13–0.22 s at n = 200, one
per leave-one-out refit) is most of the residual GP's cost, and hyper-parameters fitted to 190
points are still those of 200. Measured with ``thompson_draws`` 4 and g = 0.1 (docs/benchmarks.md):
2.1× GP-EI's seconds per step at t = 200 (4.1× refitting every step), every beam seed at x*, but
one DropWave seed on the second ring and one heat_bc2 seed at another neighbour of the corner, so
both stay off (default 0: refit every step).

Acquisition: scrambled Sobol pool + perturbed incumbents, top-k, bounded L-BFGS-B refinement,
and never a repeat of an evaluated design (pinnbo.acquisition).

The surrogate and its training live in :class:`PINNSurrogate`, which Neural-CBO's ``physics: true``
reuses as its objective network (pinnbo.optimizers.neural_cbo).
"""

from __future__ import annotations

import copy
import math
from collections import deque
from dataclasses import dataclass

import numpy as np
import torch
from botorch.sampling.pathwise import draw_matheron_paths

from pinnbo.acquisition import minimize_surrogate
from pinnbo.optimizers.base import (
    DTYPES, MethodError, MethodSettings, Optimizer, derived_seed, load_network_state, network_state, sobol_unit,
    torch_generator,
)
from pinnbo.optimizers.gp_cbo import GPPredictor, fit_residual_gp
from pinnbo.surrogates.mlp import MLP


#: From this many design variables up the network's bias scale defaults to 1, not 0.1, and the trust
#: region, the first fit's extension and the PDE's part of the posterior apply (docstring).
HIGH_DIMENSION = 5
#: ... and its first fit may go on up to this many Adam steps while its loss falls (docstring, "First fit").
HIGH_DIMENSION_FIRST_FIT = 5000
#: Adam steps per window of the first fit's convergence test.
FIT_WINDOW = 200
#: (ν, K) of the Thompson sample by default where the trust region applies (TuRBO's plain sample)
#: and where it does not (docstring, "Exploration").
TRUST_REGION_EXPLORATION = (1.0, 1)
GLOBAL_EXPLORATION = (10.0, 4)


@dataclass
class PINNBOSettings(MethodSettings):
    """Documented defaults of PINN-BO (override with ``method_params`` in a case)."""

    hidden: tuple[int, ...] = (64, 64)     # hidden layer widths
    bias_scale: float = 0.0                # β of the NTK layers' biases (pinnbo.surrogates.mlp); 0 = 0.1 below
                                           # HIGH_DIMENSION design variables, 1 from there up (docstring)
    input_scale: float = 1.0               # network inputs z = input_scale · (2u − 1), u in the unit box
    collocation_points: int = 1024         # N_r, drawn once from the seed
    collocation_batch: int = 256           # collocation points per training step
    initial_steps: int = 600               # Adam steps of the first fit (at least)
    initial_max_steps: int = 0             # the first fit goes on while its loss falls (docstring), up to this;
                                           # 0 = initial_steps below HIGH_DIMENSION, 5000 from there up
    fit_tolerance: float = 0.02            # ... falls by more than this fraction per 200-step window
    steps_per_iteration: int = 60          # Adam steps per later fit (warm start)
    learning_rate: float = 5e-3
    pde_weight: float = 1.0                # w_pde (the largest weight; lowered while data do not fit)
    misfit_tolerance: float = 0.1          # median |data misfit| (standardised) that halves w_pde
    exploration_scale: float = 0.0         # ν; 0 = 10 without the trust region (see "Exploration" above for
                                           # why not the authors' 1), 1 where it applies (TuRBO's sample)
    thompson: bool = True                  # False: greedy argmin of the trained PINN (ablation)
    thompson_draws: int = 0                # K: minimise the pointwise minimum of K samples (docstring);
                                           # 0 = 4 without the trust region, 1 where it applies
    pde_variance: bool = True              # the PDE's collocation points shrink the last-layer posterior ...
    pde_variance_min_dim: int = HIGH_DIMENSION   # ... when the design has at least this many variables (docstring)
    prior_precision: float = 1.0           # λ of the last-layer posterior
    noise_variance: float = 1e-2           # σ_n², in standardised units
    trust_region: bool = True              # minimise the sample within TuRBO's trust region ...
    trust_region_min_dim: int = HIGH_DIMENSION   # ... when the design has at least this many variables
    trust_length: float = 0.8              # L at the start and after a restart (unit box side)
    trust_length_max: float = 1.6
    trust_length_min: float = 2.0 ** -7
    trust_successes: int = 3               # successes in a row that double L
    trust_failures: int = 0                # failures in a row that halve L; 0 = max(4, d)
    n_pool: int = 2048
    top_k: int = 8
    refine_iterations: int = 40
    duplicate_tol: float = 1e-4            # sup-norm distance (unit box) that counts as a repeat
    residual_gp: str = "full"              # none | mean: + a GP of the PINN's residuals | path | full (docstring)
    residual_fit_tolerance: float = 1e-4   # L-BFGS-B ftol of that GP's hyper-parameter fit (warm-started: docstring)
    residual_lengthscale_floor: float = 0.0    # c: that GP's lengthscales >= c n^(-1/d) (unit box; 0: BoTorch's 0.025)
    residual_outlier_fraction: float = 0.05    # > 0: that GP finds up to ceil(f n) outliers (docstring)
    residual_outlier_method: str = "loo"       # loo: leave-one-out screen | pursuit: relevance pursuit
    residual_outlier_z: float = 5.0            # loo: |leave-one-out z| above which a point is left out
    residual_outlier_memory: bool = True       # loo: start from the last step's outliers, not from none
    residual_refit_growth: float = 0.0         # g > 0: refit that GP's hyper-parameters once n grows by a factor 1 + g
    residual_prior_scale: str = "learned"      # that GP's prior sd: learned (fitted) | data (the residuals') | objective (>= the objective's)
    dtype: str = "float64"

    POSITIVE = ("collocation_points", "collocation_batch", "n_pool", "top_k", "learning_rate",
                "prior_precision", "noise_variance", "misfit_tolerance", "trust_length", "trust_length_max",
                "trust_length_min", "trust_successes", "trust_region_min_dim", "residual_fit_tolerance",
                "residual_outlier_z", "input_scale", "pde_variance_min_dim")
    NON_NEGATIVE = ("initial_steps", "initial_max_steps", "fit_tolerance", "steps_per_iteration", "refine_iterations", "pde_weight",
                    "exploration_scale", "thompson_draws", "duplicate_tol", "trust_failures", "residual_lengthscale_floor",
                    "residual_outlier_fraction", "residual_refit_growth", "bias_scale")
    CHOICES = {"dtype": tuple(DTYPES), "residual_gp": ("none", "mean", "path", "full"),
               "residual_prior_scale": ("data", "objective", "learned"),
               "residual_outlier_method": ("pursuit", "loo")}
    WIDTHS = ("hidden",)

    def validate(self) -> None:
        super().validate()
        if not self.trust_length_min <= self.trust_length <= self.trust_length_max:
            raise MethodError("method_params.trust_length: expected trust_length_min <= trust_length <= "
                              f"trust_length_max, got {self.trust_length_min} <= {self.trust_length} <= "
                              f"{self.trust_length_max}")
        if self.residual_outlier_fraction > 1:
            raise MethodError("method_params.residual_outlier_fraction: expected a fraction in [0, 1], got "
                              f"{self.residual_outlier_fraction}")
        if self.residual_outlier_fraction > 0 and self.residual_lengthscale_floor > 0:
            raise MethodError("method_params.residual_outlier_fraction: the outlier-robust residual GP takes no "
                              "residual_lengthscale_floor; set one of them to 0")


def residual_refit(n: int, growth: float) -> bool:
    """Whether the residual GP's hyper-parameters are refitted with n observations: always for
    ``growth`` 0, else when n crosses the geometric grid (1 + g)^k (k = ⌊log n / log(1 + g)⌋ changes),
    so about every g·n steps. Between refits the GP keeps the last fit's hyper-parameters and is
    only conditioned on the data. A function of n alone, so an ask repeated before its tell and a
    resumed run decide alike."""
    if growth <= 0 or n < 2:
        return True
    step = math.log1p(growth)
    return math.floor(math.log(n) / step) != math.floor(math.log(n - 1) / step)


@dataclass
class TrustRegion:
    """TuRBO's side-length rule (module docstring, "Trust region"), advanced by :meth:`update`
    with the values told since the last ask."""

    length: float
    successes: int = 0
    failures: int = 0
    restarts: int = 0
    seen: int = 0                   # evaluations already counted (index into the told list)
    best: float = float("inf")      # best minimisation value among them

    def update(self, values: list, settings: "PINNBOSettings", dim: int) -> None:
        """Count each told value (None = failed evaluation, a failure) in order."""
        s = settings
        patience = s.trust_failures or max(4, dim)
        for v in values:
            if v is not None and v < self.best - 1e-3 * abs(self.best):
                self.successes, self.failures = self.successes + 1, 0
            else:
                self.successes, self.failures = 0, self.failures + 1
            if v is not None:
                self.best = min(self.best, v)
            if self.successes >= s.trust_successes:
                self.length, self.successes = min(2.0 * self.length, s.trust_length_max), 0
            elif self.failures >= patience:
                self.length, self.failures = self.length / 2.0, 0
                if self.length < s.trust_length_min:
                    self.length, self.restarts = s.trust_length, self.restarts + 1
        self.seen += len(values)

    def bounds(self, centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The region in unit coordinates: the cube of side ``length`` at ``centre`` (d,), clipped."""
        return np.clip(centre - self.length / 2, 0.0, 1.0), np.clip(centre + self.length / 2, 0.0, 1.0)


class PINNSurrogate:
    """PINN-BO's surrogate on its own: the network, its Adam, the collocation points, the
    residual scales s_r and the data-consistency backoff of the PDE weight (module docstring).

    Used by :class:`PINNBO` and as the objective network of Neural-CBO's ``physics: true``
    (:mod:`pinnbo.optimizers.neural_cbo`). ``init_keys`` name the network's initialisation stream
    under ``seed``; every other draw comes from streams named here (collocation points, residual
    scales) or from the ``generator`` passed to :meth:`fit` (collocation batches).

    ``residual``: the compiled PDE (``pde.compile()``) or None (data only).
    """

    def __init__(self, domain, seed: int, *, residual, hidden, collocation_points: int, collocation_batch: int,
                 initial_steps: int, steps_per_iteration: int, learning_rate: float, pde_weight: float,
                 misfit_tolerance: float, collocation_filter=None, dtype: torch.dtype = torch.float64,
                 device: torch.device | str = "cpu", init_keys: tuple = ("network-init",),
                 bias_scale: float = 0.1, input_scale: float = 1.0, initial_max_steps: int = 0,
                 fit_tolerance: float = 0.02) -> None:
        self.domain = domain
        self.seed = int(seed)
        self.hidden = tuple(hidden)
        self.bias_scale = bias_scale
        self.input_scale = input_scale
        self.n_collocation = collocation_points
        self.collocation_batch = collocation_batch
        self.initial_steps = initial_steps
        self.steps_per_iteration = steps_per_iteration
        self.initial_max_steps = initial_max_steps       # <= initial_steps: a first fit of exactly initial_steps
        self.fit_tolerance = fit_tolerance
        self.first_fit_steps: int | None = None          # how many the first fit took (diagnostics)
        self.max_pde_weight = pde_weight
        self.misfit_tolerance = misfit_tolerance
        self.collocation_filter = collocation_filter
        self.dtype = dtype
        self.device = torch.device(device)
        self.model = MLP(domain.dim, self.hidden, torch_generator(self.seed, *init_keys),
                         bias_scale).to(self.device, self.dtype)
        self.adam = torch.optim.Adam(self.model.parameters(), lr=learning_rate)
        self.residual = residual
        self.residual_scale: torch.Tensor | None = None   # (N_r,), see prior_residual_scale
        self.pde_weight = pde_weight
        self.fitted = False
        self._lower = torch.as_tensor(domain.lower_array, dtype=self.dtype, device=self.device)
        self._width = torch.as_tensor(domain.widths, dtype=self.dtype, device=self.device)
        self.collocation = self.collocation_points() if self.residual is not None else None

    # -- PDE data -----------------------------------------------------------------------------------
    def collocation_points(self) -> torch.Tensor:
        """N_r points of the box (physical coordinates), drawn once from the seed, shape (N_r, d).

        A problem's ``collocation_filter`` removes points where its PDE is singular; we draw
        until N_r points survive.
        """
        n = self.n_collocation
        draw, kept = n, np.zeros((0, self.domain.dim))
        for attempt in range(20):
            unit = sobol_unit(draw, self.domain.dim, self.seed, "collocation", attempt)
            points = self.domain.from_unit(unit)
            if self.collocation_filter is not None:
                points = points[np.asarray(self.collocation_filter(points), dtype=bool)]
            kept = np.concatenate([kept, points])[:n]
            if len(kept) == n:
                break
            draw *= 2
        if len(kept) < n:
            raise MethodError("collocation_points: the problem's collocation filter rejects almost every point")
        return torch.as_tensor(kept, dtype=self.dtype, device=self.device)

    # -- the surrogate --------------------------------------------------------------------------------
    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        return self.input_scale * (2.0 * (x - self._lower) / self._width - 1.0)

    def physical_model(self, mean: float, std: float):
        """f(x) = μ_y + s_y h(z(x)) on physical inputs (N, d) → (N,): what the PDE constrains."""
        def f(x: torch.Tensor) -> torch.Tensor:
            return mean + std * self.model(self.normalise(x))
        return f

    def prior_residual_scale(self, mean: float, std: float, draws: int = 4) -> torch.Tensor:
        """s_r(z_j): prior root-mean-square of the standardised residual at each collocation point,
        shape (N_r,), over ``draws`` freshly initialised networks.

        Dividing each residual by its own prior scale whitens the PDE pseudo-observations the way
        heteroscedastic noise variances would: where the operator's coefficients are huge (the
        paper's beam, whose EI is singular at the 26 zeros of ρ) a point no longer drowns the
        others, and the term stays dimensionless whatever the PDE's order, units or domain size.
        """
        scales = torch.zeros(len(self.collocation), dtype=self.dtype, device=self.device)
        for k in range(draws):
            prior = MLP(self.domain.dim, self.hidden, torch_generator(self.seed, "residual-scale", k),
                        self.bias_scale).to(self.device, self.dtype)

            def f(x: torch.Tensor, prior=prior) -> torch.Tensor:
                return mean + std * prior(self.normalise(x))

            for start in range(0, len(self.collocation), 4096):
                chunk = self.collocation[start:start + 4096]
                r = self.residual(f, chunk).detach() / std
                scales[start:start + len(chunk)] += r.pow(2).sum(dim=1) / draws
        scales = scales.sqrt()
        # A floor keeps a point whose prior residual happens to vanish from getting infinite weight.
        return torch.clamp(scales, min=1e-3 * float(scales.median()) + 1e-300)

    def fit(self, X: np.ndarray, y: np.ndarray, generator: torch.Generator) -> tuple[float, float]:
        """Train on standardised data (+ PDE residual); returns (μ_y, s_y). ``generator`` draws the
        collocation batches (the caller names its stream by step)."""
        mean = float(np.mean(y))
        std = float(np.std(y)) if len(y) > 1 and np.std(y) > 0 else 1.0
        Z = self.normalise(torch.as_tensor(X, dtype=self.dtype, device=self.device))
        targets = torch.as_tensor((y - mean) / std, dtype=self.dtype, device=self.device)
        physical = self.physical_model(mean, std)
        if self.residual is not None and self.residual_scale is None:
            self.residual_scale = self.prior_residual_scale(mean, std)
        steps = self.steps_per_iteration if self.fitted else self.initial_steps
        n_col = 0 if self.collocation is None else len(self.collocation)
        batch = min(self.collocation_batch, n_col)
        use_pde = self.residual is not None and self.max_pde_weight > 0

        def train(count: int) -> float:
            """``count`` Adam steps; the mean loss over the last min(count, FIT_WINDOW) of them."""
            tail: deque = deque(maxlen=FIT_WINDOW)
            for _ in range(count):
                self.adam.zero_grad(set_to_none=True)
                loss = (self.model(Z) - targets).pow(2).mean()
                if use_pde:
                    idx = torch.randperm(n_col, generator=generator)[:batch].to(self.device)
                    r = self.residual(physical, self.collocation[idx]) / (std * self.residual_scale[idx, None])
                    # ‖r_j‖² over a system's equations, as s_r whitens: a mean over them as well would
                    # divide the PDE's weight by the number of equations (50 for Cosine Mixture-50).
                    loss = loss + self.pde_weight * r.pow(2).sum(dim=1).mean()
                loss.backward()
                self.adam.step()
                tail.append(loss.detach())
            return float(torch.stack(list(tail)).mean()) if tail else math.inf

        previous = train(steps)
        if not self.fitted and use_pde:
            # The first fit goes on while its loss still falls (module docstring, "First fit").
            done = steps
            while done + FIT_WINDOW <= self.initial_max_steps:
                current = train(FIT_WINDOW)
                done += FIT_WINDOW
                if not current < (1.0 - self.fit_tolerance) * previous:
                    break
                previous = current
            self.first_fit_steps = done
        if use_pde:
            # Data-consistency backoff (decided; see module docstring): the PDE may shape the
            # surrogate but must not stop it from fitting the measurements. The median is robust
            # to the few points no smooth surrogate can fit (a discontinuous corner).
            with torch.no_grad():
                misfit = float((self.model(Z) - targets).abs().median())
            if misfit > self.misfit_tolerance:
                self.pde_weight *= 0.5
            elif misfit < 0.5 * self.misfit_tolerance:
                self.pde_weight = min(self.max_pde_weight, 2.0 * self.pde_weight)
        self.fitted = True
        return mean, std

    def pde_precision(self, mean: float, std: float, noise_variance: float,
                      generator: torch.Generator, step: float = 1e-4) -> torch.Tensor | None:
        """The PDE's part of the last-layer precision, (m, m), or None without an active PDE term.

        REFERENCES §1's NTK-PINN posterior, U = λI + Σ_i φ_i φ_iᵀ/σ_n² + Σ_j Ω_jᵀ Ω_j/σ_n², in the last
        layer: every collocation point is a pseudo-observation of its whitened residual r̂_j (K
        equations, O(1) under the prior as the standardised data are) with the data's noise
        variance, times the current (backed-off) w_pde. Ω_j = ∂r̂_j/∂δ (K × m) is the Jacobian with
        respect to a perturbation δ of the output weights, f = μ_y + s_y (h + φᵀδ); the sum over
        the N_r points is estimated on B = ``collocation_batch`` of them drawn from ``generator``,
        (N_r / B) Σ_{j∈B}. r̂ is affine in δ for a linear PDE (every shipped one), so Ω's columns
        are forward differences of size ``step``, exact up to round-off (about 1e-12 relative in
        float64, 1e-3 in float32, harmless in a precision matrix) and the Jacobian to O(step) for
        a nonlinear PDE. All m columns come from one residual evaluation over the B points
        repeated m + 1 times.
        """
        if self.residual is None or self.pde_weight <= 0 or self.residual_scale is None:
            return None
        n_col = len(self.collocation)
        idx = torch.randperm(n_col, generator=generator)[:min(self.collocation_batch, n_col)].to(self.device)
        points, scale = self.collocation[idx], self.residual_scale[idx]
        B, m = len(points), self.hidden[-1]
        directions = torch.cat([torch.zeros(1, m, dtype=self.dtype, device=self.device),
                                step * torch.eye(m, dtype=self.dtype, device=self.device)])   # (m + 1, m)
        shifts = directions.repeat_interleave(B, dim=0)                                      # (B (m + 1), m)

        def perturbed(x: torch.Tensor) -> torch.Tensor:
            z = self.normalise(x)
            return mean + std * (self.model(z) + (self.model.features(z) * shifts).sum(dim=1))

        r = self.residual(perturbed, points.repeat(m + 1, 1)).detach()
        r = (r / (std * scale.repeat(m + 1)[:, None])).reshape(m + 1, B, -1)               # (m + 1, B, K)
        omega = ((r[1:] - r[0]) / step).permute(1, 2, 0).reshape(-1, m)                     # (B K, m)
        return omega.T @ omega * (self.pde_weight * n_col / (B * noise_variance))

    # -- checkpoints ------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return network_state(self.model, self.adam, residual_scale=self.residual_scale,
                             pde_weight=self.pde_weight, fitted=self.fitted)

    def load_state_dict(self, state: dict) -> None:
        load_network_state(self.model, self.adam, state)
        self.residual_scale = state["residual_scale"]
        self.pde_weight = state["pde_weight"]
        self.fitted = state["fitted"]


class PINNBO(Optimizer):
    """PINN-BO ask/tell optimiser (minimises). Needs the problem's PDE; without one it is a
    neural-network Thompson sampler on data alone."""

    name = "pinn-bo"
    Settings = PINNBOSettings
    # Settings for CI's quick runs of every case (`--smoke`): the same code paths, tiny sizes.
    SMOKE_PARAMS = {"initial_steps": 20, "initial_max_steps": 20, "steps_per_iteration": 5, "collocation_points": 64,
                    "collocation_batch": 32, "n_pool": 128, "top_k": 2, "refine_iterations": 5}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        s: PINNBOSettings = self.settings
        self.dtype = DTYPES[s.dtype]
        self.surrogate = PINNSurrogate(
            domain, self.seed, residual=pde.compile() if pde is not None else None, hidden=s.hidden,
            collocation_points=s.collocation_points, collocation_batch=s.collocation_batch,
            initial_steps=s.initial_steps, steps_per_iteration=s.steps_per_iteration,
            learning_rate=s.learning_rate, pde_weight=s.pde_weight, misfit_tolerance=s.misfit_tolerance,
            collocation_filter=collocation_filter, dtype=self.dtype, device=self.device,
            bias_scale=s.bias_scale or (1.0 if domain.dim >= HIGH_DIMENSION else 0.1),
            input_scale=s.input_scale, fit_tolerance=s.fit_tolerance,
            initial_max_steps=s.initial_max_steps or (HIGH_DIMENSION_FIRST_FIT if domain.dim >= HIGH_DIMENSION else 0),
        )
        self.trust: TrustRegion | None = None   # created at the first ask after data exist
        # Hyper-parameters of the residual GP's two latest fits, (step, named parameters), as gp-cei's.
        self._residual_fits: list[tuple[int, dict[str, torch.Tensor]]] = []

    # The surrogate's parts (PINNSurrogate), under the names this class has always exposed.
    model = property(lambda self: self.surrogate.model)
    adam = property(lambda self: self.surrogate.adam)
    residual = property(lambda self: self.surrogate.residual)
    collocation = property(lambda self: self.surrogate.collocation)
    residual_scale = property(lambda self: self.surrogate.residual_scale)
    pde_weight = property(lambda self: self.surrogate.pde_weight)
    fitted = property(lambda self: self.surrogate.fitted)

    def _normalise(self, x: torch.Tensor) -> torch.Tensor:
        return self.surrogate.normalise(x)

    def _physical_model(self, mean: float, std: float):
        return self.surrogate.physical_model(mean, std)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
        """Train on standardised data (+ PDE residual); returns (μ_y, s_y)."""
        return self.surrogate.fit(X, y, torch_generator(self.seed, self.name, self.n_told, "collocation-batches"))

    def _posterior_sample(self, Z: torch.Tensor, mean: float = 0.0, std: float = 1.0) -> torch.Tensor | None:
        """K independent δ ~ N(0, ν² U⁻¹) for the last-layer weights, shape (m, K), (ν, K) from
        :meth:`exploration`; see module docstring ("Exploration"; (μ_y, s_y) = ``mean``, ``std`` for
        the PDE's part of U)."""
        s = self.settings
        if not s.thompson:
            return None
        scale, draws = self.exploration()
        with torch.no_grad():
            phi = self.model.features(Z)                                    # (n, m)
            m = phi.shape[1]
            U = s.prior_precision * torch.eye(m, dtype=self.dtype, device=self.device) + phi.T @ phi / s.noise_variance
        if s.pde_variance and self.domain.dim >= s.pde_variance_min_dim:
            precision = self.surrogate.pde_precision(mean, std, s.noise_variance, self.generator("pde-variance"))
            if precision is not None:
                U = U + precision
        with torch.no_grad():
            L = torch.linalg.cholesky(U)
            eps = torch.randn(m, draws, generator=self.generator("thompson"),
                              dtype=torch.float64).to(self.device, self.dtype)
            # U = L Lᵀ ⇒ δ = ν L⁻ᵀ ε has covariance ν² U⁻¹.
            delta = torch.linalg.solve_triangular(L.T, eps, upper=True)
        return scale * delta

    def trust_region_applies(self) -> bool:
        """Whether proposals are confined to TuRBO's trust region (module docstring, "Trust region")."""
        s = self.settings
        return s.trust_region and self.domain.dim >= s.trust_region_min_dim

    def exploration(self) -> tuple[float, int]:
        """(ν, K): the Thompson sample's scale and number of draws. ``exploration_scale`` and
        ``thompson_draws`` where given (> 0); else TuRBO's plain Thompson sample, ν = 1 and one draw,
        where the trust region applies, and ν = 10 with four draws where it does not (module
        docstring, "Exploration")."""
        s = self.settings
        scale, draws = TRUST_REGION_EXPLORATION if self.trust_region_applies() else GLOBAL_EXPLORATION
        return s.exploration_scale or scale, s.thompson_draws or draws

    # -- ask ------------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        X, y = self.observed()
        if len(y) == 0:
            return self.domain.from_unit(self.rng("empty").random(self.domain.dim))
        s = self.settings
        sample = self.acquisition_sample(X, y)
        best = np.argsort(y)[:3]
        rng = self.rng("local-starts")
        local = self.domain.to_unit(X[best])[:, None, :] + 0.02 * rng.standard_normal((len(best), 16, self.domain.dim))
        lower, upper = self._trust_bounds(X[best[0]], float(y[best[0]]))
        proposal = minimize_surrogate(
            sample, self.domain.dim, seed=derived_seed(self.seed, self.name, self.n_told, "pool"),
            evaluated_unit=self.evaluated_unit(), n_pool=s.n_pool, top_k=s.top_k,
            refine_iterations=s.refine_iterations, duplicate_tol=s.duplicate_tol,
            local_starts=local.reshape(-1, self.domain.dim), dtype=self.dtype, device=self.device,
            lower=lower, upper=upper,
        )
        return self.domain.from_unit(proposal.unit_x)

    def acquisition_sample(self, X: np.ndarray, y: np.ndarray):
        """Fit the surrogate to the observations (X (n, d) physical, y (n,)) and return the function
        this step minimises: unit points (N, d) → (N,) standardised values, differentiable; the
        trained PINN plus ν times its last-layer Thompson sample (module docstring, "Exploration"),
        with the residual GP's correction (``residual_gp``); with ``thompson_draws`` K > 1 the
        pointwise minimum of K such samples."""
        mean, std = self._fit(X, y)
        Z = self._normalise(torch.as_tensor(X, dtype=self.dtype, device=self.device))
        delta = self._posterior_sample(Z, mean, std)
        model = self.model
        residual = self._residual_sample(X, (y - mean) / std, Z)

        def sample(u: torch.Tensor) -> torch.Tensor:
            z = 2.0 * u - 1.0
            value = model(z)[:, None]                                             # (N, 1)
            explore = None
            if delta is not None:   # (N, K); one draw as a matrix-vector product, as before K existed
                explore = (model.features(z) @ delta[:, 0])[:, None] if delta.shape[1] == 1 else model.features(z) @ delta
            if residual is not None:
                correction, remaining = residual(u)                              # (N, K) or (N, 1); (N,)
                value = value + correction
                if explore is not None and remaining is not None:
                    # ρ → 0 at the data, where the GP's own sample carries the uncertainty.
                    explore = remaining.clamp_min(1e-12).sqrt()[:, None] * explore
            total = value if explore is None else value + explore
            # The most optimistic of K draws at each point: its minimiser is the minimiser of the
            # draw that promises the most (K = 1: the plain Thompson sample).
            return total.min(dim=1).values

        return sample

    def _residual_sample(self, X: np.ndarray, targets: np.ndarray, Z: torch.Tensor):
        """The residual GP's part of the sample (module docstring, "Residual GP"), or None.

        Fits a GP (:func:`pinnbo.optimizers.gp_cbo.fit_outputs`) to r_i = ỹ_i − h(x_i) at the
        observed designs (standardised units) and returns a differentiable map of unit points
        (N, d) → (correction (N, 1) or (N, K), ρ (N,) or None): ``mean`` the GP's posterior mean and
        no ρ; ``path`` ``thompson_draws`` K posterior sample paths of the GP (Matheron's rule on random
        Fourier features, BoTorch's ``draw_matheron_paths``) and no ρ; ``full`` those paths and ρ, the
        fraction of the GP's prior variance left at x.
        """
        s = self.settings
        if s.residual_gp == "none" or len(targets) < 2:
            return None
        draws = self.exploration()[1]
        with torch.no_grad():
            r = (torch.as_tensor(targets, dtype=self.dtype, device=self.device) - self.model(Z)).double()
        gp, self._residual_fits = fit_residual_gp(
            self.domain.to_unit(X), r.cpu().numpy()[:, None], self._residual_fits, self.n_told,
            derived_seed(self.seed, self.name, self.n_told, "residual-gp"),
            tolerance=s.residual_fit_tolerance, device=self.device,
            lengthscale_floor=s.residual_lengthscale_floor * len(X) ** (-1.0 / self.domain.dim),
            max_outliers=math.ceil(s.residual_outlier_fraction * len(X)),
            min_stdv=1.0 if s.residual_prior_scale == "objective" else 1e-8,
            outputscale=s.residual_prior_scale == "learned",
            outlier_method=s.residual_outlier_method, outlier_threshold=s.residual_outlier_z,
            optimize=residual_refit(len(X), s.residual_refit_growth), outlier_memory=s.residual_outlier_memory)
        self.residual_outliers = getattr(gp, "outliers", 0)    # the observations the GP left out or took as noise
        predictor = None                                                   # path alone needs no moments
        if s.residual_gp != "path":
            predictor = getattr(gp, "predictor", None) or GPPredictor(gp)    # the screen's, when it ran
        path = None
        if s.residual_gp in ("path", "full"):
            devices = [self.device] if self.device.type == "cuda" else []
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(derived_seed(self.seed, self.name, self.n_told, "residual-path"))
                path = draw_matheron_paths(gp, sample_shape=torch.Size([draws]))
        dtype = self.dtype

        def residual(u: torch.Tensor):
            u64 = u.to(torch.float64)
            if path is None:
                return predictor.moments(u64)[0][0][:, None].to(dtype), None
            if s.residual_gp == "path":
                return path(u64).reshape(draws, -1).T.to(dtype), None                     # (N, K)
            # one k(u, X) for ρ and the paths' update term
            _, _, remaining, paths = predictor.moments_and_paths(u64, path)
            return paths.to(dtype), remaining[0].to(dtype)

        return residual

    def _trust_bounds(self, incumbent: np.ndarray, best: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Advance the trust region by the values told since the last ask and return its box in
        unit coordinates around ``incumbent`` (d,) (physical), the design of the best observed
        value ``best``; (None, None) without a trust region."""
        s = self.settings
        if not self.trust_region_applies():
            return None, None
        if self.trust is None:   # the first proposal: the evaluations so far are its starting data
            self.trust = TrustRegion(length=s.trust_length, seen=self.n_told, best=best)
        else:
            self.trust.update(self.y[self.trust.seen:], s, self.domain.dim)
        return self.trust.bounds(self.domain.to_unit(incumbent[None, :])[0])

    # -- checkpoints ------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = self.surrogate.state_dict()
        state["trust_region"] = None if self.trust is None else dict(vars(self.trust))
        state["residual_fits"] = copy.deepcopy(self._residual_fits)
        return state

    def load_state_dict(self, state: dict) -> None:
        self.surrogate.load_state_dict(state)
        trust = state.get("trust_region")
        self.trust = None if trust is None else TrustRegion(**trust)
        self._residual_fits = copy.deepcopy(state.get("residual_fits", []))   # absent before residual_gp

