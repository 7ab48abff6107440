"""Closed-form solutions of 2-D PDEs, as design problems: the physics-informed methods measured
beyond the papers' tasks, on two linear PDEs and a nonlinear one (the harmonic function was added
after the methods' defaults were chosen, as a check on them).

    helmholtz   [0, π]²  ∇²u + 13u = 0 (linear)       u = sin 3x cos 2y + ½ cos 2x sin 3y, minimised
    liouville   [0, 1]²  ∇²u + eᵘ = 0 (nonlinear)     u = ln 8λ² − 2 ln(1 + λ²|p − c|²), maximised
    harmonic    [0, 1]²  ∇²u = 0 (linear)              u = Σ separable terms, below; maximised

Helmholtz: two global minima u* = −1.2873250630603432 at (0.43738, π/2) and (π − 0.43738, π/2),
and a local one 5% above them (−1.21985), so a method must find the right basin; the value is the
root of −3 cos 3x + sin 2x = 0 on y = π/2, where both y-derivatives vanish.
Liouville's equation has this radial family of solutions for every λ > 0 and centre c; its
maximum ln 8λ² is at c, and λ sets the peak's width 1/λ. PINN-BO takes the PDE as it is; the
PDE-conditioned GP through its linearisation about the GP's mean.
Harmonic: u = sin πx sinh πy / sinh π + ¼ sin 5πx sinh 5πy / sinh 5π + 0.9 sin πy sinh πx / sinh π,
the harmonic function with boundary data sin πx + ¼ sin 5πx on the top edge, 0.9 sin πy on the
right one and 0 on the others: continuous data (zero at every corner), so its maximum u* = 1.25
at (½, 1) is on an edge by the maximum principle and not beside a jump, as on the heat plates; a
local maximum 0.9 at (1, ½); the ripple sin 5πx decays as e^{−5π(1−y)} into the plate, so interior
values barely show how narrow the peak is.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from pinnbo.pde import PDE
from pinnbo.problem import Box, Problem, ProblemError, point_oracle, register_problem

HELMHOLTZ_MINIMUM = -1.2873250630603432
HELMHOLTZ_ARGMIN = (0.4373755707327469, math.pi / 2)


def helmholtz_values(X: np.ndarray) -> np.ndarray:
    """u(x, y) = sin 3x cos 2y + ½ cos 2x sin 3y at points X (n, 2)."""
    x, y = np.asarray(X, dtype=np.float64).T
    return np.sin(3 * x) * np.cos(2 * y) + 0.5 * np.cos(2 * x) * np.sin(3 * y)


def liouville_values(X: np.ndarray, width: float, center: tuple[float, float]) -> np.ndarray:
    """u = ln 8λ² − 2 ln(1 + λ²|p − c|²) at points X (n, 2), λ = ``width``."""
    X = np.asarray(X, dtype=np.float64)
    r2 = np.sum((X - np.asarray(center)) ** 2, axis=1)
    return math.log(8 * width**2) - 2 * np.log1p(width**2 * r2)


HARMONIC_MAXIMUM = 1.25
HARMONIC_ARGMAX = (0.5, 1.0)


def harmonic_values(X: np.ndarray) -> np.ndarray:
    """The harmonic function of the module docstring at points X (n, 2)."""
    x, y = np.asarray(X, dtype=np.float64).T
    pi = math.pi
    return (np.sin(pi * x) * np.sinh(pi * y) / math.sinh(pi)
            + 0.25 * np.sin(5 * pi * x) * np.sinh(5 * pi * y) / math.sinh(5 * pi)
            + 0.9 * np.sin(pi * y) * np.sinh(pi * x) / math.sinh(pi))


def _laplacian() -> tuple[sp.Symbol, sp.Symbol, sp.Expr, sp.Expr]:
    x, y = sp.symbols("x y")
    u = sp.Function("u")(x, y)
    return x, y, u, u.diff(x, 2) + u.diff(y, 2)


def _field(values, domain: Box):
    """The problem's ``field_plot``: the true field on an n × n grid of ``domain``."""

    def field(n: int):
        xs = np.linspace(domain.lower[0], domain.upper[0], n)
        ys = np.linspace(domain.lower[1], domain.upper[1], n)
        X, Y = np.meshgrid(xs, ys)
        return xs, ys, values(np.stack([X.ravel(), Y.ravel()], axis=1)).reshape(n, n)

    return field


@register_problem
def helmholtz() -> Problem:
    """u = sin 3x cos 2y + ½ cos 2x sin 3y on [0, π]², ∇²u + 13u = 0, minimised (u* = −1.28733)."""
    _, _, u, laplacian = _laplacian()
    domain = Box((0.0, 0.0), (math.pi, math.pi), ("x", "y"))
    return Problem("helmholtz", domain, point_oracle(helmholtz_values, 2, "helmholtz"), "minimize",
                   pde=PDE(laplacian + 13 * u, rhs=0), optimum=HELMHOLTZ_MINIMUM, optimum_location=HELMHOLTZ_ARGMIN,
                   field_plot=_field(helmholtz_values, domain),
                   description="a Helmholtz solution on [0, pi]^2, two global minima and a 5% local one")


@register_problem
def liouville(width: float = 6.0, center: list = (0.73, 0.31)) -> Problem:
    """u = ln 8λ² − 2 ln(1 + λ²|p − c|²) on [0, 1]², ∇²u + exp(u) = 0 (nonlinear), maximised at c.

    Args:
        width: λ > 0; the peak's width is 1/λ and its height ln 8λ².
        center: c = [x, y] in the unit square, where the maximum is.
    """
    if not (isinstance(width, (int, float)) and math.isfinite(width) and width > 0):
        raise ProblemError(f"params.width: expected a number > 0, got {width!r}")
    c = tuple(float(v) for v in center)
    if len(c) != 2 or not all(0.0 <= v <= 1.0 for v in c):
        raise ProblemError(f"params.center: expected [x, y] in [0, 1]^2, got {list(center)!r}")
    _, _, u, laplacian = _laplacian()

    def values(X: np.ndarray) -> np.ndarray:
        return liouville_values(X, float(width), c)

    domain = Box((0.0, 0.0), (1.0, 1.0), ("x", "y"))
    return Problem("liouville", domain, point_oracle(values, 2, "liouville"), "maximize",
                   pde=PDE(laplacian + sp.exp(u), rhs=0), optimum=math.log(8 * width**2), optimum_location=c,
                   field_plot=_field(values, domain),
                   description=f"a Liouville solution on [0, 1]^2 (nonlinear PDE), peak of width 1/{width:g} at {c}")


@register_problem
def harmonic() -> Problem:
    """A harmonic function on [0, 1]² with continuous boundary data, maximised (u* = 1.25 at (½, 1),
    on the top edge)."""
    _, _, _, laplacian = _laplacian()
    domain = Box((0.0, 0.0), (1.0, 1.0), ("x", "y"))
    return Problem("harmonic", domain, point_oracle(harmonic_values, 2, "harmonic"), "maximize",
                   pde=PDE(laplacian, rhs=0), optimum=HARMONIC_MAXIMUM, optimum_location=HARMONIC_ARGMAX,
                   field_plot=_field(harmonic_values, domain),
                   description="a harmonic function on [0, 1]^2 with continuous boundary data, maximum on an edge")
