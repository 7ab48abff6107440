"""The samplers against densities with known moments: exact draws from rejection (even from an
envelope set too low) and Metropolis chains whose step adapts to the target."""

from __future__ import annotations

import numpy as np
import pytest

from pinnbo.calibration.sampling import metropolis, rejection
from pinnbo.problem import Box


def gaussian(mean, sd):
    mean, sd = np.asarray(mean, float), np.asarray(sd, float)
    return lambda X: -0.5 * np.sum(((X - mean) / sd) ** 2, axis=1)


def test_rejection_draws_a_gaussian_inside_the_box():
    domain = Box((-10.0,), (10.0,))
    drawn = rejection(gaussian([1.0], [0.5]), domain, 20000, log_max=0.0, rng=np.random.default_rng(0))
    assert drawn.sampler == "rejection"
    assert drawn.values.shape == (20000, 1)
    assert drawn.values.mean() == pytest.approx(1.0, abs=0.02)
    assert drawn.values.std() == pytest.approx(0.5, abs=0.02)
    # acceptance = ∫ exp(V) / (box width × exp(max V)) = √(2π) 0.5 / 20
    assert drawn.acceptance == pytest.approx(np.sqrt(2 * np.pi) * 0.5 / 20, rel=0.05)


def test_an_envelope_below_the_maximum_is_raised_so_the_draws_stay_exact():
    domain = Box((-10.0,), (10.0,))
    drawn = rejection(gaussian([1.0], [0.5]), domain, 20000, log_max=-3.0, rng=np.random.default_rng(1))
    assert drawn.details["envelope"] > -3.0
    assert drawn.values.std() == pytest.approx(0.5, abs=0.02)


def test_rejection_gives_up_on_a_needle_so_metropolis_takes_over():
    domain = Box((-100.0,), (100.0,))
    assert rejection(gaussian([0.0], [1e-3]), domain, 100, log_max=0.0, rng=np.random.default_rng(2)) is None


def test_metropolis_recovers_a_correlated_free_gaussian_and_adapts_its_step():
    domain = Box((-20.0, -20.0, -20.0), (20.0, 20.0, 20.0))
    mean, sd = [1.0, -2.0, 0.5], [0.3, 2.0, 1.0]
    drawn = metropolis(gaussian(mean, sd), domain, 40000, burn_in=2000, start=np.array([3.0, 3.0, 3.0]),
                       scale=np.ones(3), rng=np.random.default_rng(3))
    assert drawn.sampler == "metropolis" and drawn.values.shape == (40000, 3)
    assert np.allclose(drawn.values.mean(axis=0), mean, atol=0.15)
    assert np.allclose(drawn.values.std(axis=0), sd, rtol=0.1)
    assert 0.1 < drawn.acceptance < 0.45


def test_metropolis_never_leaves_the_box():
    domain = Box((0.0,), (1.0,))
    drawn = metropolis(gaussian([0.0], [0.2]), domain, 5000, burn_in=500, start=np.array([0.5]), scale=np.ones(1),
                       rng=np.random.default_rng(4))
    assert drawn.values.min() >= 0.0 and drawn.values.max() <= 1.0
    # the half-normal on [0, 1]: mean σ √(2/π) (the mass beyond 1 is 3e-7)
    assert drawn.values.mean() == pytest.approx(0.2 * np.sqrt(2 / np.pi), abs=0.02)


def test_r_hat_finds_chains_that_disagree_and_passes_chains_that_mix():
    from pinnbo.calibration.diagnostics import diagnostics

    rng = np.random.default_rng(0)
    mixed = rng.standard_normal((4, 500, 2))
    apart = mixed + np.array([0.0, 0.0, 3.0, 3.0])[:, None, None]     # two chains stuck elsewhere
    good, bad = diagnostics(None, mixed, ["a", "b"]), diagnostics(None, apart, ["a", "b"])
    assert all(abs(good[n]["r_hat"] - 1) < 0.02 and good[n]["ess_bulk"] > 1500 for n in "ab")
    assert all(bad[n]["r_hat"] > 1.5 and bad[n]["ess_bulk"] < 100 for n in "ab")
