"""Case files: one declaration of the case (:class:`Case`, a pydantic model) gives the validation
with one-line errors naming the field (``params.boundary.left``, ``constraints[0]``), the defaults,
what a resumed run may change (:data:`RESUMABLE_KEYS`), ``case.json`` (:meth:`Case.to_dict`), and
the JSON Schema and field table of :mod:`pinnbo.runner.schema`. Building a problem and an optimiser
from a case is :mod:`pinnbo.runner.build`'s.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, PrivateAttr,
                      ValidationError, ValidationInfo, WithJsonSchema, model_validator)
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import NotRequired, TypedDict

from pinnbo.errors import CaseError, shown
from pinnbo.optimizers import AUTO, METHODS
from pinnbo.optimizers.base import check_device
from pinnbo.runner import SCHEDULER_VARIABLE
from pinnbo.runner.case_errors import Expected, first_error
from pinnbo.runner.warm_start import FORMATS, digest
from pinnbo.runner.yaml12 import CaseLoader, DuplicateKey

#: Limits of a case: far beyond any expensive design problem, and small enough that a mistake
#: (a misplaced exponent) is an error now rather than a run that never starts.
MAX_BUDGET = 100_000
MAX_INITIAL_POINTS = 10_000
MAX_SEED = 2**63 - 1
MAX_WORKERS = 1024
CASES_DIR = Path(__file__).resolve().parents[2] / "cases"
NAME_PATTERN = r"^[A-Za-z0-9_.\-]+$"


class Resumable:
    """Field marker: a resumed run may change this field (a longer budget, another device, a
    longer timeout: evaluations already recorded stay as they are)."""


class OmittedAtDefault:
    """Field marker: left out of case.json at its default, so the case.json of a run that does not
    use the field stays what it was before the field existed (and such a folder still resumes)."""


class NullIsDefault:
    """Field marker: ``null`` in a case file means the default."""


def _marked(field: str, marker: type) -> bool:
    info = Case.model_fields.get(field)
    return info is not None and any(isinstance(m, marker) for m in info.metadata)


def _not_only_dots(value: str) -> str:
    if set(value) == {"."}:
        raise ValueError("only dots")
    return value


def _method(value: Any) -> Any:
    if isinstance(value, str) and value not in METHODS and value != AUTO:
        hint = difflib.get_close_matches(value, METHODS, n=1)
        raise CaseError(f"method: unknown method {shown(value)}" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                        + f"; expected auto or one of {', '.join(sorted(METHODS))}")
    return value


def _device(value: str) -> str:
    check_device(value)      # a MethodError naming device:
    return value


def _scheduler(value: str | None) -> str | None:
    return scheduler_address(value, "scheduler")


def scheduler_address(address: str | None, name: str) -> str | None:
    """``address`` checked as a Dask scheduler's; a mistake is a CaseError naming ``name``."""
    if address is not None and not re.fullmatch(r"(tcp|tls|inproc|ucx)://\S+|[A-Za-z0-9.\-\[\]:]+:\d+", address):
        raise CaseError(f"{name}: expected a Dask scheduler address such as tcp://host:8786, got {shown(address)}")
    return address


Text = Annotated[str, Field(min_length=1, pattern=r"\S")]


class Oracle(TypedDict):
    """``oracle:``: an external program replaces the problem's objective."""

    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]
    command: Annotated[Text, Field(description=(
        "the command line, with a placeholder {name} per design variable; run without a shell"))]
    parse: NotRequired[Annotated[Literal["float", "json"], Field(description=(
        "float: the last line of standard output is the value; json: a JSON object with y and each "
        "black-box constraint"))]]


def _oracle(value: dict | None) -> dict | None:
    return None if value is None else {"command": value["command"], "parse": value.get("parse", "float")}


class WarmStart(TypedDict):
    """``warm_start:``: evaluations made elsewhere, recorded first."""

    __pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[misc]
    file: Annotated[Text, Field(description=(
        "a .csv or .jsonl file, relative to the case file's folder"))]
    counted: NotRequired[Annotated[bool, Field(description="whether the imported evaluations count in the budget")]]


def _warm_start_file(value: Any) -> Any:
    return {"file": value} if isinstance(value, str) else value


def _warm_start(value: dict | None, info: ValidationInfo) -> dict | None:
    """The file resolved against the case file's folder, with its digest (a resume with another
    file is refused)."""
    if value is None:
        return None
    base = (info.context or {}).get("base", Path.cwd())
    text, counted = value["file"], value.get("counted", False)
    path = Path(text) if Path(text).is_absolute() else base / text
    if path.suffix.lower() not in FORMATS:
        raise CaseError(f"warm_start.file: {shown(text)}: expected a .csv or .jsonl file")
    if not path.is_file():
        where = "" if Path(text).is_absolute() else f" (relative to the case file's folder {base})"
        what = "not a regular file" if path.exists() else "no such file"
        raise CaseError(f"warm_start.file: {what} {shown(text)}{where}")
    return {"file": str(path.resolve()), "counted": counted, "digest": digest(path)}


class Constraint(TypedDict):
    name: str
    expr: str


def _constraints(value: Any) -> Any:
    """``constraints:`` as [{"name": ..., "expr": text}] (an unnamed one is named by its text); the
    formulas are parsed against the problem's variables when it is built."""
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


_CONSTRAINTS_SCHEMA = {"type": "array", "items": {"anyOf": [
    {"type": "string", "description": "an inequality such as 'x + y <= 1.5', or an expression e meaning e <= 0"},
    {"type": "object", "properties": {"name": {"type": "string"}, "expr": {"type": "string"}},
     "required": ["expr"], "additionalProperties": False}]}}


def _fraction(value: Any, field: str, expected: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise CaseError(f"{field}: expected {expected}, got {shown(value)}")
    return float(value)


def _constraint_noise(value: Any) -> Any:
    if value is None:
        value = 0.0
    if isinstance(value, dict):
        return {str(name): _fraction(f, f"constraint_noise.{name}", "a finite number >= 0") for name, f in value.items()}
    return _fraction(value, "constraint_noise", "a finite number >= 0 (a fraction of each black-box constraint's "
                     "std) or a mapping {name: fraction}")


def _observation_noise(value: Any) -> Any:
    """``observation_noise``: None, "learned" or {"sd": σ > 0} (the objective's units)."""
    if value is None or value == "learned":
        return value
    if isinstance(value, dict) and set(value) == {"sd"}:
        sd = value["sd"]
        if not isinstance(sd, bool) and isinstance(sd, (int, float)) and math.isfinite(sd) and sd > 0:
            return {"sd": float(sd)}
        raise CaseError(f"observation_noise.sd: expected a standard deviation > 0 (the objective's units), "
                        f"got {shown(sd)}")
    raise CaseError(f"observation_noise: expected learned or {{sd: σ}} (a known standard deviation), got {shown(value)}")


def noise_model(value: Any) -> str | float | None:
    """A case's ``observation_noise`` (validated, or as case.json stores it) as the optimisers and the
    recommendation take it: None, "learned" or the known sd."""
    return value["sd"] if isinstance(value, dict) else value


_OBSERVATION_NOISE_SCHEMA = {"anyOf": [{"type": "string", "enum": ["learned"]}, {
    "type": "object", "properties": {"sd": {"type": "number", "exclusiveMinimum": 0}}, "required": ["sd"],
    "additionalProperties": False}]}
_FRACTION = {"type": "number", "minimum": 0}
_CONSTRAINT_NOISE_SCHEMA = {"anyOf": [_FRACTION, {"type": "object", "additionalProperties": _FRACTION}]}

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
SECONDS = Expected("a number of seconds > 0")
Finite = Annotated[float, Field(allow_inf_nan=False)]


class Case(BaseModel):
    """A case file: what to optimise, how, and where the results go."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=False,
                              json_schema_extra={"title": "pinnbo case file"})

    name: Annotated[str, Field(pattern=NAME_PATTERN, description=(
        "the run's name; its results go to results/NAME unless output says otherwise")),
        AfterValidator(_not_only_dots), Expected("letters, digits, '_', '-' or '.' (not only dots)")]
    problem: Annotated[Text, Field(description=(
        "a registered problem (pinnbo problems lists them) or path/to/file.py:function"))]
    params: Annotated[dict[str, Any], NullIsDefault(), Field(description=(
        "keyword arguments of the problem's factory, checked against its signature"))] = {}
    method: Annotated[str, BeforeValidator(_method), NullIsDefault(), WithJsonSchema({"enum": [AUTO] + sorted(METHODS)}),
                      Field(description="the optimiser; auto (the default) chooses one from what the problem declares "
                                        "(docs/guide/methods.md)")] = AUTO
    method_params: Annotated[dict[str, Any], NullIsDefault(), Field(description=(
        "overrides of the method's documented defaults (docs/guide/methods.md)"))] = {}
    budget: Annotated[int, Field(ge=1, le=MAX_BUDGET), Resumable(), Field(description=(
        "total evaluations, initial design included"))] = 100
    initial_points: Annotated[int, Field(ge=1, le=MAX_INITIAL_POINTS), Field(description=(
        "evaluations of the seed's scrambled Sobol design before the method proposes"))] = 10
    seed: Annotated[int, Field(ge=0, le=MAX_SEED), Field(description=(
        "drives every random stream of the run (initial design, networks, oracle noise)"))] = 0
    output: Annotated[Text | None, Resumable(), Field(description=(
        "the results folder; default results/NAME"))] = None
    device: Annotated[Text, AfterValidator(_device), NullIsDefault(), Resumable(), Field(description=(
        "where the surrogates compute: cpu, cuda or cuda:N"))] = "cpu"
    noise: Annotated[float, Field(ge=0, allow_inf_nan=False), Field(description=(
        "synthetic observation noise σ, a fraction of the objective's std over the domain"))] = 0.0
    observation_noise: Annotated[Any, BeforeValidator(_observation_noise), WithJsonSchema(_OBSERVATION_NOISE_SCHEMA),
                                 OmittedAtDefault(), Field(description=(
                                     "how noisy the measurements are: {sd: σ} known (the objective's units; a "
                                     "measurement's own sd wins), learned (fitted by the GP); replicates are then "
                                     "allowed and the summary recommends by posterior mean"))] = None
    timeout: Annotated[Seconds | None, SECONDS, Resumable(), Field(description=(
        "seconds per oracle call; a slower call is a failed evaluation"))] = None
    oracle: Annotated[Oracle | None, AfterValidator(_oracle), Expected(
        "a mapping {command: ..., parse: float|json}"), Field(description=(
            "an external program that replaces the problem's objective: {command: ..., parse: float or json}"))] = None
    constraints: Annotated[list[Constraint], BeforeValidator(_constraints), WithJsonSchema(_CONSTRAINTS_SCHEMA),
                           OmittedAtDefault(), Field(description=(
                               "known constraints, added to the problem's own (feasible iff all hold)"))] = []
    constraint_noise: Annotated[float | dict[str, float], BeforeValidator(_constraint_noise),
                                WithJsonSchema(_CONSTRAINT_NOISE_SCHEMA), OmittedAtDefault(), Field(description=(
                                    "noise σ of each black-box constraint, a fraction of its std over the domain "
                                    "(one number for all, or {name: fraction})"))] = 0.0
    # stored with the file's digest, which the declared keys leave out
    warm_start: Annotated[WarmStart | None, BeforeValidator(_warm_start_file), AfterValidator(_warm_start),
                          PlainSerializer(lambda value: None if value is None else dict(value)),
                          Expected("a file (.csv or .jsonl) or {file: ..., counted: false}"),
                          WithJsonSchema({"anyOf": [{"type": "string"}, {
                              "type": "object", "properties": {"file": {"type": "string"},
                                                               "counted": {"type": "boolean"}},
                              "required": ["file"], "additionalProperties": False}]}),
                          OmittedAtDefault(), Field(description=(
                              "evaluations made elsewhere (.csv or .jsonl), recorded first; counted: whether "
                              "they count in the budget (default false)"))] = None
    target: Annotated[Finite | None, Resumable(), OmittedAtDefault(), Field(description=(
        "stop once the best observed value reaches this"))] = None
    max_time: Annotated[Seconds | None, SECONDS, Resumable(), OmittedAtDefault(), Field(description=(
        "stop after this many seconds of one command"))] = None
    workers: Annotated[int, Field(ge=1, le=MAX_WORKERS), Resumable(), OmittedAtDefault(), Field(description=(
        "evaluations in flight (asynchronous runs on a local Dask cluster); 1: one at a time"))] = 1
    # Where the evaluations run is the command line's (--scheduler), never a file's: not stored.
    scheduler: SkipJsonSchema[Annotated[Text | None, AfterValidator(_scheduler), Resumable(),
                                        Field(exclude=True)]] = None
    batch: Annotated[bool, NullIsDefault(), Resumable(), OmittedAtDefault(), Field(description=(
        "synchronous batches of workers designs instead of asynchronous proposals"))] = False
    report: Annotated[bool, NullIsDefault(), Resumable(), OmittedAtDefault(), Field(description=(
        "keep report.html in the results folder up to date while the run goes on (pinnbo report)"))] = False
    # Tiny budget and cheap method settings (--smoke, CI's quick runs of every case).
    smoke: SkipJsonSchema[Annotated[bool, Resumable()]] = False

    _source: str | None = PrivateAttr(default=None)      # the file the case came from
    _labels: dict = PrivateAttr(default_factory=dict)    # field -> the command-line option that set it

    @model_validator(mode="before")
    @classmethod
    def _nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if not (v is None and _marked(str(k), NullIsDefault))}
        return data

    @property
    def source(self) -> str | None:
        return self._source

    @source.setter
    def source(self, value: str | None) -> None:
        self._source = value

    @property
    def labels(self) -> dict:
        return self._labels

    @labels.setter
    def labels(self, value: dict) -> None:
        self._labels = value

    @property
    def output_dir(self) -> Path:
        return Path(self.output) if self.output else Path("results") / self.name

    @property
    def base_dir(self) -> Path:
        """Where relative paths of the case (problem files, the oracle's command) are resolved."""
        return Path(self.source).resolve().parent if self.source else Path.cwd()

    def to_dict(self) -> dict:
        """What case.json stores: every field but the scheduler, those marked OmittedAtDefault left
        out at their defaults."""
        data = self.model_dump()
        for key, info in Case.model_fields.items():
            if _marked(key, OmittedAtDefault) and key in data:
                value, default = data[key], info.default
                if value == default or (not value and not default):
                    data.pop(key)
        return data


#: The case fields a resumed run may change (Resumable in the declaration).
RESUMABLE_KEYS = frozenset(key for key in Case.model_fields if _marked(key, Resumable))
#: The fields a case file may hold.
FIELDS = tuple(key for key, info in Case.model_fields.items() if key not in ("scheduler", "smoke"))


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
        key = re.split(r"[.\[]", field, maxsplit=1)[0]
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
    own_method = data.get("method") or AUTO
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    smoke = data.get("smoke") is True
    # Another method on the command line: the case's method_params were written for its own method
    # (as in pinnbo bench), and the run gets its own folder beside the case's.
    other_method = (data.get("method") or AUTO) != own_method
    if other_method:
        data.pop("method_params", None)
    base = Path(source).resolve().parent if source else Path.cwd()
    try:
        case = Case.model_validate(data, context={"base": base})
    except ValidationError as exc:
        raise CaseError(first_error(exc, Case.model_fields, FIELDS, {"oracle": Oracle, "warm_start": WarmStart})
                        ) from None
    case.source = source
    if case.method == AUTO and case.method_params:
        raise CaseError("method_params: method auto chooses the method, so it takes no settings; name the method "
                        "they are for")
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
    return case


def list_cases(folder: Path = CASES_DIR) -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            out.append((path, yaml.load(path.read_text(), Loader=CaseLoader) or {}))
        except yaml.YAMLError:
            out.append((path, {}))
    return out
