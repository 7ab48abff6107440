"""Closed-form PDE solutions in 3 to 8 variables, as design problems: where the physics keeps
paying as the dimension grows (docs/results.md, "Three variables and more").

    laplace          [0, 1]^d     ∇²u = 0                  maximised, maximum on a face
    helmholtz_nd     [0, π]^d     ∇²u + (11 + d)u = 0      minimised, minimum inside
    heat_diffusion   [0, π]^s × [0, ¼]   ∂u/∂t = ∇²u, s = d − 1 space variables and the time t,
                                                         maximised, maximum on the face t = 0
    reaction_diffusion_nd  [0, 1]^d   −∇²u + u³ = f (nonlinear, a known forcing)  maximised, inside
    poisson_nd       [0, 1]^d     −∇²u = f (linear, a known source)                 maximised, inside
    advection_diffusion_nd  [0, 1]^d  −∇²u + v·∇u = f (linear, a flow and a known source)  maximised, inside
    wave_nd          [0, π]^s × [0, 2π]  ∂²u/∂t² = ∇²u, s = d − 1 space variables and the time t,
                                                         maximised, inside (hyperbolic)
    damped_wave_nd   [0, π]^s × [0, 2π]  ∂²u/∂t² + ∂u/∂t = ∇²u (the telegraph equation), maximised,
                                                         inside, early (every mode fades as e^{−t/2})

Laplace: u = Π_{i<d} sin πx_i · sinh(π√(d−1) x_d)/sinh(π√(d−1))
           + 0.9 Π_{i>1} sin πx_i · sinh(π√(d−1) x_1)/sinh(π√(d−1))
           + ¼ sin 5πx_1 · Π_{1<i<d} sin πx_i · sinh(π√(d+23) x_d)/sinh(π√(d+23)),
each term a product of sines and one sinh whose squared frequencies cancel, so harmonic; the
boundary data are continuous (every term vanishes on the faces x_i = 0), the maximum ≈ 1.25 is on
the face x_d = 1 at its centre, on a narrow ripple that decays as e^{−π√(d+23)(1−x_d)} into the
box, and a local one 0.9 on the face x_1 = 1 (the 2-D harmonic problem's layout in d variables).
Helmholtz: u = (sin 3x_1 cos 2x_2 + ½ cos 2x_1 sin 3x_2) Π_{i>2} cos(x_i − c_i), c_i inside
(0, π): each factor cos(x_i − c_i) adds 1 to the squared wavenumber, so k² = 13 + (d − 2); the
minimum is that of the 2-D Helmholtz problem (two global minima, a local one 5 % above them) at
x_i = c_i.
Heat: u = e^{−st} Π sin x_i + ½ e^{−(s+3)t} sin 2x_1 Π_{i>1} sin x_i
          + 0.3 e^{−(s+3)t} sin x_1 sin 2x_2 Π_{i>2} sin x_i,
three decaying modes of the heat equation with zero boundary data: the hottest design is at t = 0,
off the plate's centre, and the optimiser must learn how fast each mode fades.
Reaction–diffusion: u = 1.5 e^{−|p − a|²/0.05} + 1.4 e^{−|p − b|²/0.02}, the 2-D problem's two bumps
(problems/pde_kinds.py) with a_i = 0.55 and b_i = 0.3 in the extra variables, and the forcing
f = −∇²u + u³ computed symbolically: the wider bump the higher, u* ≈ 1.5 at a, the narrow one 7 %
below it, both inside; no boundary condition is declared (u is small but not zero on the faces).
Poisson: u = [(1 + x_1) sin πx_1 sin πx_2 + 0.6 sin 3πx_1 sin 2πx_2] Π_{i>2} sin πx_i, the 2-D
problem's solution (problems/pde_kinds.py) with a sine arch in every extra variable, and the source
f = −∇²u computed symbolically: u* ≈ 1.829 inside, at the 2-D maximum and ½ in the extra variables,
among several local maxima; u is zero on every face, which is not declared (as in 2-D).
Advection–diffusion: u = 1.6 e^{−|p − a|²/0.06} + 1.6 e^{−|p − b|²/0.025} + 0.3 x_1, a wide and a
narrow plume over a gentle slope, a = (0.6, 0.4) and b = (0.3, 0.75) in the first two variables,
0.45 and 0.65 in every other, carried by the flow v = (1.5, −1, ½, −½, ...) (alternating ½ in the
extra variables), and the source f = −∇²u + v·∇u computed symbolically: u* ≈ 1.78 beside a, the
narrow plume's peak 4–5 % below it, both inside; nothing is declared (u is not zero on the faces).
Wave: u = Π sin x_i cos(√s t − 1) + ½ sin 2x_1 Π_{i>1} sin x_i cos(√(s+3) t − 0.3)
          + 0.3 sin x_1 sin 2x_2 Π_{i>2} sin x_i sin(√(s+3) t),
three standing modes of a membrane (s = 2) or a box of s space variables fixed on every face
(declared), each at its own frequency: the 2-D string's modes in s dimensions, no maximum principle.
Damped wave: the same three modes, each times e^{−t/2} at the frequency √(λ − ¼) of its
eigenvalue λ (s or s + 3), which solve u_tt + u_t = ∇²u: the modes fade, all at one rate, as the
heat equation's do, but the equation is second order in time, as the wave's is.

The optimum of each is found once by L-BFGS-B from a grid of starts and cached.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp

from pinnbo.pde import PDE
from pinnbo.problem import Box, Problem, ProblemError, point_oracle, register_problem
from problems.optimum import dense_optimum
from problems.pde_kinds import poisson_values as planar_poisson_values

DIMENSIONS = (3, 8)       # the dimensions these problems are written for, inclusive
HEAT_TIME = 0.25          # the time variable's upper bound
DAMPING = 1.0             # γ of the damped wave, u_tt + γu_t = ∇²u: below 2√2, every mode oscillates
HELMHOLTZ_2D_MINIMUM = -1.2873250630603432
HELMHOLTZ_2D_ARGMIN = (0.4373755707327469, math.pi / 2)


def _check_dim(dim) -> int:
    lo, hi = DIMENSIONS
    if isinstance(dim, bool) or not isinstance(dim, int) or not lo <= dim <= hi:
        raise ProblemError(f"params.dim: expected an integer from {lo} to {hi}, got {dim!r}")
    return dim


#: (height, centre, 2σ²) of each bump of the reaction–diffusion problem in its first two variables,
#: and each centre's coordinate in every other one
REACTION_BUMPS = ((1.5, (0.65, 0.35), 0.05, 0.55), (1.4, (0.25, 0.7), 0.02, 0.3))


#: (height, centre, 2σ²) of each plume of the advection–diffusion problem in its first two
#: variables, and each centre's coordinate in every other one; the slope along x_1
PLUMES = ((1.6, (0.6, 0.4), 0.06, 0.45), (1.6, (0.3, 0.75), 0.025, 0.65))
PLUME_SLOPE = 0.3


def _bump_centre(centre: tuple[float, float], rest: float, dim: int) -> tuple[float, ...]:
    return tuple(centre) + (rest,) * (dim - 2)


def _centres(dim: int) -> np.ndarray:
    """c_i of the Helmholtz problem's extra factors, inside (0, π) and distinct."""
    return 1.0 + 0.3 * np.arange(dim - 2)


def laplace_values(X: np.ndarray) -> np.ndarray:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    d = X.shape[1]
    pi, s, r = math.pi, math.sqrt(d - 1), math.sqrt(d + 23)
    sines = np.sin(pi * X)
    first = np.prod(sines[:, :-1], axis=1) * np.sinh(pi * s * X[:, -1]) / math.sinh(pi * s)
    second = 0.9 * np.prod(sines[:, 1:], axis=1) * np.sinh(pi * s * X[:, 0]) / math.sinh(pi * s)
    ripple = 0.25 * np.sin(5 * pi * X[:, 0]) * np.prod(sines[:, 1:-1], axis=1) * np.sinh(pi * r * X[:, -1]) \
        / math.sinh(pi * r)
    return first + second + ripple


def helmholtz_values(X: np.ndarray) -> np.ndarray:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    x, y = X[:, 0], X[:, 1]
    planar = np.sin(3 * x) * np.cos(2 * y) + 0.5 * np.cos(2 * x) * np.sin(3 * y)
    return planar * np.prod(np.cos(X[:, 2:] - _centres(X.shape[1])), axis=1)


def heat_values(X: np.ndarray) -> np.ndarray:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    space, t = X[:, :-1], X[:, -1]
    s = space.shape[1]
    sines = np.sin(space)
    rest2 = np.prod(sines[:, 2:], axis=1)
    slow = np.exp(-s * t) * np.prod(sines, axis=1)
    fast = np.exp(-(s + 3) * t) * (0.5 * np.sin(2 * space[:, 0]) * np.prod(sines[:, 1:], axis=1)
                                   + 0.3 * sines[:, 0] * np.sin(2 * space[:, 1]) * rest2)
    return slow + fast


def _standing_waves(X: np.ndarray, damping: float) -> np.ndarray:
    """The three modes of u_tt + γu_t = ∇²u, each e^{−γt/2} at the frequency √(λ − γ²/4) of its
    eigenvalue λ (s or s + 3); γ = 0, the undamped wave, leaves every value as it was."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    space, t = X[:, :-1], X[:, -1]
    s = space.shape[1]
    sines = np.sin(space)
    slow, fast = math.sqrt(s - damping**2 / 4), math.sqrt(s + 3 - damping**2 / 4)
    return np.exp(-damping * t / 2) * (
        np.prod(sines, axis=1) * np.cos(slow * t - 1.0)
        + 0.5 * np.sin(2 * space[:, 0]) * np.prod(sines[:, 1:], axis=1) * np.cos(fast * t - 0.3)
        + 0.3 * sines[:, 0] * np.sin(2 * space[:, 1]) * np.prod(sines[:, 2:], axis=1) * np.sin(fast * t))


def wave_values(X: np.ndarray) -> np.ndarray:
    return _standing_waves(X, 0.0)


def damped_wave_values(X: np.ndarray) -> np.ndarray:
    return _standing_waves(X, DAMPING)


def poisson_values(X: np.ndarray) -> np.ndarray:
    """The 2-D Poisson solution (:func:`problems.pde_kinds.poisson_values`) times sin πx_i in every
    other variable."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return planar_poisson_values(X[:, :2]) * np.prod(np.sin(math.pi * X[:, 2:]), axis=1)


def _flow(dim: int) -> tuple[float, ...]:
    """v of the advection–diffusion problem: (1.5, −1) in the first two variables, then ½, −½, ..."""
    return (1.5, -1.0) + tuple(0.5 * (-1) ** i for i in range(dim - 2))


def _bump_values(X: np.ndarray, bumps) -> np.ndarray:
    """Σ h e^{−|p − c|²/w} of ``bumps`` (as :func:`_bumps`) at the points X (N, d)."""
    d = X.shape[1]
    return sum(h * np.exp(-np.sum((X - np.asarray(_bump_centre(c, r, d))) ** 2, axis=1) / w) for h, c, w, r in bumps)


def advection_values(X: np.ndarray) -> np.ndarray:
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    return PLUME_SLOPE * X[:, 0] + _bump_values(X, PLUMES)


def reaction_values(X: np.ndarray) -> np.ndarray:
    return _bump_values(np.atleast_2d(np.asarray(X, dtype=np.float64)), REACTION_BUMPS)


@functools.lru_cache(maxsize=None)
def _optimum(kind: str, dim: int) -> tuple[float, tuple[float, ...]]:
    """(u*, x*) in the problem's own sense (:func:`problems.optimum.dense_optimum`)."""
    domain, values, sense = _spec(kind, dim)
    return dense_optimum(values, domain.lower, domain.upper, sense)


#: Each kind's oracle, sense, space width and, where time is the last variable, its end
_KINDS = {"laplace": (laplace_values, "maximize", 1.0, None),
          "helmholtz": (helmholtz_values, "minimize", math.pi, None),
          "reaction": (reaction_values, "maximize", 1.0, None),
          "poisson": (poisson_values, "maximize", 1.0, None),
          "advection": (advection_values, "maximize", 1.0, None),
          "heat": (heat_values, "maximize", math.pi, HEAT_TIME),
          "wave": (wave_values, "maximize", math.pi, 2 * math.pi),
          "damped_wave": (damped_wave_values, "maximize", math.pi, 2 * math.pi)}


def _spec(kind: str, dim: int):
    values, sense, width, end = _KINDS[kind]
    space = dim if end is None else dim - 1
    names = tuple(f"x{i + 1}" for i in range(space)) + (() if end is None else ("t",))
    upper = (width,) * space + (() if end is None else (end,))
    return Box((0.0,) * dim, upper, names), values, sense


def _problem(kind: str, name: str, dim, equation, description: str, optimum=None, boundary=None,
             source=None) -> Problem:
    """The problem ``kind`` in ``dim`` variables: its PDE ``equation(symbols, u) = source(symbols)``
    (0 without one) in the unknown u of the box's variables with the boundary conditions
    ``boundary(symbols)``, and its optimum (found once where not given)."""
    dim = _check_dim(dim)
    domain, values, sense = _spec(kind, dim)
    symbols = sp.symbols(domain.names)
    value, location = optimum or _optimum(kind, dim)
    pde = PDE(equation(symbols, sp.Function("u")(*symbols)), rhs=source(symbols) if source is not None else 0,
              boundary=boundary(symbols) if boundary is not None else None)
    return Problem(name, domain, point_oracle(values, dim, name), sense, pde=pde, optimum=value,
                   optimum_location=location, description=description.format(dim=dim))


def _fixed_space_faces(symbols):
    """u = 0 on both faces of every space variable (all but the last, the time) of [0, π]^s."""
    return [(x, at, 0) for x in symbols[:-1] for at in (0, sp.pi)]


def _bumps(symbols, bumps):
    """Σ h e^{−|p − c|²/w} of ``bumps`` ((h, centre in the first two variables, w, every other
    coordinate of the centre), ...) in ``symbols``, exactly."""
    return sum(sp.Float(h) * sp.exp(-sum((x - sp.Float(c)) ** 2
                                         for x, c in zip(symbols, _bump_centre(centre, rest, len(symbols))))
                                    / sp.Float(w))
               for h, centre, w, rest in bumps)


def _laplacian(symbols, u):
    return sum(u.diff(x, 2) for x in symbols)


@register_problem
def laplace(dim: int = 3) -> Problem:
    """A harmonic function on [0, 1]^dim with continuous boundary data, maximised on the face
    x_dim = 1; the faces at the origin are held at zero (declared).

    Args:
        dim: number of variables, 3 to 8.
    """
    return _problem("laplace", "laplace", dim, _laplacian,
                    "a harmonic function on [0, 1]^{dim}, continuous boundary data, maximum on a face",
                    boundary=lambda xs: [(x, 0, 0) for x in xs])


@register_problem
def helmholtz_nd(dim: int = 3) -> Problem:
    """A Helmholtz solution on [0, π]^dim, ∇²u + (11 + dim)u = 0, minimised inside the box.

    Args:
        dim: number of variables, 3 to 8.
    """
    known = None if not isinstance(dim, int) or isinstance(dim, bool) else \
        (HELMHOLTZ_2D_MINIMUM, HELMHOLTZ_2D_ARGMIN + tuple(float(c) for c in _centres(dim)))
    return _problem("helmholtz", "helmholtz_nd", dim, lambda xs, u: _laplacian(xs, u) + (11 + len(xs)) * u,
                    "a Helmholtz solution on [0, pi]^{dim}, two global minima and a 5% local one", known)


@register_problem
def heat_diffusion(dim: int = 3) -> Problem:
    """Heat diffusing in [0, π]^(dim−1) with zero boundary data (declared), ∂u/∂t = ∇²u, time t in
    [0, ¼] the last variable: maximised (at t = 0, off the centre).

    Args:
        dim: number of variables, space and time, 3 to 8.
    """
    return _problem("heat", "heat_diffusion", dim, lambda xs, u: u.diff(xs[-1]) - _laplacian(xs[:-1], u),
                    "heat diffusing in {dim} variables, space and time, three decaying modes",
                    boundary=_fixed_space_faces)


@register_problem
def reaction_diffusion_nd(dim: int = 3) -> Problem:
    """−∇²u + u³ = f on [0, 1]^dim (nonlinear) with a known forcing: maximised inside (two bumps,
    u* ≈ 1.5).

    Args:
        dim: number of variables, 3 to 8.
    """
    def operator(symbols, u):
        return -_laplacian(symbols, u) + u**3

    def forcing(symbols):
        return operator(symbols, _bumps(symbols, REACTION_BUMPS))

    return _problem("reaction", "reaction_diffusion_nd", dim, operator,
                    "a nonlinear reaction-diffusion problem on [0, 1]^{dim} with a known forcing, two bumps inside",
                    source=forcing)


@register_problem
def poisson_nd(dim: int = 3) -> Problem:
    """−∇²u = f on [0, 1]^dim with a known source: maximised inside (u* ≈ 1.829, several local
    maxima); u is zero on the faces, undeclared.

    Args:
        dim: number of variables, 3 to 8.
    """
    def source(symbols):
        pi = sp.pi
        x, y = symbols[:2]
        exact = ((1 + x) * sp.sin(pi * x) * sp.sin(pi * y) + sp.Rational(3, 5) * sp.sin(3 * pi * x)
                 * sp.sin(2 * pi * y)) * sp.Mul(*(sp.sin(pi * s) for s in symbols[2:]))
        return sp.expand(-_laplacian(symbols, exact))

    return _problem("poisson", "poisson_nd", dim, lambda xs, u: -_laplacian(xs, u),
                    "a Poisson problem on [0, 1]^{dim} with a known source, several maxima inside",
                    source=source)


@register_problem
def advection_diffusion_nd(dim: int = 3) -> Problem:
    """−∇²u + v·∇u = f on [0, 1]^dim, a steady flow v with a known source: maximised inside (two
    plumes, u* ≈ 1.78, the narrow one 4–5 % lower); nothing is declared on the faces.

    Args:
        dim: number of variables, 3 to 8.
    """
    def operator(symbols, u):
        return -_laplacian(symbols, u) + sum(sp.Float(v) * u.diff(x) for v, x in zip(_flow(len(symbols)), symbols))

    def source(symbols):
        return operator(symbols, sp.Float(PLUME_SLOPE) * symbols[0] + _bumps(symbols, PLUMES))

    return _problem("advection", "advection_diffusion_nd", dim, operator,
                    "a steady advection-diffusion problem on [0, 1]^{dim} with a known source, two plumes inside",
                    source=source)


@register_problem
def wave_nd(dim: int = 3) -> Problem:
    """Standing waves in [0, π]^(dim−1) fixed on every face (declared), ∂²u/∂t² = ∇²u, time t in
    [0, 2π] the last variable: the largest displacement, inside (no maximum principle).

    Args:
        dim: number of variables, space and time, 3 to 8.
    """
    return _problem("wave", "wave_nd", dim, lambda xs, u: u.diff(xs[-1], 2) - _laplacian(xs[:-1], u),
                    "standing waves in {dim} variables, space and time, fixed on every face, three modes",
                    boundary=_fixed_space_faces)


@register_problem
def damped_wave_nd(dim: int = 3) -> Problem:
    """Damped standing waves in [0, π]^(dim−1) fixed on every face (declared), the telegraph
    equation ∂²u/∂t² + ∂u/∂t = ∇²u, time t in [0, 2π] the last variable: the largest displacement,
    inside, early (every mode fades as e^{−t/2}).

    Args:
        dim: number of variables, space and time, 3 to 8.
    """
    return _problem("damped_wave", "damped_wave_nd", dim,
                    lambda xs, u: u.diff(xs[-1], 2) + DAMPING * u.diff(xs[-1]) - _laplacian(xs[:-1], u),
                    "damped standing waves in {dim} variables, space and time, fixed on every face, three modes",
                    boundary=_fixed_space_faces)
