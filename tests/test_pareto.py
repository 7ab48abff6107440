"""Several objectives: the Pareto front, the hypervolume against hand computations, and the
reference point inferred as Ax does."""

from __future__ import annotations

import numpy as np
import pytest

from pinnbo.pareto import hypervolume, hypervolume_curve, inferred_reference, pareto_mask

POINTS = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0], [2.5, 2.5], [2.0, 2.0]])


def test_the_front_keeps_the_non_dominated_points_once():
    assert pareto_mask(POINTS).tolist() == [True, True, True, False, False]


def test_the_hypervolume_of_a_staircase_is_its_area():
    # Reference (4, 4): columns x in [1, 2], [2, 3], [3, 4] are dominated above y = 3, 2, 1: 1 + 2 + 3.
    assert hypervolume(POINTS, [4.0, 4.0]) == pytest.approx(6.0)
    # a point beyond the reference adds nothing; one on it neither
    assert hypervolume(np.array([[5.0, 0.0], [4.0, 1.0]]), [4.0, 4.0]) == 0.0


def test_the_hypervolume_in_three_objectives_is_a_union_of_boxes():
    Y = np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    # two unit-height boxes 2×1×1 and 1×2×1 in [0, 2]³ overlapping in a 1×1×1 cube: 2 + 2 − 1
    assert hypervolume(Y, [2.0, 2.0, 2.0]) == pytest.approx(3.0)


def test_the_curve_grows_with_each_point_that_extends_the_front():
    curve = hypervolume_curve(POINTS, np.array([True, True, False, True, True]), [4.0, 4.0])
    np.testing.assert_allclose(curve, [3.0, 5.0, 5.0, 5.0, 5.0])
    assert np.all(np.diff(curve) >= 0)


def test_the_inferred_reference_is_the_nadir_moved_out_by_a_tenth_of_the_range():
    np.testing.assert_allclose(inferred_reference(POINTS), [3.2, 3.2])
