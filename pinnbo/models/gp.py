"""Gaussian processes, one BoTorch stack for every method: the GP baselines' surrogate, gp-cei's
batched GP of the objective and the constraints, and the networks' residual GPs
(docs/algorithms.md, "GP baselines").

A ``SingleTaskGP`` on inputs in the unit cube (the optimisers map the design box there), with the
``Standardize`` outcome transform and a Matérn-5/2 ARD kernel carrying BoTorch's dimension-scaled
log-normal length-scale prior (Hvarfner et al. 2024): BoTorch ≥ 0.12 builds an RBF kernel by
default, so the Matérn kernel the papers use (ν = 2.5) is asked for explicitly. Hyper-parameters
are fitted by maximum marginal likelihood. "Noise-free" fixes the likelihood noise at a nugget
(``noise_floor`` in standardised units) instead of learning it.

:func:`fit_gp` is the baselines' GP of −y (BoTorch maximises, the optimisers minimise);
``kernel: isotropic`` is Kim & Sanz-Alonso's (one Matérn-5/2 lengthscale by maximum likelihood, no
hyper-prior, zero mean and unit prior variance on the standardised outputs; the defaults of the
``bayes_opt`` package their experiments ran on), its one hyper-parameter fitted by L-BFGS from the
best of a log-spaced grid (deterministic, where scikit-learn restarts from random draws).

:func:`fit_outputs` fits a batched GP of several outputs, warm-started from an earlier step's
hyper-parameters (:func:`earlier_fit`, :func:`remember_fit`: asking twice before a tell starts from
the same values, so ``ask`` stays a function of seed, told data and state) and stopped at a
relative decrease of ``tolerance`` (scipy's default 2e-9 made warm-started fits take seconds for
marginal likelihoods equal to four decimals). :class:`GPPredictor` evaluates a fitted GP's moments
from one Cholesky factor, ~45× faster per call than ``model.posterior``.
"""

from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np
import torch
from botorch.exceptions.warnings import InputDataWarning, OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import MixedSingleTaskGP, SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import Kernel, MaternKernel, ScaleKernel
from gpytorch.likelihoods import FixedNoiseGaussianLikelihood
from gpytorch.means import ZeroMean
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator.utils.cholesky import psd_safe_cholesky

KERNELS = ("ard", "isotropic")
# Unit-box lengthscales scored before the isotropic kernel's L-BFGS fit (1/100 of the box to 30 boxes).
ISOTROPIC_GRID = np.logspace(-2.0, 1.5, 15)


def fit_gp(unit_X: np.ndarray, y: np.ndarray, *, noise_free: bool, noise_floor: float = 1e-5,
           dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu", kernel: str = "ard",
           categorical: Sequence[int] = (), noise_sd: np.ndarray | None = None,
           start: dict[str, torch.Tensor] | None = None, jumps: Kernel | None = None) -> SingleTaskGP:
    """A GP of −y on ``unit_X`` (n, d) in [0, 1]^d, hyper-parameters fit by marginal likelihood.

    ``categorical``: the columns holding a choice variable's level (:mod:`pinnbo.space`): BoTorch's
    ``MixedSingleTaskGP``, the sum and the product of a Matérn kernel on the other columns and a
    categorical kernel (exp of minus the lengthscale-weighted count of differing choices) on these,
    so no order between the choices is assumed.

    ``noise_sd``: each observation's known noise standard deviation (n,), in y's units: the
    likelihood's noise is fixed at sd² (``Standardize`` rescales it with y) instead of fitted.
    ``start``: an earlier fit's hyper-parameters for the mixed GP (:func:`warm_start`): its dozen
    hyper-parameters take a cold fit ten times as long as a continuous GP's, from the previous
    step's a few iterations.

    ``kernel``: ``ard`` (Matérn-5/2, one lengthscale per input, BoTorch's dimension-scaled priors, a
    learned constant mean) or ``isotropic`` (Kim & Sanz-Alonso's: module docstring). ``jumps``: a
    kernel of functions that jump where the data do (:class:`pinnbo.models.corners.CornerKernel`),
    added to the ``ard`` kernel under a scale of its own.

    ``noise_free``: the observation noise is fixed at ``noise_floor`` × var(y), i.e. ``noise_floor``
    in standardised units (a nugget for numerical stability, no learned noise); otherwise the noise
    is learned with BoTorch's default log-normal prior. Uses the global torch RNG only if the
    optimiser restarts a failed fit: callers seed it.
    """
    train_X = torch.as_tensor(unit_X, dtype=dtype, device=device)
    train_Y = -torch.as_tensor(y, dtype=dtype, device=device).reshape(-1, 1)
    train_Yvar = None
    if noise_sd is not None:
        train_Yvar = torch.as_tensor(np.square(noise_sd), dtype=dtype, device=device).reshape(-1, 1)
    elif noise_free:
        variance = float(np.var(y)) if len(y) > 1 and np.var(y) > 0 else 1.0
        train_Yvar = torch.full_like(train_Y, noise_floor * variance)
    if categorical:
        model = mixed_gp(train_X, train_Y, train_Yvar, categorical)
        if start:
            warm_start(model, start)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizationWarning)
            # ftol as fit_outputs: the mixed kernel's dozen hyper-parameters took scipy's default
            # tolerance hundreds of iterations for the same marginal likelihood.
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model),
                             optimizer_kwargs={"options": {"ftol": 1e-6}})
        model.eval()
        return model
    if kernel == "isotropic":
        covar, mean = MaternKernel(nu=2.5), ZeroMean()
    else:
        covar, mean = get_covar_module_with_dim_scaled_prior(ard_num_dims=train_X.shape[-1], use_rbf_kernel=False), None
        if jumps is not None:
            covar = covar + ScaleKernel(jumps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputDataWarning)
        model = SingleTaskGP(train_X, train_Y, train_Yvar, covar_module=covar, mean_module=mean,
                             outcome_transform=Standardize(m=1))
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    if kernel == "isotropic":
        covar.lengthscale = _best_on_grid(mll, ISOTROPIC_GRID)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        fit_gpytorch_mll(mll)
    model.eval()
    return model


def mixed_gp(train_X: torch.Tensor, train_Y: torch.Tensor, train_Yvar: torch.Tensor | None,
             categorical: Sequence[int]) -> MixedSingleTaskGP:
    """BoTorch's GP for choice variables in the columns ``categorical`` (:func:`fit_gp`), the
    outputs of ``train_Y`` (n, m) standardised, not yet fitted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputDataWarning)
        return MixedSingleTaskGP(train_X, train_Y, cat_dims=list(categorical), train_Yvar=train_Yvar,
                                 cont_kernel_factory=_matern_factory, outcome_transform=Standardize(m=train_Y.shape[-1]))


def _matern_factory(batch_shape: torch.Size, ard_num_dims: int, active_dims: list[int]):
    """The continuous part of the mixed GP's kernel: Matérn-5/2 with BoTorch's dimension-scaled
    length-scale prior, as :func:`fit_gp` uses on continuous boxes."""
    return get_covar_module_with_dim_scaled_prior(ard_num_dims=ard_num_dims, batch_shape=batch_shape,
                                                  active_dims=active_dims, use_rbf_kernel=False)


def _best_on_grid(mll: ExactMarginalLogLikelihood, lengthscales: np.ndarray) -> float:
    """The lengthscale of ``lengthscales`` with the highest marginal likelihood of ``mll``'s model
    (one shared lengthscale, everything else fixed): the start of its L-BFGS fit."""
    model = mll.model
    model.train()
    scores = []
    with torch.no_grad():
        for ell in lengthscales:
            model.covar_module.lengthscale = float(ell)
            scores.append(float(mll(model(*model.train_inputs), model.train_targets)))
    scores = np.where(np.isfinite(scores), scores, -np.inf)
    return float(lengthscales[int(np.argmax(scores))])


def fit_outputs(unit_X: np.ndarray, Y: np.ndarray, *, noise_free: bool, noise_floor: float,
                start: dict[str, torch.Tensor] | None, tolerance: float = 1e-6, dtype: torch.dtype = torch.float64,
                device: torch.device | str = "cpu", outputscale: bool = False, categorical: Sequence[int] = ()
                ) -> SingleTaskGP:
    """A batched GP of the columns of ``Y`` (n, M) on ``unit_X`` (n, d) (module docstring),
    hyper-parameters fitted by marginal likelihood from ``start`` (named parameters of an earlier
    fit with the same outputs; those whose shapes still match are copied) or from BoTorch's
    defaults; ``categorical`` as in :func:`fit_gp`. ``tolerance``: L-BFGS-B's ftol (scipy's default, ≈ 2e-9, costs hundreds of iterations
    for no visible change in the fit). ``outputscale``: the prior variance is a hyper-parameter
    fitted with the others (a ``ScaleKernel``, no prior) instead of 1 after standardising."""
    train_X = torch.as_tensor(unit_X, dtype=dtype, device=device)
    train_Y = torch.as_tensor(Y, dtype=dtype, device=device).reshape(len(unit_X), -1)
    m = train_Y.shape[1]
    train_Yvar = None
    if noise_free:
        variance = np.var(np.asarray(Y).reshape(len(unit_X), -1), axis=0) if len(Y) > 1 else np.ones(m)
        variance = np.where(variance > 0, variance, 1.0)
        train_Yvar = (noise_floor * torch.as_tensor(variance, dtype=dtype, device=device)).expand_as(train_Y).clone()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputDataWarning)
        if categorical:   # choice variables: BoTorch's mixed kernel, as fit_gp
            model = mixed_gp(train_X, train_Y, train_Yvar, categorical)
        else:
            covar = matern_kernel(train_X.shape[-1], torch.Size([m]) if m > 1 else None, outputscale)
            model = SingleTaskGP(train_X, train_Y, train_Yvar, covar_module=covar, outcome_transform=Standardize(m=m))
    if start:
        warm_start(model, start)
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        # The batched (per-output) L-BFGS-B takes factr; ftol needs it cleared.
        options = {"ftol": tolerance, "factr": None} if m > 1 else {"ftol": tolerance}
        fit_gpytorch_mll(mll, optimizer_kwargs={"options": options})
    model.eval()
    return model


def matern_kernel(dim: int, batch_shape: torch.Size | None = None, outputscale: bool = False):
    """Matérn-5/2 ARD with BoTorch's dimension-scaled length-scale prior; with ``outputscale`` wrapped
    in a ``ScaleKernel`` whose variance is fitted by marginal likelihood (no prior).

    Why a fitted variance (PINN-BO's residual GP): after ``Standardize`` the prior variance is the
    sample variance of the targets, which counts every observation alike. When a search piles
    evaluations onto one spot, the residuals there are ~0 and their sample variance, so the GP's
    prior variance between the data, collapses with every new point, which keeps the search where
    it is. The marginal likelihood counts a cluster of strongly correlated points about as one."""
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


def record_fit(fits: list[tuple[int, dict]], step: int, params: dict) -> list[tuple[int, dict]]:
    """``fits`` with ``step``'s hyper-parameters ``params`` recorded: the latest earlier fit and this
    one, (step, values) each (what :func:`earlier_fit` reads; checkpointed by the optimisers that
    warm-start)."""
    return [f for f in fits if f[0] < step][-1:] + [(step, params)]


def remember_fit(fits: list[tuple[int, dict]], step: int, model) -> list[tuple[int, dict]]:
    """:func:`record_fit` of ``model``'s named parameters; a screened fit's ``outlier_indices`` are
    recorded with them, under that name (no parameter has it)."""
    params = fitted_parameters(model)
    if hasattr(model, "outlier_indices"):
        params["outlier_indices"] = torch.as_tensor(model.outlier_indices, dtype=torch.long)
    return record_fit(fits, step, params)


def fitted_parameters(model) -> dict[str, torch.Tensor]:
    """A detached copy of ``model``'s named parameters (a warm start for the next fit)."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}


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
            constant = getattr(model.mean_module, "constant", None)                # None: a ZeroMean
            self.constant = (torch.zeros(self.X.shape[0], 1, dtype=X.dtype, device=X.device) if constant is None
                             else constant.reshape(-1, 1))                              # (M, 1)
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


def conditioned_on_pending(model, unit_X: np.ndarray):
    """A copy of a fitted (batched) ``SingleTaskGP``, conditioned on
    observations at ``unit_X`` (p, d) whose values are its own posterior mean there ("kriging
    believer"): the mean is unchanged and the covariance is exactly the posterior covariance given
    observations at those designs, which does not depend on their values. What an asynchronous
    proposal knows of the designs still being evaluated. ``model`` itself when p = 0."""
    if len(unit_X) == 0:
        return model
    import copy

    with torch.no_grad():
        X = model.train_inputs[0]
        pending = torch.as_tensor(unit_X, dtype=X.dtype, device=X.device)
        predictor = GPPredictor(model)
        latent = predictor.constant + (predictor._cross_covariance(pending) @ predictor.alpha).squeeze(-1)  # (M, p)
        fantasy = copy.deepcopy(model)
        if predictor.batched:
            inputs = torch.cat([X, pending.expand(X.shape[0], *pending.shape)], dim=-2)
            targets = torch.cat([model.train_targets, latent], dim=-1)
        else:
            inputs = torch.cat([X, pending])
            targets = torch.cat([model.train_targets, latent[0]])
        fantasy.set_train_data(inputs=inputs, targets=targets, strict=False)
        if isinstance(fantasy.likelihood, FixedNoiseGaussianLikelihood):   # noise_free: the floor there too
            noise = fantasy.likelihood.noise
            extra = noise.min(dim=-1, keepdim=True).values.expand(*noise.shape[:-1], len(pending))
            fantasy.likelihood.noise = torch.cat([noise, extra], dim=-1)
    return fantasy
