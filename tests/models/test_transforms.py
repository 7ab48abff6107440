"""Output transforms: the standardisation and the Yeo-Johnson warp of the networks' targets."""

from __future__ import annotations

import numpy as np

from pinnbo.models.transforms import power_warp, standardise


def test_standardise_is_the_mean_and_sd_and_one_for_a_constant():
    assert standardise(np.array([1.0, 3.0])) == (2.0, 1.0)
    assert standardise(np.array([5.0, 5.0, 5.0])) == (5.0, 1.0)
    assert standardise(np.array([])) == (0.0, 1.0)


def test_the_power_warp_is_monotone_and_compresses_a_heavy_tail():
    y = np.exp(np.random.default_rng(1).normal(0.0, 1.5, 60))      # log-normal: heavy right tail
    w = power_warp(y)
    order = np.argsort(y)
    assert np.all(np.diff(w[order]) > 0)                              # minimising w minimises y
    z = (y - y.mean()) / y.std()
    skew = lambda v: float(np.mean(((v - v.mean()) / v.std()) ** 3))   # noqa: E731
    assert abs(skew(w)) < 0.5 * skew(z)
    # the low end is spread out: the gap between the two smallest values grows relative to the range
    lo = np.sort(w)
    zz = np.sort(z)
    assert (lo[1] - lo[0]) / np.ptp(w) > (zz[1] - zz[0]) / np.ptp(z)
