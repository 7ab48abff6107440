"""Case files: the YAML schema and its validation (building a problem and an optimiser from a case
is :mod:`pinnbo.runner.build`'s).

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
warm_start: earlier.csv      # evaluations made elsewhere, recorded first (pinnbo.runner.warm_start)
target: 3300                 # stop once the best observed value reaches this
max_time: 3600               # stop after this many seconds of one command
```
Every error names the field (``params.boundary.left``, ``method_params.hidden``, ``constraints[0]``)
in one line.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pinnbo.errors import CaseError, MethodError, shown
from pinnbo.optimizers import METHODS
from pinnbo.optimizers.base import check_device
from pinnbo.runner import SCHEDULER_VARIABLE
from pinnbo.runner.yaml12 import CaseLoader, DuplicateKey

#: Limits of a case: far beyond any expensive design problem, and small enough that a mistake
#: (a misplaced exponent) is an error now rather than a run that never starts.
MAX_BUDGET = 100_000
MAX_INITIAL_POINTS = 10_000
MAX_SEED = 2**63 - 1
MAX_WORKERS = 1024

FIELDS = ("name", "problem", "params", "method", "method_params", "budget", "initial_points",
          "seed", "output", "device", "noise", "timeout", "oracle", "constraints", "constraint_noise",
          "warm_start", "target", "max_time", "workers", "scheduler", "batch")
ORACLE_FIELDS = ("command", "parse")
CASES_DIR = Path(__file__).resolve().parents[2] / "cases"


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
    workers: int = 1                # evaluations in flight (asynchronous runs, Dask); 1: one at a time
    scheduler: str | None = None    # an existing Dask scheduler (--scheduler only; never from a file)
    batch: bool = False             # synchronous batches of `workers` designs instead of asynchronous asks
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
        # Where the evaluations run is the command line's, never a results folder's to say.
        data.pop("scheduler")
        # How the evaluations are dispatched is not part of what a run computes: left out at their
        # defaults, so a sequential run's case.json is what it always was.
        if data["workers"] == 1:
            data.pop("workers")
        if not data["batch"]:
            data.pop("batch")
        return data

    @property
    def base_dir(self) -> Path:
        """Where relative paths of the case (problem files, the oracle's command) are resolved."""
        return Path(self.source).resolve().parent if self.source else Path.cwd()

def load_case(path: str | Path, overrides: dict | None = None) -> Case:
    """Read and validate a case file; ``overrides`` (seed, budget, output, device, smoke) win."""
    path = Path(path)
    if not path.exists():
        candidate = CASES_DIR / path.name
        if path.parent == Path(".") and candidate.exists():
            path = candidate
        else:
            raise CaseError(f"case: no such file {shown(str(path))}")
    if not path.is_file():   # a folder, or a FIFO that would block the read forever
        raise CaseError(f"case: {shown(str(path))} is not a regular file")
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
    except RecursionError:
        raise CaseError(f"{path.name}: nested too deeply; a case is a few levels of mappings and lists") from None
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
    if data.get("scheduler") is not None:
        raise CaseError("scheduler: a case file cannot name a Dask scheduler (the client runs what a scheduler "
                        "sends back, so it is code you trust); give --scheduler ADDRESS on the command line or "
                        f"set {SCHEDULER_VARIABLE}")
    own_method = data.get("method", "pinn-bo")
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    smoke = bool(data.pop("smoke", False))
    # Another method on the command line: the case's method_params were written for its own method
    # (as in pinnbo bench), and the run gets its own folder beside the case's.
    other_method = data.get("method", "pinn-bo") != own_method
    if other_method:
        data.pop("method_params", None)
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
        workers=_integer(data, "workers", 1, minimum=1, maximum=MAX_WORKERS),
        scheduler=_scheduler(data),
        batch=_flag(data, "batch"),
        source=source,
        smoke=smoke,
    )
    if not re.fullmatch(r"[A-Za-z0-9_.\-]+", case.name) or set(case.name) == {"."}:
        raise CaseError(f"name: expected letters, digits, '_', '-' or '.' (not only dots), got {shown(case.name)}")
    if smoke:
        case.initial_points = min(case.initial_points, 4)
        case.budget = case.initial_points + 2
    if case.output is None and (other_method or smoke):
        # A smoke test or a comparison never lands in (or collides with) the case's real run.
        case.output = str(Path("results") / "-".join([case.name] + [case.method] * other_method + ["smoke"] * smoke))
    if case.budget <= case.initial_points:
        given = overrides or {}
        hint = "; lower --initial-points" if given.get("budget") is not None and given.get("initial_points") is None else ""
        raise CaseError(f"budget: must exceed initial_points ({case.initial_points}), got {case.budget}{hint}")
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


def _scheduler(data: dict) -> str | None:
    return scheduler_address(_string(data, "scheduler", None), "scheduler")


def scheduler_address(address: str | None, name: str) -> str | None:
    """``address`` checked as a Dask scheduler's; a mistake is a CaseError naming ``name``."""
    if address is not None and not re.fullmatch(r"(tcp|tls|inproc|ucx)://\S+|[A-Za-z0-9.\-\[\]:]+:\d+", address):
        raise CaseError(f"{name}: expected a Dask scheduler address such as tcp://host:8786, got {shown(address)}")
    return address


def _flag(data: dict, key: str) -> bool:
    value = data.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise CaseError(f"{key}: expected true or false, got {shown(value)}")
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
    from pinnbo.runner.warm_start import FORMATS, digest

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
        where = "" if Path(text).is_absolute() else f" (relative to the case file's folder {base})"
        what = "not a regular file" if path.exists() else "no such file"
        raise CaseError(f"warm_start.file: {what} {shown(text)}{where}")
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


def list_cases(folder: Path = CASES_DIR) -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            out.append((path, yaml.load(path.read_text(), Loader=CaseLoader) or {}))
        except yaml.YAMLError:
            out.append((path, {}))
    return out
