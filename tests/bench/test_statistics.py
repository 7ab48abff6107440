"""A bench's statistics: Welch's one-sided test against scipy, Benjamini–Hochberg against a hand
computation, the reference tested against each baseline, and the sample-efficiency numbers against
hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pinnbo.bench.statistics import (benjamini_hochberg, censored_rank_test, censored_summary, compare_proposals,
                                     compare_to_reference, mean_log10_regret, mean_se, normalised_regret,
                                     proposals_to, welch_one_sided)


def test_welch_p_values_equal_scipy():
    reference = [1.0, 1.2, 0.9, 1.1, 1.05]
    baseline = [1.5, 1.7, 1.2, 1.4]
    for sense, alternative in (("minimize", "less"), ("maximize", "greater")):
        test = welch_one_sided(reference, baseline, sense)
        expected = stats.ttest_ind(reference, baseline, equal_var=False, alternative=alternative)
        assert test["alternative"] == alternative
        assert test["p_value"] == pytest.approx(expected.pvalue, rel=1e-12)
        assert test["t"] == pytest.approx(expected.statistic, rel=1e-12)
    assert welch_one_sided([1.0], baseline, "minimize")["p_value"] is None      # one value: no variance
    assert welch_one_sided([1.0, 1.0], [2.0, 2.0], "minimize")["p_value"] is None


def test_benjamini_hochberg_matches_a_hand_computation():
    # m = 4, sorted p: 0.01 0.03 0.04 0.20 → p·m/rank: 0.04 0.06 0.0533 0.20 → running min from the
    # right: 0.04 0.0533 0.0533 0.20, mapped back to the input order.
    adjusted = benjamini_hochberg([0.01, 0.04, 0.03, 0.20])
    assert adjusted == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.20], rel=1e-12)
    assert benjamini_hochberg([0.01, None, 0.04]) == [pytest.approx(0.02), None, pytest.approx(0.04)]
    assert benjamini_hochberg([0.9, 0.8]) == pytest.approx([0.9, 0.9])
    assert benjamini_hochberg([0.6, 0.7, 0.9]) == pytest.approx([0.9, 0.9, 0.9])
    assert benjamini_hochberg([]) == []


def test_reference_is_tested_against_each_baseline_with_bh():
    finals = {"pinn-bo": [0.1, 0.2, 0.15, 0.12], "a": [0.5, 0.6, 0.4, 0.55], "b": [0.18, 0.25, 0.1, 0.2],
              "c": [0.11, 0.21, 0.16, 0.13]}
    tests = compare_to_reference(finals, "pinn-bo", "minimize")["baselines"]
    raw = [stats.ttest_ind(finals["pinn-bo"], finals[m], equal_var=False, alternative="less").pvalue for m in "abc"]
    for m, p, p_adj in zip("abc", raw, benjamini_hochberg(raw)):
        assert tests[m]["p_value"] == pytest.approx(p, rel=1e-12)
        assert tests[m]["p_adjusted"] == pytest.approx(p_adj, rel=1e-12)
    assert tests["a"]["significant"] and not tests["c"]["significant"]
    assert compare_to_reference({"a": [1.0, 2.0]}, "pinn-bo", "minimize") is None
    assert mean_se([1.0, 3.0]) == {"mean": 2.0, "se": 1.0, "n": 2}


def test_the_normalised_regret_is_the_gap_over_the_initial_designs_median_gap():
    # f* = 0 (minimise), initial values 4, 2, 8: m0 = 4, so r = best / 4
    r = normalised_regret(np.array([4.0, 2.0, 2.0, 1.0, 0.04]), 0.0, [4.0, 2.0, 8.0])
    np.testing.assert_allclose(r, [1.0, 0.5, 0.5, 0.25, 0.01], rtol=1e-15)
    # maximise, f* = 10, initial values 6, 8, 2 (m0 = 6): r = (10 − best) / 4; nothing yet is inf
    r = normalised_regret(np.array([np.nan, 6.0, 9.75]), 10.0, [6.0, 8.0, None, 2.0])
    np.testing.assert_allclose(r, [np.inf, 1.0, 0.0625], rtol=1e-15)
    assert proposals_to(r, 2, 0.1) == 1 and proposals_to(r, 2, 0.01) is None
    assert proposals_to(np.array([1.0, 0.05, 0.01]), 2, 0.1) == 0       # the initial design got there
    # mean of log10 r over the proposals, floored at 1e-8
    assert mean_log10_regret(np.array([1.0, 1.0, 0.1, 0.0]), 2) == pytest.approx((-1 - 8) / 2)
    assert mean_log10_regret(np.array([1.0, np.inf]), 1) is None


def test_censored_medians_rank_runs_that_never_got_there_last():
    assert censored_summary([3, None, 5], 30) == {"median": 5.0, "hits": 2, "n": 3, "horizon": 30,
                                                  "values": [3, None, 5]}
    assert censored_summary([4, 2, None, None], 30)["median"] is None     # the middle pair holds a censored run
    assert censored_summary([4, 2, 6, None], 30)["median"] == 5.0
    assert censored_summary([None], 30)["median"] is None and censored_summary([], 30)["median"] is None


def test_the_censored_rank_test_is_mann_whitney_with_censored_runs_tied_last():
    reference, baseline = [1, 2, 3, 5, None], [4, 6, None, None, 8]
    test = censored_rank_test(reference, baseline, horizon=30)
    expected = stats.mannwhitneyu([1, 2, 3, 5, 31], [4, 6, 31, 31, 8], alternative="less")
    assert test["p_value"] == pytest.approx(expected.pvalue, rel=1e-12) and test["p_value"] < 0.1
    assert censored_rank_test([None, None], [None, None], 30)["p_value"] is None   # nothing to rank
    assert censored_rank_test([1], [2, 3], 30)["p_value"] is None
    both = compare_proposals({"a": reference, "b": baseline, "c": [2, 1, 3, 4, 5]}, "a", 30, 0.01)
    raw = [both["baselines"][m]["p_value"] for m in "bc"]
    assert [both["baselines"][m]["p_adjusted"] for m in "bc"] == pytest.approx(benjamini_hochberg(raw))
