"""Benchmarks with several objectives and a known Pareto front (docs/algorithms.md, "Several
objectives"): Zitzler, Deb & Thiele's ZDT1 and ZDT2 (2000), both minimised, on [0, 1]^d.

f1 = x1, g = 1 + 9/(d − 1) Σ_{i≥2} x_i, and f2 = g (1 − √(f1/g)) (ZDT1, a convex front) or
f2 = g (1 − (f1/g)²) (ZDT2, a concave front); the front is g = 1 (x_i = 0 for i ≥ 2). With the
usual reference point (11, 11) the largest hypervolume is 121 − ∫₀¹ f2(f1) df1 on the front:
120 + 2/3 for ZDT1, 120 + 1/3 for ZDT2 (BoTorch's test problems use the same).
"""

from __future__ import annotations

import numpy as np

from pinnbo.problem import Box, Problem, check_dimension, register_problem

REFERENCE = 11.0


def _zdt(name: str, dim: int, shape) -> Problem:
    dim = check_dimension(dim, minimum=2, why=" (x1 and at least one x_i of g)")

    def objective(x: np.ndarray) -> dict:
        x = np.asarray(x, dtype=np.float64)
        g = 1.0 + 9.0 / (dim - 1) * float(np.sum(x[1:]))
        return {"f1": float(x[0]), "f2": g * shape(x[0] / g)}

    below = {"zdt1": 1.0 / 3.0, "zdt2": 2.0 / 3.0}[name]   # ∫₀¹ f2 df1 on the front: not dominated
    return Problem(name, Box.cube(0.0, 1.0, dim), objective, objectives={"f1": "minimize", "f2": "minimize"},
                   reference={"f1": REFERENCE, "f2": REFERENCE}, optimum=REFERENCE * REFERENCE - below,
                   description=f"{name.upper()} in {dim} variables, two objectives")


@register_problem
def zdt1(dim: int = 6) -> Problem:
    """ZDT1 in ``dim`` variables on [0, 1]^dim: two minimised objectives, a convex Pareto front
    f2 = 1 − √f1; hypervolume* = 120 + 2/3 against (11, 11)."""
    return _zdt("zdt1", dim, lambda t: 1.0 - np.sqrt(t))


@register_problem
def zdt2(dim: int = 6) -> Problem:
    """ZDT2 in ``dim`` variables on [0, 1]^dim: two minimised objectives, a concave Pareto front
    f2 = 1 − f1²; hypervolume* = 120 + 1/3 against (11, 11)."""
    return _zdt("zdt2", dim, lambda t: 1.0 - t * t)
