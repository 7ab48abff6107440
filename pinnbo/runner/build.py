"""Building a run from a case: the problem (a registered factory or a user's file, its parameters
checked against the factory's signature, with the case's command oracle, known constraints and
synthetic noise), the optimiser (the method with its documented defaults overridden) and the
run's settings (:class:`pinnbo.runner.steps.RunSettings`).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import numbers
import pkgutil
import re
import sys
import types
import typing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp
import yaml

from pinnbo.errors import CaseError, PDEError, ProblemError, shown
from pinnbo.expressions import expression_of, numpy_function, split_relation
from pinnbo.optimizers import METHODS, Optimizer, auto_choice, make_optimizer
from pinnbo.problem import PROBLEM_FACTORIES, Constraint, Problem, read_outcome
from pinnbo.runner.case import CASES_DIR, Case, list_cases, noise_model
from pinnbo.runner.steps import RunSettings
from pinnbo.runner.warm_start import read_evaluations
from pinnbo.streams import sobol_unit


@dataclass(frozen=True)
class CaseObjective:
    """What a Dask worker needs to build a case's objective (:mod:`pinnbo.runner.cluster`): plain,
    picklable data. The noise and the known constraints stay with the runner, which makes the
    record."""

    problem: str
    params: dict
    oracle: dict | None
    source: str | None

    @classmethod
    def of(cls, case) -> "CaseObjective":
        return cls(case.problem, dict(case.params), None if case.oracle is None else dict(case.oracle), case.source)

    @property
    def key(self) -> str:
        text = json.dumps([self.problem, self.params, self.oracle, self.source], sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def build(self):
        case = Case(name="worker", problem=self.problem, params=self.params, oracle=self.oracle)
        case.source = self.source
        return build_problem(case).objective


def run_settings(self: Case, problem: Problem, *, resume: bool = False, overwrite: bool = False) -> RunSettings:
    """The settings of a run of case ``self`` on ``problem`` (built from it: a warm start is read
    against it)."""
    imported = ()
    if self.warm_start is not None:
        imported = tuple(read_evaluations(Path(self.warm_start["file"]), problem))
    budget = self.budget + (0 if self.warm_start is None or self.warm_start["counted"] else len(imported))
    return RunSettings(budget=budget, initial_points=self.initial_points, seed=self.seed,
                       output=self.output_dir, case=self.to_dict(), resume=resume, overwrite=overwrite,
                       timeout=self.timeout, labels=dict(self.labels), imported=imported, target=self.target,
                       max_time=self.max_time, workers=self.workers, scheduler=self.scheduler, batch=self.batch,
                       objective=CaseObjective.of(self))

def build_problem(self: Case) -> Problem:
    """The problem of case ``self``; every mistake a one-line CaseError or ProblemError."""
    factory = resolve_problem(self.problem, self.base_dir)
    params = check_params(factory, self.params, self.problem)
    try:
        problem = factory(**params)
    except (ProblemError, CaseError):
        raise
    except PDEError as exc:
        raise CaseError(f"problem: {shown(self.problem)} declares a PDE that cannot be used: {exc}") from None
    except TypeError as exc:
        raise CaseError(f"params: {exc}") from None
    except Exception as exc:  # a user's factory is user code: its failure is a message, not a traceback
        raise CaseError(f"problem: {shown(self.problem)} failed to build: {type(exc).__name__}: {exc}") from None
    if not isinstance(problem, Problem):
        raise CaseError(f"problem: {shown(self.problem)} returned {type(problem).__name__}, expected a pinnbo Problem")
    if problem.objectives:
        _check_several_objectives(self, problem)
    if self.oracle is not None:
        problem = _with_command_oracle(self, problem)
    if self.constraints:
        problem = _with_case_constraints(self, problem)
    noise = constraint_noise_fractions(self.constraint_noise, problem)
    if self.noise > 0 or noise:
        objective, constraints = output_std(problem)
        if self.noise > 0:
            problem.noise_std = self.noise * objective
        problem.constraints = tuple(replace(c, noise_std=noise[c.name] * constraints[c.name])
                                    if c.name in noise else c for c in problem.constraints)
    return problem

def _check_several_objectives(self: Case, problem: Problem) -> None:
    """What a case with several objectives cannot ask for, refused before any evaluation."""
    names = ", ".join(problem.objectives)
    if self.noise:
        raise CaseError(f"noise: synthetic noise is for one objective; this problem has several ({names})")
    if self.target is not None:
        raise CaseError(f"target: a target value is for one objective; this problem has several ({names}): "
                        "give the budget")
    if self.warm_start is not None:
        raise CaseError(f"warm_start: imported evaluations hold one objective's values; this problem has several "
                        f"({names})")


def _with_case_constraints(self: Case, problem: Problem) -> Problem:
    """The problem with the case's known constraints after its own."""
    names = problem.domain.names
    own = set(problem.constraint_names)
    added = []
    for i, spec in enumerate(self.constraints):
        field = f"constraints[{i}]"
        if spec["name"] in own:
            raise CaseError(f"{field}: name {shown(spec['name'])} is already a constraint of problem {shown(problem.name)}; "
                            "give this one another name ({name: ..., expr: ...})")
        expr = parse_constraint(spec["expr"], names, field)
        added.append(Constraint(spec["name"], function=formula_constraint(expr, names)))
    return replace(problem, constraints=problem.constraints + tuple(added))

def _with_command_oracle(self: Case, problem: Problem) -> Problem:
    """The problem with its objective replaced by the case's external command. Its domain,
    sense and PDE stay; f*, its location and the field map belonged to the replaced objective."""
    from pinnbo.calibration.posterior import calibration_of
    from pinnbo.oracles.command import CommandOracle

    for key, value in (("noise", self.noise), ("constraint_noise", self.constraint_noise)):
        if value:
            raise CaseError(f"{key}: synthetic noise needs 512 oracle calls to scale; not available with an "
                            "external oracle (its measurements carry their own noise)")
    posterior = calibration_of(problem)
    oracle = CommandOracle(self.oracle["command"], problem.domain.names, self.oracle.get("parse", "float"),
                           cwd=self.base_dir, constraints=tuple(c.name for c in problem.oracle_constraints),
                           outputs=0 if posterior is None else posterior.data.size,
                           sample=tuple(problem.domain.values(problem.domain.from_unit(np.zeros(problem.domain.dim)))),
                           objectives=tuple(problem.objectives))
    if posterior is not None:   # the program is the forward model G; the objective stays V(G(x))
        posterior = posterior.with_forward(oracle)
        return replace(problem, objective=posterior, measured=True,
                       metadata={**problem.metadata, "calibration": posterior})
    return replace(problem, objective=oracle, optimum=None, optimum_location=None, field_plot=None, measured=True)

def build_optimizer(self: Case, problem: Problem) -> Optimizer:
    """The method of case ``self`` for ``problem``, its defaults overridden by ``method_params``
    (and, in smoke mode, by the method's tiny settings)."""
    choice = auto_choice(self.method, problem)
    method = self.method if choice is None else choice.method
    params = dict(self.method_params)
    if self.smoke:
        params = {**getattr(METHODS.get(method), "SMOKE_PARAMS", {}), **params}
    optimizer = make_optimizer(method, problem.domain, self.seed, params=params, pde=problem.minimised_pde,
                               collocation_filter=problem.collocation_filter, device=self.device,
                               constraints=problem.constraints, observation_noise=noise_model(self.observation_noise),
                               objectives=problem.objectives, reference=problem.minimised_reference,
                               boundary_continuous=problem.boundary_continuous)
    optimizer.choice = choice
    return optimizer



def output_std(problem: Problem, n: int = 512) -> tuple[float, dict[str, float]]:
    """Standard deviations over the domain (Sobol sample, fixed stream) of the true objective and
    of each black-box constraint {name: std}: the units of ``noise`` and ``constraint_noise``. One
    sample for all outputs (a coupled oracle returns them together); a failed, malformed or
    non-finite result is left out."""
    points = problem.domain.from_unit(sobol_unit(n, problem.domain.dim, 0, "noise-scale"))
    names = [c.name for c in problem.oracle_constraints]
    rows = []
    for x in points:
        try:
            value, constraints, error = read_outcome(problem, problem.objective(x))
        except Exception:
            continue
        row = [value] + [constraints.get(name, math.nan) for name in names]
        if error is None and all(math.isfinite(v) for v in row):
            rows.append(row)
    if len(rows) < 2:
        raise CaseError("noise: cannot estimate the objective's standard deviation (the oracle failed on the sample)")
    std = np.std(np.array(rows), axis=0)
    return float(std[0]), {name: float(s) for name, s in zip(names, std[1:])}


def constraint_noise_fractions(spec: float | dict, problem: Problem) -> dict[str, float]:
    """``constraint_noise`` as {black-box constraint name: fraction > 0}, checked against the problem."""
    blackbox = [c.name for c in problem.oracle_constraints]
    known = [c.name for c in problem.constraints if c.known]
    if isinstance(spec, dict):
        for name in spec:
            if name in known:
                raise CaseError(f"constraint_noise.{name}: a known constraint is computed exactly, without noise; "
                                f"noise applies to black-box constraints ({', '.join(blackbox) or 'none here'})")
            if name not in blackbox:
                raise CaseError(f"constraint_noise.{name}: unknown constraint; expected one of "
                                f"{', '.join(blackbox) or '(none: the problem has no black-box constraints)'}")
        return {name: float(v) for name, v in spec.items() if v > 0}
    if spec > 0 and not blackbox:
        raise CaseError(f"constraint_noise: problem {shown(problem.name)} has no black-box constraints (the case's "
                        "constraints are known exactly)")
    return {name: float(spec) for name in blackbox} if spec > 0 else {}


# -- constraints written in the case ------------------------------------------------------------------
def parse_constraint(text: str, variables: Sequence[str], field: str) -> sp.Expr:
    """``"lhs <= rhs"`` → lhs − rhs, ``"lhs >= rhs"`` → rhs − lhs, ``"e"`` → e: the expression g with
    g(x) <= 0 feasible. ``<`` and ``>`` read as ``<=`` and ``>=`` (with continuous designs the
    boundary has measure zero). Equalities are refused: a sampled design never satisfies one."""
    expected = ("expected an inequality such as 'x + y <= 1.5' or an expression e meaning e <= 0, "
                f"of {', '.join(variables)}")
    if not isinstance(text, str) or not text.strip():
        raise CaseError(f"{field}: {expected}; got {shown(text)}")
    relations = split_relation(text)
    if any(op in ("=", "==", "!=") for _, op in relations):
        raise CaseError(f"{field}: {shown(text)} is an equality, which no sampled design satisfies; {expected} "
                        "(or two inequalities with a tolerance)")
    if len(relations) > 1:
        raise CaseError(f"{field}: {shown(text)} has {len(relations)} comparisons; write one inequality per constraint")
    if not relations:
        expr = _parse_side(text, text, variables, field)
    else:
        at, op = relations[0]
        lhs = _parse_side(text[:at], text, variables, field)
        rhs = _parse_side(text[at + len(op):], text, variables, field)
        expr = lhs - rhs if op in ("<=", "<") else rhs - lhs
    if not expr.free_symbols:
        raise CaseError(f"{field}: {shown(text)} does not depend on the design variables; {expected}")
    return expr


def _parse_side(side: str, text: str, variables: Sequence[str], field: str) -> sp.Expr:
    if not side.strip():
        raise CaseError(f"{field}: {shown(text)} has an empty side; expected an inequality such as 'x + y <= 1.5'")
    symbols = {name: sp.Symbol(name, real=True) for name in variables}
    try:
        return expression_of(side, symbols, field, f"a formula of {', '.join(variables)}", whole=text)
    except ProblemError as exc:
        raise CaseError(str(exc)) from None


def formula_constraint(expr: sp.Expr, variables: Sequence[str]) -> Callable[[np.ndarray], np.ndarray]:
    """The vectorised known constraint ``g(X) -> (n,)`` over designs X of shape (n, d)."""
    evaluate = numpy_function(expr, variables)

    def constraint(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, len(variables))
        return evaluate(*X.T).reshape(-1)

    constraint.__doc__ = f"{expr} <= 0"
    return constraint


# -- loading ----------------------------------------------------------------------------------------


# -- problems ---------------------------------------------------------------------------------------
# problems/<module>.py files that failed to import, with the reason (one line each).
PROBLEM_IMPORT_ERRORS: dict[str, str] = {}


def import_failure(exc: BaseException) -> str:
    """One line for an exception raised while importing a problem file (with the line of a syntax error)."""
    if isinstance(exc, SyntaxError):
        return f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
    return f"{type(exc).__name__}: {exc}"


def registered_problems() -> dict[str, Callable[..., Problem]]:
    """Every factory of the ``problems`` package, importing its modules once.

    A module that fails to import (a user's file in progress) does not take the others down: its
    reason is kept in PROBLEM_IMPORT_ERRORS, listed by ``pinnbo problems`` and named when a case asks
    for a problem that is not registered.
    """
    import problems

    for module in pkgutil.iter_modules(problems.__path__):
        name = f"problems.{module.name}"
        if name in sys.modules or module.name in PROBLEM_IMPORT_ERRORS:
            continue
        try:
            importlib.import_module(name)
        except Exception as exc:
            sys.modules.pop(name, None)
            PROBLEM_IMPORT_ERRORS[module.name] = import_failure(exc)
    return dict(PROBLEM_FACTORIES)


def resolve_problem(spec: str, base: Path) -> Callable[..., Problem]:
    """``name`` of a registered factory, or ``path/to/file.py:function`` (relative to the case)."""
    if ":" in spec and spec.split(":", 1)[0].endswith(".py"):
        file_part, function = spec.rsplit(":", 1)
        path = Path(file_part)
        if not path.is_absolute():  # relative to the case file, never the current folder
            path = base / path
        if not path.is_file():
            raise CaseError(f"problem: no such file {shown(file_part)} (relative to {base})")
        module_name = f"pinnbo_user_{abs(hash(str(path.resolve())))}"
        spec_ = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec_)
        sys.modules[module_name] = module
        try:
            spec_.loader.exec_module(module)
        except Exception as exc:
            raise CaseError(f"problem: importing {shown(file_part)} failed: {import_failure(exc)}") from None
        factory = getattr(module, function, None)
        if not callable(factory):
            raise CaseError(f"problem: {shown(file_part)} defines no function {shown(function)}")
        return factory
    factories = registered_problems()
    if spec not in factories:
        hint = difflib.get_close_matches(spec, factories, n=1)
        broken = "".join(f"; problems/{module}.py did not import ({reason})"
                         for module, reason in sorted(PROBLEM_IMPORT_ERRORS.items()))
        raise CaseError(f"problem: unknown problem {shown(spec)}" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                        + f"; expected one of {', '.join(sorted(factories))} or path/to/file.py:function" + broken)
    return factories[spec]


@dataclass
class ProblemParameter:
    """One keyword of a problem factory, as ``pinnbo problems NAME`` shows it."""

    name: str
    type: str
    default: str          # "required" when there is none
    meaning: str          # the first sentence of its entry in the docstring's Args section


def describe_problem(name: str) -> tuple[str, list[ProblemParameter], str]:
    """(one-line summary, parameters, an example case file) of the registered problem ``name``; the
    example is a shipped case of that problem where there is one."""
    factories = registered_problems()
    if name not in factories:
        hint = difflib.get_close_matches(name, factories, n=1)
        raise CaseError(f"problems: unknown problem {shown(name)}" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                        + f"; expected one of {', '.join(sorted(factories))}")
    factory = factories[name]
    doc = inspect.getdoc(factory) or ""
    meanings = _docstring_arguments(doc)
    parameters = []
    for p in inspect.signature(factory).parameters.values():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            continue
        annotation = "" if p.annotation is inspect.Parameter.empty else str(p.annotation).replace("typing.", "")
        default = "required" if p.default is inspect.Parameter.empty else shown(p.default, 60)
        parameters.append(ProblemParameter(p.name, annotation, default, meanings.get(p.name, "")))
    shipped = [path for path, data in list_cases() if data.get("problem") == name]
    if shipped:
        example = f"# {shipped[0].relative_to(CASES_DIR.parent)}\n" + shipped[0].read_text()
    else:
        required = {p.name: "..." for p in parameters if p.default == "required"}
        example = yaml.safe_dump({"name": name, "problem": name, "params": required or {}, "method": "auto",
                                  "budget": 100, "initial_points": 10, "seed": 0}, sort_keys=False)
    return first_sentence(doc.split("\n\n", 1)[0]), parameters, example


def first_sentence(text: str) -> str:
    """The first sentence of docstring ``text`` as a terminal shows it: lines joined, reST markup
    (````x````, ``:func:`x```) as plain text, cut at the first full stop outside brackets that a
    capital follows (so ``(≥ 16; ...)``, ``s.t. c1`` or ``e.g.`` does not end it)."""
    text = " ".join(text.split())
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text).replace("``", "")
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif ch == "." and depth == 0 and (i + 1 == len(text) or text[i + 1:i + 3] in
                                           (" " + c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")):
            return text[: i + 1]   # a full stop ends a sentence before a capital; "s.t. c1" goes on
    return text


def _docstring_arguments(doc: str) -> dict[str, str]:
    """name -> first sentence of its entry, from a Google-style ``Args:`` section."""
    out: dict[str, str] = {}
    lines = doc.splitlines()
    if "Args:" not in [line.strip() for line in lines]:
        return out
    start = [line.strip() for line in lines].index("Args:") + 1
    current, indent = None, None
    for line in lines[start:]:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        if depth < indent:
            break
        match = re.match(r"\s*(\w+)(?: \([^)]*\))?:\s*(.*)", line) if depth == indent else None
        if match:
            current = match[1]
            out[current] = match[2]
        elif current is not None:
            out[current] += " " + line.strip()
    return {k: first_sentence(v) for k, v in out.items()}


def check_params(factory: Callable[..., Problem], params: dict, name: str) -> dict:
    """Check ``params`` against the factory's signature: unknown and missing names are errors."""
    signature = inspect.signature(factory)
    accepted = {p.name: p for p in signature.parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
    for key in params:
        if key not in accepted and not takes_any:
            raise CaseError(f"params.{key}: unknown parameter of problem {shown(name)}; expected one of "
                            f"{', '.join(accepted) or '(none)'}")
    for key, p in accepted.items():
        if p.default is inspect.Parameter.empty and key not in params:
            raise CaseError(f"params.{key}: required parameter of problem {shown(name)} is missing")
    try:
        hints = typing.get_type_hints(factory)
    except Exception:  # an annotation that does not resolve is the factory's business, not the case's
        hints = {}
    return {key: _check_annotated(f"params.{key}", value, hints.get(key)) for key, value in params.items()}


_SCALARS = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
            type(None): "null", dict: "a mapping", list: "a list", tuple: "a list"}


def _check_annotated(where: str, value: Any, hint: Any) -> Any:
    """``value`` checked against a factory's annotation when it is made of plain types.

    A problem file's ``def f(scale: float = 1.0)`` then rejects ``scale: abc`` at load time instead
    of every evaluation failing on it. An integral float given for an ``int`` becomes an int.
    Annotations other than bool, int, float, str, None, dict, list, tuple and their unions are not
    checked.
    """
    if hint is None:
        return value
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union \
        else (hint,)
    options = tuple(typing.get_origin(o) or o for o in options)
    if not all(o in _SCALARS for o in options):
        return value
    for o in options:
        # numbers.*: the Python API passes numpy scalars too
        if o is float and isinstance(value, numbers.Real) and not isinstance(value, bool):
            return value
        if o is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return value
        if o is int and isinstance(value, float) and value.is_integer() and float not in options:
            return int(value)
        if o in (list, tuple) and isinstance(value, (list, tuple)):   # YAML gives lists, Python often tuples
            return value
        if o is bool and isinstance(value, (bool, np.bool_)):
            return value
        if o in (str, dict, type(None)) and isinstance(value, o):
            return value
    expected = " or ".join(dict.fromkeys(_SCALARS[o] for o in options))
    raise CaseError(f"{where}: expected {expected}, got {shown(value)}")
