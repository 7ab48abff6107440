"""Synthetic benchmarks of the PINN-BO paper, each with the PDE its objective satisfies.

Five factories, registered for case files (``problem: rastrigin``)::

    dropwave(dim=2)            [-5.12, 5.12]^d   rotation invariance            f* = -1 at 0
    styblinski_tang(dim=10)    [-5, 5]^d         sum of the partials            f* = -39.16617 d
    rastrigin(dim=20)          [-5.12, 5.12]^d   Euler-type homogeneity         f* = 0 at 0
    michalewicz(dim=30, m=10)  [0, pi]^d         sum_i h_i df/dx_i = f          f* = -29.6309 (d=30)
    cosine_mixture(dim=50)     [-1, 1]^d         one equation per coordinate    f* = -3.1506 (d=50)

All are minimised and written in the variables ``x1..xd``; observation noise is a case-level
setting (``noise:`` in the case file, a fraction of the objective's standard deviation). The PDEs
are the corrected ones of docs/algorithms.md, "Synthetic functions", checked here and in
``tests/problems/test_synthetic.py`` by applying each compiled residual to the true function.
Where the paper's appendix (A.1) differs:

- DropWave: the paper's denominator reads 0.5(x1² + x1²) + 2, a typo for 0.5(x1² + x2²) + 2.
- Rastrigin: the paper writes xᵀ∇f − f = 10 Σ (cos 2πx_i + πx_i sin 2πx_i − 1); that identity is
  false (the factor ½ is missing): the true one is ½ xᵀ∇f − f = 10 Σ (cos 2πx_i + πx_i sin 2πx_i) − 10d.
- Michalewicz: the paper's h_i = [cot x_i + 2x_i(2m−1)/tan(i x_i²/π)]⁻¹ is wrong; the true one is
  h_i = [cot x_i + 4 m i x_i/(π tan(i x_i²/π))]⁻¹ (see :func:`michalewicz`).
- Cosine Mixture: the paper states Σ_i (∂f/∂x_i − 2x_i + 0.5π sin 5πx_i)² = 0, which is the same
  constraint as the d equations used here, one residual column per coordinate.

Each objective has one source of truth, a batched torch function ``(N, d) -> (N,)`` collected in
:data:`TORCH_FUNCTIONS` (and bound to the problem's parameters in ``problem.metadata
["torch_function"]``); the numpy oracle ``objective(x) -> float`` evaluates it in float64.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np
import sympy as sp
import torch
from scipy.optimize import brentq

from pinnbo.errors import shown
from pinnbo.pde import PDE
from pinnbo.problem import Box, Problem, ProblemError, check_dimension, register_problem

__all__ = [
    "TORCH_FUNCTIONS",
    "dropwave",
    "styblinski_tang",
    "rastrigin",
    "michalewicz",
    "cosine_mixture",
    "dropwave_torch",
    "styblinski_tang_torch",
    "rastrigin_torch",
    "michalewicz_torch",
    "cosine_mixture_torch",
    "michalewicz_h",
    "michalewicz_collocation_filter",
    "michalewicz_optimum",
    "MICHALEWICZ_H_MAX",
]


# ---------------------------------------------------------------------------------------------
# True functions, batched torch: x (N, d) -> (N,). Differentiable; used as the oracle's core.
# ---------------------------------------------------------------------------------------------


def dropwave_torch(x: torch.Tensor) -> torch.Tensor:
    """f(x) = −(1 + cos 12r)/(0.5 r² + 2), r = ‖x‖ (any d ≥ 1; the paper's is d = 2)."""
    r2 = (x * x).sum(-1)
    # cos(12 r) is a smooth function of r²; clamping keeps the gradient at the origin 0 (the true
    # value) instead of the nan that d sqrt(r²)/d r² = inf at r = 0 would give.
    r = torch.sqrt(r2.clamp_min(torch.finfo(x.dtype).tiny))
    return -(1.0 + torch.cos(12.0 * r)) / (0.5 * r2 + 2.0)


def styblinski_tang_torch(x: torch.Tensor) -> torch.Tensor:
    """f(x) = ½ Σ (x_i⁴ − 16 x_i² + 5 x_i)."""
    return 0.5 * (x**4 - 16.0 * x**2 + 5.0 * x).sum(-1)


def rastrigin_torch(x: torch.Tensor) -> torch.Tensor:
    """f(x) = 10 d + Σ (x_i² − 10 cos 2πx_i)."""
    return 10.0 * x.shape[-1] + (x**2 - 10.0 * torch.cos(2.0 * math.pi * x)).sum(-1)


def michalewicz_torch(x: torch.Tensor, m: int = 10) -> torch.Tensor:
    """f(x) = −Σ_i sin x_i sin^{2m}(i x_i²/π), i = 1..d."""
    i = torch.arange(1, x.shape[-1] + 1, dtype=x.dtype, device=x.device)
    return -(torch.sin(x) * torch.sin(i * x**2 / math.pi) ** (2 * m)).sum(-1)


def cosine_mixture_torch(x: torch.Tensor) -> torch.Tensor:
    """f(x) = 0.1 Σ cos 5πx_i + Σ x_i² (the paper's sign: minimised, f* < 0)."""
    return (0.1 * torch.cos(5.0 * math.pi * x) + x**2).sum(-1)


#: The true functions by problem name, each ``fn(x) -> (N,)`` for a batch ``x`` of shape (N, d)
#: (Michalewicz also takes ``m=``).
TORCH_FUNCTIONS: dict[str, Callable[..., torch.Tensor]] = {
    "dropwave": dropwave_torch,
    "styblinski_tang": styblinski_tang_torch,
    "rastrigin": rastrigin_torch,
    "michalewicz": michalewicz_torch,
    "cosine_mixture": cosine_mixture_torch,
}


# ---------------------------------------------------------------------------------------------
# Parameters, oracle, shared assembly
# ---------------------------------------------------------------------------------------------


def _oracle(fn: Callable[[torch.Tensor], torch.Tensor], dim: int, name: str) -> Callable[[np.ndarray], float]:
    """The numpy objective ``x (d,) -> float``, evaluating the torch function in float64."""

    def objective(x: np.ndarray) -> float:
        arr = np.asarray(x, dtype=np.float64)
        if arr.size != dim:
            raise ProblemError(f"{name}: expected a design with {dim} values, got shape {arr.shape}")
        with torch.no_grad():
            return float(fn(torch.tensor(arr.reshape(1, dim), dtype=torch.float64))[0])

    objective.__doc__ = f"{name}: true (noise-free) value at one design x of shape ({dim},)."
    return objective


def _unknown(box: Box) -> tuple[list[sp.Symbol], sp.Expr]:
    xs = list(sp.symbols(list(box.names)))
    return xs, sp.Function("f")(*xs)


# ---------------------------------------------------------------------------------------------
# DropWave
# ---------------------------------------------------------------------------------------------


@register_problem
def dropwave(dim: int = 2) -> Problem:
    """DropWave on [−5.12, 5.12]^d, f = −(1 + cos 12‖x‖)/(0.5‖x‖² + 2), f* = −1 at 0.

    PDE (rotation invariance, N[f] = 0): for d = 2 the paper's single equation
    x1 ∂f/∂x2 − x2 ∂f/∂x1 = 0. Generalised to d ≥ 2 (our choice) as the d − 1 equations
    x_k ∂f/∂x_{k+1} − x_{k+1} ∂f/∂x_k = 0, k = 1..d−1: these consecutive-pair rotation generators
    generate the whole Lie algebra so(d) by commutators, so together they say exactly that f is
    radial. d = 1 has no rotations and is rejected.
    """
    dim = check_dimension(dim, 2, " (DropWave's PDE is rotation invariance, which needs two variables)")
    box = Box.cube(-5.12, 5.12, dim)
    xs, f = _unknown(box)
    generators = [xs[k] * f.diff(xs[k + 1]) - xs[k + 1] * f.diff(xs[k]) for k in range(dim - 1)]
    pde = PDE(generators[0], rhs=0) if dim == 2 else PDE(generators, rhs=[0] * (dim - 1))
    fn = dropwave_torch
    return Problem(
        name="dropwave",
        domain=box,
        objective=_oracle(fn, dim, "dropwave"),
        sense="minimize",
        pde=pde,
        optimum=-1.0,
        optimum_location=[0.0] * dim,
        description=(
            f"DropWave ({dim}-D), minimised; PDE: rotation invariance "
            + ("x1 df/dx2 - x2 df/dx1 = 0" if dim == 2 else f"({dim - 1} consecutive-pair generators)")
        ),
        metadata={"torch_function": fn},
    )


# ---------------------------------------------------------------------------------------------
# Styblinski-Tang
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _styblinski_tang_coordinate_minimum() -> tuple[float, float]:
    """(t*, φ(t*)) for φ(t) = ½(t⁴ − 16t² + 5t) on [−5, 5]: the best root of φ' = 2t³ − 16t + 5/2."""
    roots = np.roots([2.0, 0.0, -16.0, 2.5]).real
    phi = lambda t: 0.5 * (t**4 - 16.0 * t**2 + 5.0 * t)  # noqa: E731
    candidates = np.concatenate([roots, [-5.0, 5.0]])
    t = float(candidates[np.argmin(phi(candidates))])
    return t, float(phi(t))


@register_problem
def styblinski_tang(dim: int = 10) -> Problem:
    """Styblinski-Tang on [−5, 5]^d, f = ½ Σ (x_i⁴ − 16x_i² + 5x_i).

    PDE: Σ ∂f/∂x_i = Σ (2x_i³ − 16x_i + 5/2) (one equation). f* = −39.16616570… d at
    x_i = −2.90353402…, the root of 2t³ − 16t + 5/2 computed here (not typed in).
    """
    dim = check_dimension(dim)
    box = Box.cube(-5.0, 5.0, dim)
    xs, f = _unknown(box)
    pde = PDE(
        sum(f.diff(x) for x in xs),
        rhs=sum(2 * x**3 - 16 * x + sp.Rational(5, 2) for x in xs),
    )
    t, value = _styblinski_tang_coordinate_minimum()
    fn = styblinski_tang_torch
    return Problem(
        name="styblinski_tang",
        domain=box,
        objective=_oracle(fn, dim, "styblinski_tang"),
        sense="minimize",
        pde=pde,
        optimum=dim * value,
        optimum_location=[t] * dim,
        description=f"Styblinski-Tang ({dim}-D), minimised; PDE: sum_i df/dx_i = sum_i (2x_i^3 - 16x_i + 5/2)",
        metadata={"torch_function": fn},
    )


# ---------------------------------------------------------------------------------------------
# Rastrigin
# ---------------------------------------------------------------------------------------------


@register_problem
def rastrigin(dim: int = 20) -> Problem:
    """Rastrigin on [−5.12, 5.12]^d, f = 10d + Σ (x_i² − 10 cos 2πx_i), f* = 0 at 0.

    PDE: ½ xᵀ∇f − f = 10 Σ (cos 2πx_i + πx_i sin 2πx_i) − 10d. (The paper's xᵀ∇f − f = 10 Σ (cos
    2πx_i + πx_i sin 2πx_i − 1) drops the ½ and does not hold.) The residual's terms reach about
    10 d (1 + 5.12π) ≈ 3.4e3 at d = 20, so a float64 residual of the true f is ~1e-12, not 1e-16.
    """
    dim = check_dimension(dim)
    box = Box.cube(-5.12, 5.12, dim)
    xs, f = _unknown(box)
    pde = PDE(
        sp.Rational(1, 2) * sum(x * f.diff(x) for x in xs) - f,
        rhs=10 * sum(sp.cos(2 * sp.pi * x) + sp.pi * x * sp.sin(2 * sp.pi * x) for x in xs) - 10 * dim,
    )
    fn = rastrigin_torch
    return Problem(
        name="rastrigin",
        domain=box,
        objective=_oracle(fn, dim, "rastrigin"),
        sense="minimize",
        pde=pde,
        optimum=0.0,
        optimum_location=[0.0] * dim,
        description=(
            f"Rastrigin ({dim}-D), minimised; PDE: 1/2 x.grad f - f = "
            "10 sum_i (cos 2 pi x_i + pi x_i sin 2 pi x_i) - 10 d"
        ),
        metadata={"torch_function": fn},
    )


# ---------------------------------------------------------------------------------------------
# Michalewicz
# ---------------------------------------------------------------------------------------------

#: Default bound on |h_i| for Michalewicz collocation points (see :func:`michalewicz_collocation_filter`).
MICHALEWICZ_H_MAX = 1.0


def michalewicz_h(x: np.ndarray, m: int = 10) -> np.ndarray:
    """The PDE coefficients h_i(x_i) for points ``x`` of shape (N, d) (column i−1 is x_i).

    h_i = s_i/s_i' with s_i(t) = sin t sin^{2m}(u), u = i t²/π, i.e.
    h_i = [cot t + 4 m i t/(π tan u)]⁻¹ = sin t sin u / (cos t sin u + (4 m i t/π) sin t cos u).
    The second (equivalent) form has no infinite intermediate: where sin t = 0 or sin u = 0 the
    first form divides by zero but h_i → 0 (a removable singularity). Its only true singularities
    are the poles where the denominator vanishes: the critical points of s_i (s_i' = 0, s_i ≠ 0),
    one near each u = π/2 + kπ, plus 0/0 at t = 0 exactly.
    """
    x = np.asarray(x, dtype=np.float64)
    i = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
    u = i * x**2 / np.pi
    with np.errstate(divide="ignore", invalid="ignore"):
        return (np.sin(x) * np.sin(u)) / (
            np.cos(x) * np.sin(u) + (4.0 * m * i * x / np.pi) * np.sin(x) * np.cos(u)
        )


def michalewicz_collocation_filter(
    points: np.ndarray, m: int = 10, h_max: float = MICHALEWICZ_H_MAX
) -> np.ndarray:
    """Keep collocation points where the Michalewicz PDE operator is well conditioned.

    Rule (exact): keep z iff every |h_i(z_i)| ≤ ``h_max`` (default 1) and every h_i(z_i) is finite;
    returns a bool mask of shape (N,) for ``points`` of shape (N, d).

    Why: N[h] = Σ h_i ∂h/∂x_i − h multiplies the surrogate's partials by h_i, which has a pole at
    each critical point x0 of s_i (there ∂f/∂x_i = 0, so h_i ∂f/∂x_i stays finite for the true f
    but not for a surrogate whose partial is merely small). Near such a pole
    |h_i| ≈ 1/(2m u'(x0)² |x_i − x0|), u' = 2 i x0/π, so the rule rejects the band
    |x_i − x0| < δ_i = 1/(2 m h_max u'(x0)²), i.e. a fraction 1/(π m h_max u'(x0)) of the local
    spacing π/u' between poles (≈ 2 % of the range of x_1, ≈ 0.1 % of x_30 at m = 10, h_max = 1;
    about 90 % of uniform points in [0, π]^30 are kept). Typical |h_i| away from poles is
    ≈ 0.002–0.03, so the bound leaves the operator at most ~30–500 times its typical gain.

    Note the points docs/algorithms.md names as singular, sin x_i = 0 and tan(i x_i²/π) = 0
    (x_i = π√(k/i)), are where the cot-form of h_i has infinite terms but h_i itself → 0
    (removable, see :func:`michalewicz_h`); they need no exclusion beyond x_i = 0 exactly (0/0,
    rejected as non-finite).
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2:
        raise ValueError(f"points must have shape (N, d); got {pts.shape}")
    h = michalewicz_h(pts, m)
    return np.all(np.isfinite(h) & (np.abs(h) <= h_max), axis=1)


@functools.lru_cache(maxsize=64)
def _michalewicz_coordinate_maxima(dim: int, m: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """For i = 1..dim, (argmax, max) of s_i(t) = sin t sin^{2m}(i t²/π) on [0, π].

    s_i vanishes at t_k = π√(k/i), k = 0..i, and is log-concave between consecutive zeros (sin t
    and sin(i t²/π) both are: d²/dt² log sin(a t²) = 2a cot u − 4a²t² csc² u < 0 since 2u > sin u
    cos u), hence unimodal there: a vectorised golden-section search over all i intervals of all
    coordinates at once (Σ i = d(d+1)/2 intervals) finds every local maximum; the best per
    coordinate is the global one. Cost O(d²): ~1 ms at d = 30.
    """
    idx = np.concatenate([np.full(i, i, dtype=np.float64) for i in range(1, dim + 1)])
    k = np.concatenate([np.arange(i, dtype=np.float64) for i in range(1, dim + 1)])
    a, b = np.pi * np.sqrt(k / idx), np.pi * np.sqrt((k + 1) / idx)

    def s(t: np.ndarray) -> np.ndarray:
        return np.sin(t) * np.sin(idx * t**2 / np.pi) ** (2 * m)

    golden = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(80):  # 0.618^80 ≈ 2e-17: the bracket shrinks to rounding level
        c, d = b - golden * (b - a), a + golden * (b - a)
        left = s(c) > s(d)
        a, b = np.where(left, a, c), np.where(left, d, b)
    t = 0.5 * (a + b)
    values = s(t)
    locations, maxima = [], []
    start = 0
    for i in range(1, dim + 1):
        j = start + int(np.argmax(values[start : start + i]))
        locations.append(float(t[j]))
        maxima.append(float(values[j]))
        start += i
    return tuple(locations), tuple(maxima)


def michalewicz_optimum(dim: int, m: int = 10) -> tuple[float, list[float]]:
    """(f*, x*) of Michalewicz, computed (f is separable: f* = −Σ_i max_t s_i(t)).

    Reproduces the literature values −1.8013 (d=2), −4.687658 (d=5), −9.66015 (d=10) and
    −29.6309 (d=30) for m = 10.
    """
    locations, maxima = _michalewicz_coordinate_maxima(int(dim), int(m))
    return -math.fsum(maxima), list(locations)


@register_problem
def michalewicz(
    dim: int = 30, m: int = 10, collocation_h_max: float = MICHALEWICZ_H_MAX
) -> Problem:
    """Michalewicz on [0, π]^d, f = −Σ_i sin x_i sin^{2m}(i x_i²/π), m = 10 by default.

    PDE: Σ_i h_i(x_i) ∂f/∂x_i − f = 0 with h_i = s_i/s_i' (s_i the i-th summand without the sign),
    h_i = [cot x_i + 4 m i x_i/(π tan(i x_i²/π))]⁻¹, written in the equivalent pole-only form
    sin x_i sin u_i / (cos x_i sin u_i + (4 m i x_i/π) sin x_i cos u_i), u_i = i x_i²/π. (The
    paper's h_i = [cot x_i + 2x_i(2m−1)/tan(i x_i²/π)]⁻¹ is wrong.) Identity: each h_i ∂f/∂x_i =
    −s_i, summing to f.

    Collocation: ``collocation_filter`` keeps points with every |h_i| ≤ ``collocation_h_max``
    (default 1), away from the poles of h_i; see :func:`michalewicz_collocation_filter`.

    f* is computed for any d and m (:func:`michalewicz_optimum`): ≈ −29.630884 at d = 30.
    """
    dim = check_dimension(dim)
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ProblemError(f"params.m: expected an integer steepness >= 1, got {shown(m)}")
    m = int(m)
    if (
        isinstance(collocation_h_max, bool)
        or not isinstance(collocation_h_max, (int, float, np.integer, np.floating))
        or not (math.isfinite(collocation_h_max) and collocation_h_max > 0)
    ):
        raise ProblemError(f"params.collocation_h_max: expected a finite number > 0, got {shown(collocation_h_max)}")
    h_max = float(collocation_h_max)

    box = Box.cube(0.0, math.pi, dim)
    xs, f = _unknown(box)
    terms = []
    for i, x in enumerate(xs, start=1):
        u = i * x**2 / sp.pi
        h = sp.sin(x) * sp.sin(u) / (sp.cos(x) * sp.sin(u) + 4 * m * i * x / sp.pi * sp.sin(x) * sp.cos(u))
        terms.append(h * f.diff(x))
    pde = PDE(sum(terms) - f, rhs=0)
    optimum, location = michalewicz_optimum(dim, m)
    fn = functools.partial(michalewicz_torch, m=m)
    return Problem(
        name="michalewicz",
        domain=box,
        objective=_oracle(fn, dim, "michalewicz"),
        sense="minimize",
        pde=pde,
        optimum=optimum,
        optimum_location=location,
        collocation_filter=functools.partial(michalewicz_collocation_filter, m=m, h_max=h_max),
        description=(
            f"Michalewicz ({dim}-D, m={m}), minimised; PDE: sum_i h_i df/dx_i - f = 0, "
            f"collocation points with |h_i| <= {h_max:g}"
        ),
        metadata={"torch_function": fn, "m": m, "collocation_h_max": h_max},
    )


# ---------------------------------------------------------------------------------------------
# Cosine Mixture
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _cosine_mixture_coordinate_minimum() -> tuple[float, float]:
    """(t*, φ(t*)) for φ(t) = 0.1 cos 5πt + t² on [−1, 1].

    φ is even; on [0, 1] its critical points solve 2t = 0.5π sin 5πt. t = 0 is a local maximum
    (φ'' = 2 − 2.5π² < 0) and the global minimum lies in the first well, bracketed by [0.1, 0.3]
    (the other wells, near t ≈ 0.6 and 1, have φ > 0.2; checked on a fine grid in the tests).
    """
    t = brentq(lambda s: 2.0 * s - 0.5 * math.pi * math.sin(5.0 * math.pi * s), 0.1, 0.3, xtol=1e-15)
    return t, 0.1 * math.cos(5.0 * math.pi * t) + t * t


@register_problem
def cosine_mixture(dim: int = 50) -> Problem:
    """Cosine Mixture on [−1, 1]^d with the paper's sign, f = 0.1 Σ cos 5πx_i + Σ x_i².

    PDE: d equations (one residual column each) ∂f/∂x_i = 2x_i − 0.5π sin 5πx_i. (The usual
    Cosine Mixture is −0.1 Σ cos 5πx_i + Σ x_i² with f* = −0.1d at 0; with the paper's sign the
    minimum is at x_i = ±0.184873 (2^d minimisers; we report all +), f* = −0.0630122 d ≈ −3.1506
    at d = 50.)
    """
    dim = check_dimension(dim)
    box = Box.cube(-1.0, 1.0, dim)
    xs, f = _unknown(box)
    pde = PDE(
        [f.diff(x) for x in xs],
        rhs=[2 * x - sp.pi / 2 * sp.sin(5 * sp.pi * x) for x in xs],
    )
    t, value = _cosine_mixture_coordinate_minimum()
    fn = cosine_mixture_torch
    return Problem(
        name="cosine_mixture",
        domain=box,
        objective=_oracle(fn, dim, "cosine_mixture"),
        sense="minimize",
        pde=pde,
        optimum=dim * value,
        optimum_location=[t] * dim,
        description=(
            f"Cosine Mixture ({dim}-D, paper's sign), minimised; PDE: df/dx_i = 2 x_i - pi/2 sin 5 pi x_i, "
            f"{dim} equations"
        ),
        metadata={"torch_function": fn},
    )
