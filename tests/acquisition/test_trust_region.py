"""TuRBO's trust region: its side-length rule and its box."""

from __future__ import annotations

import numpy as np

from pinnbo.acquisition.trust_region import TrustRegion


def test_the_trust_region_follows_turbos_rule():
    tr = TrustRegion(best=10.0)
    assert tr.length == 0.8
    tr.update([9.0, 8.0, 7.0], dim=2)           # three clear improvements: doubled
    assert tr.length == 1.6 and tr.best == 7.0
    tr.update([6.0, 5.0, 4.0], dim=2)           # capped at the maximum
    assert tr.length == 1.6
    tr.update([3.999, None, 4.0, 5.0], dim=2)   # < 1e-3 |best| better, a failure, no change: 4 failures
    assert tr.length == 0.8 and tr.failures == 0
    tr.update([9.0] * 9, dim=10)                # patience max(4, d) = 10 in 10-D: not yet
    assert tr.length == 0.8 and tr.failures == 9
    tr.update([9.0], dim=10)
    assert tr.length == 0.4
    for _ in range(6):                          # 0.4 / 2^6 < 2^-7: restart at the initial side
        tr.update([9.0] * 10, dim=10)
    assert tr.length == 0.8 and tr.restarts == 1
    assert tr.seen == 3 + 3 + 4 + 9 + 1 + 60


def test_the_region_is_a_cube_at_the_centre_clipped_to_the_box():
    lower, upper = TrustRegion(length=0.5).bounds(np.array([0.1, 0.6]))
    np.testing.assert_allclose(lower, [0.0, 0.35])
    np.testing.assert_allclose(upper, [0.35, 0.85])
