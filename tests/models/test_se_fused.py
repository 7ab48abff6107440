"""The fused CPU kernels against the tensor code they stand in for: the same blocks and evidence bit
for bit (operation for operation, so equal, not close), and the same lengthscale gradient to
round-off (the loops sum its corrections in another order), on operators of several equations with
windows of stacked points, in one to three inputs; a symmetric block from its lower triangle, and a
gradient from weights folded onto it; and the tensor code wherever autograd must differentiate
through a block."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from pinnbo.models import se_fused
from pinnbo.models.evidence import EvidenceData, negative_log_evidence
from pinnbo.models.se_kernel import (SEDerivatives, coefficient_products, gradient_products, lengthscale_gradient,
                                      operator_block, point_block)

DTYPE = torch.float64


def tensor_code(monkeypatch):
    monkeypatch.setattr(se_fused, "usable", lambda *tensors: False)


def operator(Z: torch.Tensor, gen: torch.Generator):
    """An interior equation of orders 0–4 on the first 10 points and a boundary condition (a value
    and a first derivative) on the last 4, stacked as a PDE and its boundary data are; then a
    second equation with a coefficient that changes sign. From two inputs a mixed derivative too, so
    the kernels meet groups of none, one, two and (in three inputs) three inputs of positive order,
    each a path of their own."""
    m, d = Z.shape
    interior = torch.zeros(m, dtype=DTYPE)
    interior[:10] = 1.0 + torch.rand(10, generator=gen, dtype=DTYPE)
    edge = torch.zeros(m, dtype=DTYPE)
    edge[10:] = 1.0
    unit = [tuple(int(i == j) for j in range(d)) for i in range(d)]
    second = tuple(2 if i == 0 else 0 for i in range(d))
    fourth = tuple(4 if i == d - 1 else 0 for i in range(d))
    mixed = [(tuple(int(i >= d - 2) for i in range(d)), 0.5 * interior * Z[:, -1])] if d > 1 else []
    return [[(second, interior * Z[:, 0]), (fourth, interior), ((0,) * d, -0.3 * interior), ((0,) * d, edge),
             (unit[0], 2.0 * edge), *mixed],
            [(unit[-1], torch.sin(3 * Z[:, 0])), (second, torch.ones(m, dtype=DTYPE))]]


def assert_same(fused: list, tensor: list):
    """Blocks (even entries) equal, gradients (odd) equal to round-off."""
    for index, (a, b) in enumerate(zip(fused, tensor)):
        if index % 2 == 0:
            assert torch.equal(a, b)
        else:
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12 * float(b.abs().max()))


@pytest.mark.parametrize("d", [1, 2, 3])
def test_blocks_equal_the_tensor_code_bit_for_bit_and_gradients_to_round_off(d, monkeypatch):
    gen = torch.Generator().manual_seed(d)
    X = torch.rand(7, d, generator=gen, dtype=DTYPE)
    Z = torch.rand(14, d, generator=gen, dtype=DTYPE)
    lengthscale = 0.2 + torch.rand(d, generator=gen, dtype=DTYPE)
    outputscale = torch.tensor(1.3, dtype=DTYPE)
    terms = operator(Z, gen)
    identity = [[((0,) * d, None)]]
    pairs = [(X, Z, identity, terms), (Z, Z, terms, terms), (Z, X, terms, identity)]

    def results():
        out = []
        for A, B, left, right in pairs:
            products = coefficient_products(left, right)
            derivatives = SEDerivatives(A, B, lengthscale, outputscale)
            block = operator_block(A, B, lengthscale, outputscale, None, None, products, derivatives)
            weights = torch.rand(block.shape, generator=torch.Generator().manual_seed(7), dtype=DTYPE)
            out += [block, lengthscale_gradient(derivatives, products, weights)]
        return out

    fused = results()
    tensor_code(monkeypatch)
    assert_same(fused, results())


@pytest.mark.parametrize("d", [1, 2, 3])
def test_a_symmetric_block_is_its_lower_triangle_mirrored_and_folded_weights_give_its_gradient(d, monkeypatch):
    """K_LL from its lower triangle: that triangle is the full block's to the bit (the Cholesky
    factor reads nothing else), the block exactly symmetric; weights W folded onto the triangle
    (2 W below the diagonal of the equations stacked, W on it) give Σ W ∘ ∂K/∂ℓ of the full block
    from half its entries, since W and ∂K are both symmetric."""
    gen = torch.Generator().manual_seed(10 + d)
    Z = torch.rand(14, d, generator=gen, dtype=DTYPE)
    lengthscale = 0.2 + torch.rand(d, generator=gen, dtype=DTYPE)
    outputscale = torch.tensor(0.7, dtype=DTYPE)
    terms = operator(Z, gen)
    products = coefficient_products(terms, terms)
    W = torch.rand(28, 28, generator=gen, dtype=DTYPE)
    W = W + W.T
    folded = 2.0 * torch.tril(W, -1) + torch.diag(torch.diagonal(W))

    def results():
        derivatives = SEDerivatives(Z, Z, lengthscale, outputscale)
        full = operator_block(Z, Z, lengthscale, outputscale, None, None, products, derivatives)
        mirrored = operator_block(Z, Z, lengthscale, outputscale, None, None, products, derivatives, symmetric=True)
        return [full, mirrored, lengthscale_gradient(derivatives, products, W),
                lengthscale_gradient(derivatives, products, folded, lower=True)]

    fused = results()
    full, mirrored, gradient, from_triangle = fused
    assert torch.equal(mirrored, mirrored.T)
    assert torch.equal(torch.tril(mirrored), torch.tril(full))
    torch.testing.assert_close(mirrored, full, rtol=1e-12, atol=1e-12 * float(full.abs().max()))
    torch.testing.assert_close(from_triangle, gradient, rtol=1e-10, atol=1e-12 * float(gradient.abs().max()))
    tensor_code(monkeypatch)
    tensor = results()
    assert torch.equal(tensor[1], mirrored)
    torch.testing.assert_close(tensor[3], from_triangle, rtol=1e-12, atol=1e-12 * float(gradient.abs().max()))


def test_the_evidence_equals_the_tensor_code_bit_for_bit_and_its_gradient_to_round_off(monkeypatch):
    gen = torch.Generator().manual_seed(0)
    X = torch.rand(9, 2, generator=gen, dtype=DTYPE)
    Z = torch.rand(14, 2, generator=gen, dtype=DTYPE)
    y = torch.sin(3 * X[:, 0]) * torch.exp(X[:, 1])
    terms = operator(Z, gen)
    identity = [[((0, 0), None)]]
    data = EvidenceData(X, (y - y.mean()) / y.std(), Z, terms, 0.1 * torch.randn(28, generator=gen, dtype=DTYPE),
                        (coefficient_products(identity, terms), coefficient_products(terms, terms)))

    def evidence():
        params = [torch.tensor(v, dtype=DTYPE, requires_grad=True) for v in ([0.4, 0.7], 1.2, 1e-3, 1e-2)]
        value = negative_log_evidence(data, *params)
        value.backward()
        return [value.detach()] + [p.grad for p in params]

    fused = evidence()
    tensor_code(monkeypatch)
    tensor = evidence()
    assert torch.equal(fused[0], tensor[0])
    for a, b in zip(fused[1:], tensor[1:]):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_a_block_autograd_differentiates_is_the_tensor_codes():
    gen = torch.Generator().manual_seed(3)
    Z = torch.rand(14, 2, generator=gen, dtype=DTYPE)
    terms = operator(Z, gen)
    P = torch.rand(5, 2, generator=gen, dtype=DTYPE, requires_grad=True)
    lengthscale, outputscale = torch.tensor([0.5, 0.8], dtype=DTYPE), torch.tensor(1.0, dtype=DTYPE)
    block = operator_block(P, Z, lengthscale, outputscale, None, terms)
    assert block.requires_grad            # the acquisition's gradient flows through the posterior
    block.sum().backward()
    assert P.grad is not None and torch.isfinite(P.grad).all()
    with torch.no_grad():
        assert torch.equal(operator_block(P, Z, lengthscale, outputscale, None, terms), block.detach())


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("fused", [True, False])
def test_a_point_blocks_closed_form_gradient_is_autograds_through_the_tensor_code(d, fused, monkeypatch):
    """∂/∂P_ai cov(f(P_a), L f(Z)) = cov(∂_i f(P_a), L f(Z)): the posterior's block in its points,
    its value the tensor code's to the bit and its gradient autograd's to round-off, whichever
    code builds the blocks."""
    gen = torch.Generator().manual_seed(20 + d)
    Z = torch.rand(14, d, generator=gen, dtype=DTYPE)
    terms = operator(Z, gen)
    lengthscale = 0.3 + torch.rand(d, generator=gen, dtype=DTYPE)
    outputscale = torch.tensor(0.9, dtype=DTYPE)
    P = torch.rand(6, d, generator=gen, dtype=DTYPE)
    weights = torch.randn(6, 28, generator=gen, dtype=DTYPE)
    identity = [[((0,) * d, None)]]
    products, gradients = coefficient_products(identity, terms), gradient_products(d, terms)
    reference_points = P.clone().requires_grad_(True)
    reference = operator_block(reference_points, Z, lengthscale, outputscale, None, terms, products)
    (reference * weights).sum().backward()
    if not fused:
        tensor_code(monkeypatch)
    points = P.clone().requires_grad_(True)
    block = point_block(points, Z, lengthscale, outputscale, terms, products, gradients)
    (block * weights).sum().backward()
    assert torch.equal(block.detach(), reference.detach())
    torch.testing.assert_close(points.grad, reference_points.grad, rtol=1e-11,
                               atol=1e-12 * float(reference_points.grad.abs().max()))


def test_a_point_blocks_derivatives_match_finite_differences_and_leave_the_hyperparameters_to_autograd():
    gen = torch.Generator().manual_seed(5)
    Z = torch.rand(14, 2, generator=gen, dtype=DTYPE)
    terms = operator(Z, gen)
    products, gradients = coefficient_products([[((0, 0), None)]], terms), gradient_products(2, terms)
    lengthscale, outputscale = torch.tensor([0.5, 0.8], dtype=DTYPE), torch.tensor(1.1, dtype=DTYPE)
    P = torch.rand(3, 2, generator=gen, dtype=DTYPE, requires_grad=True)
    block = lambda p: point_block(p, Z, lengthscale, outputscale, terms, products, gradients)  # noqa: E731
    assert torch.autograd.gradcheck(block, (P,))
    assert torch.autograd.gradgradcheck(block, (P,))       # a posterior mean's Laplacian by autograd
    # a fit differentiates the hyper-parameters: the block then goes through autograd, which has them
    scale = lengthscale.clone().requires_grad_(True)
    point_block(P, Z, scale, outputscale, terms, products, gradients).sum().backward()
    assert scale.grad is not None and torch.isfinite(scale.grad).all() and bool((scale.grad != 0).any())


def test_only_float64_on_the_cpu_with_nothing_to_differentiate_is_fused():
    x = torch.zeros(3, dtype=DTYPE)
    assert se_fused.usable(x)
    assert not se_fused.usable(x.float())
    assert not se_fused.usable(x.clone().requires_grad_(True))
    with torch.no_grad():
        assert se_fused.usable(x.clone().requires_grad_(True))


def test_a_read_only_installation_compiles_the_kernels_without_a_cache():
    """Where numba finds no writable directory for its cache it refuses cache=True when the
    function is decorated; the kernels are then compiled in each process instead."""
    script = textwrap.dedent("""
        import numba, torch
        plain = numba.njit
        def njit(*args, **kwargs):
            if kwargs.get("cache"):
                raise RuntimeError("cannot cache function: no locator available")
            return plain(*args, **kwargs)
        numba.njit = njit
        from pinnbo.models import se_fused
        from pinnbo.models.se_kernel import operator_block
        Z = torch.linspace(0, 1, 6, dtype=torch.float64)[:, None]
        terms = [[((2,), torch.ones(6, dtype=torch.float64)), ((0,), -torch.ones(6, dtype=torch.float64))]]
        ell, scale = torch.tensor([0.4], dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
        fused = operator_block(Z, Z, ell, scale, terms, terms)
        se_fused.usable = lambda *tensors: False
        assert torch.equal(fused, operator_block(Z, Z, ell, scale, terms, terms))
        print("compiled without a cache")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "compiled without a cache" in done.stdout
