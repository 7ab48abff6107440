"""Non-uniform Euler–Bernoulli beam (PINN-BO real task 2; docs/algorithms.md, "The beam"): find the position x
on the beam where the deflection w(x) is smallest (or largest), with (EI w'')'' = q as the PDE.

The paper's stiffness is EI = eˣ/ρ(x) with ρ the second derivative of the manufactured solution
w(x) = sin(4π e^{2x}) + e^{2x} sin 20x + 0.4x³ + 0.2x² + 6, so EI·w'' = eˣ and q = eˣ; the paper
omits q and the boundary conditions, which follow from w: w and the bending moment M = eˣ at both
ends. The oracle is a finite-difference solve (pinnbo.oracles.beam), not the closed form, so that
user-defined beams (any EI or flexibility, load and supports) work the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sympy as sp

from pinnbo.expressions import numpy_function
from pinnbo.oracles.beam import DEFAULT_INTERVALS, solve_beam
from pinnbo.problem import Box, Problem, ProblemError, register_problem

PAPER_EI = (
    "exp(x)/(2.4*x - 64*pi^2*exp(4*x)*sin(4*pi*exp(2*x)) - 396*exp(2*x)*sin(20*x) "
    "+ 80*exp(2*x)*cos(20*x) + 16*pi*exp(2*x)*cos(4*pi*exp(2*x)) + 0.4)"
)
PAPER_LOAD = "exp(x)"
PAPER_BC = {
    "left": {"w": "6", "M": "1"},
    "right": {"w": "sin(4*pi*exp(2)) + exp(2)*sin(20) + 6.6", "M": "exp(1)"},
}
#: The paper's manufactured deflection, for tests and reports.
PAPER_DEFLECTION = "sin(4*pi*exp(2*x)) + exp(2*x)*sin(20*x) + 0.4*x^3 + 0.2*x^2 + 6"

# Collocation points closer than this (fraction of the beam's length) to a zero of the flexibility
# 1/EI are dropped: EI and its derivatives, which the PDE residual contains, blow up there
# (26 such points for the paper's beam; 2·26·5e-4 = 2.6% of the beam is excluded).
SINGULAR_MARGIN = 5e-4


def _singular_points(nodes: np.ndarray, flexibility: np.ndarray) -> np.ndarray:
    """Zeros of the flexibility (where EI is infinite), by sign change on the grid + linear interpolation."""
    f0, f1 = flexibility[:-1], flexibility[1:]
    zero = flexibility == 0
    change = np.flatnonzero((np.sign(f0) * np.sign(f1)) < 0)
    t = f0[change] / (f0[change] - f1[change])
    crossings = nodes[change] + t * (nodes[change + 1] - nodes[change])
    return np.sort(np.concatenate([crossings, nodes[zero]]))


@register_problem
def beam(
    EI: str | float = PAPER_EI,
    q: str | float = PAPER_LOAD,
    bc: dict | None = None,
    bounds: Any = (0.0, 1.0),
    n: int = DEFAULT_INTERVALS,
    sense: str = "minimize",
    flexibility: str | float | None = None,
) -> Problem:
    """Deflection w(x) of a beam with (EI(x) w'')'' = q(x) on ``bounds``, as a 1-D design problem.

    Args:
        EI: bending stiffness, a formula of x (default: the paper's eˣ/ρ(x)). Inverted
            symbolically, so a stiffness that is singular where its denominator vanishes is fine.
        q: distributed load, a formula of x (default eˣ).
        bc: two conditions per end, ``{left: {w: .., M: ..}, right: {..}}``, names among
            w (deflection), slope (w'), M (bending moment M = EI·w''), V (shear V = M'); values
            are constant formulas. Required for any beam but the paper's; left out for the
            paper's EI, q and bounds, it is the paper's (w and M at both ends).
        bounds: the beam [a, b].
        n: finite-difference grid intervals (error ≈ 5e-6 on the paper's beam at the default).
        sense: ``"minimize"`` (the paper) or ``"maximize"`` the deflection.
        flexibility: 1/EI instead of EI, a formula of x; then leave EI at its default.
    """
    if flexibility is not None and EI != PAPER_EI:
        raise ProblemError("params.flexibility: give EI or flexibility (1/EI), not both")
    if bc is None:
        try:
            papers = EI == PAPER_EI and q == PAPER_LOAD and flexibility is None and tuple(bounds) == (0.0, 1.0)
        except TypeError:
            papers = False
        if not papers:  # the paper's supports belong to the paper's beam: never a silent default
            raise ProblemError("params.bc: missing; a beam other than the paper's needs two boundary conditions "
                               "per end, e.g. {left: {w: 0, M: 0}, right: {w: 0, M: 0}} (simply supported)")
        bc = PAPER_BC
    solution = solve_beam(
        None if flexibility is not None else EI, q, bc, bounds, n, flexibility=flexibility, field="params"
    )
    a, b = solution.lower, solution.upper
    domain = Box((a,), (b,), ("x",))

    def objective(design: np.ndarray) -> float:
        design = np.asarray(design, dtype=np.float64).reshape(-1)
        if design.shape != (1,):
            raise ValueError(f"beam: expected one design variable x, got shape {design.shape}")
        return float(solution.deflection(design[0]))

    location, value = solution.extremum(sense)

    # The PDE the objective obeys, in a plain symbol x (PDE matches inputs by symbol).
    from pinnbo.pde import PDE

    x = sp.Symbol("x")
    to_plain = {s: x for s in solution.flexibility.free_symbols | solution.load.free_symbols}
    stiffness = sp.Pow(solution.flexibility.xreplace(to_plain), -1)
    w = sp.Function("w")(x)
    pde = PDE((stiffness * w.diff(x, 2)).diff(x, 2), rhs=solution.load.xreplace(to_plain))

    singular = _singular_points(solution.nodes, numpy_function(solution.flexibility, ("x",))(solution.nodes))
    collocation_filter = None
    if singular.size:
        margin = SINGULAR_MARGIN * (b - a)

        def collocation_filter(points: np.ndarray) -> np.ndarray:
            xs = np.asarray(points, dtype=np.float64).reshape(len(points), -1)[:, 0]
            distance = np.abs(xs[:, None] - singular[None, :]).min(axis=1)
            return distance > margin

    return Problem(
        name="beam",
        domain=domain,
        objective=objective,
        sense=sense,
        pde=pde,
        optimum=value,
        optimum_location=(location,),
        collocation_filter=collocation_filter,
        description=(
            f"Non-uniform Euler-Bernoulli beam (EI w'')'' = q on [{a:g}, {b:g}]: {sense} the "
            f"deflection w(x), finite differences on {solution.intervals} intervals"
        ),
        metadata={
            "intervals": solution.intervals,
            "flexibility": str(solution.flexibility),
            "singular_points": singular.tolist(),
        },
    )
