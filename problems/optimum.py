"""The optimum of a closed-form problem, found numerically once: what the benchmarks' regret is
measured against when no formula gives it."""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import minimize
from scipy.stats import qmc

__all__ = ["dense_optimum"]


def dense_optimum(values: Callable[[np.ndarray], np.ndarray], lower: Sequence[float], upper: Sequence[float],
                  sense: str, starts: int = 32) -> tuple[float, tuple[float, ...]]:
    """(u*, x*) of the batched function ``values`` on the box [lower, upper] in ``sense``: L-BFGS-B
    from the best ``starts`` points of a 4096-point Sobol sample, the best result. A smooth function
    with basins wider than the sample's spacing has its optimum found to the solver's tolerance."""
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    sign = -1.0 if sense == "maximize" else 1.0
    sample = lower + qmc.Sobol(len(lower), scramble=True, seed=0).random(4096) * (upper - lower)
    best_x, best = None, math.inf
    for x0 in sample[np.argsort(sign * values(sample))[:starts]]:
        result = minimize(lambda x: float(sign * values(x[None])[0]), x0, method="L-BFGS-B",
                          bounds=list(zip(lower, upper)), options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 2000})
        if result.fun < best:
            best, best_x = float(result.fun), result.x
    return sign * best, tuple(float(v) for v in best_x)
