"""Neural-CBO's ranking and refinement as shared acquisition machinery: tiers ranked by their keys
(last key most significant), and a (1 + λ) perturbation search that climbs and never repeats."""

from __future__ import annotations

import numpy as np

from pinnbo.acquisition.search import is_duplicate, perturbation_search, tiered_order


def test_tiers_come_best_first_and_each_is_ranked_by_its_last_key_first():
    allowed = np.array([True, False, True, True, False])
    score = np.array([3.0, 0.0, 1.0, 1.0, 0.0])
    tie = np.array([0.0, 0.0, 5.0, 2.0, 0.0])
    violation = np.array([0.0, 2.0, 0.0, 0.0, 1.0])
    order = tiered_order([(allowed, (tie, score)), (~allowed, (violation,))])
    # allowed by score, the tie at 1.0 broken by `tie`; then the rest by least violation
    assert order.tolist() == [3, 2, 0, 4, 1]


def test_the_search_climbs_to_a_peak_and_steps_around_an_evaluated_design():
    peak = np.array([0.7, 0.2])

    def score(points: np.ndarray) -> np.ndarray:
        return -((points - peak) ** 2).sum(axis=1)

    start = np.array([0.3, 0.6])
    best = perturbation_search(start, float(score(start[None])[0]), score, np.zeros((0, 2)), 1e-4,
                               np.random.default_rng(0), 0.2, rounds=12, per_round=32)
    assert np.abs(best - peak).max() < 0.02
    evaluated = best[None, :]
    again = perturbation_search(start, float(score(start[None])[0]), score, evaluated, 1e-4,
                                np.random.default_rng(0), 0.2, rounds=12, per_round=32)
    assert not is_duplicate(again, evaluated, 1e-4)


def test_a_point_scored_minus_infinity_is_never_taken():
    start = np.array([0.5, 0.5])
    best = perturbation_search(start, 0.0, lambda p: np.full(len(p), -np.inf), np.zeros((0, 2)), 1e-4,
                               np.random.default_rng(1), 0.1, rounds=5, per_round=8)
    np.testing.assert_array_equal(best, start)
