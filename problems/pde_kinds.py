"""Closed-form solutions of PDEs of other kinds than Laplace's and Helmholtz's, as design problems:
a source, a nonlinear reaction, a hyperbolic equation and an ODE with a design parameter
(docs/results.md, "Does the PDE pay?").

    poisson             [0, 1]²            −∇²u = f (linear, a source)               maximised
    reaction_diffusion  [0, 1]²            −∇²u + u³ = f (nonlinear, a forcing)      maximised
    wave                [0, π] × [0, 2π]   ∂²u/∂t² = ∂²u/∂x² (hyperbolic)           maximised
    forced_oscillator   [0, 12] × [½, 3⁄2]  ∂²u/∂t² + 2ζ ∂u/∂t + u = cos ωt (an ODE in t,
                                            the forcing frequency ω a parameter)   maximised

Poisson: u = (1 + x) sin πx sin πy + 0.6 sin 3πx sin 2πy, zero on the boundary, with the source
f = −∇²u = [2π²(1 + x) sin πx − 2π cos πx] sin πy + 7.8π² sin 3πx sin 2πy; the ripple makes
several interior maxima, the highest u* ≈ 1.829 near (0.52, 0.65).
Reaction–diffusion: u = 1.5 e^{−|p − a|²/0.05} + 1.4 e^{−|p − b|²/0.02}, a = (0.65, 0.35),
b = (0.25, 0.7), with the forcing f = −∇²u + u³ the problem computes symbolically; two bumps
within 7 % of each other, the wider one higher (the form of Chen, Hosseini, Owhadi & Stuart 2021).
Wave: u = sin x cos(t − 1) + ½ sin 2x cos(2t − 0.3) + 0.3 sin 3x sin 3t, standing waves on a
string fixed at both ends, each mode solving the wave equation at unit speed; the largest
displacement u* ≈ 1.284 is at (1.81, 1.47) and a second peak 1.223 at (0.78, 0.44). No maximum
principle holds, so the peak is inside the box.
Forced oscillator: a damped oscillator (ζ = 0.15) starting at rest, driven by cos ωt; u(t, ω) is
its displacement at time t, the sum of the steady response A cos ωt + B sin ωt,
A = (1 − ω²)/D, B = 2ζω/D, D = (1 − ω²)² + (2ζω)², and the transient that cancels it at t = 0,
e^{−ζt}(C cos ω_d t + E sin ω_d t), C = −A, E = (ζC − Bω)/ω_d, ω_d = √(1 − ζ²). The equation holds
in t for every ω; the largest displacement u* ≈ 2.472 is before the transient dies, near
t = 8.7, ω = 0.85, off the resonance.

The optimum of each is found once by :func:`problems.optimum.dense_optimum` and cached.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp

from pinnbo.pde import PDE
from pinnbo.problem import Box, Problem, point_oracle, register_problem
from problems.optimum import dense_optimum

DAMPING = 0.15          # ζ of the forced oscillator
PI = math.pi


def poisson_values(X: np.ndarray) -> np.ndarray:
    x, y = np.atleast_2d(np.asarray(X, dtype=np.float64)).T
    return (1 + x) * np.sin(PI * x) * np.sin(PI * y) + 0.6 * np.sin(3 * PI * x) * np.sin(2 * PI * y)


BUMPS = ((1.5, (0.65, 0.35), 0.05), (1.4, (0.25, 0.7), 0.02))   # (height, centre, 2σ²) of each bump


def reaction_diffusion_values(X: np.ndarray) -> np.ndarray:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return sum(h * np.exp(-np.sum((X - np.asarray(c)) ** 2, axis=1) / w) for h, c, w in BUMPS)


def wave_values(X: np.ndarray) -> np.ndarray:
    x, t = np.atleast_2d(np.asarray(X, dtype=np.float64)).T
    return np.sin(x) * np.cos(t - 1.0) + 0.5 * np.sin(2 * x) * np.cos(2 * t - 0.3) + 0.3 * np.sin(3 * x) * np.sin(3 * t)


def forced_oscillator_values(X: np.ndarray) -> np.ndarray:
    t, w = np.atleast_2d(np.asarray(X, dtype=np.float64)).T
    z = DAMPING
    D = (1 - w**2) ** 2 + (2 * z * w) ** 2
    A, B = (1 - w**2) / D, 2 * z * w / D
    wd = math.sqrt(1 - z * z)
    C, E = -A, (-z * A - B * w) / wd
    return A * np.cos(w * t) + B * np.sin(w * t) + np.exp(-z * t) * (C * np.cos(wd * t) + E * np.sin(wd * t))


_DOMAINS = {
    "poisson": (Box((0.0, 0.0), (1.0, 1.0), ("x", "y")), poisson_values),
    "reaction_diffusion": (Box((0.0, 0.0), (1.0, 1.0), ("x", "y")), reaction_diffusion_values),
    "wave": (Box((0.0, 0.0), (PI, 2 * PI), ("x", "t")), wave_values),
    "forced_oscillator": (Box((0.0, 0.5), (12.0, 1.5), ("t", "w")), forced_oscillator_values),
}


@functools.lru_cache(maxsize=None)
def _optimum(name: str) -> tuple[float, tuple[float, ...]]:
    domain, values = _DOMAINS[name]
    return dense_optimum(values, domain.lower, domain.upper, "maximize")


def _problem(name: str, pde: PDE, description: str) -> Problem:
    domain, values = _DOMAINS[name]
    value, location = _optimum(name)
    return Problem(name, domain, point_oracle(values, 2, name), "maximize", pde=pde, optimum=value,
                   optimum_location=location, description=description)


def _unknown(names: str):
    a, b = sp.symbols(names)
    return a, b, sp.Function("u")(a, b)


@register_problem
def poisson() -> Problem:
    """−∇²u = f on [0, 1]², zero boundary data and a known source: maximised inside (u* ≈ 1.829)."""
    x, y, u = _unknown("x y")
    pi = sp.pi
    source = (2 * pi**2 * (1 + x) * sp.sin(pi * x) - 2 * pi * sp.cos(pi * x)) * sp.sin(pi * y) \
        + sp.Rational(39, 5) * pi**2 * sp.sin(3 * pi * x) * sp.sin(2 * pi * y)
    return _problem("poisson", PDE(-(u.diff(x, 2) + u.diff(y, 2)), rhs=source),
                    "a Poisson problem on [0, 1]^2 with a known source, several maxima inside")


@register_problem
def reaction_diffusion() -> Problem:
    """−∇²u + u³ = f on [0, 1]² (nonlinear) with a known forcing: maximised (two bumps, u* = 1.5)."""
    x, y, u = _unknown("x y")
    exact = sum(sp.Float(h) * sp.exp(-((x - c[0]) ** 2 + (y - c[1]) ** 2) / sp.Float(w)) for h, c, w in BUMPS)
    forcing = -(exact.diff(x, 2) + exact.diff(y, 2)) + exact**3
    return _problem("reaction_diffusion", PDE(-(u.diff(x, 2) + u.diff(y, 2)) + u**3, rhs=forcing),
                    "a nonlinear reaction-diffusion problem on [0, 1]^2 with a known forcing, two bumps")


@register_problem
def wave() -> Problem:
    """Standing waves on a string, ∂²u/∂t² = ∂²u/∂x² on [0, π] × [0, 2π], fixed at both ends
    (u = 0 at x = 0 and x = π, declared): the largest displacement (u* ≈ 1.284, inside: no maximum
    principle)."""
    x, t, u = _unknown("x t")
    return _problem("wave", PDE(u.diff(t, 2) - u.diff(x, 2), rhs=0, boundary=[(x, 0, 0), (x, sp.pi, 0)]),
                    "standing waves on a string fixed at both ends, the largest displacement in space and time")


@register_problem
def forced_oscillator() -> Problem:
    """A damped oscillator driven by cos ωt from rest, u'' + 2ζu' + u = cos ωt in t for each forcing
    frequency ω in [½, 3⁄2]: the largest displacement over t in [0, 12] and ω (u* ≈ 2.472)."""
    t, w, u = _unknown("t w")
    return _problem("forced_oscillator", PDE(u.diff(t, 2) + 2 * DAMPING * u.diff(t) + u, rhs=sp.cos(w * t)),
                    "a damped oscillator driven from rest, the largest displacement over time and forcing frequency")
