"""Convergence diagnostics of the posterior draws, by ArviZ: the rank-normalised split R-hat and the
bulk and tail effective sample sizes (Vehtari et al. 2021) of each parameter.

Metropolis draws come as ``CHAINS`` chains, which is what R-hat compares; rejection sampling's
draws are independent, and are split into four chains in the order drawn (R-hat near 1 and an
effective size near the number of draws are then the check that they are).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: Chains independent draws are split into for the diagnostics.
SPLIT = 4


def diagnostics(values: np.ndarray, chains: np.ndarray | None, names: Sequence[str]) -> dict:
    """{name: {"r_hat", "ess_bulk", "ess_tail"}}; or {"unavailable": why} without ArviZ."""
    try:
        import arviz as az
    except ImportError:
        return {"unavailable": "ArviZ is not installed (pip install 'pinnbo[diagnostics]')"}
    if chains is None:
        per = len(values) // SPLIT
        chains = np.asarray(values[: per * SPLIT]).reshape(SPLIT, per, -1)
    data = az.convert_to_dataset({name: chains[:, :, i] for i, name in enumerate(names)})
    rhat, bulk, tail = az.rhat(data), az.ess(data, method="bulk"), az.ess(data, method="tail")
    return {name: {"r_hat": float(rhat[name]), "ess_bulk": float(bulk[name]), "ess_tail": float(tail[name])}
            for name in names}
