"""pinnbo: physics-informed Bayesian optimisation of expensive engineering designs.

Python API (mirrors the CLI)::

    from pinnbo import optimize, load_problem
    problem = load_problem("heat_plate", boundary={...})
    history = optimize(problem, budget=100, initial_points=10, seed=0)   # method="auto": chosen from the problem

a results folder as a table (one row per evaluation)::

    from pinnbo import load_results
    frame = load_results("results/heat_bc1").to_pandas()

and an ask/tell optimiser usable without the runner::

    from pinnbo import make_optimizer
    opt = make_optimizer("pde-gp", problem, seed=0)
    x = opt.ask(); opt.tell(x, value)      # values in the problem's own sense

A constrained problem declares ``constraints=(Constraint("stress"), ...)`` (c_i(x) <= 0 feasible)
and its objective returns ``(f, {"stress": c, ...})``; results then report the best feasible design.
"""

from __future__ import annotations

import numbers
from pathlib import Path

from typing import TYPE_CHECKING

from pinnbo.errors import CaseError, MethodError, PDEError, ProblemError, UserError, shown
from pinnbo.problem import Box, Constraint, Problem, Variable, register_problem

if TYPE_CHECKING:
    from pinnbo.pde import PDE
    from pinnbo.streams import initial_design

__version__ = "0.1.0"


def load_problem(name: str, **params) -> Problem:
    """Build a registered problem (``problems/``) or ``path/to/file.py:function`` with ``params``."""
    from pinnbo.runner.build import check_params, resolve_problem

    factory = resolve_problem(name, Path.cwd())
    return factory(**check_params(factory, params, name))


def make_optimizer(method: str, problem: Problem | Box, seed: int = 0, *, params: dict | None = None, pde=None,
                   collocation_filter=None, device: str = "cpu", constraints=(), observation_noise=None):
    """An ask/tell optimiser by name (``pinn-bo``, ``random``, ...) for ``problem``.
    ``observation_noise``: None, ``"learned"`` or a known sd, as a case's ``observation_noise``
    (``tell(x, y, sd=...)`` gives a measurement's own).

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
                     sense=problem.sense, observation_noise=observation_noise,
                     boundary_continuous=problem.boundary_continuous)
    if not isinstance(problem, Box):
        raise MethodError(f"make_optimizer: expected a Problem or a Box, got {type(problem).__name__}")
    return _make(method, problem, seed, params=params, pde=pde, collocation_filter=collocation_filter, device=device,
                 constraints=constraints, observation_noise=observation_noise)


#: What a command-line flag in a message is called in :func:`optimize` (the runner's messages name
#: the flags; a Python caller passed keyword arguments).
_KEYWORDS = {"--resume": "resume=True", "--overwrite": "overwrite=True", "--output": "output=",
             "--budget": "budget=", "--initial-points": "initial_points=", "--seed": "seed=",
             "--warm-start": "warm_start=", "--target": "target=", "--max-time": "max_time=",
             "--workers": "workers=", "--timeout": "timeout=", "--device": "device=", "--method": "method="}


def _in_keywords(message: str) -> str:
    import re

    return re.sub(r"--[a-z][a-z-]*", lambda m: _KEYWORDS.get(m.group(0), m.group(0)), message)


def optimize(problem: Problem, method: str = "auto", *, budget: int = 100, initial_points: int = 10,
             seed: int = 0, method_params: dict | None = None, output: str | Path | None = None,
             device: str = "cpu", resume: bool = False, overwrite: bool = False, progress: bool | None = None,
             warm_start: str | Path | None = None, target: float | None = None, max_time: float | None = None,
             workers: int = 1, timeout: float | None = None):
    """Optimise ``problem``; returns the :class:`pinnbo.runner.history.History` (written to ``output`` if set).

    The keyword arguments are the command line's options: ``progress`` the live display (default:
    on when stderr is a terminal), ``warm_start`` a .csv or .jsonl of evaluations made elsewhere,
    ``target`` and ``max_time`` the stopping rules, ``workers`` evaluations in flight on a local
    Dask cluster, ``timeout`` seconds per oracle call. A mistake raises a :class:`UserError` whose
    message names the keyword argument."""
    try:
        return _optimize(problem, method, budget=budget, initial_points=initial_points, seed=seed,
                         method_params=method_params, output=output, device=device, resume=resume,
                         overwrite=overwrite, progress=progress, warm_start=warm_start, target=target,
                         max_time=max_time, workers=workers, timeout=timeout)
    except UserError as exc:
        raise type(exc)(_in_keywords(str(exc))) from None


def _optimize(problem: Problem, method: str, *, budget: int, initial_points: int, seed: int,
              method_params: dict | None, output: str | Path | None, device: str, resume: bool, overwrite: bool,
              progress: bool | None, warm_start: str | Path | None, target: float | None,
              max_time: float | None, workers: int, timeout: float | None):
    import math
    import sys

    from pinnbo.report.summary import write_report
    from pinnbo.runner.case import MAX_BUDGET, MAX_INITIAL_POINTS, MAX_WORKERS
    from pinnbo.runner.loop import run
    from pinnbo.runner.steps import RunSettings
    from pinnbo.runner.warm_start import digest, read_evaluations

    if not isinstance(problem, Problem):
        raise CaseError(f"problem: expected a pinnbo Problem (load_problem(...)), got {type(problem).__name__}")
    for key, value, most in (("initial_points", initial_points, MAX_INITIAL_POINTS), ("budget", budget, MAX_BUDGET),
                             ("workers", workers, MAX_WORKERS)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= most:
            raise CaseError(f"{key}: expected an integer from 1 to {most}, got {shown(value)}")
    if budget <= initial_points:
        raise CaseError(f"budget: must exceed initial_points ({initial_points}), got {budget}")
    for key, value, positive in (("target", target, False), ("max_time", max_time, True), ("timeout", timeout, True)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                  or not math.isfinite(value) or (positive and value <= 0)):
            raise CaseError(f"{key}: expected a finite number{' > 0' if positive else ''}, got {shown(value)}")
    from pinnbo.optimizers import make_optimizer as _make

    # The runner tells minimisation values (pinnbo.runner.loop): the optimiser minimises as built.
    optimizer = _make(method, problem.domain, seed, params=method_params, pde=problem.minimised_pde,
                      collocation_filter=problem.collocation_filter, device=device, constraints=problem.constraints,
                      objectives=problem.objectives, reference=problem.minimised_reference,
                      boundary_continuous=problem.boundary_continuous)
    case = {"problem": problem.name, "method": method, "method_params": method_params or {}, "seed": seed,
            "initial_points": initial_points, "budget": budget}
    if problem.constraints:  # a resumed run must have the same constraints (the log's records carry them)
        case["constraints"] = list(problem.constraint_names)
    imported = ()
    if warm_start is not None:
        imported = tuple(read_evaluations(Path(warm_start), problem, field="warm_start"))
        case["warm_start"] = {"file": str(Path(warm_start).resolve()), "counted": False,
                              "digest": digest(Path(warm_start))}
    settings = RunSettings(budget=budget + len(imported), initial_points=initial_points, seed=seed,
                           output=None if output is None else Path(output), case=case, resume=resume,
                           overwrite=overwrite, imported=imported, target=target, max_time=max_time,
                           workers=int(workers), timeout=timeout,
                           labels={"budget": "budget", "initial_points": "initial_points", "seed": "seed"})
    if progress is None:
        progress = sys.stderr.isatty()
    observer = None
    if progress:
        from pinnbo.report.live import LiveProgress

        observer = LiveProgress(title=f"{problem.name} · {method} · seed {seed}", choice=optimizer.choice)
    try:
        history = run(problem, optimizer, settings, observer)
    finally:
        if observer is not None:
            observer.stop()
    if output is not None:
        write_report(history, problem, case)
    return history


def __getattr__(name: str):
    # PDE and initial_design pull in torch and sympy (a second or more): imported when first used,
    # so that `pinnbo --help`, `pinnbo show` and the package's light parts answer at once.
    if name == "PDE":
        from pinnbo.pde import PDE

        return PDE
    if name == "load_results":
        from pinnbo.results import load_results

        return load_results
    if name == "initial_design":
        from pinnbo.streams import initial_design

        return initial_design
    raise AttributeError(f"module 'pinnbo' has no attribute {name!r}")


__all__ = ["PDE", "Box", "Constraint", "Problem", "Variable", "register_problem", "initial_design", "load_problem",
           "load_results", "make_optimizer", "optimize", "UserError", "CaseError", "MethodError", "PDEError", "ProblemError"]
