"""NTK features and precisions: Sherman–Morrison and diagonal U against their definitions, the
features against autograd, batched scoring, and Neural-BO's network (zero at θ0, last-layer
features that lose nothing)."""

from __future__ import annotations

import numpy as np
import torch

from pinnbo.models import ntk
from pinnbo.models.mlp import MLP
from pinnbo.models.ntk import NTKNetwork, NTKPrecision, ntk_features, parameter_snapshot, inverse_mode
from pinnbo.streams import torch_generator


def network(features_at: str = "initial", hidden=(32,), seed: int = 0) -> NTKNetwork:
    return NTKNetwork(2, torch_generator(seed, "net"), hidden=hidden, regularization=1e-3, learning_rate=1e-2,
                      initial_steps=200, steps_per_iteration=20, features_at=features_at)


def trained(features_at: str = "initial") -> tuple[NTKNetwork, torch.Tensor]:
    net = network(features_at)
    Z = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (10, 2)))
    net.fit(Z, torch.sin(3 * Z[:, 0]) + Z[:, 1] ** 2)
    net.absorb(Z, Z)
    return net, Z


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


def test_the_diagonal_precision_stores_no_p_by_p_matrix_and_uses_the_diagonal():
    gen = torch.Generator().manual_seed(1)
    G = torch.randn(9, 40, generator=gen, dtype=torch.float64)
    precision = NTKPrecision(40, 0.1, "diagonal")
    precision.update(G)
    assert precision.inverse is None and precision.diagonal.shape == (40,)
    X = torch.randn(4, 40, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(precision.variance(X), 0.1 * (X ** 2 / (0.1 + (G ** 2).sum(0))).sum(1))


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


def test_batched_scoring_equals_unbatched(monkeypatch):
    net, _ = trained("current")
    z = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (40, 2)))
    monkeypatch.setattr(ntk, "FEATURE_BATCH", 7)
    mean_small, var_small = net.mean_and_variance(z)
    monkeypatch.setattr(ntk, "FEATURE_BATCH", 1000)
    mean_big, var_big = net.mean_and_variance(z)
    torch.testing.assert_close(mean_small, mean_big, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(var_small, var_big, rtol=1e-10, atol=1e-14)
    assert float(var_small.max()) > 0


def test_initial_features_keep_only_the_last_layer_and_lose_nothing():
    # At θ0 the last layer is zero, so every other gradient vanishes: σ² over the last layer's
    # m + 1 coordinates equals σ² with the full p × p matrix.
    net, Z = trained("initial")
    n_parameters = sum(p.numel() for p in net.model.parameters())
    assert net.n_features == 32 + 1 < n_parameters
    G_full = ntk_features(net.model, net.theta0, Z)
    z = torch.as_tensor(np.random.default_rng(1).uniform(-1, 1, (6, 2)))
    g_full = ntk_features(net.model, net.theta0, z)
    U_full = 1e-3 * torch.eye(n_parameters, dtype=torch.float64) + G_full.T @ G_full
    expected = 1e-3 * ((g_full @ torch.linalg.inv(U_full)) * g_full).sum(1)
    torch.testing.assert_close(net.mean_and_variance(z)[1], expected, rtol=1e-8, atol=1e-12)


def test_current_features_rebuild_u_from_every_observation_at_the_trained_theta():
    net, Z = trained("current")
    params = dict(net.model.named_parameters())
    G_obs = ntk_features(net.model, params, Z)
    U = 1e-3 * torch.eye(G_obs.shape[1], dtype=torch.float64) + G_obs.T @ G_obs
    z = torch.as_tensor(np.random.default_rng(2).uniform(-1, 1, (5, 2)))
    G = ntk_features(net.model, params, z)
    torch.testing.assert_close(net.mean_and_variance(z)[1], 1e-3 * ((G @ torch.linalg.inv(U)) * G).sum(1),
                               rtol=1e-8, atol=1e-12)


def test_the_untrained_network_is_zero_as_in_the_paper():
    net = network()
    z = torch.as_tensor(np.random.default_rng(2).uniform(-1, 1, (16, 2)))
    with torch.no_grad():
        assert torch.count_nonzero(net.model(z)) == 0
    # before any observation U = λ I, so σ² = λ gᵀ(λ I)⁻¹g = ‖g‖²: the NTK's diagonal, O(1) and positive
    g = ntk_features(net.model, net.theta0, z, wrt=net.feature_names)
    torch.testing.assert_close(net.mean_and_variance(z)[1], (g ** 2).sum(1))
    assert float((g ** 2).sum(1).min()) > 0


def test_the_polish_lowers_the_training_loss():
    Z = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (20, 2)))
    targets = torch.sin(3 * Z[:, 0]) * Z[:, 1]
    losses = []
    for polish in (0, 50):
        net = NTKNetwork(2, torch_generator(0, "net"), hidden=(32,), regularization=1e-3, learning_rate=1e-2,
                         initial_steps=100, steps_per_iteration=10, polish_iterations=polish)
        net.fit(Z, targets)
        with torch.no_grad():
            losses.append(float((net.model(Z) - targets).pow(2).mean()))
    assert losses[1] < 0.5 * losses[0], losses


def test_the_inverse_follows_the_parameter_count():
    assert inverse_mode(100, 5000) == "exact"
    assert inverse_mode(5000, 5000) == "exact"
    assert inverse_mode(6000, 5000) == "diagonal"
