"""Ackley and Levy in any dimension, as in the Virtual Library of Simulation Experiments
(Surjanovic & Bingham, https://www.sfu.ca/~ssurjano): the benchmarks of Kim & Sanz-Alonso's
GP-UCB+ / EXPLOIT+ paper (d = 10). No PDE: these are for the GP methods.

Two factories, registered for case files (``problem: ackley``), both minimised::

    ackley(dim=10)   [-32.768, 32.768]^d   a = 20, b = 0.2, c = 2 pi   f* = 0 at 0
    levy(dim=10)     [-10, 10]^d                                       f* = 0 at (1, ..., 1)

Ackley: f = −a exp(−b √(mean x_i²)) − exp(mean cos c x_i) + a + e.
Levy, w_i = 1 + (x_i − 1)/4: f = sin²(π w_1) + Σ_{i<d} (w_i − 1)² [1 + 10 sin²(π w_i + 1)]
+ (w_d − 1)² [1 + sin²(2π w_d)] (the SFU form; the paper states it the same way and maximises −f).
For d = 1 the sum is empty. The vectorised ``(n, d) -> (n,)`` functions are :func:`ackley_values`
and :func:`levy_values` (also ``problem.metadata["batch_function"]``).
"""

from __future__ import annotations

import math

import numpy as np

from pinnbo.problem import Box, Problem, check_dimension, point_oracle, register_problem

__all__ = ["ackley", "levy", "ackley_values", "levy_values"]

ACKLEY_BOUND = 32.768
LEVY_BOUND = 10.0


def ackley_values(X: np.ndarray, a: float = 20.0, b: float = 0.2, c: float = 2 * math.pi) -> np.ndarray:
    """Ackley at designs ``X`` of shape (n, d); shape (n,)."""
    X = np.asarray(X, dtype=np.float64)
    return (-a * np.exp(-b * np.sqrt(np.mean(X**2, axis=1))) - np.exp(np.mean(np.cos(c * X), axis=1))
            + a + math.e)


def levy_values(X: np.ndarray) -> np.ndarray:
    """Levy at designs ``X`` of shape (n, d); shape (n,)."""
    X = np.asarray(X, dtype=np.float64)
    w = 1.0 + (X - 1.0) / 4.0
    head = np.sin(math.pi * w[:, 0]) ** 2
    middle = np.sum((w[:, :-1] - 1.0) ** 2 * (1.0 + 10.0 * np.sin(math.pi * w[:, :-1] + 1.0) ** 2), axis=1)
    tail = (w[:, -1] - 1.0) ** 2 * (1.0 + np.sin(2.0 * math.pi * w[:, -1]) ** 2)
    return head + middle + tail


@register_problem
def ackley(dim: int = 10) -> Problem:
    """Ackley on [−32.768, 32.768]^d (a = 20, b = 0.2, c = 2π), minimised, f* = 0 at 0."""
    dim = check_dimension(dim)
    return Problem(
        name="ackley",
        domain=Box.cube(-ACKLEY_BOUND, ACKLEY_BOUND, dim),
        objective=point_oracle(ackley_values, dim, "ackley"),
        sense="minimize",
        optimum=0.0,
        optimum_location=(0.0,) * dim,
        description=f"Ackley ({dim}-D) on [-32.768, 32.768]^{dim} (SFU), minimised; no PDE",
        metadata={"batch_function": ackley_values},
    )


@register_problem
def levy(dim: int = 10) -> Problem:
    """Levy on [−10, 10]^d, minimised, f* = 0 at (1, ..., 1)."""
    dim = check_dimension(dim)
    return Problem(
        name="levy",
        domain=Box.cube(-LEVY_BOUND, LEVY_BOUND, dim),
        objective=point_oracle(levy_values, dim, "levy"),
        sense="minimize",
        optimum=0.0,
        optimum_location=(1.0,) * dim,
        description=f"Levy ({dim}-D) on [-10, 10]^{dim} (SFU), minimised; no PDE",
        metadata={"batch_function": levy_values},
    )
