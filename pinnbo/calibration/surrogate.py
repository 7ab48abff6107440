"""The GP surrogate V̂ of the log-posterior from the design points (Kim & Sanz-Alonso, §5).

Every successful evaluation of the design run is a design point, the "+" methods' random points
included (they are there to spread the design). The GP is the baselines' noise-free Matérn-5/2 GP
(:func:`pinnbo.models.gp.fit_gp`, the paper's kernel, hyper-parameters by maximum marginal
likelihood) on the box mapped to the unit cube. The surrogate is its posterior mean: the sampled
density is exp(V̂), as in the paper. The GP's variance is reported (the figure's band) but does not
enter the sampled density.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize

from pinnbo.models.gp import GPPredictor, fit_gp
from pinnbo.problem import Box
from pinnbo.streams import sobol_unit

#: Kim & Sanz-Alonso's kernel (one Matérn-5/2 lengthscale, zero prior mean on standardised values).
KERNEL = "isotropic"


@dataclass
class Surrogate:
    """V̂ and its GP standard deviation at parameters in the box's own units."""

    domain: Box
    predictor: GPPredictor

    def moments(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(V̂, sd) at ``X`` (n, d), each (n,)."""
        U = torch.as_tensor(self.domain.to_unit(np.asarray(X, dtype=np.float64).reshape(-1, self.domain.dim)))
        mean, std, _ = self.predictor(U)
        return mean[:, 0], std[:, 0]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """V̂ at ``X`` (n, d), shape (n,)."""
        return self.moments(X)[0]


def fit_surrogate(X: np.ndarray, V: np.ndarray, domain: Box) -> Surrogate:
    """The surrogate of V from design points ``X`` (n, d) and values ``V`` (n,), n >= 2."""
    X = np.asarray(X, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    # fit_gp models −y; handing it −V makes the GP's mean V̂ itself.
    model = fit_gp(domain.to_unit(X), -V, noise_free=True, kernel=KERNEL)
    return Surrogate(domain, GPPredictor(model))


def surrogate_maximum(surrogate: Surrogate, seed: int, design: np.ndarray) -> tuple[np.ndarray, float]:
    """The maximiser of V̂ over the box and its value: the best of the design points and a Sobol
    pool, polished by L-BFGS-B. Rejection sampling's envelope and the chains' start."""
    domain = surrogate.domain
    pool = np.vstack([np.asarray(design, dtype=np.float64).reshape(-1, domain.dim),
                      domain.from_unit(sobol_unit(2048, domain.dim, seed, "calibration", "maximum"))])
    values = surrogate(pool)
    start = pool[int(np.argmax(values))]
    result = minimize(lambda x: -float(surrogate(x[None])[0]), start, method="L-BFGS-B",
                      bounds=list(zip(domain.lower, domain.upper)))
    best = domain.clip(result.x)
    value = float(surrogate(best[None])[0])
    if value < float(values.max()):
        return start, float(values.max())
    return best, value
