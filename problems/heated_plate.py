"""A sensor on a heated plate (docs/guide/problems-and-pdes.md, "Physics in some inputs"): where to
put a sensor (x, y) on a unit plate and at which of 13 levels L to run the heater on its bottom edge,
to read the highest temperature net of the heater's cost.

The plate is at rest at its edges' temperatures (20 on the left, right and bottom, 10 + 10x on the
top); the heater adds L times the field of a unit heater, 8 sin(πx) on the bottom edge and 0 on the
others. Both fields solve ∇²T = 0 (py-pde, solved once each and cached), so the objective
f(x, y, L) = T₀(x, y) + L T₁(x, y) − L²/2 obeys ∇²f = 0 in x and y for every level: the PDE holds in
the sensor's position, and the level is its parameter (an integer). By the maximum principle the
best sensor is on the boundary; on the bottom edge f = 20 + 8L sin(πx) − L²/2, largest at x = ½,
L = 8: f* = 52.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from pinnbo.oracles.heat_plate import HeatPlate
from pinnbo.problem import Box, Problem, ProblemError, Variable, register_problem

AMBIENT = {"left": "20", "right": "20", "bottom": "20", "top": "10 + 10*x"}
HEATER = {"left": "0", "right": "0", "bottom": "8*sin(pi*x)", "top": "0"}
LEVELS = 12
BOUNDS = [[0.0, 1.0], [0.0, 1.0]]


class SensorReading:
    """f(x, y, L) = T₀ + L T₁ − L²/2 at one design (module docstring); picklable for parallel runs."""

    def __init__(self, ambient: HeatPlate, heater: HeatPlate) -> None:
        self.ambient, self.heater = ambient, heater

    def __call__(self, design: dict) -> float:
        point, level = np.array([design["x"], design["y"]], dtype=np.float64), design["level"]
        return float(self.ambient(point) + level * self.heater(point) - 0.5 * level * level)


@register_problem
def heated_plate(grid: int = 128) -> Problem:
    """Maximise the temperature a sensor at (x, y) reads on a plate heated at level L (an integer
    from 0 to 12) from its bottom edge, less the heater's cost L²/2; ∇²T = 0 in x, y for every level.

    Args:
        grid: finite-volume cells per axis of each of the two reference solves (≥ 16).
    """
    if isinstance(grid, bool) or not isinstance(grid, int) or grid < 16:
        raise ProblemError(f"params.grid: expected an integer >= 16, got {grid!r}")
    ambient = HeatPlate(AMBIENT, bounds=BOUNDS, grid=grid)
    heater = HeatPlate(HEATER, bounds=BOUNDS, grid=grid)
    from pinnbo.pde import PDE  # imported here: the oracle does not need torch

    x, y = sp.symbols("x y")
    T = sp.Function("T")(x, y)
    box = Box.of([Variable("x", "real", 0.0, 1.0), Variable("y", "real", 0.0, 1.0),
                  Variable("level", "integer", 0, LEVELS)])
    return Problem("heated_plate", box, SensorReading(ambient, heater), sense="maximize",
                   pde=PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0), optimum=52.0, optimum_location=(0.5, 0.0, 8.0),
                   description="a sensor's position on a heated plate and the heater's level")
