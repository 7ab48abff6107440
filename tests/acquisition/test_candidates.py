"""One search of an acquisition, chosen from twice (:class:`pinnbo.acquisition.optimize.Candidates`):
the duplicate rule's choice beside an evaluated design, and the stall rule's escape, a distance
from every design, from the same refined candidates with no second L-BFGS-B, or, where the model
jumps at the corners, a corner not yet evaluated (docs/algorithms.md, "The stall rule")."""

from __future__ import annotations

import numpy as np
import torch
from botorch.acquisition import PosteriorMean
from botorch.models.deterministic import GenericDeterministicModel

from pinnbo.acquisition.optimize import maximize_acquisition, search_acquisition, unvisited_corner
from pinnbo.acquisition.search import ESCAPE_DISTANCE
from tests.acquisition.sides import unit_square_sides

CENTRE = np.array([0.3, 0.8, 0.55])


def counted_bowl(calls: list):
    """−‖x − CENTRE‖² as a BoTorch acquisition, each evaluation (a batch) counted in ``calls``."""
    c = torch.as_tensor(CENTRE, dtype=torch.float64)

    def f(X):
        calls.append(len(X))
        return -((X - c) ** 2).sum(-1, keepdim=True)

    return PosteriorMean(GenericDeterministicModel(f))


def test_the_escape_is_chosen_from_the_same_search_without_refining_again():
    # the bowl's top measured: the duplicate rule takes the best point just beyond its tolerance,
    # the escape the best point ESCAPE_DISTANCE away, each choice scoring only the points beside
    # the candidates (one batched evaluation); the best a point that far can do is −ESCAPE_DISTANCE²
    calls, pool, measured = [], np.random.default_rng(3).random((64, 3)), CENTRE[None, :]
    torch.manual_seed(0)
    found = search_acquisition(counted_bowl(calls), pool, num_restarts=6, maxiter=200)
    searched = len(calls)
    np.testing.assert_allclose(found.refined, np.repeat(measured, len(found.refined), 0), atol=1e-6)
    near = found.best(measured, 1e-4)
    assert 1e-4 <= np.max(np.abs(near - CENTRE)) <= 1.06e-4
    far = found.best(measured, ESCAPE_DISTANCE)
    gap, value = np.max(np.abs(far - CENTRE)), -np.sum((far - CENTRE) ** 2)
    assert gap >= ESCAPE_DISTANCE and -(1.05 * ESCAPE_DISTANCE) ** 2 - 1e-12 <= value <= -ESCAPE_DISTANCE ** 2
    assert len(calls) - searched == 2
    torch.manual_seed(0)
    once = maximize_acquisition(counted_bowl([]), pool, measured, num_restarts=6, maxiter=200, duplicate_tol=1e-4)
    np.testing.assert_array_equal(once, near)


def test_the_escape_over_a_jumping_square_is_its_best_corner_not_yet_evaluated():
    # where the model jumps at the corners the stall rule's escape is a corner: the one the
    # acquisition ranks first among those no design repeats (on the same side of every jump) and
    # no known constraint rules out; none once all four have been evaluated
    def toward(target):
        t = torch.as_tensor(target, dtype=torch.float64)
        return PosteriorMean(GenericDeterministicModel(lambda X: -((X - t) ** 2).sum(-1, keepdim=True)))

    acq = toward([0.9, 0.8])           # ranks the corners (1, 1), (1, 0), (0, 1), (0, 0)
    nothing = np.empty((0, 2))
    assert unvisited_corner(acq, nothing, unit_square_sides).tolist() == [1.0, 1.0]
    # a design beside (1, 1) on its edge is the edge's limit, not the corner: still unvisited
    beside = np.array([[1.0, 1.0 - 1e-9], [0.4, 0.4]])
    assert unvisited_corner(acq, beside, unit_square_sides).tolist() == [1.0, 1.0]
    visited = np.array([[1.0, 1.0], [0.4, 0.4]])
    assert unvisited_corner(acq, visited, unit_square_sides).tolist() == [1.0, 0.0]
    ruled_out = lambda points: (points[:, 0] > 0.5).astype(float)       # x > ½ breaks a known constraint
    assert unvisited_corner(acq, visited, unit_square_sides, ruled_out).tolist() == [0.0, 1.0]
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert unvisited_corner(acq, corners, unit_square_sides) is None
