"""Analytic acquisitions: EI against a hand computation, log EI where EI underflows, the σ = 0 guard,
and the pointwise LogCEI against BoTorch's batch mode."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from botorch.acquisition.analytic import LogConstrainedExpectedImprovement

from pinnbo.acquisition.analytic import FastLogCEI, log_expected_improvement, log_probability_of_feasibility
from pinnbo.models.gp import fit_outputs


def _hand_ei(mu: float, sigma: float, best: float) -> float:
    """EI for minimisation, σ (z Φ(z) + φ(z)) with z = (best − μ)/σ, from math.erf."""
    z = (best - mu) / sigma
    return sigma * (z * 0.5 * (1.0 + math.erf(z / math.sqrt(2.0))) + math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi))


def test_log_expected_improvement_matches_a_hand_computation():
    mu, sigma, best = 0.2, 0.5, 0.5
    hand = _hand_ei(mu, sigma, best)          # z = 0.6: Φ(0.6) = 0.72575, φ(0.6) = 0.33322 (tables)
    assert hand == pytest.approx(0.5 * (0.6 * 0.72575 + 0.33322), abs=1e-5)
    assert log_expected_improvement(np.array([mu]), np.array([sigma]), best)[0] == pytest.approx(math.log(hand),
                                                                                                    rel=1e-12)
    # below the incumbent EI is small but positive, and its log stays finite where EI underflows
    z = np.array([-1.5, 0.0, 2.0, -3.0])
    hands = np.array([_hand_ei(-v, 1.0, 0.0) for v in z])
    np.testing.assert_allclose(np.log(hands), log_expected_improvement(-z, np.ones(4), 0.0), rtol=1e-10)
    far = log_expected_improvement(np.array([40.0]), np.array([1.0]), 0.0)[0]
    assert _hand_ei(40.0, 1.0, 0.0) == 0.0    # where EI itself underflows
    # h(z) ≈ φ(z)/z² (1 − 3/z²) for z → −∞
    assert far == pytest.approx(-0.5 * 1600 - 0.5 * math.log(2 * math.pi) - 2 * math.log(40) + math.log(1 - 3 / 1600),
                                abs=1e-4)


def test_zero_sigma_guard():
    mu = np.array([0.3, 0.7, 0.5])
    np.testing.assert_allclose(log_expected_improvement(mu, np.zeros(3), 0.5), [math.log(0.2), -np.inf, -np.inf])
    # exact constraints: probability of feasibility 1 or 0
    np.testing.assert_array_equal(log_probability_of_feasibility(np.array([[-1.0], [0.0], [0.1]]), np.zeros((3, 1))),
                                  [0.0, 0.0, -np.inf])


def test_pointwise_moments_equal_botorch_batch_mode():
    rng = np.random.default_rng(0)
    X = rng.random((20, 3))
    Y = np.column_stack([np.sin(4 * X[:, 0]) + X[:, 1], X.sum(1) - 1.5, X[:, 2] ** 2 - 0.3])
    model = fit_outputs(X, Y, noise_free=False, noise_floor=1e-5, start=None)
    kw = dict(best_f=0.2, objective_index=0, constraints={1: (None, 0.0), 2: (None, 0.0)}, maximize=False)
    test = torch.tensor(rng.random((130, 1, 3)), requires_grad=True)
    reference = LogConstrainedExpectedImprovement(model, **kw)(test)
    (g_ref,) = torch.autograd.grad(reference.sum(), test)
    fast = FastLogCEI(model, **kw)(test)
    (g_fast,) = torch.autograd.grad(fast.sum(), test)
    torch.testing.assert_close(fast, reference, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(g_fast, g_ref, rtol=1e-7, atol=1e-9)
