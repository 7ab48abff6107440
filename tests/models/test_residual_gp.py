"""The residual GP's leave-one-out screen: the closed-form scores against the direct computation,
the cold corner left out and its warm neighbour kept, and the screen's memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pinnbo.models import residual_gp
from pinnbo.models.gp import fit_outputs
from pinnbo.models.residual_gp import fit_loo_screened, loo_z_scores, out_of_sample_z_scores


def test_loo_z_scores_are_the_leave_one_out_predictions_computed_directly():
    """R&W Eq. 5.12 against the direct computation: for each left-out i, the GP of the other n − 1
    points (same hyper-parameters) predicts y_i with mean μ and variance σ² (noise included), and
    z_i = (y_i − μ) / σ."""
    rng = np.random.default_rng(1)
    X = rng.random((20, 2))
    model = fit_outputs(X, (np.sin(5 * X[:, 0]) + X[:, 1])[:, None], noise_free=False, noise_floor=0.0, start=None)
    z = loo_z_scores(model).numpy()
    with torch.no_grad():
        T = model.train_inputs[0]
        y = model.train_targets.numpy() - model.mean_module.constant.item()
        K = model.covar_module(T).to_dense().numpy() + model.likelihood.noise.item() * np.eye(20)
    for i in (0, 7, 19):
        rest = np.delete(np.arange(20), i)
        weights = np.linalg.solve(K[np.ix_(rest, rest)], K[rest, i])
        mu, var = weights @ y[rest], K[i, i] - weights @ K[rest, i]
        assert z[i] == pytest.approx((y[i] - mu) / np.sqrt(var), rel=1e-6)


def test_the_loo_screen_leaves_out_a_cold_corner_but_not_its_warm_neighbour():
    """The heat plate's corner in small: a spike 6 below the smooth function at (1, 1) with an
    observation of the smooth function 1e-4 beside it. The screen leaves out the spike alone (its
    |z| is the larger: the neighbour agrees with the rest), the GP then predicts the smooth value at
    the corner, and on the clean data nothing is left out."""
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    X[0], X[1] = (1.0, 1.0), (1.0 - 1e-4, 1.0)
    smooth = (np.sin(6 * X[:, 0]) + X[:, 1])[:, None]
    spiked = smooth.copy()
    spiked[0] -= 6.0
    kwargs = dict(max_outliers=3, threshold=5.0, start=None, noise_free=False, noise_floor=0.0)
    screened = fit_loo_screened(X, spiked, **kwargs)
    assert screened.outlier_indices == [0]
    with torch.no_grad():
        assert screened.posterior(torch.tensor([[1.0, 1.0]], dtype=torch.float64)).mean.item() == pytest.approx(
            smooth[0, 0], abs=0.05)
    assert fit_loo_screened(X, smooth, **kwargs).outliers == 0


def test_the_loo_screen_starts_from_the_last_outliers_and_takes_back_those_that_now_fit(monkeypatch):
    """``previous_outliers``: the corner left out before is left out again in one fit (the screen
    from scratch needs two: with it, then without); a smooth point left out before is predicted by
    the others within the threshold, so it is taken back and the corner still found."""
    rng = np.random.default_rng(0)
    X = rng.random((60, 2))
    X[0], X[1] = (1.0, 1.0), (1.0 - 1e-4, 1.0)
    spiked = (np.sin(6 * X[:, 0]) + X[:, 1])[:, None]
    spiked[0] -= 6.0
    fits = []
    original = residual_gp.fit_outputs
    monkeypatch.setattr(residual_gp, "fit_outputs", lambda *a, **k: fits.append(1) or original(*a, **k))
    kwargs = dict(max_outliers=3, threshold=5.0, start=None, noise_free=False, noise_floor=0.0)
    assert residual_gp.fit_loo_screened(X, spiked, **kwargs).outlier_indices == [0] and len(fits) == 2
    fits.clear()
    assert residual_gp.fit_loo_screened(X, spiked, previous_outliers=[0], **kwargs).outlier_indices == [0]
    assert len(fits) == 1
    assert residual_gp.fit_loo_screened(X, spiked, previous_outliers=[7, 0, 99], **kwargs).outlier_indices == [0]


def test_out_of_sample_z_scores_are_the_predictions_computed_directly():
    """z_j = (y_j − μ(x_j)) / √(σ²(x_j) + σ_n²) for points not in the fit, against the textbook
    algebra with the fitted kernel, constant and noise (standardised units: z is scale-free)."""
    rng = np.random.default_rng(2)
    X = rng.random((25, 2))
    y = (np.sin(5 * X[:, 0]) + X[:, 1])[:, None]
    model = fit_outputs(X[:20], y[:20], noise_free=False, noise_floor=0.0, start=None, outputscale=True)
    z = out_of_sample_z_scores(model, X[20:], y[20:])
    with torch.no_grad():
        T = model.train_inputs[0]
        mean, sd = model.outcome_transform.means.item(), model.outcome_transform.stdvs.item()
        c, noise = model.mean_module.constant.item(), model.likelihood.noise.item()
        K = model.covar_module(T).to_dense().numpy() + noise * np.eye(20)
        new = torch.as_tensor(X[20:])
        Ks = model.covar_module(new, T).to_dense().numpy()
        prior = model.covar_module(new, diag=True).numpy()
    alpha = np.linalg.solve(K, model.train_targets.numpy() - c)
    mu = c + Ks @ alpha
    var = prior - np.einsum("ij,ji->i", Ks, np.linalg.solve(K, Ks.T)) + noise
    assert z == pytest.approx(((y[20:, 0] - mean) / sd - mu) / np.sqrt(var), rel=1e-6)
