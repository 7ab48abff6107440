"""Calibration problems: which parameters of a forward model are consistent with measured data
(Kim & Sanz-Alonso, §5 and §6.4; docs/guide/calibration.md). Each is maximised, its objective the
unnormalised log-posterior V(x) = −½‖D − G(x)‖²_Γ − ½‖x − m0‖²_P, and ``pinnbo calibrate`` turns the
run's design points into posterior samples.

- ``rossler``: the Rössler system's parameter c (x* = 5.7), prior N(6, 2²), box [1, 14].
- ``lorenz63``: Lorenz-63's (σ, ρ, β) (x* = (10, 28, 8/3)), prior N((10, 28.5, 2.7),
  diag(0.25, 2.25, 0.49)), box [8.72, 11.28] × [24.66, 32.34] × [0.908, 4.492].
- ``calibration``: a forward model that is a program (the case's ``oracle.command`` prints the M
  outputs G(x) as a JSON list), with data, noise variances and prior declared in the case::

      problem: calibration
      params:
        bounds: {k: [0.1, 5], c: [0, 2]}
        data: [1.2, 0.4, 3.3]
        noise_variance: 0.01             # one for every output, or a list of M
        prior_mean: {k: 1, c: 0.5}
        prior_sd: {k: 1, c: 0.5}
      oracle: {command: "./model {k} {c}", parse: json}

  A Python forward model is a problem file whose factory returns
  ``pinnbo.calibration.calibration_problem(...)``.

The papers' data are synthetic, D = G(x*) + η with η ~ N(0, Γ), drawn from ``data_seed`` (fixed, so
every design run calibrates against the same data and the true posterior is one density). Γ is
diagonal, the sample variances of the nine moment series at x* over a long window (Rössler: [20, 500];
Lorenz-63: [10, 2000], scaled by 0.25, as the paper).
"""

from __future__ import annotations

import numpy as np

from pinnbo.calibration.posterior import calibration_problem, per_variable
from pinnbo.oracles.dynamics import LORENZ63, MOMENT_NAMES, ROSSLER, MomentModel
from pinnbo.problem import Box, Problem, ProblemError, register_problem
from pinnbo.streams import numpy_rng

from problems.external import parse_bounds


def _synthetic(model: MomentModel, truth: np.ndarray, window: tuple[float, float], factor: float,
               data_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(D, Γ's diagonal): D = G(x*) + η, η ~ N(0, Γ) from ``data_seed``."""
    if isinstance(data_seed, bool) or not isinstance(data_seed, int) or data_seed < 0:
        raise ProblemError(f"params.data_seed: expected an integer >= 0, got {data_seed!r}")
    variance = model.noise_variance(truth, window, factor)
    data = model(truth) + np.sqrt(variance) * numpy_rng(data_seed, "calibration-data").standard_normal(len(variance))
    return data, variance


@register_problem
def rossler(data_seed: int = 0) -> Problem:
    """Rössler's parameter c from the time-averaged moments of its solution over [20, 50] (x* = 5.7).

    Args:
        data_seed: the seed of the synthetic data's noise draw (fixed: one dataset, one true posterior).
    """
    truth = np.array([5.7])
    data, variance = _synthetic(ROSSLER, truth, (20.0, 500.0), 1.0, data_seed)
    return calibration_problem("rossler", ROSSLER, data, variance, prior_mean=[6.0], prior_sd=[2.0],
                               domain=Box((1.0,), (14.0,), ("c",)),
                               description="Rössler system, calibrate c from 9 moments over t in [20, 50]",
                               metadata={"true_parameters": truth.tolist(), "outputs": list(MOMENT_NAMES)})


@register_problem
def lorenz63(data_seed: int = 0) -> Problem:
    """Lorenz-63's (sigma, rho, beta) from the time-averaged moments over [10, 200] (x* = (10, 28, 8/3)).

    Args:
        data_seed: the seed of the synthetic data's noise draw (fixed: one dataset, one true posterior).
    """
    truth = np.array([10.0, 28.0, 8.0 / 3.0])
    data, variance = _synthetic(LORENZ63, truth, (10.0, 2000.0), 0.25, data_seed)
    return calibration_problem("lorenz63", LORENZ63, data, variance, prior_mean=[10.0, 28.5, 2.7],
                               prior_sd=[0.5, 1.5, 0.7],
                               domain=Box((8.72, 24.66, 0.908), (11.28, 32.34, 4.492), ("sigma", "rho", "beta")),
                               description="Lorenz-63, calibrate (sigma, rho, beta) from 9 moments over t in [10, 200]",
                               metadata={"true_parameters": truth.tolist(), "outputs": list(MOMENT_NAMES)})


@register_problem
def calibration(bounds: dict, data: list, noise_variance: float | list, prior_mean: dict | list,
                prior_sd: dict | list) -> Problem:
    """A forward model run as the case's oracle command, calibrated against data (module docstring).

    Args:
        bounds: the parameters and their box, {name: [lower, upper]}; it must hold the prior's mass.
        data: the measured outputs D, a list of M numbers (the command prints M numbers too).
        noise_variance: the variance of each output's noise (one number for all, or a list of M).
        prior_mean: the Gaussian prior's mean, {name: value} or a list in the order of bounds.
        prior_sd: the Gaussian prior's standard deviation per parameter, like prior_mean.
    """
    names, lower, upper = parse_bounds(bounds)
    return calibration_problem("calibration", None, data, noise_variance,
                               per_variable(prior_mean, names, "params.prior_mean"),
                               per_variable(prior_sd, names, "params.prior_sd"), Box(lower, upper, names),
                               description="a forward model run as the case's oracle command")
