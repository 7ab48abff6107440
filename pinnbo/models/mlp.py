"""Fully connected tanh networks in the NTK parametrisation (docs/algorithms.md, "Networks").

h(z; θ) = (1/√m_L) W_L φ(… φ((1/√d) W_1 z + β b_1) …) + β b_L with W, b ~ N(0, 1): the
1/√fan_in factors keep the network's function scale independent of width, which is the setting
in which the papers' NTK analysis (and the last-layer posterior of PINN-BO) holds. Biases are
kept (β = 0.1 by default, ``bias_scale``), a standard practical departure from the bias-free theory.
With β = 0.1 and inputs of order 1 the tanh units are nearly odd functions of the input, so
even shapes (a quadratic bowl, a disc constraint) are hard to fit; Neural-CBO uses β = 1.

Derivatives along the coordinate axes (``axis_derivatives``) come from one Taylor-mode forward
pass instead of nested autograd: along a direction e_i, a layer's pre-activation a = W z + b has
derivatives a⁽ᵏ⁾ = W z⁽ᵏ⁾ (k ≥ 1), and tanh's are given by Faà di Bruno's formula,
    (φ∘a)⁽ⁿ⁾ = Σ_k φ⁽ᵏ⁾(a) B_{n,k}(a′, …, a⁽ⁿ⁻ᵏ⁺¹⁾),   φ⁽ᵏ⁾ = P_k(tanh a),
with B the partial Bell polynomials and P_k the polynomial with P_0(t) = t, P_{k+1} = P_k′ (1 − t²).
A PDE residual then costs one forward pass and one ordinary backward pass for training, where
nested ``autograd.grad(create_graph=True)`` builds and differentiates a graph per order.
"""

from __future__ import annotations

import copy
import math
from functools import lru_cache
from typing import Any, Sequence

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

    def hidden_jets(self, z: torch.Tensor, order: int, axes: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """The last hidden layer's values (N, m) and its derivatives along each axis in ``axes``,
        orders 1..``order``: shape (order, len(axes), N, m) (Taylor mode, module docstring).
        Differentiable in the parameters and in ``z``."""
        polynomials = _tanh_derivative_polynomials(order)
        axes = list(axes)
        x, jet = z, None
        for layer in self.hidden:
            weight = layer.weight * layer.scale
            a = torch.nn.functional.linear(x, weight, layer.bias * layer.bias_scale)    # (N, m)
            t = torch.tanh(a)
            phi = [_polynomial(p, t) for p in polynomials[1:]]                         # φ⁽ᵏ⁾(a), k = 1..order
            if jet is None:
                # z is linear along e_i: a′ = W[:, i], higher orders 0, so (φ∘a)⁽ⁿ⁾ = φ⁽ⁿ⁾(a) a′ⁿ.
                slope = weight[:, axes].T[:, None, :]                                   # (A, 1, m)
                power, derivatives = slope, []
                for n in range(order):
                    derivatives.append(phi[n] * power)
                    power = power * slope
                jet = torch.stack(derivatives)                                         # (order, A, N, m)
            else:
                jet = _faa_di_bruno(phi, jet @ weight.T)
            x = t
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
            derivatives = jet @ weight                                                 # (order, A, N)
        else:
            weights = (self.out.weight * self.out.scale)[0] + self.out.scale * shifts   # (N, m)
            values = (features * weights).sum(dim=-1) + self.out.bias[0] * self.out.bias_scale
            derivatives = (jet * weights).sum(dim=-1)                                  # (order, A, N)
        return values, {i: derivatives[:orders[i], j] for j, i in enumerate(axes)}


@lru_cache(maxsize=None)
def _tanh_derivative_polynomials(order: int) -> tuple[tuple[float, ...], ...]:
    """Coefficients (constant term first) of P_0..P_order, P_k(tanh a) = dᵏ tanh(a)/daᵏ."""
    polynomials = [(0.0, 1.0)]
    for _ in range(order):
        p = polynomials[-1]
        derivative = [i * c for i, c in enumerate(p)][1:]
        # P_{k+1} = P_k′ (1 − t²)
        q = [0.0] * (len(derivative) + 2)
        for i, c in enumerate(derivative):
            q[i] += c
            q[i + 2] -= c
        polynomials.append(tuple(q))
    return tuple(polynomials)


def _polynomial(coefficients: Sequence[float], t: torch.Tensor) -> torch.Tensor:
    """Σ_i c_i tⁱ by Horner's rule."""
    out = torch.full_like(t, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        out = out * t + c if c else out * t
    return out


def _faa_di_bruno(phi: Sequence[torch.Tensor], da: torch.Tensor) -> torch.Tensor:
    """Derivatives 1..n of φ∘a from φ⁽ᵏ⁾(a) (k = 1..n, each (N, m)) and a's, ``da`` (n, A, N, m):
    Σ_k φ⁽ᵏ⁾ B_{n,k}, with B_{n,k} = Σ_i C(n−1, i−1) a⁽ⁱ⁾ B_{n−i,k−1} (B_{0,0} = 1)."""
    order = len(da)
    bell: dict[tuple[int, int], torch.Tensor | None] = {(0, 0): None}    # None: the constant 1
    out = []
    for n in range(1, order + 1):
        total = None
        for k in range(1, n + 1):
            acc = None
            for i in range(1, n - k + 2):
                if (n - i, k - 1) not in bell:
                    continue
                previous = bell[(n - i, k - 1)]
                term = da[i - 1] if previous is None else da[i - 1] * previous
                coefficient = math.comb(n - 1, i - 1)
                term = term if coefficient == 1 else coefficient * term
                acc = term if acc is None else acc + term
            bell[(n, k)] = acc
            contribution = phi[k - 1] * acc
            total = contribution if total is None else total + contribution
        out.append(total)
    return torch.stack(out)


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
