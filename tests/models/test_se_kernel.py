"""The squared-exponential kernel's derivatives against finite differences, and operator blocks
against their definition."""

from __future__ import annotations

import itertools

import pytest
import torch

from pinnbo.models.se_kernel import SEDerivatives, coefficient_products, lengthscale_gradient, operator_block

LENGTHSCALE = torch.tensor([0.7, 1.3, 0.9], dtype=torch.float64)
OUTPUTSCALE = torch.tensor(1.7, dtype=torch.float64)


def k(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return OUTPUTSCALE * torch.exp(-0.5 * (((a - b) / LENGTHSCALE) ** 2).sum(-1))


def finite_difference(alpha, beta, a, b, h=1e-2):
    """∂ᵃ_a ∂ᵝ_b k by central differences, one coordinate at a time (error O(h²))."""
    steps = [(0, i) for i, n in enumerate(alpha) for _ in range(n)] + [(1, i) for i, n in enumerate(beta)
                                                                     for _ in range(n)]
    total = torch.zeros((), dtype=torch.float64)
    for signs in itertools.product((1, -1), repeat=len(steps)):
        pa, pb = a.clone(), b.clone()
        for (side, i), sign in zip(steps, signs):
            (pa if side == 0 else pb)[i] += sign * h
        total = total + torch.prod(torch.tensor(signs, dtype=torch.float64)) * k(pa, pb)
    return total / (2 * h) ** len(steps)


@pytest.mark.parametrize("alpha, beta", [((0, 0, 0), (0, 0, 0)), ((1, 0, 0), (0, 0, 0)), ((0, 0, 0), (0, 1, 0)),
                                         ((2, 0, 0), (0, 0, 0)), ((1, 1, 0), (0, 0, 1)), ((2, 0, 0), (0, 2, 0)),
                                         ((0, 3, 0), (0, 1, 0)), ((2, 0, 1), (1, 0, 2))])
def test_derivatives_equal_finite_differences_of_the_kernel(alpha, beta):
    gen = torch.Generator().manual_seed(0)
    A = torch.rand(4, 3, generator=gen, dtype=torch.float64)
    B = torch.rand(5, 3, generator=gen, dtype=torch.float64)
    closed = SEDerivatives(A, B, LENGTHSCALE, OUTPUTSCALE)(alpha, beta)
    for i, j in ((0, 0), (1, 3), (3, 4)):
        expected = finite_difference(alpha, beta, A[i].clone(), B[j].clone())
        assert float(closed[i, j]) == pytest.approx(float(expected), rel=2e-3, abs=1e-6)


def test_eighth_order_in_one_dimension_is_the_hermite_polynomial():
    """∂⁴_a ∂⁴_b exp(−r²/2) at r = 0 is He₈(0) = 105 (ℓ = 1, s² = 1)."""
    zero = torch.zeros(1, 1, dtype=torch.float64)
    one = torch.ones(1, dtype=torch.float64)
    assert float(SEDerivatives(zero, zero, one, one[0])((4,), (4,))) == pytest.approx(105.0)


def test_an_operator_block_is_the_sum_of_its_coefficient_weighted_derivatives():
    """cov(L f(A), M f(B)) with L = c(x) ∂xx + ∂y, M = ∂x, against the derivatives themselves."""
    gen = torch.Generator().manual_seed(1)
    A, B = torch.rand(3, 3, generator=gen, dtype=torch.float64), torch.rand(4, 3, generator=gen, dtype=torch.float64)
    c = 1 + A[:, 0] ** 2
    left = [[((2, 0, 0), c), ((0, 1, 0), torch.ones(3, dtype=torch.float64))]]
    right = [[((1, 0, 0), torch.ones(4, dtype=torch.float64))]]
    D = SEDerivatives(A, B, LENGTHSCALE, OUTPUTSCALE)
    expected = c[:, None] * D((2, 0, 0), (1, 0, 0)) + D((0, 1, 0), (1, 0, 0))
    torch.testing.assert_close(operator_block(A, B, LENGTHSCALE, OUTPUTSCALE, left, right), expected)
    # two equations on the left stack their rows
    stacked = operator_block(A, B, LENGTHSCALE, OUTPUTSCALE, left + [[((1, 0, 0), torch.ones(3, dtype=torch.float64))]],
                             None)
    assert stacked.shape == (6, 4)
    torch.testing.assert_close(stacked[3:], D((1, 0, 0), (0, 0, 0)))


def assert_finite_differences(closed, A, B, left, right, W, h=1e-5):
    """``closed`` is Σ W ⊙ ∂K/∂ℓ_i of the operator block of ``left`` and ``right``, by central
    differences in each ℓ_i."""
    for i in range(3):
        step = torch.zeros(3, dtype=torch.float64)
        step[i] = h
        up = (W * operator_block(A, B, LENGTHSCALE + step, OUTPUTSCALE, left, right)).sum()
        down = (W * operator_block(A, B, LENGTHSCALE - step, OUTPUTSCALE, left, right)).sum()
        assert float(closed[i]) == pytest.approx(float((up - down) / (2 * h)), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("left, right", [(None, None), ("pde", None), ("pde", "pde")])
def test_lengthscale_gradient_equals_finite_differences_of_the_weighted_block(left, right):
    """Σ W ⊙ ∂K/∂ℓ_i of an operator block with derivatives up to fourth order in each argument
    (c(x) ∂xx + ∂yyyy, and a second equation ∂x ∂z), against central differences in ℓ_i."""
    gen = torch.Generator().manual_seed(2)
    A, B = torch.rand(5, 3, generator=gen, dtype=torch.float64), torch.rand(4, 3, generator=gen, dtype=torch.float64)

    def operator(points):
        return [[((2, 0, 0), 1 + points[:, 0] ** 2), ((0, 4, 0), None)], [((1, 0, 1), None)]]

    left_op = operator(A) if left else None
    right_op = operator(B) if right else None
    identity = [[((0, 0, 0), None)]]
    products = coefficient_products(left_op or identity, right_op or identity)
    W = torch.randn(operator_block(A, B, LENGTHSCALE, OUTPUTSCALE, left_op, right_op).shape, generator=gen,
                    dtype=torch.float64)
    closed = lengthscale_gradient(SEDerivatives(A, B, LENGTHSCALE, OUTPUTSCALE), products, W)
    assert_finite_differences(closed, A, B, left_op, right_op, W)


def _stacked_operator(points: torch.Tensor) -> list:
    """c(x) ∂xx + ∂y on the first three points and f itself on the others, one equation over
    stacked points (a PDE with a Dirichlet condition, as pinnbo.pde.boundary stacks them)."""
    inside = torch.arange(len(points)) < 3
    c = torch.where(inside, 1 + points[:, 0] ** 2, torch.zeros_like(points[:, 0]))
    return [[((2, 0, 0), c), ((0, 1, 0), inside.to(points.dtype)), ((0, 0, 0), (~inside).to(points.dtype))]]


def test_products_keep_the_rows_and_columns_where_their_coefficients_are_nonzero():
    """A coefficient zero on a range of the stacked points leaves its products a window; the block
    assembled window by window is the dense sum Σ c_α c'_β ∂ᵃ∂ᵝk."""
    gen = torch.Generator().manual_seed(3)
    A, B = torch.rand(5, 3, generator=gen, dtype=torch.float64), torch.rand(6, 3, generator=gen, dtype=torch.float64)
    left, right = _stacked_operator(A), _stacked_operator(B)
    products = coefficient_products(left, right)[0][0]
    assert {window for _, window in products} == {((0, 3), (0, 3)), ((0, 3), (3, 6)), ((3, 5), (0, 3)),
                                                  ((3, 5), (3, 6))}
    D = SEDerivatives(A, B, LENGTHSCALE, OUTPUTSCALE)
    expected = sum(ca[:, None] * cb[None, :] * D(alpha, beta) for alpha, ca in left[0] for beta, cb in right[0])
    torch.testing.assert_close(operator_block(A, B, LENGTHSCALE, OUTPUTSCALE, left, right), expected)


def test_lengthscale_gradient_over_windows_equals_finite_differences():
    gen = torch.Generator().manual_seed(4)
    A, B = torch.rand(5, 3, generator=gen, dtype=torch.float64), torch.rand(6, 3, generator=gen, dtype=torch.float64)
    left, right = _stacked_operator(A), _stacked_operator(B)
    W = torch.randn(5, 6, generator=gen, dtype=torch.float64)
    closed = lengthscale_gradient(SEDerivatives(A, B, LENGTHSCALE, OUTPUTSCALE), coefficient_products(left, right), W)
    assert_finite_differences(closed, A, B, left, right, W)
