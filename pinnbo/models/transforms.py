"""Output transforms of the networks' training targets."""

from __future__ import annotations

import numpy as np


def standardise(values: np.ndarray) -> tuple[float, float]:
    """(mean, std) of one output's observations; std 1 when they are constant (or single)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return 0.0, 1.0
    std = float(np.std(values))
    return float(np.mean(values)), (std if len(values) > 1 and std > 0 else 1.0)


def power_warp(values: np.ndarray) -> np.ndarray:
    """Monotone Yeo-Johnson warp of standardised values, λ by maximum likelihood (HEBO's output
    transform), (n,) → (n,): a heavy right tail (the gas compressor's costs, 3e6 at the optimum and
    3e7 at corners) otherwise squeezes the designs that matter into a few percent of one standard
    deviation. Minimising the warped output minimises the output."""
    from scipy.stats import yeojohnson

    mean, std = standardise(values)
    z = (np.asarray(values, dtype=np.float64) - mean) / std
    if len(z) < 3 or np.ptp(z) == 0:
        return z
    warped, _ = yeojohnson(z)
    return warped
