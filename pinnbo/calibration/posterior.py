"""A calibration problem: which parameters x of a forward model G are consistent with data D.

With Gaussian noise D = G(x*) + η, η ~ N(0, Γ), and a Gaussian prior N(m0, P), the unnormalised
log-posterior is (Kim & Sanz-Alonso, §5)

    V(x) = −½ ‖D − G(x)‖²_Γ − ½ ‖x − m0‖²_P ,   ‖v‖²_A = vᵀ A⁻¹ v,

with Γ and P diagonal here (a variance per output and per parameter: the papers' problems and
most instrument noise are of this form; a correlated Γ can be whitened into the forward model).
V is the objective the design strategy maximises, through the same runner as any problem: every
forward solve is an evaluation on disk, with resume, timeouts and failures as usual. The box must
hold the prior's mass: the posterior is sampled inside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
from scipy.integrate import trapezoid

from pinnbo.errors import shown
from pinnbo.problem import Box, Problem, ProblemError


def _vector(values: Any, name: str, size: int | None = None, positive: bool = False) -> np.ndarray:
    """``values`` as a finite float vector (a number is broadcast to ``size``), or a one-line
    ProblemError naming ``name``."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ProblemError(f"{name}: expected a list of numbers, got {shown(values)}") from None
    if array.ndim == 0 and size is not None:
        array = np.full(size, float(array))
    if array.ndim != 1 or array.size == 0:
        raise ProblemError(f"{name}: expected a non-empty list of numbers, got {shown(values)}")
    if size is not None and array.size != size:
        raise ProblemError(f"{name}: expected {size} numbers, got {array.size}")
    if not np.all(np.isfinite(array)):
        raise ProblemError(f"{name}: expected finite numbers, got {shown(values)}")
    if positive and not np.all(array > 0):
        raise ProblemError(f"{name}: expected numbers > 0 (variances), got {shown(values)}")
    return array


@dataclass
class LogPosterior:
    """V(x) of a forward model, Gaussian noise and a Gaussian prior (module docstring).

    Attributes:
        forward: ``G(x) -> M numbers`` for one parameter vector x of shape (d,); None while the
            forward model is a program the case names (:meth:`with_forward`).
        data: D, shape (M,).
        noise_variance: the diagonal of Γ, shape (M,).
        prior_mean: m0, shape (d,).
        prior_variance: the diagonal of P, shape (d,).
    """

    forward: Callable[..., Any] | None
    data: np.ndarray
    noise_variance: np.ndarray
    prior_mean: np.ndarray
    prior_variance: np.ndarray

    @property
    def runs_a_program(self) -> bool:
        """Whether the forward model is a program that isolates itself and takes a timeout
        (:func:`pinnbo.oracles.isolation.call_oracle`)."""
        return bool(getattr(self.forward, "runs_a_program", False))

    def with_forward(self, forward: Callable[..., Any]) -> "LogPosterior":
        return LogPosterior(forward, self.data, self.noise_variance, self.prior_mean, self.prior_variance)

    def misfit(self, outputs: np.ndarray) -> float:
        """½ ‖D − G‖²_Γ of forward outputs ``outputs`` (M,)."""
        r = self.data - outputs
        return 0.5 * float(np.sum(r * r / self.noise_variance))

    def log_prior(self, x: np.ndarray) -> np.ndarray:
        """−½ ‖x − m0‖²_P of parameters ``x`` (..., d), shape (...)."""
        z = np.asarray(x, dtype=np.float64) - self.prior_mean
        return -0.5 * np.sum(z * z / self.prior_variance, axis=-1)

    def __call__(self, x: np.ndarray, timeout: float | None = None) -> float:
        if self.forward is None:
            raise ValueError("the calibration has no forward model")
        outputs = self.forward(x, timeout=timeout) if self.runs_a_program else self.forward(x)
        outputs = np.asarray(outputs, dtype=np.float64).reshape(-1)
        if outputs.size != self.data.size:
            raise ValueError(f"forward model returned {outputs.size} outputs, expected {self.data.size} (the data's length)")
        if not np.all(np.isfinite(outputs)):
            raise ValueError("forward model returned a non-finite output")
        return float(self.log_prior(x)) - self.misfit(outputs)


def calibration_problem(name: str, forward: Callable[[np.ndarray], Sequence[float]] | None, data: Sequence[float],
                        noise_variance: float | Sequence[float], prior_mean: Sequence[float],
                        prior_sd: Sequence[float], domain: Box, description: str = "",
                        metadata: dict | None = None) -> Problem:
    """A problem whose objective is V (maximised) and whose ``metadata["calibration"]`` is the
    :class:`LogPosterior`, which ``pinnbo calibrate`` samples after the design run.

    ``forward``: G(x) for one parameter vector (None: a case's ``oracle.command`` prints G(x));
    ``data``: D (M numbers); ``noise_variance``: Γ's diagonal (one number for every output, or M);
    ``prior_mean``, ``prior_sd``: per parameter, in the order of ``domain.names``.
    """
    data = _vector(data, "params.data")
    variance = _vector(noise_variance, "params.noise_variance", data.size, positive=True)
    mean = _vector(prior_mean, "params.prior_mean", domain.dim)
    sd = _vector(prior_sd, "params.prior_sd", domain.dim, positive=True)
    for name_, m, lo, hi in zip(domain.names, mean, domain.lower, domain.upper):
        if not lo <= m <= hi:
            raise ProblemError(f"params.prior_mean: {name_} = {m:g} lies outside its bounds [{lo:g}, {hi:g}]; the box "
                               "must hold the prior's mass")
    posterior = LogPosterior(forward, data, variance, mean, sd * sd)
    return Problem(name=name, domain=domain, objective=posterior if forward is not None else None, sense="maximize",
                   description=description, metadata={**(metadata or {}), "calibration": posterior})


def calibration_of(problem: Problem) -> LogPosterior | None:
    """The problem's log-posterior, or None when it is not a calibration problem."""
    found = problem.metadata.get("calibration")
    return found if isinstance(found, LogPosterior) else None


def per_variable(values: Any, names: Sequence[str], field: str) -> list[float]:
    """A case's per-parameter numbers: a mapping {name: value} or a list in the order of ``names``."""
    if isinstance(values, dict):
        missing = [n for n in names if n not in values]
        extra = [str(k) for k in values if k not in names]
        if missing or extra:
            raise ProblemError(f"{field}: expected a value for each of {', '.join(names)}"
                               + (f"; missing {', '.join(missing)}" if missing else "")
                               + (f"; unknown {', '.join(extra)}" if extra else ""))
        values = [values[n] for n in names]
    out = _vector(values, field, len(names))
    return [float(v) for v in out]


def normalised_density(log_values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """exp(log_values) on the 1-D ``grid``, normalised to integrate to one (trapezoid rule)."""
    shifted = np.exp(log_values - np.max(log_values))
    return shifted / trapezoid(shifted, grid)
