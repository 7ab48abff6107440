"""The analytic constrained problems shared by the tests of neural-cbo and gp-cei.

- ``product``: minimise x + y on [0, 1]² s.t. c = 0.5 − x·y <= 0; x* = y* = √0.5, f* = √2.
- ``disc``: minimise x + y s.t. the design lies in a disc of radius 0.06 around (0.8, 0.3), about
  1 % of the box, which a small initial design misses.
"""

from __future__ import annotations

import numpy as np

from pinnbo.acquisition.search import is_duplicate
from pinnbo.optimizers import make_optimizer
from pinnbo.problem import Box, Constraint
from pinnbo.streams import initial_design

UNIT = Box((0.0, 0.0), (1.0, 1.0), ("x", "y"))
PRODUCT = (Constraint("product"),)
DISC_CENTRE, DISC_RADIUS = np.array([0.8, 0.3]), 0.06


def product(p: np.ndarray) -> tuple[float, np.ndarray]:
    return float(p[0] + p[1]), np.array([0.5 - p[0] * p[1]])


def disc(p: np.ndarray) -> tuple[float, np.ndarray]:
    return float(p[0] + p[1]), np.array([np.sum((p - DISC_CENTRE) ** 2) - DISC_RADIUS ** 2])


def started(method: str, f, constraints, params: dict, seed: int = 0, n_init: int = 6, **kw):
    """``method`` on UNIT, told the ``n_init`` initial-design points of ``f``."""
    opt = make_optimizer(method, UNIT, seed, params=params, constraints=constraints, **kw)
    for x in initial_design(UNIT, n_init, seed):
        opt.tell(x, *f(x))
    return opt


def run(opt, f, steps: int):
    """``steps`` ask/tell rounds of ``f``."""
    for _ in range(steps):
        x = opt.ask()
        opt.tell(x, *f(x))
    return opt


def repeats_nothing(opt) -> bool:
    """No told design lies within ``duplicate_tol`` of another."""
    unit = opt.evaluated_unit()
    return not any(is_duplicate(u, np.delete(unit, i, axis=0), opt.settings.duplicate_tol) for i, u in enumerate(unit))


def until_feasible(opt, steps: int) -> tuple[np.ndarray, list[str]]:
    """Ask/tell ``disc`` until a design is feasible or ``steps`` are spent: the last design and the
    acquisition (``last_mode``) behind each ask."""
    modes = []
    for _ in range(steps):
        x = opt.ask()
        modes.append(opt.last_mode)
        opt.tell(x, *disc(x))
        if disc(x)[1][0] <= 0:
            break
    return x, modes
