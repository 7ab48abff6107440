"""Neural-BO: Sherman–Morrison and diagonal precisions, NTK features against autograd, batched
scoring, and the ask/tell contract (improves, never repeats, deterministic, checkpoints)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pinnbo.optimizers import MethodError, make_optimizer
from pinnbo.optimizers.base import initial_design, torch_generator
from pinnbo.problem import Box
from pinnbo.surrogates.mlp import MLP
from pinnbo.surrogates.ntk import NTKPrecision, ntk_features, parameter_snapshot

BOX = Box((-2.0, -1.0), (3.0, 4.0), ("x", "y"))
FAST = {"hidden": [32], "initial_steps": 200, "steps_per_iteration": 20, "n_candidates": 512,
        "local_candidates": 64}


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


def test_sherman_morrison_inverse_equals_the_explicit_inverse():
    gen = torch.Generator().manual_seed(0)
    p, lam = 30, 0.05
    G = torch.randn(12, p, generator=gen, dtype=torch.float64)
    precision = NTKPrecision(p, lam, "exact")
    for row in G[:7]:
        precision.update(row)
    precision.update(G[7:])                       # a batch is absorbed row by row
    U = lam * torch.eye(p, dtype=torch.float64) + G.T @ G
    torch.testing.assert_close(precision.inverse, torch.linalg.inv(U), rtol=0, atol=1e-10)
    X = torch.randn(5, p, generator=gen, dtype=torch.float64)
    expected = lam * torch.einsum("np,pq,nq->n", X, torch.linalg.inv(U), X)
    torch.testing.assert_close(precision.variance(X), expected, rtol=1e-10, atol=1e-12)


def test_features_are_the_parameter_gradient_at_theta0():
    model = MLP(2, (8, 5), torch_generator(3, "net"))
    theta0 = parameter_snapshot(model)
    with torch.no_grad():                          # move the live weights: features must stay at θ0
        for p in model.parameters():
            p.add_(0.3)
    z = torch.tensor([[0.1, -0.7], [0.9, 0.2], [-1.0, 1.0]], dtype=torch.float64)
    G = ntk_features(model, theta0, z, batch=2)
    last = ntk_features(model, theta0, z, wrt=["out.weight", "out.bias"])
    torch.testing.assert_close(last, G[:, -last.shape[1]:], rtol=1e-12, atol=1e-15)
    reference = MLP(2, (8, 5), torch_generator(3, "net"))
    for i in range(len(z)):
        h = reference(z[i:i + 1]).sum()
        grads = torch.autograd.grad(h, list(reference.parameters()))
        torch.testing.assert_close(G[i], torch.cat([g.reshape(-1) for g in grads]), rtol=1e-12, atol=1e-14)


def test_batched_scoring_equals_unbatched():
    opt = started({**FAST, "feature_batch": 7})
    opt.ask()
    z = opt._unit_to_z(np.random.default_rng(0).random((40, 2)))
    mean_small, var_small = opt.mean_and_variance(z)
    opt.settings.feature_batch = 1000
    mean_big, var_big = opt.mean_and_variance(z)
    torch.testing.assert_close(mean_small, mean_big, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(var_small, var_big, rtol=1e-10, atol=1e-14)
    assert float(var_small.max()) > 0


def test_diagonal_mode_stores_no_p_by_p_matrix_and_uses_the_diagonal():
    opt = started({**FAST, "features": "current", "inverse": "diagonal"})
    for _ in range(2):
        x = opt.ask()
        opt.tell(x, quadratic(x))
    opt.ask()
    p = opt.n_parameters
    assert opt.n_features == p
    assert opt.precision.inverse is None and opt.precision.diagonal.shape == (p,)
    tensors = [v for obj in (opt, opt.precision) for v in vars(obj).values() if isinstance(v, torch.Tensor)]
    assert all(t.dim() < 2 or t.shape[-1] != p or t.shape[-2] != p for t in tensors)
    # σ² = λ Σ_k g_k² / U_kk with U_kk = λ + Σ_i g_ik² over the observed designs, g at the trained θ.
    X, _ = opt.observed()
    params = dict(opt.model.named_parameters())
    G_obs = ntk_features(opt.model, params, opt._unit_to_z(BOX.to_unit(X)))
    lam = opt.settings.regularization
    U_diag = lam + (G_obs ** 2).sum(0)
    z = opt._unit_to_z(np.random.default_rng(1).random((6, 2)))
    G = ntk_features(opt.model, params, z)
    _, var = opt.mean_and_variance(z)
    torch.testing.assert_close(var, lam * (G ** 2 / U_diag).sum(1), rtol=1e-10, atol=1e-14)


def test_initial_features_keep_only_the_last_layer_and_lose_nothing():
    # At θ0 the last layer is zero, so every other gradient vanishes: σ² over the last layer's
    # m + 1 coordinates equals σ² with the full p × p matrix.
    opt = started()
    for _ in range(3):
        x = opt.ask()
        opt.tell(x, quadratic(x))
    opt.ask()
    assert opt.n_features == FAST["hidden"][-1] + 1 < opt.n_parameters
    X, _ = opt.observed()
    G_full = ntk_features(opt.model, opt.theta0, opt._unit_to_z(BOX.to_unit(X)))
    z = opt._unit_to_z(np.random.default_rng(1).random((6, 2)))
    g_full = ntk_features(opt.model, opt.theta0, z)
    assert g_full.shape[1] == opt.n_parameters
    lam = opt.settings.regularization
    U_full = lam * torch.eye(opt.n_parameters, dtype=torch.float64) + G_full.T @ G_full
    expected = lam * ((g_full @ torch.linalg.inv(U_full)) * g_full).sum(1)
    torch.testing.assert_close(opt.mean_and_variance(z)[1], expected, rtol=1e-8, atol=1e-12)


def test_the_untrained_network_is_zero_as_in_the_paper():
    opt = make_optimizer("neural-bo", BOX, 0, params=FAST)
    z = opt._unit_to_z(np.random.default_rng(2).random((16, 2)))
    with torch.no_grad():
        assert torch.count_nonzero(opt.model(z)) == 0
    assert float(opt.mean_and_variance(z)[1].min()) > 0.1      # prior σ² = ‖g‖², O(1)


def test_auto_inverse_follows_the_parameter_count():
    small = make_optimizer("neural-bo", BOX, 0, params={"hidden": [8], "features": "current"})
    big = make_optimizer("neural-bo", BOX, 0, params={"hidden": [8], "features": "current", "exact_max_parameters": 10})
    assert small.inverse_mode == "exact" and big.inverse_mode == "diagonal"


@pytest.mark.parametrize("params", [FAST, {**FAST, "features": "current", "exploration_scale": 1.0}],
                         ids=["initial", "current"])
def test_improves_on_the_initial_design_and_never_repeats(params):
    opt = started(params)
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
    ({"features": "final"}, "features"), ({"inverse": "cholesky"}, "inverse"),
    ({"regularization": 0.0}, "regularization"), ({"hidden": []}, "hidden"), ({"n_candidates": 0}, "n_candidates"),
    ({"widht": 3}, "widht"),
])
def test_bad_parameters_name_the_field(params, field):
    with pytest.raises(MethodError, match=rf"method_params\.{field}\b"):
        make_optimizer("neural-bo", BOX, 0, params=params)
