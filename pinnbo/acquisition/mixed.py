"""Maximising a BoTorch acquisition over a box with integer and choice variables
(docs/algorithms.md, "Variables of every kind").

The acquisition takes unit-cube inputs, in which a discrete variable's levels are the centres of
equal cells (:mod:`pinnbo.space`). When every variable is discrete and the designs are few, each
one is scored and the best new one taken: the exact argmax. Otherwise BoTorch's
``optimize_acqf_mixed_alternating`` alternates a local search over the discrete levels (neighbouring
integers, any other choice) with L-BFGS-B on the continuous variables, from restarts chosen among
a raw sample. A winner that repeats an evaluated design gives way to the best new design of a
snapped Sobol pool, as on continuous boxes (docs/algorithms.md, "The duplicate rule").
"""

from __future__ import annotations

import math
import warnings
from typing import Callable

import numpy as np
import torch
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim.optimize_mixed import optimize_acqf_mixed_alternating

from pinnbo.acquisition.search import best_allowed, is_duplicate
from pinnbo.space import Box

#: Most designs scored one by one when every variable is discrete (a few milliseconds of
#: acquisition evaluations; past it the alternating search is cheaper than the grid).
MAX_ENUMERATED = 4096


def enumerated(domain: Box) -> np.ndarray | None:
    """Every design of an all-discrete ``domain`` in unit coordinates, (N, d), or None when a
    variable is continuous or there are more than :data:`MAX_ENUMERATED`."""
    if len(domain.dims("integer", "choice")) != domain.dim:
        return None
    levels = [domain.unit_levels(i) for i in range(domain.dim)]
    if math.prod(len(v) for v in levels) > MAX_ENUMERATED:
        return None
    return np.stack(np.meshgrid(*levels, indexing="ij"), axis=-1).reshape(-1, domain.dim)


def snapped_unit(domain: Box, unit: np.ndarray) -> np.ndarray:
    """Unit-cube points (..., d) moved to the nearest valid design (unchanged without discrete variables)."""
    if domain.numeric:
        return unit
    return domain.to_unit(domain.snap(domain.from_unit(np.clip(unit, 0.0, 1.0))))


def maximize_mixed(acq, domain: Box, evaluated: np.ndarray, *, raw_samples: int, num_restarts: int, maxiter: int,
                   duplicate_tol: float, fallback_pool: Callable[[], np.ndarray],
                   violation: Callable[[np.ndarray], np.ndarray] | None = None,
                   device: torch.device | str = "cpu") -> np.ndarray:
    """argmax of ``acq`` over the valid designs of ``domain``, in unit coordinates (d,) (module
    docstring). ``evaluated``: the designs taken (unit); ``fallback_pool()``: unit points drawn only
    when the search's winner repeats one; ``violation(points) -> (N,)``: the known constraints' total
    violation (0: allowed)."""
    violation = violation or (lambda points: np.zeros(len(points)))
    grid = enumerated(domain)
    if grid is not None:
        values = _scores(acq, grid, device)
        return best_allowed(grid, values, violation(grid), evaluated, duplicate_tol)
    d = domain.dim
    levels = {i: domain.unit_levels(i).tolist() for i in domain.dims("integer")}
    choices = {i: domain.unit_levels(i).tolist() for i in domain.dims("choice")}
    lower, upper = np.zeros(d), np.ones(d)
    for i, values in {**levels, **choices}.items():   # BoTorch searches a discrete variable between its levels
        lower[i], upper[i] = values[0], values[-1]
    bounds = torch.as_tensor(np.stack([lower, upper]), dtype=torch.float64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizationWarning)
        warnings.filterwarnings("ignore", message="Optimization failed", category=RuntimeWarning)
        candidate, value = optimize_acqf_mixed_alternating(
            acq, bounds=bounds, discrete_dims=levels, cat_dims=choices, q=1, raw_samples=raw_samples,
            num_restarts=num_restarts, options={"maxiter_continuous": maxiter})
    candidate = snapped_unit(domain, candidate.reshape(1, d).detach().cpu().double().numpy())
    values = np.atleast_1d(value.detach().cpu().double().numpy()).reshape(-1)[:1]
    if violation(candidate)[0] == 0.0 and not is_duplicate(candidate[0], evaluated, duplicate_tol):
        return candidate[0]
    pool = snapped_unit(domain, fallback_pool())
    points = np.concatenate([candidate, pool])
    scores = np.concatenate([values, _scores(acq, pool, device)])
    return best_allowed(points, scores, violation(points), evaluated, duplicate_tol)


def _scores(acq, points: np.ndarray, device: torch.device | str, batch: int = 512) -> np.ndarray:
    """``acq`` at each row of ``points`` (N, d), without gradients, in batches."""
    out = []
    with torch.no_grad():
        for start in range(0, len(points), batch):
            chunk = torch.as_tensor(points[start:start + batch], dtype=torch.float64, device=device).unsqueeze(1)
            out.append(acq(chunk).detach().cpu().double().numpy().reshape(-1))
    return np.concatenate(out) if out else np.zeros(0)
