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

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
            record = cls(**data)
        except (json.JSONDecodeError, TypeError) as exc:
            raise HistoryError(f"{where}: corrupted record ({type(exc).__name__}); expected one JSON evaluation per line") from None
        if not isinstance(record.x, list) or not all(isinstance(v, (int, float)) for v in record.x):
            raise HistoryError(f"{where}: corrupted record: 'x' must be a list of numbers")
        if record.status not in ("ok", "failed"):
            raise HistoryError(f"{where}: corrupted record: 'status' must be 'ok' or 'failed'")
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

    # -- folders ----------------------------------------------------------------------------------
    @staticmethod
    def prepare(folder: Path, case: dict, *, resume: bool, overwrite: bool) -> None:
        """Make ``folder`` ready for a run of ``case``; refuse anything that could lose results."""
        folder = Path(folder)
        case_file = folder / "case.json"
        existing = folder.exists() and any(folder.iterdir())
        if resume:
            if not case_file.exists():
                if existing:
                    raise HistoryError(f"--resume: {folder} holds no pinnbo run (no case.json); refusing to touch it")
                folder.mkdir(parents=True, exist_ok=True)
                write_json_atomic(case_file, case)
                return
            stored = json.loads(case_file.read_text())
            for key in sorted(set(stored) | set(case)):
                if key in RESUMABLE_KEYS:
                    continue
                if stored.get(key) != case.get(key):
                    raise HistoryError(
                        f"--resume: {folder} was produced with a different {key} "
                        f"({stored.get(key)!r}, now {case.get(key)!r}); use another --output"
                    )
            write_json_atomic(case_file, case)
            return
        if existing:
            if not overwrite:
                raise HistoryError(f"output: {folder} is not empty; pass --resume to continue it or --overwrite to replace it")
            if not case_file.exists():
                raise HistoryError(f"--overwrite: {folder} holds no pinnbo run (no case.json); refusing to delete it")
            for name in RUN_FILES:
                (folder / name).unlink(missing_ok=True)
        folder.mkdir(parents=True, exist_ok=True)
        write_json_atomic(case_file, case)

    def load(self) -> None:
        """Read the evaluations already on disk (resume). A last line cut off by a crash mid-write
        is dropped: that evaluation had not been recorded, so it is done again."""
        assert self.folder is not None
        path = self.folder / "evaluations.jsonl"
        if not path.exists():
            return
        text = path.read_text()
        lines = text.split("\n")
        complete, tail = lines[:-1], lines[-1]
        if tail.strip():
            # An unterminated last line: the process died while writing it.
            with open(path, "w") as fh:
                fh.write("".join(line + "\n" for line in complete))
        for number, line in enumerate(complete, start=1):
            if not line.strip():
                continue
            record = Evaluation.from_json(line, f"{path}:{number}")
            if record.index != len(self.evaluations):
                raise HistoryError(f"{path}:{number}: corrupted record: index {record.index}, expected {len(self.evaluations)}")
            self.evaluations.append(record)
        timings = self.folder / "timings.jsonl"
        if timings.exists():
            for line in timings.read_text().splitlines():
                try:
                    self.timings.append(json.loads(line))
                except json.JSONDecodeError:
                    break
            self.timings = self.timings[: len(self.evaluations)]

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


# Keys of the case that may change between a run and its resumption.
RESUMABLE_KEYS = {"budget", "output", "device", "smoke"}
RUN_FILES = ("evaluations.jsonl", "timings.jsonl", "checkpoint.pt", "summary.json",
             "convergence.png", "field.png", "pending.json")


def _append_line(path: Path, line: str, sync: bool = True) -> None:
    with open(path, "a") as fh:
        fh.write(line + "\n")
        fh.flush()
        if sync:
            os.fsync(fh.fileno())


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON so that a reader never sees a half-written file."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)

