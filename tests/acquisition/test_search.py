"""The shared surrogate minimiser: finds a known minimum, respects the box, never repeats."""

from __future__ import annotations

import numpy as np
import torch

from pinnbo.acquisition.search import (STALL_COUNT, STALL_GAIN, STALL_RADIUS, best_allowed, best_new, bound_snaps,
                                      candidate_pool, faces_only, is_duplicate, minimize_surrogate, repeats,
                                      stalled)
from tests.acquisition.sides import unit_square_sides


def bowl(u: torch.Tensor) -> torch.Tensor:
    return ((u - torch.tensor([0.3, 0.8], dtype=u.dtype)) ** 2).sum(-1)


def test_finds_an_interior_minimum():
    p = minimize_surrogate(bowl, 2, seed=0, evaluated_unit=np.zeros((0, 2)), n_pool=64, top_k=3)
    np.testing.assert_allclose(p.unit_x, [0.3, 0.8], atol=1e-5)
    assert p.value < 1e-9


def test_on_the_boundary_the_minimum_over_the_faces_is_found():
    # The bowl's minimum (0.3, 0.8) is inside; over the faces it is (0.3, 1) at 0.04 (next: (0, 0.8) at
    # 0.09), and every candidate, refined or nudged, lies on a face.
    p = minimize_surrogate(bowl, 2, seed=0, evaluated_unit=np.zeros((0, 2)), n_pool=64, top_k=3, on_boundary=True)
    np.testing.assert_allclose(p.unit_x, [0.3, 1.0], atol=1e-5)
    assert abs(p.value - 0.04) < 1e-9
    taken = np.array([[0.3, 1.0]])
    q = minimize_surrogate(bowl, 2, seed=0, evaluated_unit=taken, n_pool=64, top_k=3, on_boundary=True)
    assert q.unit_x[1] == 1.0 and 1e-4 <= abs(q.unit_x[0] - 0.3) < 2e-4      # the neighbour on the same face


def test_an_interior_design_better_than_the_faces_ends_the_boundary_search():
    faces = np.array([[0.0, 0.3], [1.0, 0.6], [0.2, 0.0], [0.7, 1.0]])
    inside = np.array([[0.5, 0.5]])
    assert faces_only(inside, np.array([-1.0]))                                            # no face seen yet
    assert faces_only(np.vstack([faces[:3], inside]), np.array([0.0, 0.0, 0.0, -1.0]))     # 3 < 2d on faces
    X = np.vstack([faces, inside])
    assert faces_only(X, np.array([-2.0, 0.0, 0.0, 0.0, -1.0]))        # a face design is the best: go on
    assert not faces_only(X, np.array([0.0, 0.0, 0.0, 0.0, -1.0]))     # the data contradict the PDE
    assert faces_only(X, np.array([-2.0, 0.0, 0.0, 0.0, np.nan]))      # a failed evaluation counts for nothing


def test_minimum_on_the_boundary_is_reached_exactly():
    def slope(u):
        return u[:, 0] - 2 * u[:, 1]
    p = minimize_surrogate(slope, 2, seed=0, evaluated_unit=np.zeros((0, 2)), n_pool=64)
    np.testing.assert_array_equal(p.unit_x, [0.0, 1.0])


def test_an_evaluated_optimum_is_not_proposed_again():
    def slope(u):
        return u[:, 0] - 2 * u[:, 1]
    evaluated = np.array([[0.0, 1.0]])
    p = minimize_surrogate(slope, 2, seed=0, evaluated_unit=evaluated, n_pool=64, duplicate_tol=1e-4)
    assert not is_duplicate(p.unit_x, evaluated, 1e-4)
    assert np.all((p.unit_x >= 0) & (p.unit_x <= 1))
    assert p.value < -1.9   # still close to the corner


def test_same_seed_same_proposal():
    a = minimize_surrogate(bowl, 2, seed=4, evaluated_unit=np.zeros((0, 2)), n_pool=32, refine_iterations=0)
    b = minimize_surrogate(bowl, 2, seed=4, evaluated_unit=np.zeros((0, 2)), n_pool=32, refine_iterations=0)
    np.testing.assert_array_equal(a.unit_x, b.unit_x)


def test_a_sub_box_is_respected_and_its_boundary_minimum_found():
    # The bowl's minimum (0.3, 0.8) lies outside [0.5, 0.7] x [0.1, 0.6]: the constrained minimum
    # is the box's nearest corner (0.5, 0.6).
    lower, upper = np.array([0.5, 0.1]), np.array([0.7, 0.6])
    p = minimize_surrogate(bowl, 2, seed=0, evaluated_unit=np.zeros((0, 2)), n_pool=64, top_k=3,
                           local_starts=np.array([[0.3, 0.8], [0.9, 0.0]]), lower=lower, upper=upper)
    np.testing.assert_allclose(p.unit_x, [0.5, 0.6], atol=1e-9)
    assert np.all(p.unit_x >= lower) and np.all(p.unit_x <= upper)


def test_a_sub_box_keeps_nudged_repeats_inside():
    lower, upper = np.array([0.5, 0.1]), np.array([0.7, 0.6])
    evaluated = np.array([[0.5, 0.6]])
    p = minimize_surrogate(bowl, 2, seed=0, evaluated_unit=evaluated, n_pool=64, lower=lower, upper=upper)
    assert not is_duplicate(p.unit_x, evaluated, 1e-4)
    assert np.all(p.unit_x >= lower) and np.all(p.unit_x <= upper)
    assert np.max(np.abs(p.unit_x - [0.5, 0.6])) < 1e-3


def test_the_whole_cube_is_the_default_box():
    a = minimize_surrogate(bowl, 2, seed=3, evaluated_unit=np.zeros((0, 2)), n_pool=32)
    b = minimize_surrogate(bowl, 2, seed=3, evaluated_unit=np.zeros((0, 2)), n_pool=32,
                           lower=np.zeros(2), upper=np.ones(2))
    np.testing.assert_array_equal(a.unit_x, b.unit_x)


def test_bound_snaps_move_coordinates_to_their_bounds():
    u = np.array([0.03, 0.5, 0.9, 1.0])
    snaps = bound_snaps(u, step=0.05)
    expected = [[0.0, 0.5, 0.9, 1.0], [0.03, 0.0, 0.9, 1.0], [0.03, 0.5, 0.0, 1.0], [0.03, 0.5, 0.9, 0.0],
                [1.0, 0.5, 0.9, 1.0], [0.03, 1.0, 0.9, 1.0], [0.03, 0.5, 1.0, 1.0],     # one at a time
                [0.0, 0.5, 0.9, 1.0]]                                                  # all within 0.05
    np.testing.assert_array_equal(snaps, expected)   # the coordinate already on its bound adds no repeat
    np.testing.assert_array_equal(bound_snaps(np.array([0.0, 1.0]), 0.1), [[0.0, 0.0], [1.0, 1.0]])


def test_the_candidate_pool_is_sobol_then_perturbations_of_the_anchors_in_turn():
    anchors = np.array([[0.2, 0.2], [0.9, 0.9]])
    pool = candidate_pool(2, 7, 64, anchors, 6, 0.01, np.random.default_rng(0))
    assert pool.shape == (70, 2) and np.all((pool >= 0) & (pool <= 1))
    np.testing.assert_array_equal(pool[:64], candidate_pool(2, 7, 64, anchors, 0, 0.01, np.random.default_rng(0)))
    assert np.all(np.abs(pool[64::2] - anchors[0]) < 0.06) and np.all(np.abs(pool[65::2] - anchors[1]) < 0.11)


def test_the_best_new_and_the_best_allowed_skip_repeats():
    points = np.array([[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]])
    values = np.array([3.0, 2.0, 1.0])
    evaluated = np.array([[0.1, 0.1]])
    np.testing.assert_array_equal(best_new(points, values, evaluated, 1e-4), [0.5, 0.5])
    assert best_new(points[:1], values[:1], evaluated, 1e-4) is None
    # a known violation ranks first: the best by value among the points without one
    np.testing.assert_array_equal(best_allowed(points, values, np.array([0.0, 1.0, 0.0]), evaluated, 1e-4), [0.9, 0.9])


def test_a_stall_is_repeats_since_the_best_last_improved():
    rng = np.random.default_rng(0)
    spread = rng.random((6, 2))
    values = np.array([3.0, 2.0, 1.0, 2.5, 4.0, 1.5])               # best 1.0 at spread[2], range 3
    repeats = spread[2] + STALL_RADIUS / 2 * np.array([[1, 0], [0, 1], [-1, -1]])
    flat = np.full(STALL_COUNT, 1.0 - 0.5 * STALL_GAIN * 3.0)        # improves by half the threshold
    X, y = np.vstack([spread, repeats]), np.concatenate([values, flat])
    assert stalled(X, y)
    # approaching a jump: the same repeats, each improving the best clearly
    assert not stalled(X, np.concatenate([values, [0.9, 0.8, 0.7]]))
    # one of them new, or too few evaluations: no stall
    far = repeats.copy()
    far[1] = spread[2] + 2 * STALL_RADIUS
    assert not stalled(np.vstack([spread, far]), y)
    assert not stalled(X[-STALL_COUNT:], flat)
    # a new design elsewhere that does not beat the stalled best leaves the stall; one that does ends it
    elsewhere = np.vstack([X, [[0.95, 0.05]]])
    assert stalled(elsewhere, np.append(y, 1.2))
    assert not stalled(elsewhere, np.append(y, 0.5))


def test_designs_on_two_sides_of_a_jump_are_no_repeat_of_each_other():
    """With the corners' angles as sides: a corner and the design beside it on an edge, or the
    designs beside it on its two edges, are no repeat however close, while two designs beside each
    other on one side still are, and a corner is a repeat of itself."""
    corner, beside, across = np.array([0.0, 1.0]), np.array([STALL_RADIUS / 20, 1.0]), np.array([0.0, 1 - 1e-9])
    earlier = np.array([[0.5, 0.5], corner])
    assert repeats(beside, earlier) and not repeats(beside, earlier, unit_square_sides)
    assert is_duplicate(across, beside[None, :], 1e-4) and not is_duplicate(across, beside[None, :], 1e-4,
                                                                             unit_square_sides)
    assert repeats(beside + [STALL_RADIUS / 10, 0.0], np.vstack([earlier, beside]), unit_square_sides)
    assert is_duplicate(corner, earlier, 1e-4, unit_square_sides)
    # after the corner, three designs beside it, none improving the best: the first is a repeat of
    # the corner only, the other two of the designs beside it as well, so a stall only without sides
    near = corner + STALL_RADIUS * np.array([[0.1, 0.0], [0.3, 0.0], [0.2, -0.01]])
    X = np.vstack([np.random.default_rng(1).random((6, 2)), corner, near])
    y = np.array([3.0, 2.0, 1.0, 2.5, 4.0, 1.5, 1.2, 1.1, 1.1, 1.1])
    assert stalled(X, y) and not stalled(X, y, unit_square_sides)
