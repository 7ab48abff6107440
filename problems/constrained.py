"""Constrained benchmarks of the Neural-CBO paper (docs/algorithms.md, "Constrained problems"):
min f(x) s.t. c_i(x) <= 0.

Seven factories, registered for case files (``problem: speed_reducer``), all minimised, every
constraint a black-box output of the same oracle call (coupled evaluation)::

    name                   d, K    bounds                              f*             x*
    branin_constrained     2, 1    [-5, 10] x [0, 15]                  0.397887       (pi, 2.275)
    simionescu             2, 1    [-1.25, 1.25]^2                     -0.072         (0.848528, -0.848528)
    ackley_constrained     5, 2    [-5, 3]^5                           0              0
    hartmann6_constrained  6, 1    [0, 1]^6                            -3.322368      standard minimiser
    gas_transmission       4, 1    [20,50]x[1,10]x[20,50]x[0.1,60]     2964895.417    (50, 1.178284, 24.59259, 0.388353)
    speed_reducer          7, 11   [2.6,3.6]x[0.7,0.8]x[17,28]x...     2996.348165    (3.5, 0.7, 17, 7.3, 7.8, 3.350215,
                                                                                       5.286683)
    welded_beam            4, 6    [0.125, 10] x [0.1, 10]^3           1.724852       (0.20573, 3.470489, 9.036624, 0.20573)

The formulas are the classical ones the paper lists, written once as vectorised numpy functions ``(n, d) ->
(f (n,), C (n, K))`` (:data:`BATCH_FUNCTIONS`, also in ``problem.metadata["batch_function"]``);
the oracle ``objective(x)`` evaluates one design of shape (d,) and returns ``(f, [c_1, ..., c_K])``.
Where the Neural-CBO paper's appendix differs (its speed reducer has un-normalised constraints,
16.91e6 inside c5 and 7.477 in f), the classical form is followed.

Every declared optimum was verified (:func:`multistart_minimum`; ``python -m problems.constrained``
reruns it): SLSQP from 200 Sobol starts per problem on the unit-scaled box, objective and
constraints divided by their standard deviations over the box, then a trust-constr polish; for the
2-D problems also a 2001² grid. No feasible point found beats the declared f* (beyond the 1e-9
scaled feasibility tolerance of the search); where the optimum is a vertex of active constraints
it was then solved for exactly. The published values are right to the digits printed; the rounded
locations are not all feasible, and the locations declared here are the polished ones:

- Branin: f* = 5/(4 pi) = 0.3978873577 at (pi, 2.275) exactly, strictly feasible (c = -22.29);
  the other two Branin minimisers (-pi, 12.275) and (3 pi, 2.475) are infeasible (c = +4.63,
  +23.20). 199 of 200 SLSQP runs end feasible, the best at this point.
- Simionescu: f = 0.05 r^2 sin 2theta and r <= 1 + 0.2 cos 8theta, so the minimum is r = 1.2 at
  theta = -pi/4 (or 3pi/4): x* = (0.6 sqrt 2, -0.6 sqrt 2) = (0.848528, -0.848528), f* = -0.072
  exactly, with the constraint ACTIVE (c(x*) = 0 to rounding): the optimum is on the boundary of
  the feasible set (so is its mirror (-0.848528, 0.848528)).
- Ackley: f >= 0 with equality only at 0, which is feasible (c1 = 1 - (sqrt 5 - 5.5)^2 = -9.65,
  c2 = -9). f(0) evaluates to 4.4e-16 in floating point.
- Hartmann-6: the standard unconstrained minimiser has ||x|| = 0.9463 < 1, so the constraint is
  inactive and f* = -3.3223680114 (published: -3.32237); 198 of 200 SLSQP runs end feasible,
  most of them at this point, the rest in Hartmann's other local minima. Declared location: the
  BFGS-polished minimiser (the published rounded one gives f = -3.3223680114 + 2.4e-11, feasible).
- Gas transmission: x1 = 50 on its upper bound (df/dx1 = -313 < 0) and the constraint ACTIVE
  (x4 = x2^2 - 1); with x3 eliminated in closed form (df/dx3 = 0 gives x3 = (2K/(3 * 3.69e4))^0.6,
  K = 8.61e5 sqrt(x1) x2 / sqrt(x4)) a 1-D minimisation in x2 gives f* = 2964895.41734 at
  (50, 1.1782839513, 24.5925901302, 0.3883530700); 199/200 SLSQP runs reach it. The published value
  2 964 895.4 is right, but its rounded location (50, 1.17828, 24.5926, 0.38835) is INFEASIBLE
  (c = +4.5e-6) and there f = 2 964 884.48, below f*: f is steep in x4 along the active constraint.
- Speed reducer: the optimum is the vertex x1 = 5 x2 = 3.5 (c08 active), x2 = 0.7, x3 = 17,
  x4 = 7.3, x5 = 7.8 at their lower bounds, and x6, x7 from c05 = 0 and c06 = 0 (closed form:
  x6 = (sqrt((745 x4/(x2 x3))^2 + 16.9e6)/110)^(1/3), likewise x7 with 157.5e6, 85):
  f* = 2996.3481650 at (3.5, 0.7, 17, 7.3, 7.8, 3.3502146661, 5.2866832298); all 200 SLSQP runs
  agree. The published 2996.348 is right; its rounded location is borderline (c06 = +1.3e-7, and
  f = 2996.34810 there, 6e-5 below f*). (The often-quoted 2994.47 has x5 = 7.715 < 7.8, outside
  these bounds.)
- Welded beam: the classical 1.724852 holds with these formulas (J with x2^2/12, R with x2^2/4,
  Pc with 4.013 E sqrt(x3^2 x4^6/36)/L^2). The optimum is the vertex where shear_stress,
  bending_stress, weld_geometry (x1 = x4) and buckling are ACTIVE, solved exactly:
  f* = 1.7248523086 at (0.2057296398, 3.4704886656, 9.0366239104, 0.2057296398); all 200 SLSQP
  runs agree. The rounded classical point (0.205730, 3.470489, 9.036624, 0.205730) is feasible
  with f = 1.7248557.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from pinnbo.problem import Box, Constraint, Problem, ProblemError, register_problem
from problems.sfu import ackley_values

__all__ = [
    "BATCH_FUNCTIONS",
    "branin_constrained",
    "simionescu",
    "ackley_constrained",
    "hartmann6_constrained",
    "gas_transmission",
    "speed_reducer",
    "welded_beam",
    "branin_batch",
    "simionescu_batch",
    "ackley_batch",
    "hartmann6_batch",
    "gas_transmission_batch",
    "speed_reducer_batch",
    "welded_beam_batch",
]

BatchFunction = Callable[[np.ndarray], "tuple[np.ndarray, np.ndarray]"]


def _columns(X: np.ndarray, d: int) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[None, :]
    if X.ndim != 2 or X.shape[1] != d:
        raise ValueError(f"expected designs of shape (n, {d}), got {np.shape(X)}")
    return X


# ---------------------------------------------------------------------------------------------
# Vectorised definitions: X (n, d) -> (f (n,), C (n, K)), the classical formulas
# ---------------------------------------------------------------------------------------------


def branin_batch(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Branin f and the disk constraint (x1 − 2.5)² + (x2 − 7.5)² − 50."""
    X = _columns(X, 2)
    x1, x2 = X[:, 0], X[:, 1]
    f = (x2 - 5.1 * x1**2 / (4 * math.pi**2) + 5 * x1 / math.pi - 6) ** 2 \
        + 10 * (1 - 1 / (8 * math.pi)) * np.cos(x1) + 10
    c = (x1 - 2.5) ** 2 + (x2 - 7.5) ** 2 - 50
    return f, c[:, None]


def simionescu_batch(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Simionescu f = 0.1 x1 x2, c = x1² + x2² − (1 + 0.2 cos(8 atan2(x1, x2)))².

    The angle is atan2(x1, x2), i.e. arctan(x1/x2) extended to x2 = 0 (the paper writes
    arctan(x1/x2); the paper arctan(x2/x1): both give the same c, since cos 8θ is unchanged by
    θ -> π/2 − θ and by adding multiples of π/4 — atan2 only removes the division by zero).
    """
    X = _columns(X, 2)
    x1, x2 = X[:, 0], X[:, 1]
    f = 0.1 * x1 * x2
    c = x1**2 + x2**2 - (1 + 0.2 * np.cos(8 * np.arctan2(x1, x2))) ** 2
    return f, c[:, None]


def ackley_batch(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ackley-5 with c1 = 1 − (‖x − 1‖₂ − 5.5)² (outside a shell) and c2 = ‖x‖∞² − 9."""
    X = _columns(X, 5)
    f = ackley_values(X)
    c1 = 1 - (np.linalg.norm(X - 1, axis=1) - 5.5) ** 2
    c2 = np.max(np.abs(X), axis=1) ** 2 - 9
    return f, np.column_stack([c1, c2])


HARTMANN6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN6_A = np.array([
    [10, 3, 17, 3.5, 1.7, 8],
    [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8],
    [17, 8, 0.05, 10, 0.1, 14],
])
HARTMANN6_P = 1e-4 * np.array([
    [1312, 1696, 5569, 124, 8283, 5886],
    [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650],
    [4047, 8828, 8732, 5743, 1091, 381],
])


def hartmann6_batch(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hartmann-6 (standard α, A, P) with c = ‖x‖₂ − 1."""
    X = _columns(X, 6)
    inner = np.sum(HARTMANN6_A * (X[:, None, :] - HARTMANN6_P) ** 2, axis=2)
    f = -np.exp(-inner) @ HARTMANN6_ALPHA
    c = np.linalg.norm(X, axis=1) - 1
    return f, c[:, None]


def gas_transmission_batch(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gas transmission compressor cost and c = x4 x2⁻² + x2⁻² − 1 (the classical form, not the
    rescaled, negated one of the authors' code)."""
    X = _columns(X, 4)
    x1, x2, x3, x4 = X.T
    f = (8.61e5 * np.sqrt(x1) * x2 * x3 ** (-2 / 3) / np.sqrt(x4) + 3.69e4 * x3
         + 7.72e8 / x1 * x2**0.219 - 765.43e6 / x1)
    c = x4 / x2**2 + 1 / x2**2 - 1
    return f, c[:, None]


def speed_reducer_batch(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Speed reducer weight (x3, the number of teeth, continuous) and its 11 normalised constraints."""
    X = _columns(X, 7)
    x1, x2, x3, x4, x5, x6, x7 = X.T
    f = (0.7854 * x1 * x2**2 * (3.3333 * x3**2 + 14.9334 * x3 - 43.0934)
         - 1.508 * x1 * (x6**2 + x7**2) + 7.4777 * (x6**3 + x7**3) + 0.7854 * (x4 * x6**2 + x5 * x7**2))
    C = np.column_stack([
        27 / (x1 * x2**2 * x3) - 1,
        397.5 / (x1 * x2**2 * x3**2) - 1,
        1.93 * x4**3 / (x2 * x3 * x6**4) - 1,
        1.93 * x5**3 / (x2 * x3 * x7**4) - 1,
        np.sqrt((745 * x4 / (x2 * x3)) ** 2 + 16.9e6) / (110 * x6**3) - 1,
        np.sqrt((745 * x5 / (x2 * x3)) ** 2 + 157.5e6) / (85 * x7**3) - 1,
        x2 * x3 / 40 - 1,
        5 * x2 / x1 - 1,
        x1 / (12 * x2) - 1,
        (1.5 * x6 + 1.9) / x4 - 1,
        (1.1 * x7 + 1.9) / x5 - 1,
    ])
    return f, C


WELDED_BEAM = {"P": 6000.0, "L": 14.0, "E": 30e6, "G": 12e6,
               "tau_max": 13600.0, "sigma_max": 30000.0, "delta_max": 0.25}


def welded_beam_batch(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Welded beam cost and its 6 constraints (classical form)."""
    X = _columns(X, 4)
    x1, x2, x3, x4 = X.T
    P, L, E, G = (WELDED_BEAM[k] for k in ("P", "L", "E", "G"))
    f = 1.10471 * x1**2 * x2 + 0.04811 * x3 * x4 * (14 + x2)
    tau1 = P / (math.sqrt(2) * x1 * x2)
    M = P * (L + x2 / 2)
    R = np.sqrt(x2**2 / 4 + ((x1 + x3) / 2) ** 2)
    J = 2 * math.sqrt(2) * x1 * x2 * (x2**2 / 12 + ((x1 + x3) / 2) ** 2)
    tau2 = M * R / J
    tau = np.sqrt(tau1**2 + tau1 * tau2 * x2 / R + tau2**2)
    sigma = 6 * P * L / (x4 * x3**2)
    delta = 4 * P * L**3 / (E * x3**3 * x4)
    Pc = 4.013 * E * np.sqrt(x3**2 * x4**6 / 36) / L**2 * (1 - x3 / (2 * L) * math.sqrt(E / (4 * G)))
    C = np.column_stack([
        tau - WELDED_BEAM["tau_max"],
        sigma - WELDED_BEAM["sigma_max"],
        x1 - x4,
        0.10471 * x1**2 + 0.04811 * x3 * x4 * (14 + x2) - 5,
        delta - WELDED_BEAM["delta_max"],
        P - Pc,
    ])
    return f, C


#: The vectorised definitions by problem name, ``fn(X (n, d)) -> (f (n,), C (n, K))``.
BATCH_FUNCTIONS: dict[str, BatchFunction] = {
    "branin_constrained": branin_batch,
    "simionescu": simionescu_batch,
    "ackley_constrained": ackley_batch,
    "hartmann6_constrained": hartmann6_batch,
    "gas_transmission": gas_transmission_batch,
    "speed_reducer": speed_reducer_batch,
    "welded_beam": welded_beam_batch,
}


# ---------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------


def _oracle(fn: BatchFunction, dim: int, name: str) -> Callable[[np.ndarray], tuple[float, list[float]]]:
    """The coupled oracle ``x (d,) -> (f, [c_1, ..., c_K])`` of one design."""

    def objective(x: np.ndarray) -> tuple[float, list[float]]:
        arr = np.asarray(x, dtype=np.float64)
        if arr.size != dim:
            raise ProblemError(f"{name}: expected a design with {dim} values, got shape {arr.shape}")
        f, C = fn(arr.reshape(1, dim))
        return float(f[0]), [float(v) for v in C[0]]

    objective.__doc__ = f"{name}: (f, [c_1..c_K]) at one design x of shape ({dim},), noise-free."
    return objective


def _problem(name: str, box: Box, constraint_names: Sequence[str], optimum: float,
             location: Sequence[float], description: str, **metadata) -> Problem:
    fn = BATCH_FUNCTIONS[name]
    return Problem(
        name=name,
        domain=box,
        objective=_oracle(fn, box.dim, name),
        sense="minimize",
        optimum=float(optimum),
        optimum_location=tuple(float(v) for v in location),
        constraints=tuple(Constraint(n) for n in constraint_names),
        description=description,
        metadata={"batch_function": fn, **metadata},
    )


#: Declared optima: (f*, x*) per problem, each checked in the module docstring and the tests.
OPTIMA: dict[str, tuple[float, tuple[float, ...]]] = {
    "branin_constrained": (5 / (4 * math.pi), (math.pi, 2.275)),
    "simionescu": (-0.072, (0.6 * math.sqrt(2), -0.6 * math.sqrt(2))),
    "ackley_constrained": (0.0, (0.0,) * 5),
    "hartmann6_constrained": (
        -3.3223680114155147,
        (0.20168951159638066, 0.15001069405314732, 0.47687397149720184, 0.27533243058746837,
         0.31165161620057935, 0.6573005317608047),
    ),
    "gas_transmission": (
        2964895.4173391648,
        (50.0, 1.1782839513459717, 24.592590130224675, 0.3883530699994764),
    ),
    "speed_reducer": (
        2996.3481649685295,
        (3.5, 0.7, 17.0, 7.3, 7.8, 3.350214666096447, 5.286683229757916),
    ),
    "welded_beam": (
        1.724852308597365,
        (0.20572963978607944, 3.470488665628002, 9.036623910357633, 0.20572963978607944),
    ),
}


@register_problem
def branin_constrained() -> Problem:
    """Branin on [−5, 10] × [0, 15] s.t. (x1 − 2.5)² + (x2 − 7.5)² ≤ 50 (Letham et al. 2019).

    f* = 5/(4π) = 0.397887 at (π, 2.275), strictly feasible; the other two Branin minimisers
    (−π, 12.275) and (3π, 2.475) lie outside the disk.
    """
    f_star, x_star = OPTIMA["branin_constrained"]
    return _problem("branin_constrained", Box((-5.0, 0.0), (10.0, 15.0), ("x1", "x2")), ["disk"], f_star, x_star,
                    "Branin (2-D) s.t. (x1-2.5)^2 + (x2-7.5)^2 <= 50, minimised")


@register_problem
def simionescu() -> Problem:
    """Simionescu on [−1.25, 1.25]²: f = 0.1 x1 x2 s.t. x1² + x2² ≤ (1 + 0.2 cos(8 atan2(x1, x2)))².

    f* = −0.072 at (0.6√2, −0.6√2) (and its mirror), where the constraint is active.
    """
    f_star, x_star = OPTIMA["simionescu"]
    return _problem("simionescu", Box.cube(-1.25, 1.25, 2), ["radius"], f_star, x_star,
                    "Simionescu (2-D) s.t. x1^2 + x2^2 <= (1 + 0.2 cos(8 atan2(x1, x2)))^2, minimised")


@register_problem
def ackley_constrained() -> Problem:
    """Ackley-5 on [−5, 3]^5 s.t. c1 = 1 − (‖x − 1‖₂ − 5.5)² ≤ 0 and c2 = ‖x‖∞² − 9 ≤ 0.

    f* = 0 at 0 (feasible: c1 = −9.65, c2 = −9). The feasible set is the box ‖x‖∞ ≤ 3 minus the
    open shell 4.5 < ‖x − 1‖₂ < 6.5.
    """
    f_star, x_star = OPTIMA["ackley_constrained"]
    return _problem("ackley_constrained", Box.cube(-5.0, 3.0, 5), ["shell", "box"], f_star, x_star,
                    "Ackley (5-D) s.t. (||x-1|| - 5.5)^2 >= 1 and ||x||_inf <= 3, minimised")


@register_problem
def hartmann6_constrained() -> Problem:
    """Hartmann-6 on [0, 1]^6 s.t. ‖x‖₂ ≤ 1 (Letham et al. 2019).

    f* = −3.322368 at the standard minimiser (‖x*‖ = 0.9463: the constraint is inactive there
    but cuts away a large part of the cube).
    """
    f_star, x_star = OPTIMA["hartmann6_constrained"]
    return _problem("hartmann6_constrained", Box.cube(0.0, 1.0, 6), ["norm"], f_star, x_star,
                    "Hartmann-6 s.t. ||x||_2 <= 1, minimised")


@register_problem
def gas_transmission() -> Problem:
    """Gas transmission compressor design (Kumar et al. 2020), minimise the cost.

    f = 8.61e5 x1^½ x2 x3^(−2/3) x4^(−½) + 3.69e4 x3 + 7.72e8 x1⁻¹ x2^0.219 − 765.43e6 x1⁻¹ on
    [20, 50] × [1, 10] × [20, 50] × [0.1, 60], s.t. x4 x2⁻² + x2⁻² − 1 ≤ 0. f* = 2 964 895.417
    with x1 on its upper bound and the constraint active.
    """
    f_star, x_star = OPTIMA["gas_transmission"]
    return _problem("gas_transmission", Box((20.0, 1.0, 20.0, 0.1), (50.0, 10.0, 50.0, 60.0)), ["pressure"],
                    f_star, x_star, "Gas transmission compressor design (4-D, 1 constraint), minimise cost")


SPEED_REDUCER_CONSTRAINTS = (
    "c01_tooth_bending", "c02_tooth_surface", "c03_shaft1_deflection", "c04_shaft2_deflection",
    "c05_shaft1_stress", "c06_shaft2_stress", "c07_tooth_count", "c08_face_ratio_min", "c09_face_ratio_max",
    "c10_shaft1_length", "c11_shaft2_length",
)


@register_problem
def speed_reducer() -> Problem:
    """Speed reducer (Golinski; 7-D, 11 constraints), minimise the weight, f* = 2996.348165.

    Variables: x1 face width, x2 tooth module, x3 number of pinion teeth (continuous here),
    x4, x5 shaft lengths between bearings, x6, x7 shaft diameters; 11 normalised constraints
    c01..c11 (tooth bending and surface stress, shaft deflections and stresses, size limits).

    f* = 2996.348165 at (3.5, 0.7, 17, 7.3, 7.8, 3.350215, 5.286683): x1 = 5 x2 (c08), x2..x5
    on their lower bounds, c05 and c06 active (module docstring).
    """
    f_star, x_star = OPTIMA["speed_reducer"]
    box = Box((2.6, 0.7, 17.0, 7.3, 7.8, 2.9, 5.0), (3.6, 0.8, 28.0, 8.3, 8.3, 3.9, 5.5))
    return _problem("speed_reducer", box, SPEED_REDUCER_CONSTRAINTS, f_star, x_star,
                    "Speed reducer (7-D, 11 constraints), minimise weight")


WELDED_BEAM_CONSTRAINTS = ("shear_stress", "bending_stress", "weld_geometry", "cost_limit", "deflection", "buckling")


@register_problem
def welded_beam() -> Problem:
    """Welded beam (classical form; 4-D, 6 constraints), minimise the cost, f* = 1.724852.

    Variables: x1 = h weld thickness, x2 = l weld length, x3 = t bar height, x4 = b bar
    thickness; constraints shear_stress (τ ≤ 13 600 psi), bending_stress (σ ≤ 30 000 psi),
    weld_geometry (h ≤ b), cost_limit, deflection (δ ≤ 0.25 in), buckling (P ≤ Pc), each in
    its physical unit.

    f* = 1.724852 at (0.205730, 3.470489, 9.036624, 0.205730), four constraints active.
    """
    f_star, x_star = OPTIMA["welded_beam"]
    box = Box((0.125, 0.1, 0.1, 0.1), (10.0, 10.0, 10.0, 10.0))
    return _problem("welded_beam", box, WELDED_BEAM_CONSTRAINTS, f_star, x_star,
                    "Welded beam (4-D, 6 constraints, classical form), minimise cost")


# ---------------------------------------------------------------------------------------------
# Verification of the declared optima
# ---------------------------------------------------------------------------------------------


def multistart_minimum(name: str, starts: int = 200, seed: int = 0, feasibility_tol: float = 1e-9,
                       polish: bool = True) -> tuple[float, np.ndarray, int]:
    """The best feasible point SLSQP finds from ``starts`` Sobol starts: ``(f, x, converged)``.

    Works on the unit cube with f and each c_i divided by their standard deviation over the box
    (4096 Sobol points), so that the solver's tolerances mean the same on every problem (the gas
    compressor's cost is ~1e6, its constraint ~1). A run counts (``converged``) when its end point
    has every scaled c_i <= ``feasibility_tol``; the best is then polished by trust-constr
    (``polish``) and kept if still feasible and not worse.
    """
    import warnings

    from scipy.optimize import Bounds, NonlinearConstraint, minimize
    from scipy.stats import qmc

    problem = PROBLEM_BUILDERS[name]()
    fn = BATCH_FUNCTIONS[name]
    lo, width = problem.domain.lower_array, problem.domain.widths
    d = problem.domain.dim
    sample_f, sample_c = fn(lo + qmc.Sobol(d, seed=seed).random(4096) * width)
    f_scale = float(np.std(sample_f)) or 1.0
    c_scale = np.where(np.std(sample_c, axis=0) > 0, np.std(sample_c, axis=0), 1.0)

    def f(u):
        return float(fn(lo + u * width)[0][0]) / f_scale

    def c(u):
        return fn(lo + u * width)[1][0] / c_scale

    best_f, best_x, converged = math.inf, None, 0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for u0 in qmc.Sobol(d, seed=seed + 1).random(starts):
            res = minimize(f, u0, method="SLSQP", bounds=[(0.0, 1.0)] * d,
                           constraints=[{"type": "ineq", "fun": lambda u: -c(u)}],
                           options={"maxiter": 2000, "ftol": 1e-16})
            u = np.clip(res.x, 0.0, 1.0)
            cu = c(u)
            if np.all(np.isfinite(cu)) and np.all(cu <= feasibility_tol):
                converged += 1
                value = f(u) * f_scale
                if value < best_f:
                    best_f, best_x = value, u
        if polish and best_x is not None:
            res = minimize(f, best_x, method="trust-constr", bounds=Bounds(0.0, 1.0),
                           constraints=[NonlinearConstraint(c, -np.inf, 0.0)],
                           options={"maxiter": 5000, "gtol": 1e-14, "xtol": 1e-16})
            u = np.clip(res.x, 0.0, 1.0)
            if np.all(c(u) <= feasibility_tol) and f(u) * f_scale < best_f:
                best_f, best_x = f(u) * f_scale, u
    x = None if best_x is None else lo + best_x * width
    return best_f, x, converged


PROBLEM_BUILDERS: dict[str, Callable[[], Problem]] = {
    "branin_constrained": branin_constrained,
    "simionescu": simionescu,
    "ackley_constrained": ackley_constrained,
    "hartmann6_constrained": hartmann6_constrained,
    "gas_transmission": gas_transmission,
    "speed_reducer": speed_reducer,
    "welded_beam": welded_beam,
}


if __name__ == "__main__":  # python -m problems.constrained [starts]
    import sys

    n_starts = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for key in BATCH_FUNCTIONS:
        f_star, x_star = OPTIMA[key]
        value, location, ok = multistart_minimum(key, n_starts)
        f_decl, c_decl = BATCH_FUNCTIONS[key](np.asarray(x_star))
        print(f"{key:22s} declared {f_star:.12g} (f(x*) = {f_decl[0]:.12g}, max c(x*) = {c_decl[0].max():.3g}); "
              f"multistart best {value:.12g} ({ok}/{n_starts} feasible), "
              f"gap {(value - f_star) / max(1.0, abs(f_star)):.2e}")
        print(f"{'':22s} at {np.array2string(location, precision=10, separator=', ')}")
