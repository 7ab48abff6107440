"""Case files: the YAML schema, its validation, and building the problem and optimiser.

```yaml
name: heat_bc1
problem: heat_plate          # a registered factory in problems/, or path/to/file.py:function
params: {...}                # keyword arguments of the factory, checked against its signature
method: pinn-bo
method_params: {}            # overrides of the method's documented defaults
budget: 100                  # total evaluations, initial design included
initial_points: 10
seed: 0
output: results/heat_bc1     # default results/<name>
device: cpu                  # or cuda, cuda:1
noise: 0.0                   # observation noise σ as a fraction of the objective's std over the domain
timeout: 30                  # seconds per oracle call; a slower call is a failed evaluation
oracle: {command: "./simulate {x} {y}", parse: float}   # a program replaces the problem's objective
constraints:                 # known constraints, added to the problem's own (feasible iff all hold)
  - "x + y <= 1.5"           # an inequality, or an expression e meaning e <= 0
  - {name: edge, expr: "0.1 - Min(x, y, 1 - x, 1 - y)"}
constraint_noise: 0.05       # noise σ of each black-box constraint, a fraction of its std over the
                             # domain (one number for all, or {name: fraction}); default 0
```
Every error names the field (``params.boundary.left``, ``method_params.hidden``, ``constraints[0]``)
in one line.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import math
import numbers
import pkgutil
import re
import sys
import types
import typing
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import sympy as sp
import yaml

from pinnbo.errors import CaseError, shown
from pinnbo.expressions import expression_of, numpy_function, split_relation
from pinnbo.optimizers import METHODS, Optimizer, make_optimizer
from pinnbo.optimizers.base import MethodError, check_device, sobol_unit
from pinnbo.pde import PDEError
from pinnbo.problem import PROBLEM_FACTORIES, Constraint, Problem, ProblemError

#: Limits of a case: far beyond any expensive design problem, and small enough that a mistake
#: (a misplaced exponent) is an error now rather than a run that never starts.
MAX_BUDGET = 100_000
MAX_INITIAL_POINTS = 10_000
MAX_SEED = 2**63 - 1

FIELDS = ("name", "problem", "params", "method", "method_params", "budget", "initial_points",
          "seed", "output", "device", "noise", "timeout", "oracle", "constraints", "constraint_noise",
          "warm_start", "target", "max_time")
ORACLE_FIELDS = ("command", "parse")
CASES_DIR = Path(__file__).resolve().parent.parent / "cases"


@dataclass
class Case:
    name: str
    problem: str
    params: dict = field(default_factory=dict)
    method: str = "pinn-bo"
    method_params: dict = field(default_factory=dict)
    budget: int = 100
    initial_points: int = 10
    seed: int = 0
    output: str | None = None
    device: str = "cpu"
    noise: float = 0.0
    timeout: float | None = None    # seconds per oracle call
    oracle: dict | None = None      # {command, parse}: an external program replaces the objective
    # Known constraints of the case, [{"name": ..., "expr": text}] (an unnamed one is named by its
    # text); parsed against the problem's variables when the problem is built.
    constraints: list = field(default_factory=list)
    constraint_noise: float | dict = 0.0   # fraction of each black-box constraint's std (or per name)
    # Evaluations made elsewhere, recorded first: {"file": absolute path, "counted": whether they
    # count in the budget, "digest": the file's, so a resume with another file is refused}.
    warm_start: dict | None = None
    target: float | None = None     # stop once the best observed value reaches this
    max_time: float | None = None   # stop after this many seconds of one command
    source: str | None = None       # the file the case came from (not part of the schema)
    smoke: bool = False             # tiny budget and cheap method settings (CI)
    labels: dict = field(default_factory=dict)   # field -> the command-line option that set it (messages)

    @property
    def output_dir(self) -> Path:
        return Path(self.output) if self.output else Path("results") / self.name

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("source")
        data.pop("labels")
        # Absent unless used: the case.json of an unconstrained case (and so --resume of a folder
        # written before constraints existed) stays what it was.
        if not data["constraints"]:
            data.pop("constraints")
        if not data["constraint_noise"]:
            data.pop("constraint_noise")
        for key in ("warm_start", "target", "max_time"):
            if data[key] is None:
                data.pop(key)
        return data

    # -- building ---------------------------------------------------------------------------------
    @property
    def base_dir(self) -> Path:
        """Where relative paths of the case (problem files, the oracle's command) are resolved."""
        return Path(self.source).resolve().parent if self.source else Path.cwd()

    def run_settings(self, problem: Problem | None = None, *, resume: bool = False, overwrite: bool = False):
        """The run's settings; ``problem`` (built from this case) is needed to read a warm start."""
        from pinnbo.run import RunSettings
        from pinnbo.warm_start import read_evaluations

        imported = ()
        if self.warm_start is not None:
            if problem is None:
                problem = self.build_problem()
            imported = tuple(read_evaluations(Path(self.warm_start["file"]), problem))
        budget = self.budget + (0 if self.warm_start is None or self.warm_start["counted"] else len(imported))
        return RunSettings(budget=budget, initial_points=self.initial_points, seed=self.seed,
                           output=self.output_dir, case=self.to_dict(), resume=resume, overwrite=overwrite,
                           timeout=self.timeout, labels=dict(self.labels), imported=imported, target=self.target,
                           max_time=self.max_time)

    def build_problem(self) -> Problem:
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
        if self.oracle is not None:
            problem = self._with_command_oracle(problem)
        if self.constraints:
            problem = self._with_case_constraints(problem)
        noise = constraint_noise_fractions(self.constraint_noise, problem)
        if self.noise > 0 or noise:
            objective, constraints = output_std(problem)
            if self.noise > 0:
                problem.noise_std = self.noise * objective
            problem.constraints = tuple(replace(c, noise_std=noise[c.name] * constraints[c.name])
                                        if c.name in noise else c for c in problem.constraints)
        return problem

    def _with_case_constraints(self, problem: Problem) -> Problem:
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

    def _with_command_oracle(self, problem: Problem) -> Problem:
        """The problem with its objective replaced by the case's external command. Its domain,
        sense and PDE stay; f*, its location and the field map belonged to the replaced objective."""
        from pinnbo.oracles.external import CommandOracle, OracleConfigError

        for key, value in (("noise", self.noise), ("constraint_noise", self.constraint_noise)):
            if value:
                raise CaseError(f"{key}: synthetic noise needs 512 oracle calls to scale; not available with an "
                                "external oracle (its measurements carry their own noise)")
        try:
            oracle = CommandOracle(self.oracle["command"], problem.domain.names, self.oracle.get("parse", "float"),
                                   cwd=self.base_dir, constraints=tuple(c.name for c in problem.oracle_constraints))
        except OracleConfigError as exc:
            raise CaseError(str(exc)) from None
        return replace(problem, objective=oracle, optimum=None, optimum_location=None, field_plot=None,
                       metadata={**problem.metadata, "oracle": "command"})

    def build_optimizer(self, problem: Problem) -> Optimizer:
        params = dict(self.method_params)
        if self.smoke:
            params = {**getattr(METHODS.get(self.method), "SMOKE_PARAMS", {}), **params}
        return make_optimizer(self.method, problem.domain, self.seed, params=params, pde=problem.pde,
                              collocation_filter=problem.collocation_filter, device=self.device,
                              constraints=problem.constraints)


def output_std(problem: Problem, n: int = 512) -> tuple[float, dict[str, float]]:
    """Standard deviations over the domain (Sobol sample, fixed stream) of the true objective and
    of each black-box constraint {name: std}: the units of ``noise`` and ``constraint_noise``. One
    sample for all outputs (a coupled oracle returns them together); a failed, malformed or
    non-finite result is left out."""
    from pinnbo.run import split_outcome

    points = problem.domain.from_unit(sobol_unit(n, problem.domain.dim, 0, "noise-scale"))
    names = [c.name for c in problem.oracle_constraints]
    rows = []
    for x in points:
        try:
            value, constraints, error = split_outcome(problem, problem.objective(x))
        except Exception:
            continue
        row = [value] + [constraints.get(name, math.nan) for name in names]
        if error is None and all(math.isfinite(v) for v in row):
            rows.append(row)
    if len(rows) < 2:
        raise CaseError("noise: cannot estimate the objective's standard deviation (the oracle failed on the sample)")
    std = np.std(np.array(rows), axis=0)
    return float(std[0]), {name: float(s) for name, s in zip(names, std[1:])}


def objective_std(problem: Problem, n: int = 512) -> float:
    """Standard deviation of the true objective over the domain, the unit of the ``noise`` field."""
    return output_std(problem, n)[0]


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
class DuplicateKey(yaml.constructor.ConstructorError):
    """A mapping of a case file gives the same key twice (PyYAML would keep the last silently)."""


class CaseLoader(yaml.SafeLoader):
    """PyYAML's safe loader, reading ``1e-3`` as a number and refusing duplicate keys.

    PyYAML follows YAML 1.1, whose floats need a dot, so ``learning_rate: 1e-3`` would arrive as the
    text '1e-3'; YAML 1.2 (and every user) reads it as 0.001. The resolver below adds the exponent
    form without a dot; every other scalar resolves as before. A key given twice in one mapping is an
    error: which of two budgets the user meant is not ours to guess.
    """

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base constructor says so
                continue
            if duplicate:
                raise DuplicateKey(None, None, f"duplicate key {shown(key)}", key_node.start_mark)
        return super().construct_mapping(node, deep)


CaseLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)$"),
    list("-+0123456789"))


def load_case(path: str | Path, overrides: dict | None = None) -> Case:
    """Read and validate a case file; ``overrides`` (seed, budget, output, device, smoke) win."""
    path = Path(path)
    if not path.exists():
        candidate = CASES_DIR / path.name
        if path.parent == Path(".") and candidate.exists():
            path = candidate
        else:
            raise CaseError(f"case: no such file {shown(str(path))}")
    try:
        if path.stat().st_size > MAX_CASE_BYTES:
            raise CaseError(f"case: {shown(str(path))} is {path.stat().st_size} bytes; a case file is at most "
                            f"{MAX_CASE_BYTES}")
        data = yaml.load(path.read_text(), Loader=CaseLoader)
    except DuplicateKey as exc:
        mark = exc.problem_mark
        raise CaseError(f"{path.name}: line {mark.line + 1}: {exc.problem}; a key may appear once in a mapping") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or "invalid YAML"
        raise CaseError(f"{path.name}: YAML syntax error{where}: {reason}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"case: cannot read {shown(str(path))} ({exc.__class__.__name__})") from None
    if _expanded_size(data, MAX_CASE_VALUES) > MAX_CASE_VALUES:
        raise CaseError(f"{path.name}: expands to more than {MAX_CASE_VALUES} values (through YAML aliases?); "
                        "a case holds a few dozen")
    return case_from_dict(data, source=str(path), overrides=overrides)


#: Largest case file read, in bytes, and most values it may expand to (YAML aliases share one
#: object many times: a few hundred bytes can stand for billions of values).
MAX_CASE_BYTES = 1_000_000
MAX_CASE_VALUES = 100_000


def _expanded_size(data: Any, limit: int) -> int:
    """How many values ``data`` holds with every alias expanded, counting no further than ``limit + 1``."""
    count, stack = 0, [data]
    while stack and count <= limit:
        value = stack.pop()
        count += 1
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return count


def case_from_dict(data: Any, source: str | None = None, overrides: dict | None = None) -> Case:
    """The case of ``data`` (a parsed case file) with the command line's ``overrides``; a mistake
    in an overridden field names its option (``--seed``) rather than the field."""
    labels = {key: "--" + key.replace("_", "-") for key, value in (overrides or {}).items()
              if value is not None and key != "smoke"}
    try:
        case = _case_from_dict(data, source, overrides)
    except CaseError as exc:
        message = str(exc)
        field = message.split(":", 1)[0]
        key = field.split(".", 1)[0]
        raise CaseError(labels[key] + message[len(field):] if key in labels else message) from None
    case.labels = labels
    return case


def _case_from_dict(data: Any, source: str | None, overrides: dict | None) -> Case:
    if not isinstance(data, dict):
        raise CaseError("case: expected a mapping of fields (name, problem, method, ...) at the top level")
    data = dict(data)
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    smoke = bool(data.pop("smoke", False))
    for key in data:
        if key not in FIELDS:
            hint = difflib.get_close_matches(str(key), FIELDS, n=1)
            raise CaseError(f"{key}: unknown field" + (f" (did you mean '{hint[0]}'?)" if hint else
                                                       f"; expected one of {', '.join(FIELDS)}"))
    for key in ("name", "problem"):
        if key not in data:
            raise CaseError(f"{key}: required field is missing")
    case = Case(
        name=_string(data, "name"),
        problem=_string(data, "problem"),
        params=_mapping(data, "params"),
        method=_string(data, "method", "pinn-bo"),
        method_params=_mapping(data, "method_params"),
        budget=_integer(data, "budget", 100, minimum=1, maximum=MAX_BUDGET),
        initial_points=_integer(data, "initial_points", 10, minimum=1, maximum=MAX_INITIAL_POINTS),
        seed=_integer(data, "seed", 0, minimum=0, maximum=MAX_SEED),
        output=_string(data, "output", None),
        device=_string(data, "device", "cpu"),
        noise=_number(data, "noise", 0.0, minimum=0.0),
        timeout=_timeout(data),
        oracle=_oracle(data),
        constraints=_constraints(data),
        constraint_noise=_constraint_noise(data),
        warm_start=_warm_start(data, Path(source).resolve().parent if source else Path.cwd()),
        target=None if data.get("target") is None else _number(data, "target", 0.0, minimum=-math.inf),
        max_time=None if data.get("max_time") is None else _positive_seconds(data, "max_time"),
        source=source,
        smoke=smoke,
    )
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", case.name) or set(case.name) == {"."}:
        raise CaseError(f"name: expected letters, digits, '_', '-' or '.' (not only dots), got {shown(case.name)}")
    if smoke:
        case.initial_points = min(case.initial_points, 4)
        case.budget = case.initial_points + 2
    if case.budget <= case.initial_points:
        raise CaseError(f"budget: must exceed initial_points ({case.initial_points}), got {case.budget}")
    if case.method not in METHODS:
        hint = difflib.get_close_matches(case.method, METHODS, n=1)
        raise CaseError(f"method: unknown method {shown(case.method)}" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                        + f"; expected one of {', '.join(sorted(METHODS))}")
    try:
        check_device(case.device)
    except MethodError as exc:
        raise CaseError(str(exc)) from None
    return case


def _string(data: dict, key: str, default: Any = ...) -> Any:
    if key not in data or data[key] is None:
        if default is ...:
            raise CaseError(f"{key}: required field is missing")
        return default
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise CaseError(f"{key}: expected a non-empty string, got {shown(value)}")
    return value


def _timeout(data: dict) -> float | None:
    return None if data.get("timeout") is None else _positive_seconds(data, "timeout")


def _positive_seconds(data: dict, key: str) -> float:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise CaseError(f"{key}: expected a number of seconds > 0, got {shown(value)}")
    return float(value)


def _warm_start(data: dict, base: Path) -> dict | None:
    """``warm_start: FILE`` or ``{file: FILE, counted: false}``: the file resolved against ``base``
    (the case file's folder), with its digest."""
    from pinnbo.warm_start import FORMATS, digest

    value = data.get("warm_start")
    if value is None:
        return None
    if isinstance(value, str):
        value = {"file": value}
    if not isinstance(value, dict):
        raise CaseError(f"warm_start: expected a file (.csv or .jsonl) or {{file: ..., counted: false}}, got "
                        f"{shown(value)}")
    for key in value:
        if key not in ("file", "counted"):
            raise CaseError(f"warm_start.{key}: unknown field; expected file, counted")
    text, counted = value.get("file"), value.get("counted", False)
    if not isinstance(text, str) or not text.strip():
        raise CaseError(f"warm_start.file: expected the path of a .csv or .jsonl file, got {shown(text)}")
    if not isinstance(counted, bool):
        raise CaseError(f"warm_start.counted: expected true or false, got {shown(counted)}")
    path = Path(text) if Path(text).is_absolute() else base / text
    if path.suffix.lower() not in FORMATS:
        raise CaseError(f"warm_start.file: {shown(text)}: expected a .csv or .jsonl file")
    if not path.is_file():
        raise CaseError(f"warm_start.file: no such file {shown(text)} (relative to {base})")
    return {"file": str(path.resolve()), "counted": counted, "digest": digest(path)}


def _oracle(data: dict) -> dict | None:
    value = data.get("oracle")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CaseError(f"oracle: expected a mapping {{command: ..., parse: float|json}}, got {type(value).__name__}")
    for key in value:
        if key not in ORACLE_FIELDS:
            raise CaseError(f"oracle.{key}: unknown field; expected one of {', '.join(ORACLE_FIELDS)}")
    if "command" not in value:
        raise CaseError("oracle.command: required field is missing")
    if not isinstance(value["command"], str) or not value["command"].strip():
        raise CaseError(f"oracle.command: expected a command line (string), got {shown(value['command'])}")
    parse = value.get("parse", "float")
    if parse not in ("float", "json"):
        raise CaseError(f"oracle.parse: expected float or json, got {shown(parse)}")
    return {"command": value["command"], "parse": parse}


def _constraints(data: dict) -> list[dict]:
    """``constraints:`` as [{"name": ..., "expr": text}]; the formulas are parsed against the
    problem's variables when it is built (:func:`parse_constraint`)."""
    value = data.get("constraints")
    if value is None:
        return []
    example = "e.g. [\"x + y <= 1.5\", {name: edge, expr: \"0.1 - x\"}]"
    if not isinstance(value, list):
        raise CaseError(f"constraints: expected a list of inequalities, {example}; got {type(value).__name__}")
    out: list[dict] = []
    for i, item in enumerate(value):
        field = f"constraints[{i}]"
        if isinstance(item, dict):
            for key in item:
                if key not in ("name", "expr"):
                    raise CaseError(f"{field}.{key}: unknown field; expected name, expr")
            if "expr" not in item:
                raise CaseError(f"{field}.expr: required field is missing (the inequality, e.g. \"x + y <= 1.5\")")
            name, text = item.get("name", item["expr"]), item["expr"]
            if not isinstance(name, str) or not name.strip():
                raise CaseError(f"{field}.name: expected a non-empty string, got {shown(name)}")
            where = f"{field}.expr"
        else:
            name, text, where = item, item, field
        if not isinstance(text, str) or not text.strip():
            raise CaseError(f"{where}: expected an inequality such as 'x + y <= 1.5' or an expression e meaning "
                            f"e <= 0 (a string), got {shown(text)}")
        name = " ".join(name.split())  # an unnamed constraint is named by its text, spaces normalised
        if any(c["name"] == name for c in out):
            raise CaseError(f"{field}: the name {shown(name)} is used twice; give each constraint its own name")
        out.append({"name": name, "expr": text})
    return out


def _constraint_noise(data: dict) -> float | dict:
    value = data.get("constraint_noise", 0.0)
    if isinstance(value, dict):
        out = {}
        for name, fraction in value.items():
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not math.isfinite(fraction) \
                    or fraction < 0:
                raise CaseError(f"constraint_noise.{name}: expected a finite number >= 0, got {shown(fraction)}")
            out[str(name)] = float(fraction)
        return out
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise CaseError(f"constraint_noise: expected a finite number >= 0 (a fraction of each black-box "
                        f"constraint's std) or a mapping {{name: fraction}}, got {shown(value)}")
    return float(value)


def _mapping(data: dict, key: str) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CaseError(f"{key}: expected a mapping, got {type(value).__name__}")
    return dict(value)


def _integer(data: dict, key: str, default: int, minimum: int, maximum: int | None = None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise CaseError(f"{key}: expected an integer, got {shown(value)}")
    if value < minimum:
        raise CaseError(f"{key}: expected an integer >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise CaseError(f"{key}: expected an integer <= {maximum}, got {shown(value)}")
    return value


def _number(data: dict, key: str, default: float, minimum: float) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise CaseError(f"{key}: expected a finite number, got {shown(value)}")
    if value < minimum:
        raise CaseError(f"{key}: expected a number >= {minimum}, got {value}")
    return float(value)


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
        example = yaml.safe_dump({"name": name, "problem": name, "params": required or {}, "method": "pinn-bo",
                                  "budget": 100, "initial_points": 10, "seed": 0}, sort_keys=False)
    return (doc.splitlines() or [""])[0], parameters, example


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
    return {k: re.split(r"(?<=[.;])\s", v.strip(), maxsplit=1)[0] for k, v in out.items()}


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


def list_cases(folder: Path = CASES_DIR) -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            out.append((path, yaml.load(path.read_text(), Loader=CaseLoader) or {}))
        except yaml.YAMLError:
            out.append((path, {}))
    return out
