"""Gaussian-process surrogates (BoTorch) for the GP baselines (REFERENCES §4, §5).

SingleTaskGP on inputs already in the unit cube (the optimisers map the design box there), with
the ``Standardize`` outcome transform and a Matérn-5/2 ARD kernel carrying BoTorch's
dimension-scaled log-normal length-scale prior (Hvarfner et al. 2024). BoTorch ≥ 0.12 builds an
RBF kernel by default, so the Matérn kernel the papers use (Kim & Sanz-Alonso: ν = 2.5) is asked
for explicitly. Hyper-parameters are refit by maximum marginal likelihood at every call.

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
from gpytorch.mlls import ExactMarginalLogLikelihood


def fit_gp(unit_X: np.ndarray, y: np.ndarray, *, noise_free: bool, noise_floor: float = 1e-5,
           dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu") -> SingleTaskGP:
    """A GP of −y on ``unit_X`` (n, d) in [0, 1]^d, hyper-parameters fit by marginal likelihood.

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
    covar = get_covar_module_with_dim_scaled_prior(ard_num_dims=train_X.shape[-1], use_rbf_kernel=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputDataWarning)
        model = SingleTaskGP(train_X, train_Y, train_Yvar, covar_module=covar,
                             outcome_transform=Standardize(m=1))
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        fit_gpytorch_mll(mll)
    model.eval()
    return model
