"""Fully connected tanh networks in the NTK parametrisation (docs/algorithms.md, "Networks").

h(z; θ) = (1/√m_L) W_L φ(… φ((1/√d) W_1 z + β b_1) …) + β b_L with W, b ~ N(0, 1): the
1/√fan_in factors keep the network's function scale independent of width, which is the setting
in which the papers' NTK analysis (and the last-layer posterior of PINN-BO) holds. Biases are
kept (β = 0.1 by default, ``bias_scale``), a standard practical departure from the bias-free theory.
With β = 0.1 and inputs of order 1 the tanh units are nearly odd functions of the input, so
even shapes (a quadratic bowl, a disc constraint) are hard to fit; Neural-CBO uses β = 1.

Derivatives along the coordinate axes (``axis_derivatives``) come from one Taylor-mode forward
pass instead of nested autograd. Along a direction e_i every activation carries its normalised
Taylor coefficients c_k = c⁽ᵏ⁾/k!, k = 0..n. A layer's pre-activation a = W z + b has a_k = W z_k
(k ≥ 1), and y = tanh(a) obeys y′ = (1 − y²) a′, which gives Taylor arithmetic's recurrence
(Griewank & Walther, "Evaluating Derivatives", ch. 13):
    u = 1 − y²:  u_0 = 1 − y_0²,  u_k = −Σ_{i=0..k} y_i y_{k−i};      y_n = (1/n) Σ_{j=1..n} j a_j u_{n−j}.
That is O(n²) fused multiply-adds per unit and the same values as the chain rule to round-off. A
PDE residual then costs one forward pass and one ordinary backward pass for training, where nested
``autograd.grad(create_graph=True)`` builds and differentiates a graph per order.
"""

from __future__ import annotations

import copy
import math
from typing import Any, Callable, Sequence

import torch
from torch import nn


class NTKLinear(nn.Module):
    """y = W x / √fan_in + β b, W and b standard normal. x: (N, fan_in) → (N, fan_out)."""

    def __init__(self, fan_in: int, fan_out: int, generator: torch.Generator, bias_scale: float = 0.1) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(fan_out, fan_in, generator=generator, dtype=torch.float64))
        self.bias = nn.Parameter(torch.randn(fan_out, generator=generator, dtype=torch.float64))
        self.scale = 1.0 / math.sqrt(fan_in)
        self.bias_scale = bias_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight * self.scale, self.bias * self.bias_scale)


class MLP(nn.Module):
    """tanh MLP, input (N, d) → output (N,). ``features`` gives the last hidden layer (N, m)/√m."""

    def __init__(self, dim: int, hidden: Sequence[int], generator: torch.Generator, bias_scale: float = 0.1) -> None:
        super().__init__()
        widths = [dim, *hidden]
        self.hidden = nn.ModuleList(NTKLinear(a, b, generator, bias_scale) for a, b in zip(widths[:-1], widths[1:]))
        self.out = NTKLinear(widths[-1], 1, generator, bias_scale)

    def features(self, z: torch.Tensor) -> torch.Tensor:
        """Last hidden layer scaled by 1/√m, shape (N, m): h = features · w_out + β b_out."""
        for layer in self.hidden:
            z = torch.tanh(layer(z))
        return z * self.out.scale

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        for layer in self.hidden:
            z = torch.tanh(layer(z))
        return self.out(z).squeeze(-1)

    def hidden_jets(self, z: torch.Tensor, order: int, axes: Sequence[int]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The last hidden layer's values (N, m) and its normalised Taylor coefficients along each
        axis in ``axes``, ∂ᵏ/∂z_iᵏ / k! for k = 1..``order``: a list of ``order`` (len(axes), N, m)
        tensors (module docstring). Differentiable in the parameters and in ``z``."""
        axes = list(axes)
        x, jet = z, None
        for layer in self.hidden:
            weight = layer.weight * layer.scale
            a = torch.nn.functional.linear(x, weight, layer.bias * layer.bias_scale)    # (N, m)
            if jet is None:
                # z is linear along e_i: a_1 = W[:, i], higher coefficients 0.
                x, jet = _tanh_taylor(a, [weight[:, axes].T[:, None, :]], order)
            else:
                x, jet = _tanh_taylor(a, [c @ weight.T for c in jet], order)
        return x, jet

    def axis_derivatives(self, z: torch.Tensor, orders: Sequence[int],
                         shifts: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        """h (N,) and, for each axis i with ``orders[i]`` > 0, ∂ᵏh/∂z_iᵏ for k = 1..orders[i] as
        an (orders[i], N) tensor (Taylor mode, module docstring). ``shifts`` δ (N, m): the network
        h + ``features``ᵀδ_n instead, one perturbation of the output weights per row."""
        axes = [i for i, k in enumerate(orders) if k > 0]
        if not axes:
            values = self(z)
            if shifts is not None:
                values = values + (self.features(z) * shifts).sum(dim=1)
            return values, {}
        features, jet = self.hidden_jets(z, max(orders), axes)
        if shifts is None:
            weight = (self.out.weight * self.out.scale)[0]                             # (m,)
            values = self.out(features).squeeze(-1)
            coefficients = torch.stack([c @ weight for c in jet])                       # (order, A, N)
        else:
            weights = (self.out.weight * self.out.scale)[0] + self.out.scale * shifts   # (N, m)
            values = (features * weights).sum(dim=-1) + self.out.bias[0] * self.out.bias_scale
            coefficients = torch.stack([(c * weights).sum(dim=-1) for c in jet])
        factorials = torch.tensor([math.factorial(k) for k in range(1, len(jet) + 1)], dtype=z.dtype, device=z.device)
        derivatives = coefficients * factorials[:, None, None]
        return values, {i: derivatives[:orders[i], j] for j, i in enumerate(axes)}


def _tanh_taylor(a: torch.Tensor, da: Sequence[torch.Tensor], order: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """y = tanh(a) (N, m) and y's normalised Taylor coefficients y_1..y_order from a's, ``da``
    (a_1, a_2, …; missing ones are 0; each broadcasting to (A, N, m)), by the recurrence of the
    module docstring."""
    y = _TanhTaylor.apply(order, a, *da)
    return y[0], list(y[1:])


class _TanhTaylor(torch.autograd.Function):
    """The tanh recurrence as one autograd node. Its backward runs the recurrence in reverse, each
    product of the forward pass giving two fused multiply-adds; autograd's own backward of the
    same products would spend three to four kernels on each, and the jets' backward is most of a
    PINN training step."""

    @staticmethod
    def forward(ctx, order: int, a: torch.Tensor, *da: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = [torch.tanh(a)]
        u = [torch.mul(y[0], y[0]).neg_().add_(1.0)]
        accumulate = _Accumulator(in_place=True)
        for n in range(1, order + 1):
            total = None
            for j in range(1, min(n, len(da)) + 1):
                total = accumulate(total, j / n, da[j - 1], u[n - j])
            y.append(total)
            if n < order:
                total = None
                for c, i, k in _square_pairs(n):
                    total = accumulate(total, c, y[i], y[k])
                u.append(total)
        ctx.order = order
        ctx.save_for_backward(*da, *y, *u)
        ctx.n_da = len(da)
        return tuple(y)

    @staticmethod
    def backward(ctx, *grads: torch.Tensor):
        saved = ctx.saved_tensors
        order, n_da = ctx.order, ctx.n_da
        da, y, u = saved[:n_da], saved[n_da:n_da + order + 1], saved[n_da + order + 1:]
        differentiated = torch.is_grad_enabled()     # create_graph: this backward is differentiated too
        if differentiated:
            # The saved u_n are intermediates without a history; rebuilt from the outputs y, they
            # carry their dependence on the inputs into the second derivative.
            u = [1.0 - y[0] * y[0]] + [sum(c * y[i] * y[k] for c, i, k in _square_pairs(n)) for n in range(1, order)]
        # Sums are accumulated in place in buffers of our own (not the incoming gradients), except
        # when differentiated.
        accumulate = _Accumulator(in_place=not differentiated)
        gy = list(grads)
        gu = [None] * order
        gda = [None] * n_da
        g0 = None       # the terms reaching y_0 from the u_n
        for n in range(order, 0, -1):
            if n < order and gu[n] is not None:
                # u_n = −Σ_i y_i y_{n−i}
                for c, left, right in _square_pairs(n):
                    if left:
                        gy[left] = accumulate(gy[left], c, gu[n], y[right])
                    else:
                        g0 = accumulate(g0, c, gu[n], y[right])
                    gy[right] = accumulate(gy[right], c, gu[n], y[left])
            for j in range(1, min(n, n_da) + 1):
                # y_n = Σ_j (j/n) a_j u_{n−j}
                gda[j - 1] = accumulate(gda[j - 1], j / n, gy[n], u[n - j])
                gu[n - j] = accumulate(gu[n - j], j / n, gy[n], da[j - 1])
        # u_0 = 1 − y_0², y_0 = tanh(a): dy_0/da = u_0. y_0 and u_0 are (N, m) while the terms
        # reaching them are (A, N, m): summed over the axes before the incoming gradient joins.
        if gu[0] is not None:
            g0 = accumulate(g0, -2.0, gu[0], y[0])
        g0 = gy[0] if g0 is None else gy[0] + g0.sum_to_size(y[0].shape)
        gda = [None if g is None else g.sum_to_size(d.shape) for g, d in zip(gda, da)]
        return (None, g0 * u[0], *gda)


class _Accumulator:
    """total + c · left · right, one fused multiply-add, in place on the sums it created itself when
    ``in_place`` (every sum of the recurrence has the jets' full shape, so an owned one never needs
    to grow)."""

    def __init__(self, in_place: bool) -> None:
        self.in_place, self.owned = in_place, {}     # id → tensor, held so that no id is reused

    def __call__(self, total, c: float, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        if total is None:
            out = torch.mul(left, right)
            if c != 1:
                out.mul_(c)
        elif id(total) in self.owned:
            return total.addcmul_(left, right, value=c)
        else:
            out = torch.addcmul(total, left, right, value=c)
        if self.in_place:
            self.owned[id(out)] = out
        return out


def _square_pairs(n: int) -> list[tuple[float, int, int]]:
    """(c, i, k) with u_n = Σ c y_i y_k = −Σ_{i=0..n} y_i y_{n−i}: each pair i < n − i twice, the middle once."""
    return [(-2.0, i, n - i) for i in range((n + 1) // 2)] + ([(-1.0, n // 2, n // 2)] if n % 2 == 0 else [])


def adam_steps(adam: torch.optim.Optimizer, loss: Callable[[], torch.Tensor], steps: int) -> None:
    """``steps`` Adam steps on the full-batch ``loss()`` (the data fits of the neural methods; the
    PINN's own loop samples collocation batches and watches its loss)."""
    for _ in range(steps):
        adam.zero_grad(set_to_none=True)
        loss().backward()
        adam.step()


def network_state(model: nn.Module, adam: torch.optim.Optimizer, **extra: Any) -> dict:
    """A checkpointable snapshot of a trained network, its Adam moments and ``extra`` values.

    Deep-copied, not views: module and Adam state dicts alias the live tensors, and
    ``Adam.load_state_dict`` keeps tensors that already match, so without the copy two optimisers
    (or a checkpoint and the run that keeps training) would share their moments.
    """
    return copy.deepcopy({"model": model.state_dict(), "adam": adam.state_dict(), **extra})


def load_network_state(model: nn.Module, adam: torch.optim.Optimizer, state: dict) -> None:
    model.load_state_dict(state["model"])
    adam.load_state_dict(state["adam"])
