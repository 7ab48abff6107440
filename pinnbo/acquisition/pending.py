"""BoTorch's MC q-acquisitions of one new point given the designs still being evaluated
(asynchronous runs): the expected gain of the candidate jointly with ``X_pending``, whose values
are integrated out by quasi-MC samples of the joint posterior (Wilson, Hutter & Deisenroth 2018;
BoTorch's ``X_pending``). Shared by the GP methods; the models must give joint posteriors."""

from __future__ import annotations

import numpy as np
import torch
from botorch.acquisition import qLogExpectedImprovement, qSimpleRegret, qUpperConfidenceBound
from botorch.acquisition.objective import GenericMCObjective
from botorch.sampling import SobolQMCNormalSampler

#: Quasi-MC samples (BoTorch's default is 512; one new point needs fewer for a stable argmax).
MC_SAMPLES = 256


def _sampler(seed: int) -> SobolQMCNormalSampler:
    return SobolQMCNormalSampler(sample_shape=torch.Size([MC_SAMPLES]), seed=seed % (2**31))


def _pending(unit: np.ndarray, device) -> torch.Tensor:
    return torch.as_tensor(unit, dtype=torch.float64, device=device)


def pending_log_ei(model, best_f: float, pending_unit: np.ndarray, seed: int, device="cpu"):
    """qLogEI of a model of the maximised output with incumbent ``best_f``, given ``pending_unit`` (p, d)."""
    return qLogExpectedImprovement(model, best_f=best_f, sampler=_sampler(seed), X_pending=_pending(pending_unit, device))


def pending_ucb(model, beta: float, pending_unit: np.ndarray, seed: int, device="cpu", maximize: bool = True):
    """qUCB μ + √(βπ/2) E|Y − μ| (BoTorch's MC form of μ + √β σ) given ``pending_unit`` (p, d);
    ``maximize`` False: of −f, the lower confidence bound of a minimised model."""
    objective = None if maximize else GenericMCObjective(lambda Y, X=None: -Y[..., 0])
    return qUpperConfidenceBound(model, beta=beta, sampler=_sampler(seed), objective=objective,
                                 X_pending=_pending(pending_unit, device))


def pending_mean(model, pending_unit: np.ndarray, seed: int, device="cpu"):
    """qSimpleRegret E[max(f(x), f(X_pending))]: the posterior mean's q-form, which, unlike the
    mean, gains nothing where a pending design will already tell."""
    return qSimpleRegret(model, sampler=_sampler(seed), X_pending=_pending(pending_unit, device))
