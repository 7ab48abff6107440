"""Acquisition maximisation on boxes with integer and choice variables (pinnbo.acquisition.mixed):
the exact argmax when the designs can be enumerated, a valid design at least as good as a pool of
valid designs otherwise, never a repeat, and the mixed GP's categorical kernel."""

from __future__ import annotations

import numpy as np
import torch
from botorch.acquisition import PosteriorMean

from pinnbo.acquisition.mixed import enumerated, maximize_mixed, snapped_unit
from pinnbo.models.gp import fit_gp
from pinnbo.space import Box, Variable
from pinnbo.streams import initial_design, sobol_unit

DISCRETE = Box.of([Variable("n", "integer", 0, 6), Variable("m", "choice", choices=("a", "b", "c"))])
MIXED = Box.of([Variable("x", "real", 0.0, 1.0), Variable("n", "integer", 0, 20),
                Variable("m", "choice", choices=("a", "b", "c"))])


def score(unit: torch.Tensor) -> torch.Tensor:
    """A known acquisition on DISCRETE's unit inputs (N, 1, 2): largest at n = 4, choice b."""
    u = unit[..., 0, :]   # level = unit × number of levels − ½ (pinnbo.space)
    return -(u[..., 0] * 7 - 0.5 - 4) ** 2 / 10 - (u[..., 1] * 3 - 0.5 - 1).abs()


def test_an_enumerable_box_gives_the_exact_argmax_and_skips_evaluated_designs():
    grid = enumerated(DISCRETE)
    assert grid.shape == (21, 2)
    assert DISCRETE.from_unit(grid).tolist() == DISCRETE.snap(DISCRETE.from_unit(grid)).tolist()
    fallback = lambda: np.zeros((0, 2))  # noqa: E731
    best = maximize_mixed(score, DISCRETE, np.zeros((0, 2)), raw_samples=8, num_restarts=2, maxiter=5,
                          duplicate_tol=1e-4, fallback_pool=fallback)
    assert DISCRETE.values(DISCRETE.from_unit(best)) == [4, "b"]
    # with (4, b) evaluated, the next best of the grid: (3, b) or (5, b), both at -0.1
    second = maximize_mixed(score, DISCRETE, best.reshape(1, 2), raw_samples=8, num_restarts=2, maxiter=5,
                            duplicate_tol=1e-4, fallback_pool=fallback)
    assert DISCRETE.values(DISCRETE.from_unit(second)) in ([3, "b"], [5, "b"])


def test_the_alternating_search_beats_a_pool_of_valid_designs_and_never_repeats_one():
    X = initial_design(MIXED, 12, seed=4)
    P = X.copy()
    y = (P[:, 0] - 0.7) ** 2 + 0.05 * (P[:, 1] - 13) ** 2 + np.array([0.5, 0.0, 1.0])[P[:, 2].astype(int)]
    unit = MIXED.to_unit(X)
    torch.manual_seed(0)
    model = fit_gp(unit, y, noise_free=True, categorical=MIXED.dims("choice"))
    acq = PosteriorMean(model)
    pool = snapped_unit(MIXED, sobol_unit(256, 3, 0, "pool"))
    with torch.no_grad():
        pool_best = float(acq(torch.as_tensor(pool).unsqueeze(1)).max())
    u = maximize_mixed(acq, MIXED, unit, raw_samples=64, num_restarts=4, maxiter=50, duplicate_tol=1e-4,
                       fallback_pool=lambda: sobol_unit(64, 3, 0, "fallback"))
    x = MIXED.from_unit(u)
    assert np.array_equal(x, MIXED.snap(x))                       # a valid design
    assert np.min(np.max(np.abs(unit - u), axis=1)) >= 1e-4        # not an evaluated one
    with torch.no_grad():
        assert float(acq(torch.as_tensor(u).reshape(1, 1, 3))) >= pool_best - 1e-9


def test_the_categorical_kernel_sees_no_order_between_choices():
    # Data that only depend on the choice: the fitted mean at a choice is that choice's value, and
    # relabelling the choices (a permutation of the indices) permutes the predictions the same way.
    levels = MIXED.unit_levels(2)
    rows = [(x, n, c) for x in (0.1, 0.5, 0.9) for n in (0.2, 0.8) for c in range(3)]
    by_choice = np.array([3.0, -1.0, 1.0])
    unit = np.array([[x, n, levels[c]] for x, n, c in rows])
    y = by_choice[[c for _, _, c in rows]]
    torch.manual_seed(0)
    means = []
    for order in ([0, 1, 2], [2, 0, 1]):
        relabelled = unit.copy()
        relabelled[:, 2] = levels[np.array(order)[[c for _, _, c in rows]]]
        model = fit_gp(relabelled, y, noise_free=True, categorical=[2])
        test = np.array([[0.3, 0.5, levels[order[c]]] for c in range(3)])
        with torch.no_grad():
            means.append(-model.posterior(torch.as_tensor(test)).mean.reshape(-1).numpy())
    np.testing.assert_allclose(means[0], by_choice, atol=0.05)
    np.testing.assert_allclose(means[1], means[0], atol=1e-6)
