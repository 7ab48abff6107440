"""The calibration problems' forward models: an exact identity of the Rössler moments, convergence
in the solver's tolerance, and the papers' synthetic data."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pinnbo.oracles.dynamics import LORENZ63, ROSSLER, SAMPLE_STEP


def test_rossler_moments_satisfy_the_time_average_of_its_equations():
    """z2' = z1 + 0.2 z2, so the average of z1 + 0.2 z2 over the window is (z2(t1) − z2(t0)) / (t1 − t0),
    up to the sampled average's O(Δt) end effect."""
    t0, t1 = ROSSLER.window
    series = ROSSLER.series(np.array([5.7]), (t0, t1))
    z2 = series[1]
    G = ROSSLER(np.array([5.7]))
    assert np.allclose(G, series.mean(axis=1))
    bound = np.abs(series[:2]).max() * SAMPLE_STEP / (t1 - t0) * 2
    assert G[0] + 0.2 * G[1] == pytest.approx((z2[-1] - z2[0]) / (t1 - t0), abs=bound)
    # and the second moments are the products' averages, e.g. z1² >= (z1)² (Jensen)
    assert G[3] >= G[0] ** 2 and G[4] >= G[1] ** 2 and G[5] >= G[2] ** 2


def test_rossler_moments_converge_with_the_tolerance():
    tight = replace(ROSSLER, rtol=1e-10, atol=1e-12)
    for c in (2.0, 5.7, 12.0):
        x = np.array([c])
        assert np.allclose(ROSSLER(x), tight(x), rtol=1e-5, atol=1e-6)


def test_lorenz63_moments_move_less_than_the_noise_when_the_tolerance_tightens():
    """Chaos: two tolerances give different trajectories; the averages agree statistically, to a
    fraction of the noise standard deviation Γ^½ (from the series' variance, × 0.25 as the case)."""
    x = np.array([10.0, 28.0, 8.0 / 3.0])
    series = LORENZ63.series(x)
    tight = replace(LORENZ63, rtol=1e-8, atol=1e-10)
    noise_sd = np.sqrt(0.25 * series.var(axis=1))
    assert np.all(np.abs(series.mean(axis=1) - tight(x)) < 0.5 * noise_sd)


def test_the_rossler_problem_draws_its_data_from_its_data_seed():
    from problems.calibration import rossler

    a, b, c = rossler(0), rossler(0), rossler(1)
    pa, pc = a.metadata["calibration"], c.metadata["calibration"]
    assert np.array_equal(pa.data, b.metadata["calibration"].data)
    assert not np.array_equal(pa.data, pc.data)
    assert np.array_equal(pa.noise_variance, pc.noise_variance)
    # D − G(x*) is one draw of N(0, Γ): its standardised residuals are of unit scale
    z = (pa.data - ROSSLER(np.array([5.7]))) / np.sqrt(pa.noise_variance)
    assert 0.2 < np.sqrt(np.mean(z**2)) < 2.5
    assert a.domain.names == ("c",) and a.sense == "maximize"
