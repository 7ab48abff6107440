"""Forward models of the calibration problems: time-averaged moments of an ODE's solution.

G(x) = the time averages, over a window [t0, t1], of z(t) and of its second-order products
(z1², z2², z3², z1 z2, z1 z3, z2 z3): nine numbers per solve (Kim & Sanz-Alonso, §6.4). The ODE is
solved from z(0) = (1, 0, 1) with scipy's ``solve_ivp`` (RK45, the paper's solver) and the averages
are taken over the solution sampled every ``SAMPLE_STEP`` time units, the paper's finite averages.

Tolerances: the Rössler system's attractor is periodic-like at the parameters of interest and its
moments converge with the tolerance (rtol 1e-8: the moments agree with rtol 1e-10 to ~1e-6
relative, tested). Lorenz-63 is chaotic: after a few Lyapunov times any two tolerances give
different trajectories, and the time averages over the window converge only statistically. Its
tolerance (rtol 1e-6) is therefore chosen for cost; tightening it moves the moments by less than
half the noise standard deviations Γ^½ (the means of z1 and z2, symmetric between the two lobes,
move most; tested). V inherits this: Lorenz-63's log-posterior is rough at small scales, which a
GP surrogate smooths.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
from scipy.integrate import solve_ivp

#: Time between the samples the moments average.
SAMPLE_STEP = 0.01
#: The initial state of both systems (the paper's).
INITIAL_STATE = (1.0, 0.0, 1.0)
MOMENT_NAMES = ("z1", "z2", "z3", "z1^2", "z2^2", "z3^2", "z1*z2", "z1*z3", "z2*z3")


def rossler_rhs(t: float, z: np.ndarray, c: float) -> list[float]:
    """Rössler: z1' = −z2 − z3, z2' = z1 + 0.2 z2, z3' = 0.2 + z3 (z1 − c)."""
    return [-z[1] - z[2], z[0] + 0.2 * z[1], 0.2 + z[2] * (z[0] - c)]


def lorenz_rhs(t: float, z: np.ndarray, sigma: float, rho: float, beta: float) -> list[float]:
    """Lorenz-63: z1' = σ (z2 − z1), z2' = ρ z1 − z2 − z1 z3, z3' = z1 z2 − β z3."""
    return [sigma * (z[1] - z[0]), rho * z[0] - z[1] - z[0] * z[2], z[0] * z[1] - beta * z[2]]


@dataclass(frozen=True)
class MomentModel:
    """G(x): the nine moments of ``rhs`` with parameters x over ``window`` (module docstring)."""

    rhs: Callable[..., list[float]]
    window: tuple[float, float]
    rtol: float
    atol: float

    def series(self, x: np.ndarray, window: tuple[float, float] | None = None) -> np.ndarray:
        """The nine products z_i, z_i z_j sampled every SAMPLE_STEP over ``window``, shape (9, T)."""
        t0, t1 = window or self.window
        samples = int(round((t1 - t0) / SAMPLE_STEP)) + 1
        solution = solve_ivp(self.rhs, (0.0, t1), INITIAL_STATE, method="RK45", rtol=self.rtol, atol=self.atol,
                             t_eval=np.linspace(t0, t1, samples), args=tuple(float(v) for v in np.ravel(x)))
        if solution.status != 0:
            raise RuntimeError(f"ODE solver failed: {solution.message}")
        z1, z2, z3 = solution.y
        return np.stack([z1, z2, z3, z1 * z1, z2 * z2, z3 * z3, z1 * z2, z1 * z3, z2 * z3])

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """G(x), shape (9,)."""
        return self.series(x).mean(axis=1)

    def noise_variance(self, x: np.ndarray, window: tuple[float, float], factor: float = 1.0) -> np.ndarray:
        """Γ's diagonal as the papers set it: ``factor`` × the sample variances of the nine series
        at ``x`` over a long ``window``."""
        return factor * _variances(self, tuple(float(v) for v in np.ravel(x)), tuple(window))


@lru_cache(maxsize=8)
def _variances(model: MomentModel, x: tuple[float, ...], window: tuple[float, float]) -> np.ndarray:
    # One long solve per problem build (seconds for Lorenz-63 over [10, 2000]): kept for the process.
    return model.series(np.array(x), window).var(axis=1, ddof=1)


ROSSLER = MomentModel(rossler_rhs, (20.0, 50.0), rtol=1e-8, atol=1e-10)
LORENZ63 = MomentModel(lorenz_rhs, (10.0, 200.0), rtol=1e-6, atol=1e-8)
