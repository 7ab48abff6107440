"""A bench's statistics: Welch's one-sided test against scipy, Benjamini–Hochberg against a hand
computation, the reference tested against each baseline."""

from __future__ import annotations

import pytest
from scipy import stats

from pinnbo.bench.statistics import benjamini_hochberg, compare_to_reference, mean_se, welch_one_sided


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

