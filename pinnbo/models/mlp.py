"""Fully connected tanh networks in the NTK parametrisation (docs/algorithms.md, "Networks").

h(z; θ) = (1/√m_L) W_L φ(… φ((1/√d) W_1 z + β b_1) …) + β b_L with W, b ~ N(0, 1): the
1/√fan_in factors keep the network's function scale independent of width, which is the setting
in which the papers' NTK analysis (and the last-layer posterior of PINN-BO) holds. Biases are
kept (β = 0.1 by default, ``bias_scale``), a standard practical departure from the bias-free theory.
With β = 0.1 and inputs of order 1 the tanh units are nearly odd functions of the input, so
even shapes (a quadratic bowl, a disc constraint) are hard to fit; Neural-CBO uses β = 1.
"""

from __future__ import annotations

import copy
import math
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
