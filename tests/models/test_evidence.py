"""The evidence of the data given a linear PDE: its value against the joint and marginal Gaussian
densities, log p(y | t) = log p(y, t) − log p(t), and its closed-form gradient against autograd
through that dense reference and against finite differences."""

from __future__ import annotations

import math

import pytest
import torch

from pinnbo.models.evidence import EvidenceData, negative_log_evidence
from pinnbo.models.se_kernel import coefficient_products, operator_block

DTYPE = torch.float64


def problem(with_pde: bool):
    """Observations of sin(x) e^y on [0, 2]², and Laplace's equation with a coefficient,
    (1 + x²) u_xx + u_yy − 0.3 u = 0 (a linear operator of orders 0 and 2)."""
    gen = torch.Generator().manual_seed(0)
    X = 2 * torch.rand(9, 2, generator=gen, dtype=DTYPE)
    y = torch.sin(X[:, 0]) * torch.exp(X[:, 1])
    y = (y - y.mean()) / y.std()
    if not with_pde:
        return EvidenceData(X, y)
    Z = 2 * torch.rand(14, 2, generator=gen, dtype=DTYPE)
    ones = torch.ones(14, dtype=DTYPE)
    terms = [[((2, 0), 1 + Z[:, 0] ** 2), ((0, 2), ones), ((0, 0), -0.3 * ones)]]
    t = 0.1 * torch.randn(14, generator=gen, dtype=DTYPE)
    identity = [[((0, 0), None)]]
    return EvidenceData(X, y, Z, terms, t, (coefficient_products(identity, terms), coefficient_products(terms, terms)))


def dense_reference(data: EvidenceData, lengthscale, outputscale, noise, pde_noise):
    """−log p(y, t) + log p(t) with the joint covariance assembled block by block (autograd's)."""
    def nll(K, v):
        return -torch.distributions.MultivariateNormal(torch.zeros_like(v), covariance_matrix=K).log_prob(v)

    K = operator_block(data.X, data.X, lengthscale, outputscale, None, None)
    K = K + noise * torch.eye(len(data.X), dtype=DTYPE)
    if data.Z is None:
        return nll(K, data.y)
    K_fl = operator_block(data.X, data.Z, lengthscale, outputscale, None, data.terms)
    K_ll = operator_block(data.Z, data.Z, lengthscale, outputscale, data.terms, data.terms)
    K_ll = K_ll + torch.diag(pde_noise * torch.diagonal(K_ll))
    joint = torch.cat([torch.cat([K, K_fl], 1), torch.cat([K_fl.T, K_ll], 1)], 0)
    return nll(joint, torch.cat([data.y, data.t])) - nll(K_ll, data.t)


def hyperparameters():
    """Lengthscales, output scale, observation noise and the PDE's relative noise, each a leaf."""
    return [torch.tensor(value, dtype=DTYPE, requires_grad=True) for value in ([0.6, 0.9], 1.4, 0.02, 0.05)]


@pytest.mark.parametrize("with_pde", [False, True])
def test_the_evidence_and_its_gradient_equal_the_dense_reference(with_pde):
    data = problem(with_pde)
    closed, dense = hyperparameters(), hyperparameters()
    value = negative_log_evidence(data, *closed)
    expected = dense_reference(data, *dense)
    assert float(value.detach()) == pytest.approx(float(expected.detach()), rel=1e-10)
    value.backward()
    expected.backward()
    for a, b in zip(closed, dense):
        if b.grad is None:                   # the PDE's noise enters nothing without a PDE
            assert float(a.grad) == 0.0
        else:
            assert torch.allclose(a.grad, b.grad, rtol=1e-7, atol=1e-10), (a.grad, b.grad)


def test_the_gradient_equals_finite_differences():
    data = problem(True)
    params = hyperparameters()
    negative_log_evidence(data, *params).backward()
    h = 1e-6
    for k, p in enumerate(params):
        for index in range(p.numel()):
            values = [q.detach().clone() for q in params]
            target = values[k].view(-1)
            target[index] += h
            up = float(negative_log_evidence(data, *values))
            target[index] -= 2 * h
            down = float(negative_log_evidence(data, *values))
            assert float(p.grad.view(-1)[index]) == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-6)


def test_a_covariance_that_does_not_factorise_has_infinite_evidence_and_no_gradient():
    data = problem(True)
    lengthscale, outputscale, _, pde_noise = hyperparameters()
    noise = torch.tensor(-50.0, dtype=DTYPE, requires_grad=True)       # K_ff − 50 I is indefinite
    value = negative_log_evidence(data, lengthscale, outputscale, noise, pde_noise)
    assert math.isinf(float(value.detach()))
    value.backward()
    assert lengthscale.grad is None and noise.grad is None


@pytest.mark.parametrize("solves", [True, False])
def test_a_basis_adds_its_covariance_and_the_gradient_follows(solves):
    """Functions Φ, each with an amplitude of variance s²: the evidence is the dense reference's with
    s² ΦΦᵀ added to K_ff and, where the operator does not annihilate them (L Φ = R ≠ 0 at the
    collocation points), s² ΦRᵀ to K_fL and s² RRᵀ to K_LL (its PDE noise on the new diagonal too);
    its gradient (the output scale's through the added blocks too) equals autograd's through that
    reference."""
    data = problem(True)
    basis = torch.stack([torch.atan2(data.X[:, 1], data.X[:, 0]), torch.atan2(data.X[:, 1], 2 - data.X[:, 0])], -1)
    R = None if solves else torch.randn(len(data.Z), 2, generator=torch.Generator().manual_seed(3), dtype=DTYPE)
    with_basis = EvidenceData(data.X, data.y, data.Z, data.terms, data.t, data.products, basis, R)
    closed, dense = hyperparameters(), hyperparameters()
    value = negative_log_evidence(with_basis, *closed)
    lengthscale, outputscale, noise, pde_noise = dense
    K = operator_block(data.X, data.X, lengthscale, outputscale, None, None) + outputscale * basis @ basis.T \
        + noise * torch.eye(len(data.X), dtype=DTYPE)
    K_fl = operator_block(data.X, data.Z, lengthscale, outputscale, None, data.terms)
    K_ll = operator_block(data.Z, data.Z, lengthscale, outputscale, data.terms, data.terms)
    if R is not None:
        K_fl, K_ll = K_fl + outputscale * basis @ R.T, K_ll + outputscale * R @ R.T
    K_ll = K_ll + torch.diag(pde_noise * torch.diagonal(K_ll))
    joint = torch.cat([torch.cat([K, K_fl], 1), torch.cat([K_fl.T, K_ll], 1)], 0)

    def nll(C, v):
        return -torch.distributions.MultivariateNormal(torch.zeros_like(v), covariance_matrix=C).log_prob(v)

    expected = nll(joint, torch.cat([data.y, data.t])) - nll(K_ll, data.t)
    assert float(value.detach()) == pytest.approx(float(expected.detach()), rel=1e-10)
    other = data if solves else EvidenceData(data.X, data.y, data.Z, data.terms, data.t, data.products, basis)
    assert float(value.detach()) != pytest.approx(float(negative_log_evidence(other, *hyperparameters()).detach()),
                                                  rel=1e-3)
    value.backward()
    expected.backward()
    for a, b in zip(closed, dense):
        assert torch.allclose(a.grad, b.grad, rtol=1e-7, atol=1e-10), (a.grad, b.grad)
