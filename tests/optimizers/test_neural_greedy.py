"""NeuralGreedy: improves without repeats, the perturbation is the step's own draw, determinism,
checkpoints, validation."""

from __future__ import annotations

import numpy as np
import pytest

from pinnbo.optimizers import MethodError, make_optimizer
from pinnbo.problem import Box
from pinnbo.streams import initial_design

BOX = Box((-2.0, -1.0), (3.0, 4.0), ("x", "y"))
FAST = {"hidden": [32, 32], "initial_steps": 300, "steps_per_iteration": 30, "n_pool": 256, "top_k": 4,
        "refine_iterations": 15}


def quadratic(p: np.ndarray) -> float:
    return float((p[0] - 1.3) ** 2 + 2.0 * (p[1] - 0.7) ** 2)


def started(params=FAST, seed=0, n_init=8):
    opt = make_optimizer("neural-greedy", BOX, seed, params=params)
    for x in initial_design(BOX, n_init, seed):
        opt.tell(x, quadratic(x))
    return opt


def test_improves_on_the_initial_design_and_never_repeats():
    opt = started()
    for _ in range(12):
        x = opt.ask()
        opt.tell(x, quadratic(x))
    y = np.array(opt.y)
    assert y[8:].min() < 0.5 * y[:8].min(), (y[:8].min(), y[8:].min())
    unit = opt.evaluated_unit()
    gaps = np.max(np.abs(unit[:, None, :] - unit[None, :, :]), axis=2)
    assert gaps[~np.eye(len(unit), dtype=bool)].min() >= opt.settings.duplicate_tol


def test_the_targets_are_perturbed_and_the_perturbation_matters():
    seen = []

    def capture(opt):
        original = opt._fit

        def fit(Z, targets):
            seen.append(targets.clone())
            return original(Z, targets)
        opt._fit = fit
        return opt

    capture(started({**FAST, "perturbation": 0.0})).ask()
    capture(started({**FAST, "perturbation": 0.5})).ask()
    clean, noisy = seen
    y = np.array([quadratic(x) for x in initial_design(BOX, 8, 0)])
    np.testing.assert_allclose(clean.numpy(), (y - y.mean()) / y.std(), rtol=1e-12)
    spread = float((noisy - clean).std())
    assert 0.2 < spread < 1.0                 # N(0, 0.5²) in standardised units, 8 draws


def test_ask_is_deterministic_and_checkpoints_round_trip():
    a, b = started(), started()
    xa = a.ask()
    np.testing.assert_array_equal(xa, b.ask())
    a.tell(xa, quadratic(xa))
    restored = started()
    restored.load_state_dict(a.state_dict())
    restored.tell(xa, quadratic(xa))
    np.testing.assert_array_equal(a.ask(), restored.ask())


@pytest.mark.parametrize("params, field", [
    ({"perturbation": -0.1}, "perturbation"), ({"hidden": [0]}, "hidden"), ({"learning_rate": 0}, "learning_rate"),
    ({"reinitialize": True}, "reinitialize"), ({"dtype": "float16"}, "dtype"),
])
def test_bad_parameters_name_the_field(params, field):
    with pytest.raises(MethodError, match=rf"method_params\.{field}\b"):
        make_optimizer("neural-greedy", BOX, 0, params=params)
