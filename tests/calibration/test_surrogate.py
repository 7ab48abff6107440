"""The surrogate V̂ interpolates its design points and finds a smooth log-posterior's maximum."""

from __future__ import annotations

import numpy as np
import pytest

from pinnbo.calibration.surrogate import fit_surrogate, surrogate_maximum
from pinnbo.problem import Box


def quadratic(X):
    return -0.5 * ((X[:, 0] - 0.3) ** 2 / 0.04 + (X[:, 1] + 0.2) ** 2 / 0.09)


def test_the_surrogate_interpolates_and_approximates_a_quadratic():
    domain = Box((-1.0, -1.0), (1.0, 1.0))
    X = domain.from_unit(np.random.default_rng(0).random((40, 2)))
    surrogate = fit_surrogate(X, quadratic(X), domain)
    assert np.allclose(surrogate(X), quadratic(X), atol=1e-2 * np.ptp(quadratic(X)))
    grid = domain.from_unit(np.random.default_rng(1).random((200, 2)) * 0.6 + 0.2)   # inside the design's hull
    assert np.abs(surrogate(grid) - quadratic(grid)).max() < 0.05 * np.ptp(quadratic(X))
    mean, sd = surrogate.moments(X)
    assert np.all(sd < 1e-2 * np.ptp(quadratic(X)))


def test_the_maximum_is_found_between_design_points():
    domain = Box((-1.0, -1.0), (1.0, 1.0))
    X = domain.from_unit(np.random.default_rng(2).random((40, 2)))
    x, value = surrogate_maximum(fit_surrogate(X, quadratic(X), domain), seed=0, design=X)
    assert np.allclose(x, [0.3, -0.2], atol=0.05)
    assert value == pytest.approx(0.0, abs=0.1)
