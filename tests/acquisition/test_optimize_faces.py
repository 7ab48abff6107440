"""The face search of :func:`pinnbo.acquisition.optimize.maximize_acquisition` (docs/algorithms.md,
"The maximum principle"): one batched L-BFGS-B over starts on different faces, each start keeping
its face. Checked on a bowl whose optimum on every face is known in closed form."""

from __future__ import annotations

import numpy as np
import torch
from botorch.acquisition import PosteriorMean
from botorch.models.deterministic import GenericDeterministicModel

from pinnbo.acquisition import optimize
from pinnbo.acquisition.optimize import (JUMP_FTOL, OnFaces, _on_or_off_faces, _refine_on_faces, corner_limits,
                                        maximize_acquisition)
from pinnbo.acquisition.search import on_or_off_faces, spread_over_faces
from pinnbo.models.corners import corner_angles
from pinnbo.oracles.heat_plate import HeatPlate
from tests.acquisition.sides import unit_square_sides

CENTRE = np.array([0.3, 0.8, 0.55])


def bowl(centre: np.ndarray) -> PosteriorMean:
    """−‖x − centre‖² as a BoTorch acquisition: on the face x_i = v its maximum is the centre with
    coordinate i set to v (the bowl is a sum over coordinates), at −(centre_i − v)²."""
    c = torch.as_tensor(centre, dtype=torch.float64)
    return PosteriorMean(GenericDeterministicModel(lambda X: -((X - c) ** 2).sum(-1, keepdim=True)))


def test_a_face_index_puts_its_coordinate_on_its_face_and_the_free_ones_around_it():
    X = torch.tensor([[0.2, 0.7, k] for k in range(6)], dtype=torch.float64)
    expected = [[0, .2, .7], [1, .2, .7], [.2, 0, .7], [.2, 1, .7], [.2, .7, 0], [.2, .7, 1]]
    np.testing.assert_array_equal(OnFaces(bowl(CENTRE), 3).to_cube(X).numpy(), expected)


def test_every_start_reaches_the_optimum_of_its_own_face():
    starts = spread_over_faces(np.random.default_rng(0).random((12, 3)), np.zeros(3), np.ones(3))
    refined, values = _refine_on_faces(bowl(CENTRE), torch.as_tensor(starts), maxiter=200)
    for start, point, value in zip(starts, refined, values):
        axis = int(np.argmax((start == 0.0) | (start == 1.0)))
        optimum = CENTRE.copy()
        optimum[axis] = start[axis]
        np.testing.assert_allclose(point, optimum, atol=1e-6)
        assert abs(value + (CENTRE[axis] - start[axis]) ** 2) < 1e-10


def test_the_search_returns_the_best_face_point_not_the_interior_optimum():
    # faces: x1 = 1 at −0.04 beats x0 = 0 at −0.09 and x2 = 1 at −0.2025; the interior optimum is 0
    pool = np.random.default_rng(1).random((64, 3))
    x = maximize_acquisition(bowl(CENTRE), pool, np.zeros((0, 3)), num_restarts=6, maxiter=200, duplicate_tol=1e-4,
                             on_boundary=True)
    np.testing.assert_allclose(x, [0.3, 1.0, 0.55], atol=1e-6)


def test_in_one_variable_the_faces_are_the_two_ends():
    x = maximize_acquisition(bowl(np.array([0.7])), np.linspace(0.1, 0.9, 9)[:, None], np.zeros((0, 1)),
                             num_restarts=4, maxiter=50, duplicate_tol=1e-4, on_boundary=True)
    np.testing.assert_array_equal(x, [1.0])


class Counted(PosteriorMean):
    """A PosteriorMean that counts its evaluations."""

    calls = 0

    def forward(self, X):
        Counted.calls += 1
        return super().forward(X)


def ramp_with_a_jump_at_its_corner() -> Counted:
    """x₀ + x₁ on the unit square, but −1 at the corner (1, 1) itself: a model that jumps where two
    faces meet. The supremum on the faces x₀ = 1 and x₁ = 1 is the limit 2 beside the corner."""
    def f(X):
        value = X.sum(-1, keepdim=True)
        return torch.where((X == 1.0).all(-1, keepdim=True), -torch.ones_like(value), value)

    return Counted(GenericDeterministicModel(f))


def test_a_margin_keeps_the_face_search_off_a_corner_where_the_model_jumps():
    """From starts on the two faces that meet at the jump: with a margin of 10⁻⁹ every start ends
    that far from the corner at the limit, in a few evaluations; without it, L-BFGS-B's line
    searches into the corner's value take many times as many."""
    starts = torch.tensor([[1.0, 0.3], [0.4, 1.0], [1.0, 0.8], [0.9, 1.0]], dtype=torch.float64)
    counts = {}
    for margin in (1e-9, 0.0):
        Counted.calls = 0
        refined, values = _refine_on_faces(ramp_with_a_jump_at_its_corner(), starts, maxiter=200, margin=margin)
        counts[margin] = Counted.calls
        if margin:
            np.testing.assert_allclose(refined, [[1.0, 1 - 1e-9], [1 - 1e-9, 1.0]] * 2, rtol=0, atol=1e-15)
            np.testing.assert_allclose(values, 2 - 1e-9, rtol=0, atol=1e-12)
    assert counts[1e-9] <= 5 and counts[0.0] > 5 * counts[1e-9]


def test_with_a_margin_a_corner_is_still_a_candidate_of_its_own():
    """The refinement keeps off the corners, but a corner whose own value is the best (here 3, where
    the faces beside it approach 2) is proposed."""
    def f(X):
        value = X.sum(-1, keepdim=True)
        return torch.where((X == 1.0).all(-1, keepdim=True), torch.full_like(value, 3.0), value)

    pool = np.random.default_rng(2).random((32, 2))
    x = maximize_acquisition(PosteriorMean(GenericDeterministicModel(f)), pool, np.zeros((0, 2)), num_restarts=4,
                             maxiter=200, duplicate_tol=1e-4, on_boundary=True, face_margin=1e-9)
    np.testing.assert_array_equal(x, [1.0, 1.0])
    ramp = maximize_acquisition(ramp_with_a_jump_at_its_corner(), pool, np.zeros((0, 2)), num_restarts=4,
                                maxiter=200, duplicate_tol=1e-4, on_boundary=True, face_margin=1e-9)
    assert ramp.min() == 1 - 1e-9 and ramp.max() == 1.0


def test_across_a_jump_a_measured_corner_repeats_only_itself():
    """The ramp's supremum is the limit beside its corner (1, 1), which has been measured: with the
    corners' angles as sides the search proposes the design 10⁻⁹ from it on a face, where the
    duplicate rule alone holds it 10⁻⁴ away; a corner whose own value is the best, once measured, is
    not proposed again."""
    pool = np.random.default_rng(3).random((32, 2))
    measured = np.array([[1.0, 1.0], [0.2, 0.3]])
    kwargs = dict(num_restarts=4, maxiter=200, duplicate_tol=1e-4, on_boundary=True, face_margin=1e-9)
    apart = maximize_acquisition(ramp_with_a_jump_at_its_corner(), pool, measured, sides=unit_square_sides, **kwargs)
    assert apart.max() == 1.0 and apart.min() == 1 - 1e-9
    held = maximize_acquisition(ramp_with_a_jump_at_its_corner(), pool, measured, **kwargs)
    assert held.max() == 1.0 and 1 - 1.1e-4 < held.min() < 1 - 1e-4
    # measured beside the corner on one face too: the other face's side is still new
    beside = np.vstack([measured, [[1.0, 1 - 1e-9]]])
    other = maximize_acquisition(ramp_with_a_jump_at_its_corner(), pool, beside, sides=unit_square_sides, **kwargs)
    np.testing.assert_array_equal(other, [1 - 1e-9, 1.0])

    def corner_best(X):
        value = X.sum(-1, keepdim=True)
        return torch.where((X == 1.0).all(-1, keepdim=True), torch.full_like(value, 3.0), value)

    again = maximize_acquisition(PosteriorMean(GenericDeterministicModel(corner_best)), pool, measured,
                                 sides=unit_square_sides, **kwargs)
    assert not np.array_equal(again, [1.0, 1.0]) and again.min() == 1 - 1e-9


def test_the_limit_beside_a_corner_is_a_candidate_where_no_start_reaches_it():
    """On the face x₁ = 1 a bump of 2 at x₀ = 0.7 and a spike to the limit 3 beside the corner
    (0, 1), 0.002 wide, which no start on that face lies close to; the corner itself takes −1 and
    the face x₀ = 0 beside it tends to 0. Every start refines to the bump, yet the search proposes
    the spike's limit, 10⁻⁹ from the corner on the face x₁ = 1."""
    def f(X):
        x, y = X[..., 0], X[..., 1]
        top = 2 * torch.exp(-((x - 0.7) / 0.1) ** 2) + 3 * torch.exp(-(x / 0.002) ** 2)
        value = torch.where(y == 1.0, top, x * y)
        return torch.where((x == 0.0) & (y == 1.0), -torch.ones_like(value), value).unsqueeze(-1)

    pool = np.random.default_rng(4).random((32, 2))
    spread = spread_over_faces(pool, np.zeros(2), np.ones(2))
    assert spread[spread[:, 1] == 1.0, 0].min() > 0.01
    x = maximize_acquisition(PosteriorMean(GenericDeterministicModel(f)), pool, np.zeros((0, 2)), num_restarts=4,
                             maxiter=200, duplicate_tol=1e-4, on_boundary=True, face_margin=1e-9)
    np.testing.assert_array_equal(x, [1e-9, 1.0])


def test_the_corner_limits_lie_on_an_edge_beside_each_corner_and_a_box_face_search_keeps_its_vertices():
    points = corner_limits(2, 1e-9)
    corners, beside = points[:4], points[4:]
    np.testing.assert_array_equal(np.sort(corners, 0), [[0, 0], [0, 0], [1, 1], [1, 1]])
    # each beside point: one coordinate on a face, the other 1e-9 from that edge's end
    assert ((beside == 0) | (beside == 1)).sum(1).tolist() == [1] * 8
    distance = np.abs(beside[:, None, :] - corners[None, :, :]).sum(-1).min(1)
    np.testing.assert_allclose(distance, 1e-9, rtol=1e-6)
    assert len(np.unique(beside, axis=0)) == 8
    box = corner_limits(3, 1e-9, along_edges=False)
    assert box.shape == (8, 3) and set(np.unique(box)) == {0.0, 1.0}
    # the whole cube's search: the limits along a box's three edges at each vertex
    edges = corner_limits(3, 1e-9)[8:]
    assert edges.shape == (24, 3) and ((edges == 0) | (edges == 1)).sum(1).tolist() == [2] * 24
    distance = np.abs(edges[:, None, :] - box[None, :, :]).sum(-1).min(1)
    np.testing.assert_allclose(distance, 1e-9, rtol=1e-6)
    assert len(np.unique(edges, axis=0)) == 24


def test_where_the_model_jumps_the_whole_cube_search_stops_once_its_gains_are_small():
    """Over the whole cube (no face search), a model that jumps stops L-BFGS-B once an iteration
    raises the acquisition by less than JUMP_FTOL of its value: on 100 − ‖x − c‖⁴, whose gains fade
    near c, it ends within a few JUMP_FTOL of the supremum in fewer evaluations than the search
    without a jump, which goes on to scipy's own 2·10⁻⁹."""
    centre = torch.tensor([0.3, 0.6], dtype=torch.float64)
    pool = np.array([[0.9, 0.1], [0.8, 0.95]])
    counts, values = {}, {}
    for margin in (1e-9, 0.0):
        Counted.calls = 0
        acq = Counted(GenericDeterministicModel(lambda X: 100.0 - ((X - centre) ** 4).sum(-1, keepdim=True)))
        x = maximize_acquisition(acq, pool, np.zeros((0, 2)), num_restarts=2, maxiter=200, duplicate_tol=1e-4,
                                 face_margin=margin)
        counts[margin], values[margin] = Counted.calls, 100.0 - float(((x - centre.numpy()) ** 4).sum())
    assert 100.0 - values[1e-9] < 5 * JUMP_FTOL * 100.0 and values[1e-9] < values[0.0]
    assert counts[1e-9] < counts[0.0]


def test_over_the_whole_cube_the_limit_beside_a_corner_where_the_model_jumps_is_proposed():
    """The ramp's supremum, 2, is the limit beside its corner (1, 1), which no point attains: the
    search over the whole cube stops short of it, and the limit 10⁻⁹ beside the corner is proposed
    as a candidate of its own; without a jump declared the search ends where L-BFGS-B stopped."""
    pool = np.random.default_rng(2).random((32, 2))
    x = maximize_acquisition(ramp_with_a_jump_at_its_corner(), pool, np.zeros((0, 2)), num_restarts=4,
                             maxiter=200, duplicate_tol=1e-4, face_margin=1e-9)
    assert sorted(x.tolist()) == [1 - 1e-9, 1.0]
    plain = maximize_acquisition(ramp_with_a_jump_at_its_corner(), pool, np.zeros((0, 2)), num_restarts=4,
                                 maxiter=200, duplicate_tol=1e-4)
    assert 1.0 - plain.min() > 1e-7


def test_where_the_model_jumps_a_line_search_into_the_jump_ends_after_a_few_evaluations(monkeypatch):
    """From inside the square every restart climbs the ramp into its corner, where the model jumps
    to −1: each line search that steps onto the corner meets a value its slope did not predict.
    Capped at JUMP_MAXLS evaluations a line search, the search ends in a few batched evaluations,
    with the limit beside the corner proposed; with scipy's default of 20 it spends many times as
    many for the same proposal."""
    pool = np.random.default_rng(2).random((32, 2))
    counts, proposals, capped = {}, {}, optimize.JUMP_MAXLS
    for maxls in (capped, 20):
        monkeypatch.setattr(optimize, "JUMP_MAXLS", maxls)
        Counted.calls = 0
        proposals[maxls] = maximize_acquisition(ramp_with_a_jump_at_its_corner(), pool, np.zeros((0, 2)),
                                                num_restarts=4, maxiter=200, duplicate_tol=1e-4, face_margin=1e-9)
        counts[maxls] = Counted.calls
    assert sorted(proposals[capped].tolist()) == sorted(proposals[20].tolist()) == [1 - 1e-9, 1.0]
    assert counts[capped] <= 10 and counts[20] > 4 * counts[capped]


def test_every_coordinate_ends_on_a_face_or_a_margin_or_more_from_it():
    points = np.array([[1e-19, 1.0], [0.5, 1 - 1e-15], [0.0, 0.3], [1e-9, 1 - 1e-9], [2e-9, 0.999], [1.0, 5e-10]])
    moved = on_or_off_faces(points, 1e-9)
    np.testing.assert_array_equal(moved, [[1e-9, 1.0], [0.5, 1 - 1e-9], [0.0, 0.3], [1e-9, 1 - 1e-9],
                                          [2e-9, 0.999], [1.0, 1e-9]])
    on_face = (moved == 0.0) | (moved == 1.0)
    assert np.all(on_face | ((moved >= 1e-9) & (moved <= 1 - 1e-9)))


def test_a_whole_cube_candidate_a_hair_off_a_face_is_read_on_the_same_side_by_the_model_and_the_plate(tmp_path):
    """Beside the corner (0, 1), 10⁻¹⁹ off the left edge on the top one: the heat plate's oracle takes
    the point onto the left edge too (its tolerance, 10⁻¹² of the width) and returns the corner's mean
    of its two edges, where the model's angle reads the top edge's side (0). Moved out to the margin,
    both read the top edge's limit, and the acquisition is scored again at the moved point: the point
    a hair off both edges moves onto the diagonal, angle ½."""
    def angle(X):
        return corner_angles(X.reshape(-1, 2), torch.zeros(2, dtype=X.dtype), torch.ones(2, dtype=X.dtype))[
            :, 1].reshape(*X.shape[:-1], 1)

    acq = PosteriorMean(GenericDeterministicModel(angle))
    candidates = np.array([[1e-19, 1.0], [1e-19, 1 - 1e-15], [0.3, 0.6]])
    with torch.no_grad():
        values = acq(torch.as_tensor(candidates).unsqueeze(1)).numpy()
    assert values[0] == 0.0 and values[1] > 0.99
    moved, rescored = _on_or_off_faces(acq, candidates, values, 1e-9, "cpu")
    np.testing.assert_array_equal(moved, [[1e-9, 1.0], [1e-9, 1 - 1e-9], [0.3, 0.6]])
    assert rescored[0] == 0.0 and abs(rescored[1] - 0.5) < 1e-7 and rescored[2] == values[2]
    plate = HeatPlate({"left": "2", "right": "0", "bottom": "0", "top": "3"}, bounds=[[0, 1], [0, 1]], grid=16,
                      cache_dir=tmp_path)
    assert plate(candidates[0]) == 2.5 and plate(moved[0]) == 3.0
