"""A results folder as data: ``pinnbo.load_results(DIR)`` and ``pinnbo export``.

A run's folder gives a :class:`RunResults` (its case, evaluations, timings and summary); a bench's
case folder or root gives a :class:`BenchResults` (every run in it). ``to_pandas()`` makes one row
per evaluation with Optuna's column names (``number``, ``params_<variable>``, ``value``), so a
table reads the same whichever tool made it. Only JSON is read: nothing in a folder is executed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pinnbo.errors import UserError, shown
from pinnbo.files import loads
from pinnbo.runner.history import Evaluation, HistoryError, read_timings

#: The columns every row has, before the variables' (``params_*``) and after them.
LEADING = ("number", "phase", "status")
TRAILING = ("error", "ask_seconds", "oracle_seconds")


class ResultsError(UserError):
    """A folder that is not a pinnbo results folder, or a damaged one."""


def _json(path: Path) -> Any:
    if path.is_symlink():
        raise ResultsError(f"{path}: a symbolic link; pinnbo follows no links in a results folder")
    try:
        return loads(path.read_text(), str(path))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultsError(f"{path}: unreadable ({type(exc).__name__}); expected pinnbo's JSON") from None


def _optional_json(path: Path) -> Any:
    return _json(path) if path.is_file() or path.is_symlink() else None


@dataclass
class RunResults:
    """One run: ``case`` (case.json), ``evaluations`` (the log), ``timings`` (by evaluation, {} where
    none was kept), ``summary`` (summary.json; None while the run is unfinished)."""

    folder: Path
    case: dict
    evaluations: list[Evaluation]
    timings: list[dict]
    summary: dict | None = None
    variables: list[str] = field(default_factory=list)

    @property
    def domain(self) -> list[dict] | None:
        """The variables with their kinds and ranges, as the summary records them."""
        return None if self.summary is None else self.summary.get("domain")

    def records(self) -> list[dict]:
        """One flat mapping per evaluation (the rows of :meth:`to_pandas`)."""
        rows = []
        for record, timing in zip(self.evaluations, self.timings):
            row: dict[str, Any] = {"number": record.index, "phase": record.phase, "status": record.status}
            row.update({f"params_{name}": value for name, value in zip(self.variables, record.x)})
            if record.objectives or record.objectives_true:
                row.update({f"values_{k}": v for k, v in record.objectives.items()})
                row.update({f"values_true_{k}": v for k, v in record.objectives_true.items()})
            else:
                row.update({"value": record.y, "value_true": record.true})
            if record.sd is not None:
                row["sd"] = record.sd
            row.update({f"constraint_{k}": v for k, v in record.constraints.items()})
            row.update({f"constraint_true_{k}": v for k, v in record.constraints_true.items()})
            if record.feasible is not None:
                row["feasible"] = record.feasible
            row.update({"error": record.error, "ask_seconds": timing.get("ask_seconds"),
                        "oracle_seconds": timing.get("oracle_seconds")})
            rows.append(row)
        return rows

    def to_pandas(self):
        """A DataFrame with one row per evaluation (module docstring). Integer variables are
        ``Int64`` and choices ``category`` with the declared levels, so a design reads back as it was
        recorded; ``value_true`` is empty where the problem does not know it (a measurement)."""
        return _frame(self.records(), self.variables, self.domain)


@dataclass
class BenchResults:
    """Every run of a bench folder (a case folder or the root of several), keyed by
    (case, method, seed); ``summaries`` are the case folders' summary.json."""

    folder: Path
    runs: dict[tuple[str, str, int], RunResults]
    summaries: dict[str, dict]
    case_folders: dict[str, Path] = field(default_factory=dict)

    def to_pandas(self):
        """One row per run and evaluation: ``case``, ``method`` and ``seed`` before a run's columns."""
        rows, variables, domain = [], [], None
        for (case, method, seed), run in sorted(self.runs.items()):
            rows += [{"case": case, "method": method, "seed": seed, **row} for row in run.records()]
            variables += [v for v in run.variables if v not in variables]
            domain = domain or run.domain
        return _frame(rows, variables, domain, leading=("case", "method", "seed"))


def _frame(rows: list[dict], variables: list[str], domain: list[dict] | None, leading: tuple = ()):
    pd = pandas()
    frame = pd.DataFrame.from_records(rows)
    if frame.empty:
        return frame
    kinds = {v["name"]: v for v in domain or []}
    for name in variables:
        column = f"params_{name}"
        if column not in frame:
            continue
        spec, values = kinds.get(name, {}), frame[column]
        if spec.get("kind") == "choice" or (not spec and values.map(lambda v: isinstance(v, str)).all()):
            levels = spec.get("choices") or list(dict.fromkeys(values.dropna()))
            frame[column] = pd.Categorical(values, categories=levels)
        elif spec.get("kind") == "integer" or (not spec and values.map(lambda v: isinstance(v, int)).all()):
            frame[column] = values.astype("Int64")
        else:
            frame[column] = values.astype("float64")
    for column in ("value", "value_true", "sd", "ask_seconds", "oracle_seconds"):
        if column in frame:
            frame[column] = frame[column].astype("float64")
    if "feasible" in frame:
        frame["feasible"] = frame["feasible"].astype("boolean")
    first = [c for c in (*leading, *LEADING) if c in frame]
    last = [c for c in TRAILING if c in frame]
    middle = [c for c in frame.columns if c not in first and c not in last]
    return frame[first + middle + last]


def pandas():
    try:
        import pandas
    except ImportError:
        raise UserError("pandas is not installed: pip install 'pinnbo[data]' (or pandas) to make tables") from None
    return pandas


def load_results(folder: str | Path) -> RunResults | BenchResults:
    """The results in ``folder``: a run's folder (results/heat_bc1), a bench's case folder
    (bench-results/heat_bc1) or a bench root."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ResultsError(f"results: {shown(str(folder))} is not a folder; give a run's or a bench's results folder")
    if (folder / "evaluations.jsonl").exists() or (folder / "case.json").exists():
        return read_run(folder)
    cases = [folder] if (folder / "runs").is_dir() else sorted(p for p in folder.iterdir() if (p / "runs").is_dir())
    if not cases:
        raise ResultsError(f"results: {folder} holds no pinnbo run (no evaluations.jsonl) and no bench (no runs/)")
    runs, summaries = {}, {}
    for case in cases:
        if case.is_symlink():
            continue
        summary = _optional_json(case / "summary.json")
        if isinstance(summary, dict):
            summaries[case.name] = summary
        for method in sorted(p for p in (case / "runs").iterdir() if p.is_dir() and not p.is_symlink()):
            for seed in sorted(p for p in method.iterdir() if p.is_dir() and p.name.startswith("seed")):
                if seed.name[4:].isdigit() and (seed / "evaluations.jsonl").exists():
                    runs[(case.name, method.name, int(seed.name[4:]))] = read_run(seed)
    return BenchResults(folder, runs, summaries, {case.name: case for case in cases})


def read_run(folder: Path) -> RunResults:
    """One run's folder, finished or not (module docstring)."""
    case = _optional_json(folder / "case.json")
    if not isinstance(case, dict):
        raise ResultsError(f"results: {folder / 'case.json'} is missing or not a pinnbo case; not a results folder")
    summary = _optional_json(folder / "summary.json")
    summary = summary if isinstance(summary, dict) else None
    path = folder / "evaluations.jsonl"
    if path.is_symlink():
        raise ResultsError(f"{path}: a symbolic link; pinnbo follows no links in a results folder")
    evaluations = []
    if path.is_file():
        try:
            lines = path.read_text().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise ResultsError(f"{path}: unreadable ({type(exc).__name__})") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                evaluations.append(Evaluation.from_json(line, f"{path}:{number}"))
            except HistoryError as exc:
                if number == len(lines):   # the last line cut off by a crash: not recorded
                    break
                raise ResultsError(str(exc)) from None
    timings = read_timings(folder / "timings.jsonl")
    variables = case.get("variables") or (summary or {}).get("variables") or []
    if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        raise ResultsError(f"results: {folder / 'case.json'}: 'variables' must be a list of names")
    width = max((len(r.x) for r in evaluations), default=len(variables))
    if len(variables) != width:
        variables = [f"x{i + 1}" for i in range(width)]
    return RunResults(folder, case, evaluations, [timings.get(r.index, {}) for r in evaluations], summary, variables)
