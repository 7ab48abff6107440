"""PINN-BO: Bayesian optimisation with a physics-informed neural network surrogate (Phan-Trong,
Tran-The, Gupta et al.; docs/algorithms.md, "PINN-BO").

At each step the PINN (:mod:`pinnbo.models.pinn`) is trained, warm-started, on the standardised
observations and the PDE residual at collocation points, and the next design minimises a Thompson
sample of the function built on it:

    f̃(x) = h(x) + g̃(x) + ν √ρ(x) φ(x)ᵀ δ,     δ ~ N(0, U⁻¹)   (PINN-BO, Eq. 4, in the last layer)

- h, the trained PINN (standardised units);
- φ(x)ᵀ δ, a sample of a Bayesian last layer on the PINN's features (:mod:`pinnbo.models.last_layer`);
  from ``HIGH_DIMENSION`` = 5 design variables up the PDE's collocation points enter U too, as
  pseudo-observations of their whitened residual, so the sample keeps what the PDE taught;
- g̃, one posterior sample path of a GP of the PINN's residuals at the data
  (:mod:`pinnbo.models.residual_gp`; Matheron's rule, BoTorch's ``draw_matheron_paths``), and
  ρ(x) the fraction of that GP's prior variance left at x: the sample follows the data exactly
  where there are data and explores in the gaps, where the network's σ remains;
- ν, the exploration scale, and K draws whose pointwise minimum is minimised (the most optimistic
  of K samples): ν = 10 with four draws below 5 design variables, where the sample itself must
  leave a basin; from 5 up, TuRBO's plain sample (one draw at ν = 1) minimised within TuRBO's trust
  region (:mod:`pinnbo.acquisition.trust_region`), whose restarts carry the global search.

Where the PDE's maximum principle puts the minimum on the box's boundary
(:meth:`pinnbo.pde.PDE.minimum_on_boundary`: Laplace's equation, a heat plate's temperature) the
proposals are sought on the box's faces only, below 5 design variables, until the measurements
contradict the principle: once 2d proposals lie on the faces and an interior design is still the
best observed, the whole box again (the PDE never overrules the data). While the search is on the
faces the sample is the network's alone, without the residual GP: the values there are the
boundary data, which may jump where two faces meet (a heat plate's corner takes the mean of its two
edges); a stationary GP of the residuals interpolates that jump along both faces and holds the
samples away from an optimum beside it, where the network alone reaches (docs/archive/benchmarks.md,
"The residual GP on the faces").

From 5 design variables up the network's bias scale is 1 (0.1 below) and the first fit goes on
while its loss falls, up to 5000 steps. The minimisation: a scrambled Sobol pool plus perturbed
incumbents, top-k, bounded L-BFGS-B, never a repeat (:func:`pinnbo.acquisition.search.minimize_surrogate`).
Each default is measured (docs/archive/benchmarks.md).

With designs still being evaluated (asynchronous runs) the sample knows them without their values:
their features join the last layer's precision U (exact: U does not depend on y) and the residual
GP is conditioned on its own mean there (:func:`pinnbo.models.gp.conditioned_on_pending`), so ρ and
both sources of exploration shrink at the pending designs; each proposal draws a fresh sample. Asks
with no tell between them (several workers free at once) share one fit: training again on the
same data would only cost time.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
from botorch.sampling.pathwise import draw_kernel_feature_paths, draw_matheron_paths

from pinnbo.acquisition.search import faces_only, minimize_surrogate
from pinnbo.acquisition.trust_region import TrustRegion
from pinnbo.models import last_layer
from pinnbo.models.gp import GPPredictor, conditioned_on_pending
from pinnbo.models.pinn import PINNSettings, PINNSurrogate
from pinnbo.models.residual_gp import OUTLIER_FRACTION, fit_residual_gp
from pinnbo.optimizers.base import DTYPES, MethodSettings, Optimizer
from pinnbo.streams import derived_seed, torch_generator

#: From this many design variables up: bias scale 1, a first fit that goes on while its loss falls,
#: the PDE in the last-layer posterior, TuRBO's trust region and its plain Thompson sample.
HIGH_DIMENSION = 5
FIRST_FIT_MAX_STEPS = 5000
#: (ν, K) of the Thompson sample by default with the trust region and without it.
TRUST_REGION_EXPLORATION = (1.0, 1)
GLOBAL_EXPLORATION = (10.0, 4)
#: L-BFGS-B ftol of the residual GP's warm-started hyper-parameter fit (one more observation barely
#: moves them).
RESIDUAL_FIT_TOLERANCE = 1e-4


@dataclass
class PINNBOSettings(PINNSettings, MethodSettings):
    """PINN-BO's documented defaults: the PINN's (:class:`~pinnbo.models.pinn.PINNSettings`) and these."""

    initial_max_steps: int = "auto"       # with a PDE the first fit goes on while its loss falls, up to this
                                          # many steps; auto: 5000 from HIGH_DIMENSION design variables up, none below
    exploration_scale: float = "auto"     # ν; auto: 10 below HIGH_DIMENSION design variables, 1 from there up
    thompson_draws: int = "auto"          # K: minimise the pointwise minimum of K samples; auto: 4 below, 1 from
    residual_gp: bool = True              # a GP of the PINN's residuals joins the sample, except on the faces
                                          # (the maximum principle; module docstring)
    n_pool: int = 2048                    # Sobol points scored per step
    top_k: int = 8                        # ... of which the best are refined by L-BFGS-B
    refine_iterations: int = 40
    duplicate_tol: float = 1e-4           # sup-norm distance (unit box) that counts as a repeat
    dtype: str = "float64"

    POSITIVE = PINNSettings.POSITIVE + ("n_pool", "top_k")
    NON_NEGATIVE = PINNSettings.NON_NEGATIVE + ("initial_max_steps", "exploration_scale", "thompson_draws",
                                                "refine_iterations", "duplicate_tol")
    CHOICES = {"dtype": tuple(DTYPES)}
    AUTO = ("initial_max_steps", "exploration_scale", "thompson_draws")
    INTERNAL = PINNSettings.INTERNAL + ("residual_gp", "n_pool", "top_k", "refine_iterations", "duplicate_tol")


class PINNBO(Optimizer):
    """PINN-BO ask/tell optimiser (minimises). Without a PDE it is a neural Thompson sampler on the
    data alone."""

    name = "pinn-bo"
    Settings = PINNBOSettings
    residual_only = True
    # Settings for CI's quick runs of every case (`--smoke`): the same code paths, tiny sizes.
    SMOKE_PARAMS = {"initial_steps": 20, "initial_max_steps": 20, "steps_per_iteration": 5, "collocation_points": 64,
                    "collocation_batch": 32, "n_pool": 128, "top_k": 2, "refine_iterations": 5}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        s: PINNBOSettings = self.settings
        self.dtype = DTYPES[s.dtype]
        self.high_dimension = domain.dim >= HIGH_DIMENSION
        self.surrogate = PINNSurrogate(
            domain, self.seed, residual=pde.compile() if pde is not None else None, settings=s,
            collocation_filter=collocation_filter, dtype=self.dtype, device=self.device,
            bias_scale=1.0 if self.high_dimension else 0.1,
            first_fit_max_steps=s.automatic("initial_max_steps", FIRST_FIT_MAX_STEPS if self.high_dimension else 0))
        # The minimum is on the boundary by the PDE's maximum principle (module docstring).
        self.boundary_minimum = (pde is not None and not self.high_dimension
                                 and pde.minimum_on_boundary(domain.named_bounds))
        self.trust: TrustRegion | None = None   # created at the first ask after data exist
        # Hyper-parameters of the residual GP's two latest fits, (step, named parameters).
        self._residual_fits: list[tuple[int, dict[str, torch.Tensor]]] = []
        # The fits of the latest ask, (told count, (mean, std)) and (told count, targets, residual GP):
        # another ask before a tell (an asynchronous run filling several free workers) draws from
        # them instead of training again on the same data.
        self._fit: tuple[int, tuple[float, float]] | None = None
        self._residual_fit: tuple[int, bytes, object] | None = None

    def exploration(self) -> tuple[float, int]:
        """(ν, K): the Thompson sample's scale and number of draws (module docstring)."""
        s = self.settings
        scale, draws = TRUST_REGION_EXPLORATION if self.high_dimension else GLOBAL_EXPLORATION
        return s.automatic("exploration_scale", scale), s.automatic("thompson_draws", draws)

    # -- ask ------------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        X, y = self.observed()
        if len(y) == 0:
            return self.random_design()
        s = self.settings
        on_faces = self.boundary_minimum and faces_only(self.domain.to_unit(X), y)
        sample = self.acquisition_sample(X, y, residual_gp=not on_faces)
        best = np.argsort(y)[:3]
        rng = self.rng("local-starts")
        local = self.domain.to_unit(X[best])[:, None, :] + 0.02 * rng.standard_normal((len(best), 16, self.domain.dim))
        lower, upper = self._trust_bounds(X[best[0]], float(y[best[0]]))
        proposal = minimize_surrogate(
            sample, self.domain.dim, seed=derived_seed(self.seed, self.name, self.ask_index, "pool"),
            evaluated_unit=self.evaluated_unit(), n_pool=s.n_pool, top_k=s.top_k,
            refine_iterations=s.refine_iterations, duplicate_tol=self.duplicate_tol,
            local_starts=local.reshape(-1, self.domain.dim), dtype=self.dtype, device=self.device,
            lower=lower, upper=upper, on_boundary=on_faces,
        )
        return self.domain.from_unit(proposal.unit_x)

    def acquisition_sample(self, X: np.ndarray, y: np.ndarray, residual_gp: bool = True):
        """Fit the surrogate to the observations (X (n, d) physical, y (n,)) and return the function
        this step minimises: unit points (N, d) → (N,) standardised values, differentiable (module
        docstring); the pointwise minimum of K samples. ``residual_gp`` False: without the residual GP
        whatever the setting (the face search)."""
        surrogate = self.surrogate
        if self._fit is not None and self._fit[0] == self.n_told:
            mean, std = self._fit[1]
        else:
            mean, std = surrogate.fit(X, y, torch_generator(self.seed, self.name, self.ask_index, "collocation-batches"))
            self._fit = (self.n_told, (mean, std))
        Z = surrogate.normalise(torch.as_tensor(X, dtype=self.dtype, device=self.device))
        delta = self._last_layer_sample(Z, mean, std)
        model = surrogate.model
        with_gp = residual_gp and self.settings.residual_gp
        residual = self._residual_sample(X, (y - mean) / std, Z) if with_gp else None

        def sample(u: torch.Tensor) -> torch.Tensor:
            z = 2.0 * u - 1.0
            value = model(z)[:, None]                                             # (N, 1)
            # (N, K); one draw as a matrix-vector product
            explore = (model.features(z) @ delta[:, 0])[:, None] if delta.shape[1] == 1 else model.features(z) @ delta
            if residual is not None:
                correction, remaining = residual(u)                              # (N, K); (N,)
                value = value + correction
                # ρ → 0 at the data, where the GP's own sample carries the uncertainty.
                explore = remaining.clamp_min(1e-12).sqrt()[:, None] * explore
            # The most optimistic of K draws at each point: its minimiser is the minimiser of the
            # draw that promises the most (K = 1: the plain Thompson sample).
            return (value + explore).min(dim=1).values

        return sample

    def _last_layer_sample(self, Z: torch.Tensor, mean: float, std: float) -> torch.Tensor:
        """K independent δ ~ N(0, ν² U⁻¹) of the last layer's weights, shape (m, K); the PDE's part
        of U from HIGH_DIMENSION design variables up (module docstring)."""
        scale, draws = self.exploration()
        if self.pending:
            Z = torch.cat([Z, self.surrogate.normalise(torch.as_tensor(np.stack(self.pending), dtype=self.dtype,
                                                                       device=self.device))])
        U = self.surrogate.last_layer_precision(Z)                                 # given n + pending designs
        if self.high_dimension:
            pde = self.surrogate.pde_precision(mean, std, self.generator("pde-variance"))
            if pde is not None:
                U = U + pde
        return last_layer.thompson_weights(U, draws, self.generator("thompson"), scale)

    def _residual_sample(self, X: np.ndarray, targets: np.ndarray, Z: torch.Tensor):
        """The residual GP's part of the sample, or None (fewer than two observations): a
        differentiable map of unit points (N, d) → (K posterior sample paths of the GP of
        r_i = ỹ_i − h(x_i), (N, K); ρ, the fraction of its prior variance left, (N,))."""
        if len(targets) < 2:
            return None
        draws = self.exploration()[1]
        key = np.asarray(targets, dtype=np.float64).tobytes()
        if self._residual_fit is not None and self._residual_fit[:2] == (self.n_told, key):
            gp = self._residual_fit[2]
        else:
            with torch.no_grad():
                r = (torch.as_tensor(targets, dtype=self.dtype, device=self.device) - self.surrogate.model(Z)).double()
            gp, self._residual_fits = fit_residual_gp(
                self.domain.to_unit(X), r.cpu().numpy()[:, None], self._residual_fits, self.n_told,
                derived_seed(self.seed, self.name, self.ask_index, "residual-gp"), tolerance=RESIDUAL_FIT_TOLERANCE,
                device=self.device, max_outliers=math.ceil(OUTLIER_FRACTION * len(X)), outputscale=True)
            self._residual_fit = (self.n_told, key, gp)
        self.residual_outliers = getattr(gp, "outliers", 0)   # observations the screen left out (diagnostics)
        if self.pending:
            gp = conditioned_on_pending(gp, self.pending_unit())
            predictor = GPPredictor(gp)
        else:
            predictor = getattr(gp, "predictor", None) or GPPredictor(gp)    # the screen's, when it ran
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(derived_seed(self.seed, self.name, self.ask_index, "residual-path"))
            path = draw_matheron_paths(gp, sample_shape=torch.Size([draws]), prior_sampler=_prior_paths)
        dtype = self.dtype

        def residual(u: torch.Tensor):
            # one k(u, X) for ρ and the paths' update term
            _, _, remaining, paths = predictor.moments_and_paths(u.to(torch.float64), path)
            return paths.to(dtype), remaining[0].to(dtype)

        return residual

    def _trust_bounds(self, incumbent: np.ndarray, best: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Advance the trust region by the values told since the last ask and return its box in
        unit coordinates around ``incumbent`` (d,) (physical), the design of the best observed
        value ``best``; (None, None) below HIGH_DIMENSION design variables."""
        if not self.high_dimension:
            return None, None
        if self.trust is None:   # the first proposal: the evaluations so far are its starting data
            self.trust = TrustRegion(seen=self.n_told, best=best)
        else:
            self.trust.update(self.y[self.trust.seen:], self.domain.dim)
        return self.trust.bounds(self.domain.to_unit(incumbent[None, :])[0])

    # -- checkpoints ------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = self.surrogate.state_dict()
        state["trust_region"] = None if self.trust is None else dict(vars(self.trust))
        state["residual_fits"] = copy.deepcopy(self._residual_fits)
        return state

    def load_state_dict(self, state: dict) -> None:
        self._fit = self._residual_fit = None
        self.surrogate.load_state_dict(state)
        trust = state.get("trust_region")
        self.trust = None if trust is None else TrustRegion(**trust)
        self._residual_fits = copy.deepcopy(state["residual_fits"])


def _prior_paths(model, sample_shape: torch.Size):
    """Prior sample paths of a GP by BoTorch's random features, their weights drawn by
    :func:`_latin_hypercube_normals` instead of BoTorch's default, a scrambled Sobol sequence in
    the features' 1024 dimensions, whose engine (scrambling 1024 coordinates) takes several times
    longer to start than the rest of the path draw."""
    return draw_kernel_feature_paths(model, sample_shape=sample_shape, weight_generator=_latin_hypercube_normals)


def _latin_hypercube_normals(shape: torch.Size) -> torch.Tensor:
    """Standard normals, shape (K, ...), stratified over the K draws: each coordinate's K values lie
    one in each K-quantile of N(0, 1), in random order, as in the first K points of a scrambled
    Sobol sequence. The K paths are then balanced about the prior mean (their mean's variance is
    far below 1/K), which makes the most optimistic of them more optimistic than the least of K
    independent draws: the exploration GLOBAL_EXPLORATION was chosen with. From the global stream,
    which the caller seeds; float64 on the CPU, whatever the model's device, so that a seed gives
    the same paths everywhere."""
    k = shape[0]
    strata = torch.rand(shape, dtype=torch.float64).argsort(dim=0)
    u = (strata + torch.rand(shape, dtype=torch.float64)) / k
    return math.sqrt(2.0) * torch.erfinv((2.0 * u - 1.0).clamp(-1.0 + 1e-15, 1.0 - 1e-15))
