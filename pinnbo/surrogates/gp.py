"""Gaussian-process surrogates (BoTorch) for the GP baselines (REFERENCES §4, §5).

SingleTaskGP on inputs already in the unit cube (the optimisers map the design box there), with
the ``Standardize`` outcome transform and a Matérn-5/2 ARD kernel carrying BoTorch's
dimension-scaled log-normal length-scale prior (Hvarfner et al. 2024). BoTorch ≥ 0.12 builds an
RBF kernel by default, so the Matérn kernel the papers use (Kim & Sanz-Alonso: ν = 2.5) is asked
for explicitly. Hyper-parameters are refit by maximum marginal likelihood at every call.

``kernel: isotropic`` is the GP Kim & Sanz-Alonso's experiments describe (seed 002, §6: "Matérn
kernel with the default initial smoothness ν = 2.5 and initial lengthscale 1", every hyper-parameter
by maximum likelihood; β^½ = 2, EI and PI as the other baselines: the defaults of the ``bayes_opt``
package, a scikit-learn GP with ``normalize_y``): one lengthscale shared by every input, no
hyper-prior, zero mean and unit prior variance on the standardised outputs. Its one hyper-parameter
is fitted by L-BFGS from the best of a log-spaced grid of lengthscales (deterministic, where
scikit-learn restarts from random draws).

BoTorch maximises, our optimisers minimise: the GP is fit to −y, so every acquisition function
is used in its maximisation form.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from botorch.exceptions.warnings import InputDataWarning, OptimizationWarning
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from botorch.models.transforms.outcome import Standardize
from botorch.models.utils.gpytorch_modules import get_covar_module_with_dim_scaled_prior
from gpytorch.kernels import MaternKernel
from gpytorch.means import ZeroMean
from gpytorch.mlls import ExactMarginalLogLikelihood

KERNELS = ("ard", "isotropic")
# Unit-box lengthscales scored before the isotropic kernel's L-BFGS fit (1/100 of the box to 30 boxes).
ISOTROPIC_GRID = np.logspace(-2.0, 1.5, 15)


def fit_gp(unit_X: np.ndarray, y: np.ndarray, *, noise_free: bool, noise_floor: float = 1e-5,
           dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu", kernel: str = "ard") -> SingleTaskGP:
    """A GP of −y on ``unit_X`` (n, d) in [0, 1]^d, hyper-parameters fit by marginal likelihood.

    ``kernel``: ``ard`` (Matérn-5/2, one lengthscale per input, BoTorch's dimension-scaled priors, a
    learned constant mean) or ``isotropic`` (Kim & Sanz-Alonso's: module docstring).

    ``noise_free``: the observation noise is fixed at ``noise_floor`` × var(y), i.e. ``noise_floor``
    in standardised units (a nugget for numerical stability, no learned noise); otherwise the noise
    is learned with BoTorch's default log-normal prior. Uses the global torch RNG only if the
    optimiser restarts a failed fit: callers seed it (see :func:`pinnbo.optimizers.gp_bo`).
    """
    train_X = torch.as_tensor(unit_X, dtype=dtype, device=device)
    train_Y = -torch.as_tensor(y, dtype=dtype, device=device).reshape(-1, 1)
    train_Yvar = None
    if noise_free:
        variance = float(np.var(y)) if len(y) > 1 and np.var(y) > 0 else 1.0
        train_Yvar = torch.full_like(train_Y, noise_floor * variance)
    if kernel == "isotropic":
        covar, mean = MaternKernel(nu=2.5), ZeroMean()
    else:
        covar, mean = get_covar_module_with_dim_scaled_prior(ard_num_dims=train_X.shape[-1], use_rbf_kernel=False), None
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
