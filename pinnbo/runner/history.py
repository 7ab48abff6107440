"""The append-only evaluation log of a run: the record type, the log on disk, and what a run's
records say (the best, regret, feasibility). Which files a folder holds, what a resume may change
and the lock are :mod:`pinnbo.runner.folder`'s; every write goes through :mod:`pinnbo.files`.

Files in ``results/<name>/``:
- ``case.json``: the resolved case that produced the folder (checked on resume).
- ``evaluations.jsonl``: one line per evaluation, written, flushed and fsynced before the next
  proposal. Deterministic content only (no wall times), so the same seed on the same machine gives a
  byte-identical file.
- ``timings.jsonl``: seconds spent proposing and evaluating, per evaluation.
- ``checkpoint.pt``: the optimiser's state after the last told evaluation (atomic replace).
- ``summary.json`` and figures, written by the report.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from pinnbo.errors import HistoryError
from pinnbo.files import append_line, make_folder, remove_leftovers, write_json, write_text
from pinnbo.runner.folder import ASKS, REPORT_FIGURES, RUN_FILES, VARIABLES_KEY, check_folder

#: Phases every run has: its initial design, evaluations imported from elsewhere, the optimiser's
#: proposals. Any other phase is a method's own (GP-UCB+'s random points are "exploration"), and
#: the report gives the best without it too.
COMMON_PHASES = ("initial", "imported", "optimizer")


@dataclass
class Evaluation:
    """One evaluation. ``y`` is the observed value (noisy if the problem is), ``true`` the
    noise-free value when the oracle knows it; both in the problem's own sense; None if failed.

    Constrained problems (c_i(x) <= 0 feasible) add, for a successful evaluation, ``constraints``
    the observed (noisy) values {name: c_i} in the order of the problem's constraints,
    ``constraints_true`` the noise-free ones, and ``feasible``, judged on the true values (the
    observed ones are what the optimiser sees; what a design *is* is its true value). ``true`` is
    None where the problem does not know it (a program's output, a told or imported measurement:
    observations only). A failed
    evaluation has neither values nor a verdict (``feasible`` None). The three keys are left out of
    the JSON line when empty, so an unconstrained run's log is what it always was.
    """

    index: int
    x: list            # the design by value (floats; an int, a name for discrete variables: pinnbo.space)
    y: float | None
    true: float | None
    status: str = "ok"          # "ok" or "failed"
    error: str | None = None
    phase: str = "initial"      # one of COMMON_PHASES, or a method's own
    constraints: dict[str, float] = field(default_factory=dict)
    constraints_true: dict[str, float] = field(default_factory=dict)
    feasible: bool | None = None
    sd: float | None = None     # the measurement's own noise sd, where it was given (tell --sd, a warm start)
    # Several objectives: the observed values {name: value} and the true ones where known; y and
    # true are then None.
    objectives: dict[str, float] = field(default_factory=dict)
    objectives_true: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def violation(self, names: Sequence[str]) -> np.ndarray:
        """max(c_i(x), 0) on the true values, shape (K,) in the order of ``names``; zeros for a
        failed evaluation (nothing was measured, so nothing was violated)."""
        if not self.ok:
            return np.zeros(len(names))
        return np.array([max(float(self.constraints_true[n]), 0.0) for n in names], dtype=np.float64)

    def to_json(self) -> str:
        data = asdict(self)
        for key in ("constraints", "constraints_true", "objectives", "objectives_true"):
            if not data[key]:
                del data[key]
        for key in ("feasible", "sd"):
            if data[key] is None:
                del data[key]
        return json.dumps(data, allow_nan=False)

    @classmethod
    def from_json(cls, line: str, where: str) -> "Evaluation":
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise TypeError("not a mapping")
            record = cls(**data)
        except (ValueError, TypeError, RecursionError) as exc:   # ValueError: JSON syntax, a 4300-digit integer
            raise HistoryError(f"{where}: corrupted record ({type(exc).__name__}); expected one JSON evaluation per line") from None
        def number(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

        if not number(record.index) or not isinstance(record.index, int):
            raise HistoryError(f"{where}: corrupted record: 'index' must be an integer")
        if not isinstance(record.x, list) or not all(number(v) or isinstance(v, str) for v in record.x):
            raise HistoryError(f"{where}: corrupted record: 'x' must be a list of finite numbers and names")
        for key in ("y", "true"):
            if getattr(record, key) is not None and not number(getattr(record, key)):
                raise HistoryError(f"{where}: corrupted record: '{key}' must be a finite number or null")
        if record.sd is not None and not (number(record.sd) and record.sd > 0):
            raise HistoryError(f"{where}: corrupted record: 'sd' must be a number > 0 or absent")
        if record.status not in ("ok", "failed"):
            raise HistoryError(f"{where}: corrupted record: 'status' must be 'ok' or 'failed'")
        if record.ok and record.y is None and not record.objectives:
            raise HistoryError(f"{where}: corrupted record: an 'ok' evaluation needs a value 'y'")
        if not isinstance(record.phase, str) or not (record.error is None or isinstance(record.error, str)):
            raise HistoryError(f"{where}: corrupted record: 'phase' and 'error' must be strings")
        for key in ("constraints", "constraints_true", "objectives", "objectives_true"):
            values = getattr(record, key)
            if not isinstance(values, dict) or not all(
                    isinstance(k, str) and number(v) for k, v in values.items()):
                raise HistoryError(f"{where}: corrupted record: '{key}' must be a mapping of names to finite numbers")
        if record.feasible is not None:
            if not isinstance(record.feasible, bool) or not record.ok or not record.constraints_true:
                raise HistoryError(f"{where}: corrupted record: 'feasible' must be true or false, on an 'ok' "
                                   "evaluation with its 'constraints_true'")
            if record.feasible != all(v <= 0 for v in record.constraints_true.values()):
                raise HistoryError(f"{where}: corrupted record: 'feasible' contradicts 'constraints_true'")
        return record


def read_timings(path: Path) -> dict[int, dict]:
    """timings.jsonl by evaluation index. It is not fsynced (a resume does not need it): what is
    there is kept, and a line a crash cut off, or one that is not seconds by name, is skipped."""
    by_index: dict[int, dict] = {}
    if not path.is_file() or path.is_symlink():
        return by_index
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
            index = int(entry.pop("index"))
        except (AttributeError, KeyError, TypeError, ValueError, RecursionError):
            continue
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in entry.values()):
            by_index[index] = entry
    return by_index


def _finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class History:
    """Evaluations of one run, in memory and (when ``folder`` is set) on disk.

    ``constraints``: the problem's constraint names, in order (empty: unconstrained). With
    constraints, "best" means best *feasible* (true values): :meth:`best`, :meth:`best_so_far` and
    :meth:`simple_regret` look at feasible evaluations only, NaN / None until the first one; an
    infeasible design, however good its objective, is never the answer.
    """

    def __init__(self, sense: str, folder: Path | None = None, optimum: float | None = None,
                 constraints: Sequence[str] = (), variables: Sequence[str] = ()) -> None:
        self.sense = sense
        self.folder = Path(folder) if folder is not None else None
        self.optimum = optimum
        self.constraint_names: tuple[str, ...] = tuple(constraints)
        # The design variables in the order of each record's x (written to case.json, checked on resume).
        self.variable_names: tuple[str, ...] = tuple(variables)
        self.evaluations: list[Evaluation] = []
        self.timings: list[dict] = []
        self.case: dict = {}     # read(): the case of the run (binds its state files, pinnbo.state)
        self.stopped: dict | None = None   # the stopping rule that ended the run early (pinnbo.runner.steps.stop)
        self.parallel: dict | None = None  # an asynchronous run's wall and oracle time, utilisation
        self._existing = False   # read(): the folder held files
        self._resumed = False    # read(): the evaluations on disk were loaded

    # -- folders ----------------------------------------------------------------------------------
    @classmethod
    def read(cls, folder: Path, case: dict, sense: str, optimum: float | None = None, *,
             resume: bool, overwrite: bool, constraints: Sequence[str] = (),
             variables: Sequence[str] = (), labels: Mapping[str, str] | None = None,
             budget: int | None = None) -> "History":
        """Check ``folder`` for a run of ``case`` (another case or seed, a foreign folder, a corrupted
        log, design variables in another order, a budget below what is recorded are refused) and read
        its evaluations if ``resume``. Writes nothing, so a command refused now or by a later check
        leaves the folder as it was. ``labels`` name the command-line option a case field came from
        (``{"seed": "--seed"}``), so a refusal names what the user typed."""
        if resume and overwrite:
            raise HistoryError("--resume and --overwrite: give one of them (continue the run, or replace it)")
        folder = Path(folder)
        history = cls(sense, folder, optimum, constraints, variables)
        history.case = dict(case)
        history._existing = check_folder(folder, case, resume=resume, overwrite=overwrite, variables=variables,
                                          labels=labels or {})
        history._resumed = resume
        if resume:
            history.load()
            budget = case.get("budget") if budget is None else budget
            if isinstance(budget, int) and budget < len(history.evaluations):
                label = (labels or {}).get("budget", "budget")
                raise HistoryError(f"{label}: {budget} is below the {len(history.evaluations)} evaluations already "
                                   f"recorded in {folder}; give {len(history.evaluations)} or more")
        return history

    def begin(self, case: dict) -> None:
        """Make the folder ready for new records: on resume, the log and timings rewritten without
        what a crash left half-written; on --overwrite, the earlier run's files removed; case.json."""
        folder = self.folder
        assert folder is not None
        if self._resumed:
            self.repair()
        elif self._existing:  # --overwrite of an earlier pinnbo run (checked in read)
            for name in RUN_FILES:
                (folder / name).unlink(missing_ok=True)
            figures = folder / REPORT_FIGURES
            if figures.is_dir() and not figures.is_symlink():
                for png in figures.glob("*.png"):
                    png.unlink(missing_ok=True)
        make_folder(folder)
        remove_leftovers(folder)
        write_json(folder / "case.json", {**case, VARIABLES_KEY: list(self.variable_names)}
                          if self.variable_names else case)

    def load(self) -> None:
        """Read the evaluations already on disk (nothing is written). A last line cut off by a
        crash mid-write is ignored: that evaluation had not been recorded, so it is done again."""
        assert self.folder is not None
        path = self.folder / "evaluations.jsonl"
        self.evaluations, self.timings = [], []
        if not os.path.lexists(path):
            return
        if path.is_symlink() or not path.is_file():
            raise HistoryError(f"{path}: corrupted evaluation log (a {'symbolic link' if path.is_symlink() else 'directory'}"
                               ", not a file; pinnbo follows no links in a results folder)")
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise HistoryError(f"{path}: corrupted evaluation log, cannot read it ({type(exc).__name__})") from None
        lines = text.split("\n")
        complete, tail = lines[:-1], lines[-1]  # tail: "" or a record cut off mid-write
        evaluations = []
        seen: set[int] = set()
        asynchronous = os.path.lexists(self.folder / ASKS)
        for number, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            record = Evaluation.from_json(line, f"{path}:{number}")
            self._check_constraints(record, f"{path}:{number}")
            # In ask order, except for an asynchronous run (pinnbo.runner.asynchronous): completion order.
            if record.index in seen or (record.index != len(evaluations) and not asynchronous):
                raise HistoryError(f"{path}:{number}: corrupted record: index {record.index}, expected {len(evaluations)}")
            seen.add(record.index)
            evaluations.append(record)
        if tail.strip():
            try:  # only the newline missing: the evaluation happened, keep it (repair adds the newline)
                record = Evaluation.from_json(tail, str(path))
                self._check_constraints(record, str(path))
                if record.index == len(evaluations) or (asynchronous and record.index not in seen):
                    evaluations.append(record)
            except HistoryError:
                pass
        self.evaluations = evaluations
        by_index = read_timings(self.folder / "timings.jsonl")
        self.timings = [by_index.get(r.index, {}) for r in evaluations]

    def _check_constraints(self, record: Evaluation, where: str) -> None:
        """A successful record of a constrained run carries every constraint's value (the optimiser
        is told all of them) and its verdict; an unconstrained run's records carry none."""
        names = list(self.constraint_names)
        if not record.ok:
            if record.constraints or record.constraints_true or record.feasible is not None:
                raise HistoryError(f"{where}: corrupted record: a failed evaluation has no constraint values")
            return
        if list(record.constraints) != names or list(record.constraints_true) != names or \
                (names and record.feasible is None):
            expected = ", ".join(names) if names else "none (the problem is unconstrained)"
            raise HistoryError(f"{where}: corrupted record {record.index}: constraint values "
                               f"{list(record.constraints)}, expected {expected} with 'constraints_true' and "
                               "'feasible'")

    def repair(self) -> None:
        """Rewrite evaluations.jsonl and timings.jsonl as loaded (atomically), so that new records
        are appended to clean files: no half-written last line, timings aligned by index."""
        assert self.folder is not None
        path = self.folder / "evaluations.jsonl"
        text = "".join(r.to_json() + "\n" for r in self.evaluations)
        if path.exists() and path.read_text() != text:
            write_text(path, text)
        timings = self.folder / "timings.jsonl"
        text = "".join(json.dumps({"index": r.index, **t}) + "\n" for r, t in zip(self.evaluations, self.timings))
        if self.evaluations and (not timings.exists() or timings.read_text(errors="replace") != text):
            write_text(timings, text)

    # -- records ----------------------------------------------------------------------------------
    def append(self, record: Evaluation, timing: dict | None = None) -> None:
        record.y = _finite_or_none(record.y)
        record.true = _finite_or_none(record.true)
        if self.folder is not None:
            append_line(self.folder / "evaluations.jsonl", record.to_json())
            append_line(self.folder / "timings.jsonl", json.dumps({"index": record.index, **(timing or {})}), sync=False)
        self.evaluations.append(record)
        self.timings.append(timing or {})

    def __len__(self) -> int:
        return len(self.evaluations)

    def own_phases(self) -> list[str]:
        """The phases of the log that are a method's own (not in COMMON_PHASES), in first-seen order."""
        return list(dict.fromkeys(r.phase for r in self.evaluations if r.phase not in COMMON_PHASES))

    # -- summaries --------------------------------------------------------------------------------
    def _better(self, a: float, b: float) -> bool:
        return a > b if self.sense == "maximize" else a < b

    @property
    def constrained(self) -> bool:
        return bool(self.constraint_names)

    def counts(self, record: Evaluation) -> bool:
        """Whether ``record`` can be the answer: successful, and feasible when there are constraints."""
        return record.ok and (not self.constrained or record.feasible is True)

    def best(self, key: str = "true", without_phase: str | None = None) -> Evaluation | None:
        """The best successful (constrained: feasible) evaluation by true value (observed value
        where true is unknown); ``key="y"`` ranks by the observed value. ``without_phase``: ignore
        the evaluations of that phase (a method's own, :meth:`own_phases`)."""
        best = None
        for record in self.evaluations:
            if not self.counts(record) or record.phase == without_phase:
                continue
            value = record.true if key == "true" and record.true is not None else record.y
            if value is None:
                continue
            if best is None or self._better(value, best[0]):
                best = (value, record)
        return None if best is None else best[1]

    def best_so_far(self, without_phase: str | None = None) -> np.ndarray:
        """Best true value after each evaluation, shape (n,); NaN until the first success (with
        constraints: the first feasible evaluation). ``without_phase`` as in :meth:`best`: those
        evaluations still count in n but never become the best."""
        out = np.full(len(self.evaluations), np.nan)
        current = None
        for i, record in enumerate(self.evaluations):
            value = record.true if record.true is not None else record.y
            if value is not None and self.counts(record) and record.phase != without_phase \
                    and (current is None or self._better(value, current)):
                current = value
            out[i] = np.nan if current is None else current
        return out

    def simple_regret(self) -> np.ndarray | None:
        if self.optimum is None:
            return None
        return np.abs(self.optimum - self.best_so_far())

    # -- constraints ------------------------------------------------------------------------------
    @property
    def n_feasible(self) -> int:
        return sum(r.feasible is True for r in self.evaluations)

    @property
    def n_ok(self) -> int:
        return sum(r.ok for r in self.evaluations)

    def feasible_fraction(self) -> float | None:
        """Feasible evaluations over successful ones (a failed evaluation has no verdict); None
        without constraints or without a success."""
        if not self.constrained or not self.n_ok:
            return None
        return self.n_feasible / self.n_ok

    def feasible_so_far(self) -> np.ndarray:
        """Number of feasible evaluations after each evaluation, shape (n,)."""
        return np.cumsum([r.feasible is True for r in self.evaluations]).astype(int)

    def violations(self) -> np.ndarray:
        """max(c_i(x_t), 0) on the true values, shape (n, K); rows of failed evaluations are 0."""
        if not self.evaluations:
            return np.zeros((0, len(self.constraint_names)))
        return np.stack([r.violation(self.constraint_names) for r in self.evaluations])

    def cumulative_violation(self) -> dict:
        """Σ_t Σ_i max(c_i(x_t), 0) over the evaluations (true values): ``{"total": float,
        "per_constraint": {name: float}}`` (the price paid for infeasible queries)."""
        per = self.violations().sum(axis=0)
        return {"total": float(per.sum()),
                "per_constraint": {n: float(v) for n, v in zip(self.constraint_names, per)}}

    def cumulative_violation_curve(self) -> np.ndarray:
        """The running total of :meth:`cumulative_violation` after each evaluation, shape (n,)."""
        return np.cumsum(self.violations().sum(axis=1)) if self.evaluations else np.zeros(0)

    def least_violation(self) -> Evaluation | None:
        """The successful evaluation closest to feasible (smallest Σ_i max(c_i, 0), true values);
        what to look at when nothing feasible was found. None without constraints or successes."""
        if not self.constrained:
            return None
        ok = [r for r in self.evaluations if r.ok]
        if not ok:
            return None
        return min(ok, key=lambda r: float(r.violation(self.constraint_names).sum()))

    @property
    def n_failed(self) -> int:
        return sum(not r.ok for r in self.evaluations)

    def X(self) -> np.ndarray:
        return np.array([r.x for r in self.evaluations], dtype=np.float64)
