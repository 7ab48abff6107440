"""The Bayesian last layer: U, the Thompson weights' covariance ν² U⁻¹ and σ² = φᵀ U⁻¹ φ, against
their definitions."""

from __future__ import annotations

import torch

from pinnbo.models import last_layer


def features(n: int = 30, m: int = 6, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, m, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_the_precision_is_lambda_plus_the_features_gram_over_the_noise():
    phi = features()
    U = last_layer.precision(phi, noise_variance=0.01)
    torch.testing.assert_close(U, torch.eye(6, dtype=torch.float64) + phi.T @ phi / 0.01)


def test_the_thompson_weights_have_covariance_nu_squared_u_inverse():
    """δ = ν L⁻ᵀ ε with U = L Lᵀ: exactly ν² U⁻¹ as the covariance of the map ε → δ, and the
    sample covariance of 40 000 draws agrees to Monte-Carlo error."""
    U = last_layer.precision(features(), noise_variance=0.5)
    delta = last_layer.thompson_weights(U, 40_000, torch.Generator().manual_seed(1), scale=3.0)
    assert delta.shape == (6, 40_000)
    L = torch.linalg.cholesky(U)
    mapping = 3.0 * torch.linalg.inv(L.T)
    torch.testing.assert_close(mapping @ mapping.T, 9.0 * torch.linalg.inv(U))
    sample = torch.cov(delta)
    expected = 9.0 * torch.linalg.inv(U)
    assert torch.allclose(sample, expected, atol=4 * expected.diagonal().max().item() / 40_000 ** 0.5)


def test_the_variance_is_phi_u_inverse_phi():
    U = last_layer.precision(features(), noise_variance=0.1)
    phi = features(n=9, seed=2)
    expected = torch.einsum("ij,jk,ik->i", phi, torch.linalg.inv(U), phi)
    torch.testing.assert_close(last_layer.variance(U, phi), expected)
