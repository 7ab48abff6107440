"""A GP of a network's residuals at the observed designs, and the leave-one-out screen that keeps a
one-point spike out of it (docs/algorithms.md, "The residual GP").

A trained network is a global shape, not an interpolant. A GP of its residuals r_i = ỹ_i − h(x_i)
(standardised units) corrects the mean where there are data and carries the uncertainty between
them: PINN-BO adds one posterior sample path of it to its Thompson sample, Neural-CBO its mean to
every network's mean and its σ to theirs.

Leave-one-out screen. At a discontinuous corner the evaluated point itself can be an outlier (the
heat plate's corner is cold beside a hot neighbour 1e-4 away); a GP interpolates that spike and
drags every sample near the corner down with it. While the largest closed-form leave-one-out
residual |z_i| = |[K⁻¹r]_i| / √[K⁻¹]_ii (Rasmussen & Williams 2006, Eq. 5.12) exceeds
``OUTLIER_Z`` = 5, that observation leaves the GP (not the network's data) and the GP is refit, at
most ⌈``OUTLIER_FRACTION`` · n⌉ times; each step's screen starts from the observations the last
step's left out, taking back those the others now predict within the threshold.
"""

from __future__ import annotations

import numpy as np
import torch

from pinnbo.models.gp import GPPredictor, earlier_fit, fit_outputs, fitted_parameters, remember_fit

#: |leave-one-out z| above which an observation leaves the residual GP, and the largest fraction of
#: the observations that may (PINN-BO's residual GP).
OUTLIER_Z = 5.0
OUTLIER_FRACTION = 0.05


def fit_residual_gp(unit_X: np.ndarray, R: np.ndarray, fits: list[tuple[int, dict]], step: int, seed: int, *,
                    tolerance: float, device: torch.device, max_outliers: int = 0, outputscale: bool = False):
    """A network's residual GP: :func:`~pinnbo.models.gp.fit_outputs` of ``R`` (n, M) on ``unit_X``
    (n, d) with learned noise, warm-started from the latest fit before ``step`` in ``fits``, any
    global-RNG draw of the fit seeded by ``seed``; with ``max_outliers`` > 0 (M = 1 only) the
    leave-one-out screen (:func:`fit_loo_screened`), starting from the rows the earlier fit left out.
    Returns (the model, ``fits`` with this step's recorded)."""
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        if max_outliers > 0:
            start = earlier_fit(fits, step)
            previous = start.get("outlier_indices", torch.empty(0)).tolist() if start else ()
            model = fit_loo_screened(unit_X, R, max_outliers=max_outliers, threshold=OUTLIER_Z, start=start,
                                     previous_outliers=previous, noise_free=False, noise_floor=0.0,
                                     tolerance=tolerance, device=device, outputscale=outputscale)
        else:
            model = fit_outputs(unit_X, R, noise_free=False, noise_floor=0.0, start=earlier_fit(fits, step),
                                tolerance=tolerance, device=device, outputscale=outputscale)
    return model, remember_fit(fits, step, model)


def loo_z_scores(model, predictor: "GPPredictor | None" = None) -> torch.Tensor:
    """Leave-one-out standardised residuals of a fitted single-output GP, shape (n,):
    z_i = (y_i − μ_{−i}) / σ_{−i} = [K⁻¹(y − c)]_i / √[K⁻¹]_ii, K = k(X, X) + noise (Rasmussen &
    Williams 2006, Eq. 5.12), with the hyper-parameters of the fit on all n points. ``predictor``:
    the model's :class:`GPPredictor` where the caller has it (its Cholesky factor of K and α = K⁻¹(y − c))."""
    predictor = predictor or GPPredictor(model)
    with torch.no_grad():
        Kinv = torch.cholesky_inverse(predictor.L[0])
        return predictor.alpha[0, :, 0] / Kinv.diagonal().sqrt()


def fit_loo_screened(unit_X: np.ndarray, y: np.ndarray, *, max_outliers: int, threshold: float,
                     start: dict[str, torch.Tensor] | None, previous_outliers=(), **fit_kwargs):
    """:func:`fit_outputs` of ``y`` (n, 1) on ``unit_X`` (n, d) without the observations its own
    leave-one-out prediction misses: refit without the point of largest |z| (:func:`loo_z_scores`)
    while that exceeds ``threshold``, at most ``max_outliers`` left out, each refit warm-started from
    the last. A cheap stand-in for relevance pursuit (BoTorch's robust GP, one Gaussian fit per
    candidate support size; docs/archive/benchmarks.md has the comparison): the heat plate's cold
    corner, 1e-4 from a neighbour 8 standardised units warmer, has |z| in the hundreds, and the
    neighbour, predicted from the corner and the rest, less, so the corner goes first and the
    neighbour then fits.

    ``previous_outliers``: the rows an earlier screen of the same rows (plus new ones) left out. The
    screen starts without them instead of rediscovering them one refit at a time, and takes back
    any whose prediction by the others is now within ``threshold`` (|y_j − μ(x_j)| / σ(x_j), noise
    included: the same z as leave-one-out's, for a point not in the fit). A search keeps the outliers
    it has, so this is one fit per step where the screen from scratch refits once per outlier. A row
    taken back is not left out again in the same call, and the other way round, so it cannot cycle.
    Returns the model with ``outlier_indices`` (into the n rows), ``outliers`` and ``predictor``, its
    :class:`GPPredictor` (one Cholesky factor serves both scores and the caller)."""
    n = len(unit_X)
    left_out = sorted({int(i) for i in previous_outliers if 0 <= int(i) < n})[:max_outliers]
    taken_back: set[int] = set()
    dropped_now: set[int] = set()
    keep = np.setdiff1d(np.arange(n), left_out)
    model = fit_outputs(unit_X[keep], y[keep], start=start, **fit_kwargs)
    while True:
        predictor = GPPredictor(model)
        back = []
        if left_out:
            back = [j for j, z in zip(left_out, out_of_sample_z_scores(model, unit_X[left_out], y[left_out], predictor))
                    if abs(z) <= threshold and j not in dropped_now]
        worst = None
        if len(left_out) - len(back) < max_outliers:
            z = loo_z_scores(model, predictor).abs()
            if taken_back:                                               # rows taken back stay
                z[[int(np.searchsorted(keep, j)) for j in taken_back]] = 0.0
            candidate = int(torch.argmax(z))
            if z[candidate] > threshold:
                worst = int(keep[candidate])
        if not back and worst is None:
            break
        taken_back.update(back)
        if worst is not None:
            dropped_now.add(worst)
        left_out = sorted(set(left_out).difference(back) | ({worst} if worst is not None else set()))
        keep = np.setdiff1d(np.arange(n), left_out)
        model = fit_outputs(unit_X[keep], y[keep], start=fitted_parameters(model), **fit_kwargs)
    model.outlier_indices = left_out
    model.outliers = len(left_out)
    model.predictor = predictor
    return model


def out_of_sample_z_scores(model, unit_X: np.ndarray, y: np.ndarray,
                           predictor: "GPPredictor | None" = None) -> np.ndarray:
    """(y_j − μ(x_j)) / √(σ²(x_j) + noise) of points (m, d), (m, 1) not in a fitted single-output GP's
    data, shape (m,): for a point left out of the fit, its leave-one-out z (:func:`loo_z_scores`).
    ``predictor``: the model's :class:`GPPredictor` where the caller has it."""
    predictor = predictor or GPPredictor(model)
    x = torch.as_tensor(unit_X, dtype=predictor.X.dtype, device=predictor.X.device)
    with torch.no_grad():
        mean, std, _ = predictor.moments(x)
        noise = model.likelihood.noise.reshape(-1)[0] * predictor.stdvs[0] ** 2
        sd = (std[0] ** 2 + noise).sqrt()
        return ((torch.as_tensor(y, dtype=mean.dtype, device=mean.device).reshape(-1) - mean[0]) / sd).cpu().numpy()
