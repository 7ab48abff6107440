"""Mixed benchmarks with a known optimum, for `pinnbo bench` (benchmarks/mixed/*.yaml).

- ``branin_choice``: Branin in two real variables plus a choice among three settings that shifts it
  by 0.5, 0 or 1.2 and an integer n in [0, 6] adding 0.1 (n − 3)²: f* = 0.397887 at setting b, n = 3.
- ``ackley_mixed``: Ackley in three real variables on [−5, 5] and three integers in [−5, 5] (the
  integers enter as themselves): f* = 0 at the origin.
- ``fins``: a steady fin array, dissipated heat per unit mass to maximise: a choice of material
  (conductivity, density), an integer number of fins and the fin length on a log scale; the
  classical adiabatic-tip fin solution q = √(hPkA) θ_b tanh(mL) (Incropera, eq. 3.81) with
  m = √(hP/(kA)). f* found by enumeration over the integers and materials and a dense length grid.
"""

from __future__ import annotations

import math

import numpy as np

from pinnbo import Box, Problem, Variable

SHIFT = {"a": 0.5, "b": 0.0, "c": 1.2}


def _branin(x1: float, x2: float) -> float:
    a, b, c, r, s, t = 1.0, 5.1 / (4 * math.pi**2), 5 / math.pi, 6.0, 10.0, 1 / (8 * math.pi)
    return a * (x2 - b * x1**2 + c * x1 - r) ** 2 + s * (1 - t) * math.cos(x1) + s


def branin_choice() -> Problem:
    box = Box.of([Variable("x1", "real", -5.0, 10.0), Variable("x2", "real", 0.0, 15.0),
                  Variable("setting", "choice", choices=("a", "b", "c")), Variable("n", "integer", 0, 6)])

    def objective(d: dict) -> float:
        return _branin(d["x1"], d["x2"]) + SHIFT[d["setting"]] + 0.1 * (d["n"] - 3) ** 2

    return Problem("branin_choice", box, objective, optimum=0.397887357729738)


def ackley_mixed() -> Problem:
    box = Box.of([Variable(f"x{i}", "real", -5.0, 5.0) for i in (1, 2, 3)]
                 + [Variable(f"n{i}", "integer", -5, 5) for i in (1, 2, 3)])

    def objective(d: dict) -> float:
        z = np.array([d["x1"], d["x2"], d["x3"], d["n1"], d["n2"], d["n3"]], dtype=np.float64)
        return float(-20 * np.exp(-0.2 * np.sqrt(np.mean(z**2))) - np.exp(np.mean(np.cos(2 * np.pi * z))) + 20 + np.e)

    return Problem("ackley_mixed", box, objective, optimum=0.0)


MATERIALS = {"copper": (401.0, 8933.0), "aluminium": (237.0, 2702.0), "steel": (60.5, 7854.0)}   # k W/m/K, ρ kg/m³
H, THETA, THICKNESS, WIDTH, BASE = 50.0, 60.0, 0.002, 0.05, 0.3   # W/m²/K, K, m, m, base mass kg


def fin_heat_per_mass(material: str, fins: int, length: float) -> float:
    """W per kg of a fin array: fins rectangular fins of the given length (adiabatic tips) on a base."""
    k, rho = MATERIALS[material]
    area, perimeter = THICKNESS * WIDTH, 2 * (THICKNESS + WIDTH)
    m = math.sqrt(H * perimeter / (k * area))
    q_fin = math.sqrt(H * perimeter * k * area) * THETA * math.tanh(m * length)
    # the fins shade each other: each one beyond 8 on the base adds less (a spacing penalty)
    crowding = 1.0 / (1.0 + 0.04 * max(fins - 8, 0) ** 2)
    mass = BASE + fins * rho * area * length
    return fins * q_fin * crowding / mass


def _fin_optimum() -> float:
    lengths = np.geomspace(0.01, 0.3, 4001)
    return max(fin_heat_per_mass(mat, n, float(L)) for mat in MATERIALS for n in range(2, 21) for L in lengths)


def fins() -> Problem:
    box = Box.of([Variable("material", "choice", choices=tuple(MATERIALS)), Variable("fins", "integer", 2, 20),
                  Variable("length", "log", 0.01, 0.3)])
    return Problem("fins", box, lambda d: fin_heat_per_mass(d["material"], d["fins"], d["length"]),
                   sense="maximize", optimum=_fin_optimum())
