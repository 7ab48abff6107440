"""Evaluations made elsewhere, imported into a run before its first proposal (``warm_start:`` in a
case, ``--warm-start FILE`` on the command line).

An engineer rarely starts from nothing: earlier simulations, a previous campaign, measurements
from the lab. They become the first records of the run's log, with phase ``imported``, and take the
place of initial-design points (a case with ``initial_points: 10`` and 4 imported evaluations
evaluates the first 6 points of its initial design). By default they come on top of the budget
(``budget`` counts the evaluations this run makes); ``counted: true`` counts them in it.

Formats, by extension:

- ``.csv``: a header naming every design variable, one objective column and each black-box
  constraint; other columns are ignored. The objective column is the one of ``y``, ``value`` and
  ``objective`` that is not a design variable's name (the heat plate's variables are ``x`` and
  ``y``, so its objective is ``value`` or ``objective``); the value is in the problem's own sense,
  empty for a measurement that failed; an optional ``sd`` column gives a measurement's noise
  standard deviation. A header that names a column twice, leaves the objective
  out or offers two objective columns is refused: which column is the objective is never guessed.
- ``.jsonl`` / ``.json``: one object per line, ``{"x": [...] or {name: value}, "y": value or
  null, "constraints": {name: value}, "sd": σ}`` (``sd`` optional): what ``pinnbo tell --json`` takes, and what a pinnbo
  ``evaluations.jsonl`` holds. ``"y"`` is required (null, or ``"status": "failed"``, for a failed
  measurement); a key given twice, or a name in ``"x"`` that is not a design variable, is refused.

Every row is checked before the run starts: a design outside the box, a missing variable or
constraint, a value that is not a finite number is one line naming the file and row.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pinnbo.errors import CaseError, shown
from pinnbo.files import loads
from pinnbo.problem import Problem

#: The phase of an imported evaluation in evaluations.jsonl.
IMPORTED = "imported"
#: Most evaluations one file may bring (far beyond any expensive design problem).
MAX_IMPORTED = 10_000
FORMATS = (".csv", ".jsonl", ".json")
OBJECTIVE_KEYS = ("y", "value", "objective")


@dataclass(frozen=True)
class Imported:
    """One evaluation made elsewhere: the design (d,, encoded: :mod:`pinnbo.space`), the objective in the problem's sense (None
    when it failed), the black-box constraint values {name: c}, and why it failed."""

    x: np.ndarray
    values: list              # the design by value, as the file gives it
    value: float | None
    constraints: dict
    error: str | None
    sd: float | None = None   # the measurement's noise sd, where the file gives it


def digest(path: Path) -> str:
    """What binds a run to the file it imported (a resume with a changed file is another run)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def read_evaluations(path: Path, problem: Problem, field: str = "warm_start") -> list[Imported]:
    """The evaluations of ``path`` for ``problem``, checked; a one-line CaseError naming ``field``,
    the file and the row for anything that does not fit."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise CaseError(f"{field}: {shown(str(path))}: expected a .csv or .jsonl file")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"{field}: cannot read {shown(str(path))} ({type(exc).__name__})") from None
    names = problem.domain.names
    rows = _csv_rows(text, path, field, names) if path.suffix.lower() == ".csv" else _json_rows(text, path, field)
    if not rows:
        raise CaseError(f"{field}: {path.name} holds no evaluation")
    if len(rows) > MAX_IMPORTED:
        raise CaseError(f"{field}: {path.name} holds {len(rows)} evaluations; at most {MAX_IMPORTED}")
    return [_checked(row, problem, f"{field}: {path.name}:{where}") for where, row in rows]


def objective_column(header: Sequence[str], variables: Sequence[str], where: str) -> str:
    """The objective's column of a table whose ``header`` names the design ``variables``: the one of
    :data:`OBJECTIVE_KEYS` that is not a variable's name; anything ambiguous is a CaseError."""
    seen: set[str] = set()
    for name in header:
        if name in seen and name:
            raise CaseError(f"{where}: the column {shown(name)} is named twice in the header")
        seen.add(name)
    candidates = [k for k in OBJECTIVE_KEYS if k in seen and k not in variables]
    if len(candidates) > 1:
        raise CaseError(f"{where}: two objective columns ({', '.join(candidates)}); keep one")
    if not candidates:
        free = [k for k in OBJECTIVE_KEYS if k not in variables]
        taken = [k for k in OBJECTIVE_KEYS if k in variables]
        note = f" ({', '.join(taken)} is a design variable here)" if taken else ""
        raise CaseError(f"{where}: no objective column; name it {' or '.join(free)}{note}")
    return candidates[0]


def _csv_rows(text: str, path: Path, field: str, variables: Sequence[str]) -> list[tuple[int, dict]]:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise CaseError(f"{field}: {path.name} has no header row (the variables, the objective and the constraints)")
    header = [h.strip() for h in header]
    objective = objective_column(header, variables, f"{field}: {path.name}")
    out = []
    for number, cells in enumerate(reader, start=2):
        if not cells:
            continue
        if len(cells) > len(header):
            raise CaseError(f"{field}: {path.name}:{number}: {len(cells)} cells for {len(header)} columns")
        row = dict(zip(header, cells))
        entry = {"x": {k: v for k, v in row.items() if k in variables}, "y": row.get(objective),
                 "constraints": row, "csv": True}
        if "sd" in row and "sd" not in variables and row["sd"].strip():
            entry["sd"] = row["sd"]
        out.append((number, entry))
    return out


def _json_rows(text: str, path: Path, field: str) -> list[tuple[int, dict]]:
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = loads(line, f"{field}: {path.name}:{number}")
        except ValueError as exc:
            raise CaseError(str(exc)) from None
        if not isinstance(data, dict) or "x" not in data:
            raise CaseError(f"{field}: {path.name}:{number}: expected an object with \"x\" and \"y\"")
        if "y" not in data and data.get("status") != "failed":
            raise CaseError(f"{field}: {path.name}:{number}: no \"y\" (the objective; null for a measurement that "
                            "failed)")
        out.append((number, data))
    return out


def _number(value: Any, where: str, what: str) -> float:
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise CaseError(f"{where}: {what} must be a finite number, got {shown(value)}")
    return number


def _value(given: Any, variable, where: str) -> float | int | str:
    """A design value of a row by value (pinnbo.space): a choice is its name, anything else a number
    (a CSV cell is read as one), a whole number an int for an integer variable."""
    if variable.kind == "choice" and isinstance(given, str):
        return given.strip()
    number = _number(given, where, f"x ({variable.name})")
    return int(number) if variable.kind == "integer" and number.is_integer() else number


def _checked(row: dict, problem: Problem, where: str) -> Imported:
    names = problem.domain.names
    given = row["x"]
    if isinstance(given, dict):
        missing = [n for n in names if n not in given]
        if missing:
            raise CaseError(f"{where}: no value for the design variable {missing[0]}")
        unknown = [k for k in given if k not in names]
        if unknown:
            raise CaseError(f"{where}: {shown(unknown[0])} in \"x\" is not a design variable ({', '.join(names)})")
        given = [given[n] for n in names]
    if not isinstance(given, list) or len(given) != len(names):
        raise CaseError(f"{where}: \"x\" must give the {len(names)} design variables ({', '.join(names)})")
    domain = problem.domain
    values = [_value(v, var, where) for v, var in zip(given, domain.variables)]
    try:
        x = domain.encode(values)
    except ValueError as exc:
        raise CaseError(f"{where}: {exc}") from None
    for v, n, lo, hi, var in zip(x, names, domain.lower, domain.upper, domain.variables):
        if not lo <= v <= hi:
            shown_value = given[names.index(n)] if var.kind != "real" else float(v)
            raise CaseError(f"{where}: {n} = {shown_value!r} is outside the box "
                            f"{f'[{lo:g}, {hi:g}]' if var.kind == 'real' else '(' + var.describe() + ')'}")
    value = row.get("y")
    failed = value is None or (isinstance(value, str) and not value.strip()) or row.get("status") == "failed"
    if failed:
        reason = row.get("error") or row.get("failed") or "failed before it was imported (no value)"
        return Imported(x, values, None, {}, str(reason)[:500])
    value = _number(value, where, "y")
    sd = row.get("sd")
    if sd is not None:
        sd = _number(sd, where, "sd")
        if sd <= 0:
            raise CaseError(f"{where}: sd must be a standard deviation > 0, got {shown(row.get('sd'))}")
    constraints = {}
    reported = row.get("constraints") or {}
    for c in problem.oracle_constraints:
        if not isinstance(reported, dict) or c.name not in reported:
            raise CaseError(f"{where}: no value for the constraint {c.name}")
        constraints[c.name] = _number(reported[c.name], where, f"constraint {c.name}")
    return Imported(x, values, value, constraints, None, sd)
