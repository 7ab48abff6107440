"""pinnbo: physics-informed Bayesian optimisation of expensive engineering designs.

Python API (mirrors the CLI)::

    from pinnbo import optimize, load_problem
    problem = load_problem("heat_plate", boundary={...})
    history = optimize(problem, method="pinn-bo", budget=100, initial_points=10, seed=0)

and an ask/tell optimiser usable without the runner::

    from pinnbo import make_optimizer
    opt = make_optimizer("pinn-bo", problem, seed=0)
    x = opt.ask(); opt.tell(x, value)      # values in the problem's own sense

A constrained problem declares ``constraints=(Constraint("stress"), ...)`` (c_i(x) <= 0 feasible)
and its objective returns ``(f, {"stress": c, ...})``; results then report the best feasible design.
"""

from __future__ import annotations

import numbers
from pathlib import Path

from pinnbo.errors import CaseError, MethodError, PDEError, ProblemError, UserError, shown
from pinnbo.pde import PDE
from pinnbo.problem import Box, Constraint, Problem, register_problem
from pinnbo.streams import initial_design

__version__ = "0.1.0"


def load_problem(name: str, **params) -> Problem:
    """Build a registered problem (``problems/``) or ``path/to/file.py:function`` with ``params``."""
    from pinnbo.runner.build import check_params, resolve_problem

    factory = resolve_problem(name, Path.cwd())
    return factory(**check_params(factory, params, name))


def make_optimizer(method: str, problem: Problem | Box, seed: int = 0, *, params: dict | None = None, pde=None,
                   collocation_filter=None, device: str = "cpu", constraints=()):
    """An ask/tell optimiser by name (``pinn-bo``, ``random``, ...) for ``problem``.

    Given a :class:`Problem`, it takes the problem's box, PDE, collocation filter and constraints,
    and ``tell(x, y)`` takes ``y`` in the problem's own sense (a heat plate's temperature as it is).
    Given a bare :class:`Box`, ``tell`` takes values to minimise, and ``pde``, ``collocation_filter``
    and ``constraints`` (then ``tell(x, y, c)`` with c of shape (K,)) are given here."""
    from pinnbo.optimizers import make_optimizer as _make

    if isinstance(problem, Problem):
        if pde is not None or collocation_filter is not None or constraints:
            raise MethodError("make_optimizer: a Problem brings its own pde, collocation_filter and constraints; "
                              "give them only with a bare Box")
        # The optimiser minimises sign × f: it learns from the PDE that value obeys.
        return _make(method, problem.domain, seed, params=params, pde=problem.minimised_pde,
                     collocation_filter=problem.collocation_filter, device=device, constraints=problem.constraints,
                     sense=problem.sense)
    if not isinstance(problem, Box):
        raise MethodError(f"make_optimizer: expected a Problem or a Box, got {type(problem).__name__}")
    return _make(method, problem, seed, params=params, pde=pde, collocation_filter=collocation_filter, device=device,
                 constraints=constraints)


def optimize(problem: Problem, method: str = "pinn-bo", *, budget: int = 100, initial_points: int = 10,
             seed: int = 0, method_params: dict | None = None, output: str | Path | None = None,
             device: str = "cpu", resume: bool = False, overwrite: bool = False):
    """Optimise ``problem``; returns the :class:`pinnbo.runner.history.History` (written to ``output`` if set)."""
    from pinnbo.report.summary import write_report
    from pinnbo.runner.case import MAX_BUDGET, MAX_INITIAL_POINTS
    from pinnbo.runner.loop import RunSettings, run

    for key, value, most in (("initial_points", initial_points, MAX_INITIAL_POINTS), ("budget", budget, MAX_BUDGET)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= most:
            raise CaseError(f"{key}: expected an integer from 1 to {most}, got {shown(value)}")
    if budget <= initial_points:
        raise CaseError(f"budget: must exceed initial_points ({initial_points}), got {budget}")
    from pinnbo.optimizers import make_optimizer as _make

    # The runner tells minimisation values (pinnbo.runner.loop): the optimiser minimises as built.
    optimizer = _make(method, problem.domain, seed, params=method_params, pde=problem.minimised_pde,
                      collocation_filter=problem.collocation_filter, device=device, constraints=problem.constraints)
    case = {"problem": problem.name, "method": method, "method_params": method_params or {}, "seed": seed,
            "initial_points": initial_points, "budget": budget}
    if problem.constraints:  # a resumed run must have the same constraints (the log's records carry them)
        case["constraints"] = list(problem.constraint_names)
    settings = RunSettings(budget=budget, initial_points=initial_points, seed=seed,
                           output=None if output is None else Path(output), case=case,
                           resume=resume, overwrite=overwrite)
    history = run(problem, optimizer, settings)
    if output is not None:
        write_report(history, problem, case)
    return history


__all__ = ["PDE", "Box", "Constraint", "Problem", "register_problem", "initial_design", "load_problem",
           "make_optimizer", "optimize", "UserError", "CaseError", "MethodError", "PDEError", "ProblemError"]
