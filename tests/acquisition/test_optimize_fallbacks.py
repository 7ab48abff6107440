"""The chain that keeps a GP method from repeating a design (docs/algorithms.md, "The duplicate
rule"): the best new candidate; else the best point just beside the optima; else the best point of
a fresh pool, drawn only then; else that pool's point farthest from every evaluated design."""

from __future__ import annotations

import numpy as np
import torch

from pinnbo.acquisition.optimize import best_new_or_beside
from pinnbo.acquisition.search import is_duplicate

TOL = 1e-4
PEAK = np.array([0.5, 0.5])


def hill(x: torch.Tensor) -> torch.Tensor:
    """A BoTorch-shaped acquisition (batch × q=1 × d → batch): −‖x − (½, ½)‖², highest at the centre."""
    return -((x[:, 0, :] - torch.as_tensor(PEAK, dtype=x.dtype)) ** 2).sum(-1)


class Pool:
    def __init__(self, points: np.ndarray) -> None:
        self.points, self.draws = points, 0

    def __call__(self) -> np.ndarray:
        self.draws += 1
        return self.points


def test_a_new_candidate_wins_and_no_pool_is_drawn():
    pool = Pool(np.array([[0.1, 0.1]]))
    candidates, values = np.array([[0.5, 0.5], [0.4, 0.5]]), np.array([0.0, -0.01])
    choice = best_new_or_beside(hill, candidates, values, np.array([[0.9, 0.9]]), TOL, pool)
    np.testing.assert_array_equal(choice, [0.5, 0.5])
    assert pool.draws == 0


def test_when_every_optimum_repeats_the_best_point_just_beside_it_is_taken():
    pool = Pool(np.array([[0.1, 0.1]]))
    evaluated = np.array([PEAK])
    choice = best_new_or_beside(hill, np.array([PEAK]), np.array([0.0]), evaluated, TOL, pool)
    assert not is_duplicate(choice, evaluated, TOL)
    assert np.abs(choice - PEAK).max() <= 1.05 * TOL + 1e-15      # a step of 1.05·tol along one axis
    assert pool.draws == 0


def test_a_fresh_pool_then_the_farthest_point_as_the_last_resort():
    evaluated = np.array([PEAK])
    pool = Pool(np.array([[0.2, 0.2], [0.45, 0.5], [0.9, 0.1]]))
    none_beside = np.zeros((0, 2))    # no candidate at all: nothing to step beside
    choice = best_new_or_beside(hill, none_beside, np.zeros(0), evaluated, TOL, pool)
    np.testing.assert_array_equal(choice, [0.45, 0.5])            # the pool's highest new point
    assert pool.draws == 1

    def flat(x: torch.Tensor) -> torch.Tensor:                      # nothing finite to rank by
        return torch.full(x.shape[:1], -torch.inf, dtype=x.dtype)

    choice = best_new_or_beside(flat, none_beside, np.zeros(0), evaluated, TOL, pool)
    np.testing.assert_array_equal(choice, [0.9, 0.1])             # farthest from (½, ½) in the pool
