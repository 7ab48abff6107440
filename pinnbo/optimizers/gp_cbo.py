"""GP-cEI: BoTorch constrained expected improvement (Gardner et al. 2014; REFERENCES §3, §5).

The baseline the Neural-CBO paper compares against. One Gaussian process per black-box output,
fitted together as a batched multi-output BoTorch ``SingleTaskGP`` on the same inputs (every output
is observed with every query: coupled evaluation): inputs in the unit cube, a ``Standardize``
outcome transform per output, a Matérn-5/2 ARD kernel with BoTorch's dimension-scaled priors
(independent hyper-parameters per output), learned noise (``noise_free: true`` fixes it at
``noise_floor`` standardised units), hyper-parameters fitted by maximum marginal likelihood at
every step, as :mod:`pinnbo.optimizers.gp_bo` does for one output. Output 0 is the objective y
(minimised), outputs 1..K the black-box constraints in the problem's order.

Acquisition (maximised with ``optimize_acqf``):

- some observed design is feasible (every observed c_i <= 0): ``LogConstrainedExpectedImprovement``
  with best_f = the best feasible observed value and constraints {i: (None, 0)}, i.e.
  log EI(x) + Σ_i log P(c_i(x) <= 0) (``maximize=False``);
- no feasible observation yet: ``LogProbabilityOfFeasibility`` of the black-box constraints: EI
  has no incumbent, and the first job is to find the feasible set (Gardner et al.; the same rule
  as Neural-CBO's, :mod:`pinnbo.optimizers.neural_cbo`);
- no black-box constraint (K = 0, or only known ones): ``LogExpectedImprovement`` on the
  single-output GP, best_f the best feasible observation (the best of all while none is feasible).

Known constraints (``Constraint.function`` set) are not modelled: they are exact, so they are
applied exactly. The restarts start from the best known-feasible points of a scrambled Sobol pool
(BoTorch's Boltzmann selection, ``initialize_q_batch``) and L-BFGS-B refines them on the
acquisition alone; a refined point that leaves the known-feasible set is rejected, and the
proposal is the best-scoring candidate among the refined points and the pool that satisfies every
known constraint and repeats no evaluated design (REFERENCES §6.1). Only when the whole pool
violates a known constraint is the least-violating pool point taken.

Speed (speed reducer: d = 7, 11 constraints, budget 200). Three things keep a step at about a
second:

- Posterior in q = 1 batch mode, as the analytic acquisitions ask for it, makes GPyTorch broadcast
  the (M, n, n) training caches to every one of b points ((b, M, n, n): 2 GB for b = 512, M = 12,
  n = 200; ≈ 2.5 s per raw-sample pass). The acquisitions here compute the same marginal means and
  variances from flat chunks of 64 points instead (:class:`_PointwiseMoments`; equal to 1e-11
  relative, gradients too), 15× faster for the whole ``optimize_acqf``.
- Batched L-BFGS-B on 12 outputs from BoTorch's initial hyper-parameters takes ≈ 450 iterations at
  n = 200 (30–50 s). Each fit therefore starts from the hyper-parameters of the previous step's
  fit (``warm_start``; checkpointed, and a repeated ask of the same step starts from the same
  values, so ``ask`` stays a function of seed, told data and state) ...
- ... and stops at a relative decrease of 1e-6 (``fit_tolerance``; scipy's default 2e-9 made
  warm-started fits take 5–8 s at n = 195 for marginal likelihoods equal to 4 decimals).

Measured (d = 7, 11 black-box constraints of the speed reducer's shape, 10 random initial points,
then 190 asks, one core with a benchmark running beside): 1.3 s per step on average for
t = 90–110 (0.3 s of it the fit), 1.5 s for t = 180–200 (0.8 s the fit), 2.3 s at most.

Determinism: like gp_bo, every call that may touch the global torch RNG (a restarted fit, the
Boltzmann selection of restarts) runs inside ``torch.random.fork_rng`` seeded from the step's
derived seed, and the raw pool is a scrambled Sobol set from the named stream.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from botorch.acquisition.analytic import (
    LogConstrainedExpectedImprovement, LogExpectedImprovement, LogProbabilityOfFeasibility,
)
from botorch.exceptions.warnings import InputDataWarning, OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from botorch.optim import optimize_acqf
from botorch.optim.initializers import initialize_q_batch
from gpytorch.constraints import GreaterThan
from gpytorch.kernels import ScaleKernel
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.utils.cholesky import psd_safe_cholesky

from pinnbo.acquisition import _nudged, farthest_from, is_duplicate
from pinnbo.optimizers.base import Optimizer, derived_seed, sobol_unit
from pinnbo.optimizers.gp_bo import GPSettings


@dataclass
class GPCEISettings(GPSettings):
    """GP-cEI: LogConstrainedExpectedImprovement, learned noise (GPSettings' fields, plus:)."""

    warm_start: bool = True         # start each hyper-parameter fit from the previous step's values
    fit_tolerance: float = 1e-6     # L-BFGS-B stops when the relative decrease of −log ML is below this

    POSITIVE = GPSettings.POSITIVE + ("fit_tolerance",)


class _PointwiseMoments:
    """Marginal posterior moments from flat chunks of points (see module docstring, "Speed").

    Overrides ``AnalyticAcquisitionFunction._mean_and_sigma``: X (b..., 1, d) → mean and σ of shape
    (b..., m), exactly the marginals BoTorch's batch-mode posterior gives.
    """

    chunk = 64

    def _mean_and_sigma(self, X: torch.Tensor, compute_sigma: bool = True, min_var: float = 1e-12):
        self.to(X)
        flat = X.reshape(-1, X.shape[-1])
        means, variances = [], []
        for i in range(0, len(flat), self.chunk):
            posterior = self.model.posterior(flat[i:i + self.chunk])
            means.append(posterior.mean)
            if compute_sigma:
                variances.append(posterior.variance)
        mean = torch.cat(means).reshape(*X.shape[:-2], -1)
        if not compute_sigma:
            return mean, None
        return mean, torch.cat(variances).clamp_min(min_var).sqrt().reshape(mean.shape)


class FastLogCEI(_PointwiseMoments, LogConstrainedExpectedImprovement):
    """LogConstrainedExpectedImprovement with pointwise moments."""


class FastLogPoF(_PointwiseMoments, LogProbabilityOfFeasibility):
    """LogProbabilityOfFeasibility with pointwise moments."""


class FastLogEI(_PointwiseMoments, LogExpectedImprovement):
    """LogExpectedImprovement with pointwise moments."""


def fit_outputs(unit_X: np.ndarray, Y: np.ndarray, *, noise_free: bool, noise_floor: float,
                start: dict[str, torch.Tensor] | None, tolerance: float = 1e-6, dtype: torch.dtype = torch.float64,
                device: torch.device | str = "cpu", lengthscale_floor: float | None = None,
                min_stdv: float = 1e-8, outputscale: bool = False, optimize: bool = True) -> SingleTaskGP:
    """A batched GP of the columns of ``Y`` (n, M) on ``unit_X`` (n, d), hyper-parameters fitted by
    marginal likelihood from ``start`` (named parameters of an earlier fit with the same outputs;
    those whose shapes still match are copied) or from BoTorch's defaults. ``tolerance``: L-BFGS-B's
    ftol (scipy's default, ≈ 2e-9, costs hundreds of iterations for no visible change in the fit).
    ``lengthscale_floor``: a lower bound on every lengthscale (unit-box units) above BoTorch's 0.025;
    a warm start below it starts at it. ``min_stdv``: a column whose standard deviation is below it is
    not rescaled (``Standardize``'s rule), so the GP's prior variance is then 1 in ``Y``'s units.
    ``outputscale``: the prior variance is a hyper-parameter fitted with the others (a ``ScaleKernel``,
    no prior) instead of 1 after standardising: see :func:`residual_kernel`. ``optimize`` false (with a
    ``start``): keep ``start``'s hyper-parameters, i.e. only condition the GP on the data."""
    train_X = torch.as_tensor(unit_X, dtype=dtype, device=device)
    train_Y = torch.as_tensor(Y, dtype=dtype, device=device).reshape(len(unit_X), -1)
    m = train_Y.shape[1]
    train_Yvar = None
    if noise_free:
        variance = np.var(np.asarray(Y).reshape(len(unit_X), -1), axis=0) if len(Y) > 1 else np.ones(m)
        variance = np.where(variance > 0, variance, 1.0)
        train_Yvar = (noise_floor * torch.as_tensor(variance, dtype=dtype, device=device)).expand_as(train_Y).clone()
    covar = residual_kernel(train_X.shape[-1], torch.Size([m]) if m > 1 else None, outputscale)
    base = covar.base_kernel if outputscale else covar
    floor = None
    if lengthscale_floor is not None and lengthscale_floor > base.raw_lengthscale_constraint.lower_bound.item():
        floor = float(lengthscale_floor)
        prior_mode = base.lengthscale_prior.mode.item()
        base.register_constraint("raw_lengthscale", GreaterThan(floor, transform=None,
                                                                initial_value=max(prior_mode, floor)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputDataWarning)
        model = SingleTaskGP(train_X, train_Y, train_Yvar, covar_module=covar,
                             outcome_transform=Standardize(m=m, min_stdv=min_stdv))
    if start:
        warm_start(model, start)
        if floor is not None:
            with torch.no_grad():
                base.raw_lengthscale.clamp_(min=floor)
    if optimize or not start:
        mll = ExactMarginalLogLikelihood(model.likelihood, model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizationWarning)
            # The batched (per-output) L-BFGS-B takes factr; ftol needs it cleared.
            options = {"ftol": tolerance, "factr": None} if m > 1 else {"ftol": tolerance}
            fit_gpytorch_mll(mll, optimizer_kwargs={"options": options})
    model.eval()
    return model


def residual_kernel(dim: int, batch_shape: torch.Size | None = None, outputscale: bool = False):
    """Matérn-5/2 ARD with BoTorch's dimension-scaled length-scale prior; with ``outputscale`` wrapped
    in a ``ScaleKernel`` whose variance is fitted by marginal likelihood (no prior).

    Why a fitted variance: after ``Standardize`` the prior variance is the sample variance of the
    targets, which counts every observation alike. When a search piles evaluations onto one spot
    (a Thompson sample that keeps proposing its incumbent), the network fits that cluster, its
    residuals there are ~0, and the sample variance of the residuals (so the GP's prior variance
    between the data) collapses with every new point, which keeps the search where it is. The
    marginal likelihood counts a cluster of strongly correlated points about as one, so a fitted
    variance follows the residuals of the spread-out points (docs/benchmarks.md, the beam's seed 7)."""
    covar = get_covar_module_with_dim_scaled_prior(ard_num_dims=dim, batch_shape=batch_shape, use_rbf_kernel=False)
    if outputscale:
        covar = ScaleKernel(covar, batch_shape=batch_shape if batch_shape is not None else torch.Size([]))
    return covar


def warm_start(model, start: dict[str, torch.Tensor]) -> None:
    """Copy into ``model`` the parameters of ``start`` (named parameters of an earlier fit) whose
    names and shapes still match; the others keep their initial values."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in start and start[name].shape == p.shape:
                p.copy_(start[name].to(p))


def earlier_fit(fits: list[tuple[int, dict]], step: int) -> dict | None:
    """The hyper-parameters of the latest fit made before ``step`` (None if none): a step's fit
    starts from them, so asking twice before a tell starts from the same values."""
    earlier = [params for fit_step, params in fits if fit_step < step]
    return earlier[-1] if earlier else None


def remember_fit(fits: list[tuple[int, dict]], step: int, model) -> list[tuple[int, dict]]:
    """``fits`` with ``step``'s fit of ``model`` recorded: the latest earlier fit and this one,
    (step, named parameters) each (checkpointed by the optimisers that warm-start); a screened
    fit's ``outlier_indices`` are recorded with them, under that name (no parameter has it)."""
    params = fitted_parameters(model)
    if hasattr(model, "outlier_indices"):
        params["outlier_indices"] = torch.as_tensor(model.outlier_indices, dtype=torch.long)
    return [f for f in fits if f[0] < step][-1:] + [(step, params)]


def fitted_parameters(model) -> dict[str, torch.Tensor]:
    """A detached copy of ``model``'s named parameters (a warm start for the next fit)."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def fit_outlier_robust(unit_X: np.ndarray, y: np.ndarray, *, max_outliers: int, start: dict[str, torch.Tensor] | None,
                       tolerance: float = 1e-6, dtype: torch.dtype = torch.float64,
                       device: torch.device | str = "cpu", min_stdv: float = 1e-8,
                       outputscale: bool = False) -> SingleTaskGP:
    """A GP of ``y`` (n,) or (n, 1) on ``unit_X`` (n, d) whose likelihood gives each observation its own
    extra noise ρ_i ≥ 0 on a sparse support: Ament et al.'s relevance pursuit (NeurIPS 2024, BoTorch's
    ``RobustRelevancePursuitSingleTaskGP``), forward, over 0..``max_outliers`` outliers, the support
    size chosen by Bayesian model comparison (its prior mean 0.2 n, BoTorch's default).

    Returned as a plain ``SingleTaskGP`` with the fitted per-point noise σ² + ρ_i as fixed noise and
    the same kernel and mean, so that its posterior, :class:`GPPredictor` and Matheron sample paths
    all see the outliers' noise (BoTorch's path sampler does not pass the training inputs to the
    sparse likelihood and would interpolate an outlier as data). Kernel, ``min_stdv`` and
    ``outputscale`` as :func:`fit_outputs`."""
    from botorch.models.relevance_pursuit import forward_relevance_pursuit
    from botorch.models.robust_relevance_pursuit_model import RobustRelevancePursuitSingleTaskGP

    train_X = torch.as_tensor(unit_X, dtype=dtype, device=device)
    train_Y = torch.as_tensor(y, dtype=dtype, device=device).reshape(len(unit_X), 1)
    covar = residual_kernel(train_X.shape[-1], None, outputscale)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputDataWarning)
        robust = RobustRelevancePursuitSingleTaskGP(train_X, train_Y, covar_module=covar,
                                                    outcome_transform=Standardize(m=1, min_stdv=min_stdv))
    if start:
        warm_start(robust, start)
    mll = ExactMarginalLogLikelihood(robust.likelihood, robust)
    with warnings.catch_warnings():
        # "expansion ... unsuccessful": the pursuit stops early at a stationary point, as intended.
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(mll, numbers_of_outliers=list(range(max_outliers + 1)),
                         relevance_pursuit_optimizer=forward_relevance_pursuit,
                         optimizer_kwargs={"options": {"ftol": tolerance}})
    robust.eval()
    with torch.no_grad():
        transformed_X = robust.train_inputs[0]
        noise = robust.likelihood.noise_covar(transformed_X).diagonal().reshape(-1, 1)    # standardised units
        stdv = robust.outcome_transform.stdvs.reshape(1, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InputDataWarning)
            model = SingleTaskGP(train_X, train_Y, (noise * stdv.square()).clone(), covar_module=copy.deepcopy(robust.covar_module),
                                 mean_module=copy.deepcopy(robust.mean_module),
                                 outcome_transform=Standardize(m=1, min_stdv=min_stdv))
    model.eval()
    flagged = noise.reshape(-1) > robust.likelihood.noise_covar.base_noise.noise.reshape(-1)[0] * (1 + 1e-6)
    model.outlier_indices = torch.nonzero(flagged).reshape(-1).tolist()
    model.outliers = len(model.outlier_indices)
    return model


def loo_z_scores(model, predictor: "GPPredictor | None" = None) -> torch.Tensor:
    """Leave-one-out standardised residuals of a fitted single-output GP, shape (n,):
    z_i = (y_i − μ_{−i}) / σ_{−i} = [K⁻¹(y − c)]_i / √[K⁻¹]_ii, K = k(X, X) + noise (Rasmussen &
    Williams 2006, Eq. 5.12), with the hyper-parameters of the fit on all n points. ``predictor``:
    the model's :class:`GPPredictor` where the caller has it (its Cholesky factor of K and α = K⁻¹(y − c))."""
    predictor = predictor or GPPredictor(model)
    with torch.no_grad():
        Kinv = torch.cholesky_inverse(predictor.L[0])
        return predictor.alpha[0, :, 0] / Kinv.diagonal().sqrt()


def fit_loo_screened(unit_X: np.ndarray, y: np.ndarray, *, max_outliers: int, threshold: float,
                     start: dict[str, torch.Tensor] | None, previous_outliers=(), **fit_kwargs) -> SingleTaskGP:
    """:func:`fit_outputs` of ``y`` (n, 1) on ``unit_X`` (n, d) without the observations its own
    leave-one-out prediction misses: refit without the point of largest |z| (:func:`loo_z_scores`)
    while that exceeds ``threshold``, at most ``max_outliers`` left out, each refit warm-started from
    the last. A cheap stand-in for relevance pursuit (:func:`fit_outlier_robust`: one Gaussian fit
    per candidate support size, ≈ 8 s at n = 200 against ≈ 0.05 s here): the heat plate's cold
    corner, 1e-4 from a neighbour 8 standardised units warmer, has |z| in the hundreds, and the
    neighbour, predicted from the corner and the rest, less, so the corner goes first and the
    neighbour then fits.

    ``previous_outliers``: the rows an earlier screen of the same rows (plus new ones) left out. The
    screen starts without them instead of rediscovering them one refit at a time, and takes back
    any whose prediction by the others is now within ``threshold`` (|y_j − μ(x_j)| / σ(x_j), noise
    included: the same z as leave-one-out's, for a point not in the fit). A search keeps the outliers
    it has, so this is one fit per step where the screen from scratch refits once per outlier. A row
    taken back is not left out again in the same call, and the other way round, so it cannot cycle.
    Returns the model with ``outlier_indices`` (into the n rows), ``outliers`` and ``predictor``, its
    :class:`GPPredictor` (one Cholesky factor serves both scores and the caller)."""
    n = len(unit_X)
    left_out = sorted({int(i) for i in previous_outliers if 0 <= int(i) < n})[:max_outliers]
    taken_back: set[int] = set()
    dropped_now: set[int] = set()
    keep = np.setdiff1d(np.arange(n), left_out)
    model = fit_outputs(unit_X[keep], y[keep], start=start, **fit_kwargs)
    while True:
        predictor = GPPredictor(model)
        back = []
        if left_out:
            back = [j for j, z in zip(left_out, out_of_sample_z_scores(model, unit_X[left_out], y[left_out], predictor))
                    if abs(z) <= threshold and j not in dropped_now]
        worst = None
        if len(left_out) - len(back) < max_outliers:
            z = loo_z_scores(model, predictor).abs()
            if taken_back:                                               # rows taken back stay
                z[[int(np.searchsorted(keep, j)) for j in taken_back]] = 0.0
            candidate = int(torch.argmax(z))
            if z[candidate] > threshold:
                worst = int(keep[candidate])
        if not back and worst is None:
            break
        taken_back.update(back)
        if worst is not None:
            dropped_now.add(worst)
        left_out = sorted(set(left_out).difference(back) | ({worst} if worst is not None else set()))
        keep = np.setdiff1d(np.arange(n), left_out)
        model = fit_outputs(unit_X[keep], y[keep], start=fitted_parameters(model), **fit_kwargs)
    model.outlier_indices = left_out
    model.outliers = len(left_out)
    model.predictor = predictor
    return model


def out_of_sample_z_scores(model, unit_X: np.ndarray, y: np.ndarray,
                           predictor: "GPPredictor | None" = None) -> np.ndarray:
    """(y_j − μ(x_j)) / √(σ²(x_j) + noise) of points (m, d), (m, 1) not in a fitted single-output GP's
    data, shape (m,): for a point left out of the fit, its leave-one-out z (:func:`loo_z_scores`).
    ``predictor``: the model's :class:`GPPredictor` where the caller has it."""
    predictor = predictor or GPPredictor(model)
    x = torch.as_tensor(unit_X, dtype=predictor.X.dtype, device=predictor.X.device)
    with torch.no_grad():
        mean, std, _ = predictor.moments(x)
        noise = model.likelihood.noise.reshape(-1)[0] * predictor.stdvs[0] ** 2
        sd = (std[0] ** 2 + noise).sqrt()
        return ((torch.as_tensor(y, dtype=mean.dtype, device=mean.device).reshape(-1) - mean[0]) / sd).cpu().numpy()


def fit_residual_gp(unit_X: np.ndarray, R: np.ndarray, fits: list[tuple[int, dict]], step: int, seed: int, *,
                    tolerance: float, device: torch.device, lengthscale_floor: float | None = None,
                    max_outliers: int = 0, min_stdv: float = 1e-8, outputscale: bool = False,
                    outlier_method: str = "pursuit", outlier_threshold: float = 5.0, optimize: bool = True,
                    outlier_memory: bool = False):
    """A network's residual GP: :func:`fit_outputs` of ``R`` (n, M) on ``unit_X`` (n, d) with learned
    noise, warm-started from the latest fit before ``step`` in ``fits``, any global-RNG draw of the fit
    seeded by ``seed``; with ``max_outliers`` > 0 (M = 1 only) :func:`fit_outlier_robust` instead
    (``outlier_method`` "pursuit") or :func:`fit_loo_screened` with ``outlier_threshold`` ("loo").
    ``optimize`` false: the earlier fit's hyper-parameters are kept (Gaussian and "loo" only).
    ``outlier_memory`` ("loo"): the screen starts from the rows the earlier fit left out.
    Returns (the model, ``fits`` with this step's recorded) (Neural-CBO's and PINN-BO's ``residual_gp``)."""
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        if max_outliers > 0 and outlier_method == "loo":
            start = earlier_fit(fits, step)
            previous = start.get("outlier_indices", torch.empty(0)).tolist() if outlier_memory and start else ()
            model = fit_loo_screened(unit_X, R, max_outliers=max_outliers, threshold=outlier_threshold,
                                     start=start, previous_outliers=previous, noise_free=False, noise_floor=0.0,
                                     tolerance=tolerance, device=device, min_stdv=min_stdv, outputscale=outputscale,
                                     optimize=optimize)
        elif max_outliers > 0:
            model = fit_outlier_robust(unit_X, R, max_outliers=max_outliers, start=earlier_fit(fits, step),
                                       tolerance=tolerance, device=device, min_stdv=min_stdv,
                                       outputscale=outputscale)
        else:
            model = fit_outputs(unit_X, R, noise_free=False, noise_floor=0.0, start=earlier_fit(fits, step),
                                tolerance=tolerance, device=device, lengthscale_floor=lengthscale_floor,
                                min_stdv=min_stdv, outputscale=outputscale, optimize=optimize)
    return model, remember_fit(fits, step, model)


class GPPredictor:
    """The latent posterior mean and standard deviation of a fitted (batched) BoTorch ``SingleTaskGP``
    with a ``Standardize`` outcome transform, from one Cholesky factor per output computed once.

    ``model.posterior`` rebuilds its prediction strategy and checks its inputs on every call
    (≈ 45 ms per call for 2 outputs at n = 100, against 1 ms for the algebra); the refinement asks
    for moments a dozen times per step. Equal to the posterior to rounding (tested). Shapes: the
    model's train inputs (M, n, d) (or (n, d) for M = 1); a call maps (N, d) → (mean, std, the
    fraction of the prior variance that remains), each (N, M).
    """

    def __init__(self, model) -> None:
        with torch.no_grad():
            X = model.train_inputs[0]
            self.batched = X.dim() == 3
            self.X = X if self.batched else X[None]                                   # (M, n, d)
            targets = model.train_targets if self.batched else model.train_targets[None]   # (M, n), transformed
            self.kernel = model.covar_module
            self.constant = model.mean_module.constant.reshape(-1, 1)                 # (M, 1)
            n = X.shape[-2]
            # learned noise (M, 1) or (1,) broadcasts over the n points; fixed noise is (M, n) or (n,)
            noise = model.likelihood.noise.reshape(self.X.shape[0], -1).expand(self.X.shape[0], n)
            K = self.kernel(X).to_dense().reshape(self.X.shape[0], n, n)
            K = K + torch.diag_embed(noise)
            self.L = psd_safe_cholesky(K)          # as GPyTorch's own posterior: jitter if needed
            self.alpha = torch.cholesky_solve((targets - self.constant).unsqueeze(-1), self.L)   # (M, n, 1)
            self.means = model.outcome_transform.means.reshape(-1)                   # (M,)
            self.stdvs = model.outcome_transform.stdvs.reshape(-1)

    def __call__(self, x: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with torch.no_grad():
            mean, std, remaining = self.moments(x)
        return mean.T.cpu().numpy(), std.T.cpu().numpy(), remaining.T.cpu().numpy()

    def moments(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The same three moments as torch tensors of shape (M, N), differentiable in ``x`` (N, d)
        (PINN-BO minimises a sample built from them by gradients)."""
        return self._moments(x, self._cross_covariance(x))

    def moments_and_paths(self, x: torch.Tensor, path) -> tuple[torch.Tensor, ...]:
        """:meth:`moments` and the values at ``x`` (N, d) of ``path``, K Matheron sample paths of
        this (single-output) model from BoTorch's ``draw_matheron_paths``, shape (N, K), from one
        evaluation of k(x, X). A Matheron path is f(x) + k(x, X) W with f a random-Fourier-feature
        prior path and W = K⁻¹(y − f(X) − ε) (Wilson et al., ICML 2020, Eq. 13), in standardised
        units; its update term is the product with the k(x, X) the moments need anyway. Equal to
        ``path(x)`` to rounding (tested); about half the cost of evaluating both apart."""
        Kx = self._cross_covariance(x)
        mean, std, remaining = self._moments(x, Kx)
        prior = path.paths["prior_paths"](x)                                            # (K, N)
        weight = path.paths["update_paths"].weight.reshape(-1, Kx.shape[-1], 1)            # (K, n, 1)
        update = (Kx[0] @ weight).squeeze(-1)      # (K, N): BoTorch's product, so the same rounding
        return mean, std, remaining, (self.means[0] + self.stdvs[0] * (prior + update)).T

    def _cross_covariance(self, x: torch.Tensor) -> torch.Tensor:
        """k(x, X), shape (M, N, n)."""
        xb = x.expand(self.X.shape[0], *x.shape) if self.batched else x
        return self.kernel(xb, self.X if self.batched else self.X[0]).to_dense().reshape(self.X.shape[0], len(x), -1)

    def _moments(self, x: torch.Tensor, Kx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        xb = x.expand(self.X.shape[0], *x.shape) if self.batched else x
        prior = self.kernel(xb, xb, diag=True).reshape(self.X.shape[0], len(x))
        mean = self.constant + (Kx @ self.alpha).squeeze(-1)                          # (M, N)
        v = torch.linalg.solve_triangular(self.L, Kx.transpose(-1, -2), upper=False)
        var = (prior - v.pow(2).sum(dim=-2)).clamp_min(0.0)
        mean = self.means[:, None] + self.stdvs[:, None] * mean
        std = self.stdvs[:, None] * var.clamp_min(torch.finfo(var.dtype).tiny).sqrt() * (var > 0)
        remaining = var / prior.clamp_min(torch.finfo(prior.dtype).tiny)
        return mean, std, remaining


class GPCEI(Optimizer):
    """GP constrained expected improvement (BoTorch) ask/tell optimiser (minimises)."""

    name = "gp-cei"
    constrained_method = True
    Settings = GPCEISettings
    handles_constraints = True
    SMOKE_PARAMS = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu",
                 constraints=()):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter,
                         device=device, constraints=constraints)
        self.blackbox = [i for i, c in enumerate(self.constraints) if not c.known]
        self.known = [i for i, c in enumerate(self.constraints) if c.known]
        self.model = None           # the last fitted GP
        self.last_mode = ""         # "cei" | "feasibility" | "ei": the acquisition of the last proposal
        # Hyper-parameters of the two latest fits, (step, named parameters): a step starts from the
        # latest fit of an earlier step, so asking twice before a tell starts from the same values.
        self._fits: list[tuple[int, dict[str, torch.Tensor]]] = []

    # -- known constraints ------------------------------------------------------------------------------
    def _known_violation(self, unit: np.ndarray) -> np.ndarray:
        """Σ_i max(c_i(x), 0) over the known constraints at unit points (N, d) → (N,), exact."""
        X = self.domain.from_unit(unit)
        total = np.zeros(len(X))
        for i in self.known:
            total += np.maximum(np.asarray(self.constraints[i].function(X), dtype=np.float64).reshape(len(X)), 0.0)
        return total

    # -- proposals ----------------------------------------------------------------------------------------
    def propose(self) -> np.ndarray:
        s = self.settings
        d = self.domain.dim
        X, y, C = self.observed_constrained()
        evaluated = self.evaluated_unit()
        if len(y) == 0:
            self.last_mode = "start"
            pool = sobol_unit(s.raw_samples, d, self.seed, self.name, self.n_told, "start")
            return self.domain.from_unit(_best_allowed(pool, np.zeros(len(pool)), self._known_violation(pool),
                                                       evaluated, s.duplicate_tol))
        feasible = np.all(C <= 0.0, axis=1) if C.shape[1] else np.ones(len(y), dtype=bool)
        Y = np.column_stack([y] + [C[:, i] for i in self.blackbox])
        seed = derived_seed(self.seed, self.name, self.n_told, "botorch")
        dtype = torch.float64
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            start = earlier_fit(self._fits, self.n_told) if s.warm_start else None
            self.model = fit_outputs(self.domain.to_unit(X), Y, noise_free=s.noise_free, noise_floor=s.noise_floor,
                                     start=start, tolerance=s.fit_tolerance, dtype=dtype, device=self.device)
            self._fits = remember_fit(self._fits, self.n_told, self.model)
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
        d = self.domain.dim
        dtype = torch.float64
        pool = sobol_unit(s.raw_samples, d, self.seed, self.name, self.n_told, "raw-samples")
        pool_violation = self._known_violation(pool)
        with torch.no_grad():
            pool_values = acq(torch.as_tensor(pool, dtype=dtype, device=self.device).unsqueeze(1))
        pool_values = pool_values.detach().cpu().double().numpy()
        starts_from = np.flatnonzero((pool_violation == 0.0) & np.isfinite(pool_values))
        candidates, values = np.zeros((0, d)), np.zeros(0)
        if len(starts_from):
            X0 = torch.as_tensor(pool[starts_from], dtype=dtype, device=self.device).unsqueeze(1)
            v0 = torch.as_tensor(pool_values[starts_from], dtype=dtype, device=self.device)
            starts, _ = initialize_q_batch(X0, v0, n=min(s.num_restarts, len(starts_from)))
            bounds = torch.stack([torch.zeros(d, dtype=dtype), torch.ones(d, dtype=dtype)]).to(self.device)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizationWarning)
                warnings.filterwarnings("ignore", message="Optimization failed", category=RuntimeWarning)
                refined, refined_values = optimize_acqf(
                    acq, bounds=bounds, q=1, num_restarts=len(starts), batch_initial_conditions=starts,
                    options={"maxiter": s.maxiter}, return_best_only=False,
                )
            candidates = refined.reshape(-1, d).detach().cpu().double().numpy().clip(0.0, 1.0)
            values = refined_values.reshape(-1).detach().cpu().double().numpy()
            nudged = _nudged(candidates, evaluated, s.duplicate_tol)
            if len(nudged):
                with torch.no_grad():
                    nudged_values = acq(torch.as_tensor(nudged, dtype=dtype, device=self.device).unsqueeze(1))
                candidates = np.concatenate([candidates, nudged])
                values = np.concatenate([values, nudged_values.detach().cpu().double().numpy()])
        candidates = np.concatenate([candidates, pool])
        values = np.concatenate([values, pool_values])
        violation = np.concatenate([self._known_violation(candidates[:len(candidates) - len(pool)]), pool_violation])
        return _best_allowed(candidates, values, violation, evaluated, s.duplicate_tol)

    # -- checkpoints ----------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"fits": copy.deepcopy(self._fits)}

    def load_state_dict(self, state: dict) -> None:
        self._fits = copy.deepcopy(state["fits"])


def _best_allowed(points: np.ndarray, values: np.ndarray, violation: np.ndarray, evaluated: np.ndarray,
                  tol: float) -> np.ndarray:
    """The best row of ``points`` by ``values`` (higher is better; non-finite last) among those with
    zero known ``violation`` that repeat no evaluated design; else the least violating new one; else
    the point farthest from every evaluated design."""
    score = np.where(np.isfinite(values), values, -np.inf)
    for i in np.lexsort((-score, violation)):
        if not is_duplicate(points[i], evaluated, tol):
            return points[i]
    return points[farthest_from(points, evaluated)]
