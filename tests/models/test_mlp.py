"""The network's Taylor-mode derivatives along the axes: the hand-derived derivatives of tanh, and
every order against nested autograd, in values and in the parameter gradients training uses."""

from __future__ import annotations

import math

import pytest
import torch

from pinnbo.models.mlp import MLP, _tanh_taylor
from pinnbo.streams import torch_generator


def test_the_tanh_recurrence_gives_the_hand_derived_derivatives():
    # t = tanh a: t′ = 1 − t², t″ = −2t + 2t³, t‴ = −2 + 8t² − 6t⁴, t⁗ = 16t − 40t³ + 24t⁵;
    # along a direction with a′ = 1 and a″ = 0 the k-th coefficient is t⁽ᵏ⁾/k!.
    a = torch.linspace(-3, 3, 61, dtype=torch.float64)[:, None]
    y, coefficients = _tanh_taylor(a, [torch.ones(1, 1, 1, dtype=torch.float64)], 4)
    t = torch.tanh(a)
    expected = [1 - t**2, -2 * t + 2 * t**3, -2 + 8 * t**2 - 6 * t**4, 16 * t - 40 * t**3 + 24 * t**5]
    torch.testing.assert_close(y, t, rtol=0, atol=0)
    for k, (got, want) in enumerate(zip(coefficients, expected), 1):
        torch.testing.assert_close(math.factorial(k) * got[0], want, rtol=1e-13, atol=1e-13)


def test_the_chain_rule_through_a_curved_pre_activation():
    # a(s) = s + s²/2 along the direction, so a′ = 1 + s and a″ = 1 at s (a_1 = 1 + s, a_2 = ½ at
    # the point s): d²/ds² tanh(a(s)) = tanh″(a) a′² + tanh′(a) a″.
    s = torch.linspace(-1, 1, 21, dtype=torch.float64)[:, None]
    a = s + s**2 / 2
    _, (first, second) = _tanh_taylor(a, [(1 + s)[None], torch.full((1, 1, 1), 0.5, dtype=torch.float64)], 2)
    t = torch.tanh(a)
    torch.testing.assert_close(first[0], (1 - t**2) * (1 + s), rtol=1e-14, atol=1e-14)
    torch.testing.assert_close(2 * second[0], (-2 * t + 2 * t**3) * (1 + s) ** 2 + (1 - t**2), rtol=1e-13, atol=1e-13)


def nested(network: MLP, z: torch.Tensor, axis: int, order: int) -> list[torch.Tensor]:
    """∂ᵏh/∂z_axisᵏ, k = 1..order, by successive autograd.grad (the reference)."""
    z = z.clone().requires_grad_(True)
    u, out = network(z), []
    for _ in range(order):
        u = torch.autograd.grad(u.sum(), z, create_graph=True)[0][:, axis]
        out.append(u)
    return out


@pytest.mark.parametrize("dim, orders, hidden, bias_scale", [
    (1, (4,), (16, 16), 0.1),
    (3, (2, 0, 3), (8, 12, 8), 1.0),
    (2, (1, 2), (16,), 0.1),
])
@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 2e-4)])
def test_axis_derivatives_agree_with_nested_autograd(dim, orders, hidden, bias_scale, dtype, tol):
    network = MLP(dim, hidden, torch_generator(0, "mlp-test"), bias_scale).to(dtype=dtype)
    z = (2 * torch.rand(40, dim, generator=torch.Generator().manual_seed(1), dtype=torch.float64) - 1).to(dtype)
    values, along = network.axis_derivatives(z, orders)
    torch.testing.assert_close(values, network(z), rtol=tol, atol=tol)
    assert sorted(along) == [i for i, k in enumerate(orders) if k]
    for axis, derivatives in along.items():
        assert derivatives.shape == (orders[axis], len(z)) and derivatives.dtype == dtype
        for got, want in zip(derivatives, nested(network, z, axis, orders[axis])):
            scale = float(want.abs().max())
            torch.testing.assert_close(got / scale, want.detach() / scale, rtol=tol, atol=tol)


def test_the_parameter_gradients_of_a_loss_on_them_are_those_of_nested_autograd():
    # What training back-propagates: a fourth-order residual's loss, through the network's weights.
    network = MLP(1, (16, 16), torch_generator(0, "mlp-test"), 0.1)
    z = torch.linspace(-1, 1, 30, dtype=torch.float64)[:, None]
    _, along = network.axis_derivatives(z, (4,))
    loss = (along[0][3] + 2 * along[0][1] - 1).pow(2).mean()
    taylor = torch.autograd.grad(loss, list(network.parameters()), materialize_grads=True)
    d = nested(network, z, 0, 4)
    reference = torch.autograd.grad((d[3] + 2 * d[1] - 1).pow(2).mean(), list(network.parameters()),
                                    materialize_grads=True)
    for got, want in zip(taylor, reference):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_they_are_differentiable_in_the_inputs():
    # d/dz of the second derivative is the third, as autograd reads it off the Taylor-mode graph.
    network = MLP(1, (16,), torch_generator(0, "mlp-test"), 0.1)
    z = torch.linspace(-1, 1, 7, dtype=torch.float64)[:, None].requires_grad_(True)
    _, along = network.axis_derivatives(z, (3,))
    (third,) = torch.autograd.grad(along[0][1].sum(), z)
    torch.testing.assert_close(third[:, 0], along[0][2].detach(), rtol=1e-10, atol=1e-12)


def test_the_recurrence_backward_passes_gradcheck_to_second_order():
    # The hand-written backward of the tanh recurrence against finite differences, and its own
    # backward (create_graph) as well, with a broadcast first coefficient as in a first layer.
    generator = torch.Generator().manual_seed(3)
    a = torch.randn(5, 3, dtype=torch.float64, generator=generator, requires_grad=True)
    slope = torch.randn(2, 1, 3, dtype=torch.float64, generator=generator, requires_grad=True)
    curve = torch.randn(2, 5, 3, dtype=torch.float64, generator=generator, requires_grad=True)

    def outputs(a, slope, curve):
        y, coefficients = _tanh_taylor(a, [slope, curve], 4)
        return (y, *coefficients)

    assert torch.autograd.gradcheck(outputs, (a, slope, curve))
    assert torch.autograd.gradgradcheck(outputs, (a, slope, curve))
    # gradgradcheck differentiates the create_graph backward against itself: its values must be
    # the plain backward's too.
    weights = [torch.randn(o.shape, dtype=torch.float64, generator=generator) for o in outputs(a, slope, curve)]
    loss = sum((w * o).sum() for w, o in zip(weights, outputs(a, slope, curve)))
    plain = torch.autograd.grad(loss, (a, slope, curve), retain_graph=True)
    for got, want in zip(torch.autograd.grad(loss, (a, slope, curve), create_graph=True), plain):
        torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
