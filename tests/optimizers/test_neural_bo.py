"""Neural-BO: the variance against its definition, the untrained network, and the ask/tell contract
(improves, never repeats, deterministic, checkpoints). The NTK machinery itself is tested in
tests/models/test_ntk.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pinnbo.models.ntk import ntk_features
from pinnbo.optimizers import MethodError, make_optimizer
from pinnbo.problem import Box
from pinnbo.streams import initial_design

BOX = Box((-2.0, -1.0), (3.0, 4.0), ("x", "y"))
FAST = {"hidden": [32], "initial_steps": 200, "steps_per_iteration": 20, "n_candidates": 512}


def quadratic(p: np.ndarray) -> float:
    return float((p[0] - 1.3) ** 2 + 2.0 * (p[1] - 0.7) ** 2)


def started(params=FAST, seed=0, n_init=8):
    opt = make_optimizer("neural-bo", BOX, seed, params=params)
    for x in initial_design(BOX, n_init, seed):
        opt.tell(x, quadratic(x))
    return opt


def min_pairwise_gap(unit: np.ndarray) -> float:
    gaps = np.max(np.abs(unit[:, None, :] - unit[None, :, :]), axis=2)
    return float(gaps[~np.eye(len(unit), dtype=bool)].min())


def test_the_variance_is_lambda_g_u_inverse_g_over_every_observation():
    """σ²(x) = λ g(x)ᵀ U⁻¹ g(x), U = λ I + Σ g(x_i) g(x_i)ᵀ with g the full parameter gradient at θ0
    (Algorithm 1): at θ0 the last layer is zero, so the optimiser's last-layer features lose
    nothing against the p × p matrix computed here by hand."""
    opt = started()
    for _ in range(3):
        x = opt.ask()
        opt.tell(x, quadratic(x))
    opt.ask()
    net = opt.net
    X, _ = opt.observed()
    G_obs = ntk_features(net.model, net.theta0, opt._unit_to_z(BOX.to_unit(X)))
    z = opt._unit_to_z(np.random.default_rng(1).random((6, 2)))
    g = ntk_features(net.model, net.theta0, z)
    p = sum(t.numel() for t in net.theta0.values())
    assert g.shape[1] == p > net.n_features
    lam = opt.settings.regularization
    U = lam * torch.eye(p, dtype=torch.float64) + G_obs.T @ G_obs
    expected = lam * ((g @ torch.linalg.inv(U)) * g).sum(1)
    torch.testing.assert_close(net.mean_and_variance(z)[1], expected, rtol=1e-8, atol=1e-12)


def test_the_untrained_network_is_zero_as_in_the_paper():
    opt = make_optimizer("neural-bo", BOX, 0, params=FAST)
    z = opt._unit_to_z(np.random.default_rng(2).random((16, 2)))
    with torch.no_grad():
        assert torch.count_nonzero(opt.net.model(z)) == 0
    assert float(opt.net.mean_and_variance(z)[1].min()) > 0.1      # prior σ² = ‖g‖², O(1)


def test_improves_on_the_initial_design_and_never_repeats():
    opt = started()
    for _ in range(12):
        x = opt.ask()
        opt.tell(x, quadratic(x))
    y = np.array(opt.y)
    assert y[8:].min() < 0.5 * y[:8].min(), (y[:8].min(), y[8:].min())
    assert min_pairwise_gap(opt.evaluated_unit()) >= opt.settings.duplicate_tol


def test_ask_is_deterministic_and_checkpoints_round_trip():
    a, b = started(), started()
    xa = a.ask()
    np.testing.assert_array_equal(xa, b.ask())
    np.testing.assert_array_equal(xa, a.ask())      # asking again without a tell repeats the proposal
    a.tell(xa, quadratic(xa))
    restored = started()
    restored.load_state_dict(a.state_dict())
    restored.tell(xa, quadratic(xa))
    np.testing.assert_array_equal(a.ask(), restored.ask())


def test_seeds_differ():
    assert not np.allclose(started(seed=0).ask(), started(seed=1).ask())


@pytest.mark.parametrize("params, field", [
    ({"features": "current"}, "features"), ({"dtype": "float16"}, "dtype"),
    ({"regularization": 0.0}, "regularization"), ({"hidden": []}, "hidden"), ({"n_candidates": 0}, "n_candidates"),
    ({"widht": 3}, "widht"),
])
def test_bad_parameters_name_the_field(params, field):
    with pytest.raises(MethodError, match=rf"method_params\.{field}\b"):
        make_optimizer("neural-bo", BOX, 0, params=params)
