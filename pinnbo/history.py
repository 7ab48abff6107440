"""The append-only evaluation log of a run and its results folder.

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

import contextlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np


class HistoryError(ValueError):
    """A results folder that cannot be used as asked (one-line message)."""


@dataclass
class Evaluation:
    """One evaluation. ``y`` is the observed value (noisy if the problem is), ``true`` the
    noise-free value when the oracle knows it; both in the problem's own sense; None if failed."""

    index: int
    x: list[float]
    y: float | None
    true: float | None
    status: str = "ok"          # "ok" or "failed"
    error: str | None = None
    phase: str = "initial"      # "initial", "optimizer", or a method's own role ("exploration")
    constraints: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> str:
        data = asdict(self)
        if not data["constraints"]:
            del data["constraints"]
        return json.dumps(data, allow_nan=False)

    @classmethod
    def from_json(cls, line: str, where: str) -> "Evaluation":
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise TypeError("not a mapping")
            record = cls(**data)
        except (json.JSONDecodeError, TypeError) as exc:
            raise HistoryError(f"{where}: corrupted record ({type(exc).__name__}); expected one JSON evaluation per line") from None
        def number(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        if not number(record.index) or not isinstance(record.index, int):
            raise HistoryError(f"{where}: corrupted record: 'index' must be an integer")
        if not isinstance(record.x, list) or not all(number(v) for v in record.x):
            raise HistoryError(f"{where}: corrupted record: 'x' must be a list of numbers")
        for key in ("y", "true"):
            if getattr(record, key) is not None and not number(getattr(record, key)):
                raise HistoryError(f"{where}: corrupted record: '{key}' must be a number or null")
        if record.status not in ("ok", "failed"):
            raise HistoryError(f"{where}: corrupted record: 'status' must be 'ok' or 'failed'")
        if record.ok and record.y is None:
            raise HistoryError(f"{where}: corrupted record: an 'ok' evaluation needs a value 'y'")
        if not isinstance(record.phase, str) or not (record.error is None or isinstance(record.error, str)):
            raise HistoryError(f"{where}: corrupted record: 'phase' and 'error' must be strings")
        if not isinstance(record.constraints, dict):
            raise HistoryError(f"{where}: corrupted record: 'constraints' must be a mapping")
        return record


def _finite_or_none(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class History:
    """Evaluations of one run, in memory and (when ``folder`` is set) on disk."""

    def __init__(self, sense: str, folder: Path | None = None, optimum: float | None = None) -> None:
        self.sense = sense
        self.folder = Path(folder) if folder is not None else None
        self.optimum = optimum
        self.evaluations: list[Evaluation] = []
        self.timings: list[dict] = []
        self._existing = False   # read(): the folder held files
        self._resumed = False    # read(): the evaluations on disk were loaded

    # -- folders ----------------------------------------------------------------------------------
    @classmethod
    def open(cls, folder: Path, case: dict, sense: str, optimum: float | None = None, *,
             resume: bool, overwrite: bool) -> "History":
        """The history of a run of ``case`` in ``folder``: empty for a new run, the evaluations on
        disk for ``resume``; the folder made ready for new records (:meth:`read` then :meth:`begin`)."""
        history = cls.read(folder, case, sense, optimum, resume=resume, overwrite=overwrite)
        history.begin(case)
        return history

    @classmethod
    def read(cls, folder: Path, case: dict, sense: str, optimum: float | None = None, *,
             resume: bool, overwrite: bool) -> "History":
        """Check ``folder`` for a run of ``case`` (another case or seed, a foreign folder, a corrupted
        log are refused) and read its evaluations if ``resume``. Writes nothing, so a command
        refused now or by a later check leaves the folder as it was."""
        folder = Path(folder)
        history = cls(sense, folder, optimum)
        history._existing = _check_folder(folder, case, resume=resume, overwrite=overwrite)
        history._resumed = resume
        if resume:
            history.load()
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
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(f"output: cannot create {folder} ({exc.strerror or exc})") from None
        write_json_atomic(folder / "case.json", case)

    @staticmethod
    def prepare(folder: Path, case: dict, *, resume: bool, overwrite: bool) -> None:
        """Make ``folder`` ready for a run of ``case``; refuse anything that could lose results."""
        History.open(folder, case, "minimize", resume=resume, overwrite=overwrite)

    def load(self) -> None:
        """Read the evaluations already on disk (nothing is written). A last line cut off by a
        crash mid-write is ignored: that evaluation had not been recorded, so it is done again."""
        assert self.folder is not None
        path = self.folder / "evaluations.jsonl"
        self.evaluations, self.timings = [], []
        if not path.exists():
            return
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise HistoryError(f"{path}: cannot read the evaluation log ({type(exc).__name__})") from None
        lines = text.split("\n")
        complete, tail = lines[:-1], lines[-1]  # tail: "" or a record cut off mid-write
        evaluations = []
        for number, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            record = Evaluation.from_json(line, f"{path}:{number}")
            if record.index != len(evaluations):
                raise HistoryError(f"{path}:{number}: corrupted record: index {record.index}, expected {len(evaluations)}")
            evaluations.append(record)
        if tail.strip():
            try:  # only the newline missing: the evaluation happened, keep it (repair adds the newline)
                record = Evaluation.from_json(tail, str(path))
                if record.index == len(evaluations):
                    evaluations.append(record)
            except HistoryError:
                pass
        self.evaluations = evaluations
        # timings.jsonl is not fsynced (it is not needed to resume): keep what is there, by index.
        by_index: dict[int, dict] = {}
        timings = self.folder / "timings.jsonl"
        if timings.exists():
            for line in timings.read_text(errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                    by_index[int(entry.pop("index"))] = entry
                except (json.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
                    continue
        self.timings = [by_index.get(r.index, {}) for r in evaluations]

    def repair(self) -> None:
        """Rewrite evaluations.jsonl and timings.jsonl as loaded (atomically), so that new records
        are appended to clean files: no half-written last line, timings aligned by index."""
        assert self.folder is not None
        path = self.folder / "evaluations.jsonl"
        text = "".join(r.to_json() + "\n" for r in self.evaluations)
        if path.exists() and path.read_text() != text:
            _write_atomic(path, text)
        timings = self.folder / "timings.jsonl"
        text = "".join(json.dumps({"index": r.index, **t}) + "\n" for r, t in zip(self.evaluations, self.timings))
        if self.evaluations and (not timings.exists() or timings.read_text(errors="replace") != text):
            _write_atomic(timings, text)

    # -- records ----------------------------------------------------------------------------------
    def append(self, record: Evaluation, timing: dict | None = None) -> None:
        record.y = _finite_or_none(record.y)
        record.true = _finite_or_none(record.true)
        self.evaluations.append(record)
        self.timings.append(timing or {})
        if self.folder is not None:
            _append_line(self.folder / "evaluations.jsonl", record.to_json())
            _append_line(self.folder / "timings.jsonl", json.dumps({"index": record.index, **(timing or {})}), sync=False)

    def __len__(self) -> int:
        return len(self.evaluations)

    # -- summaries --------------------------------------------------------------------------------
    def _better(self, a: float, b: float) -> bool:
        return a > b if self.sense == "maximize" else a < b

    def best(self, key: str = "true") -> Evaluation | None:
        """The best successful evaluation by true value (observed value where true is unknown)."""
        best = None
        for record in self.evaluations:
            value = record.true if key == "true" and record.true is not None else record.y
            if value is None:
                continue
            if best is None or self._better(value, best[0]):
                best = (value, record)
        return None if best is None else best[1]

    def best_so_far(self) -> np.ndarray:
        """Best true value after each evaluation, shape (n,); NaN until the first success."""
        out = np.full(len(self.evaluations), np.nan)
        current = None
        for i, record in enumerate(self.evaluations):
            value = record.true if record.true is not None else record.y
            if value is not None and (current is None or self._better(value, current)):
                current = value
            out[i] = np.nan if current is None else current
        return out

    def simple_regret(self) -> np.ndarray | None:
        if self.optimum is None:
            return None
        return np.abs(self.optimum - self.best_so_far())

    @property
    def n_failed(self) -> int:
        return sum(not r.ok for r in self.evaluations)

    def X(self) -> np.ndarray:
        return np.array([r.x for r in self.evaluations], dtype=np.float64)


# Keys of the case that may change between a run and its resumption (a longer timeout included:
# evaluations already recorded stay as they are).
RESUMABLE_KEYS = {"budget", "output", "device", "smoke", "timeout"}
RUN_FILES = ("evaluations.jsonl", "timings.jsonl", "checkpoint.pt", "summary.json",
             "convergence.png", "field.png", "pending.json", "pending.pt")


def read_stored_case(case_file: Path) -> dict:
    """The case a results folder was produced with (its case.json). Raises ValueError saying why
    it cannot be used ("is unreadable (...)", "is not a pinnbo case")."""
    try:
        stored = json.loads(Path(case_file).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"is unreadable ({type(exc).__name__})") from None
    if not isinstance(stored, dict):
        raise ValueError("is not a pinnbo case")
    return stored


def differing_key(stored: dict, case: dict) -> str | None:
    """The first field (alphabetically) in which two cases differ and a resumed run may not."""
    for key in sorted(set(stored) | set(case)):
        if key not in RESUMABLE_KEYS and stored.get(key) != case.get(key):
            return key
    return None


def _check_folder(folder: Path, case: dict, *, resume: bool, overwrite: bool) -> bool:
    """Refuse a folder that would lose results; returns whether it holds anything. Writes nothing."""
    if folder.exists() and not folder.is_dir():
        raise HistoryError(f"output: {folder} is a file, not a results folder")
    case_file = folder / "case.json"
    existing = folder.exists() and any(folder.iterdir())
    if resume:
        if not case_file.exists():
            if existing:
                raise HistoryError(f"--resume: {folder} holds no pinnbo run (no case.json); refusing to touch it")
            return existing
        try:
            stored = read_stored_case(case_file)
        except ValueError as exc:
            raise HistoryError(f"--resume: {case_file} {exc}; refusing to touch {folder}") from None
        key = differing_key(stored, case)
        if key is not None:
            raise HistoryError(
                f"--resume: {folder} was produced with a different {key} "
                f"({stored.get(key)!r}, now {case.get(key)!r}); use another --output"
            )
        return existing
    if existing:
        if not overwrite:
            raise HistoryError(f"output: {folder} is not empty; pass --resume to continue it or --overwrite to replace it")
        if not case_file.exists():
            raise HistoryError(f"--overwrite: {folder} holds no pinnbo run (no case.json); refusing to delete it")
    return existing


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on the results folder for one command (run, ask, tell): two
    processes appending to one log would interleave records. The lock is the kernel's flock on the
    folder itself, so no lock file is left behind and a killed process releases it."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise HistoryError(f"output: {folder} is a file, not a results folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HistoryError(f"output: cannot create {folder} ({exc.strerror or exc})") from None
    try:
        import fcntl
    except ImportError:  # no flock (Windows): one process per folder is then the user's care
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HistoryError(f"output: {folder} is in use by another pinnbo process; wait for it to finish "
                               "or use another --output") from None
        yield
    finally:
        os.close(fd)


def _append_line(path: Path, line: str, sync: bool = True) -> None:
    with open(path, "a") as fh:
        fh.write(line + "\n")
        fh.flush()
        if sync:
            os.fsync(fh.fileno())


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON so that a reader never sees a half-written file."""
    _write_atomic(Path(path), json.dumps(data, indent=2, sort_keys=True) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` so that a crash leaves either the old or the new file, fsynced."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)

