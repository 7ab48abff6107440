"""A run's results folder: which files a run writes (:data:`RUN_FILES`), which case fields a
resumed run may change (:data:`~pinnbo.runner.case.RESUMABLE_KEYS`), the checks that refuse a folder that would lose
results or that holds a link where the run will write, and the lock that keeps one pinnbo process
per folder. The files themselves are written through :mod:`pinnbo.files`; the log they hold is
:mod:`pinnbo.runner.history`'s."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from pinnbo.errors import HistoryError, WriteFailure, shown
from pinnbo.files import holds_anything, loads, refuse_link
from pinnbo.runner.case import RESUMABLE_KEYS


# case.json's list of the design variables, in the order of the records' x. Not a case field: the
# problem gives it, and _check_folder compares it on resume (a folder written before it existed has
# none, and is not checked).
VARIABLES_KEY = "variables"
#: The asks of an asynchronous run, one line each, fsynced before the design is dispatched
#: (pinnbo.runner.asynchronous); its presence marks a log in completion order.
ASKS = "asks.jsonl"
RUN_FILES = (ASKS, "evaluations.jsonl", "timings.jsonl", "checkpoint.pt", "summary.json",
             "convergence.png", "field.png", "pareto.png", "surrogate.png", "pending.json", "pending.pt", "report.html")
#: The folder of the report's figures (pinnbo.report.page), emptied with the run's files.
REPORT_FIGURES = "report"


def read_stored_case(case_file: Path) -> dict:
    """The case a results folder was produced with (its case.json). Raises ValueError saying why
    it cannot be used ("is unreadable (...)", "is not a pinnbo case")."""
    try:
        stored = loads(Path(case_file).read_text(), "case.json")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"is unreadable ({type(exc).__name__})") from None
    except ValueError as exc:
        raise ValueError(f"is unreadable ({str(exc).split(': ', 1)[1]})") from None
    if not isinstance(stored, dict):
        raise ValueError("is not a pinnbo case")
    return stored


def differing_key(stored: dict, case: dict) -> str | None:
    """The first field (alphabetically) in which two cases differ and a resumed run may not."""
    for key in sorted(set(stored) | set(case)):
        if key not in RESUMABLE_KEYS and key != VARIABLES_KEY and stored.get(key) != case.get(key):
            return key
    return None


def check_folder(folder: Path, case: dict, *, resume: bool, overwrite: bool, variables: Sequence[str] = (),
                  labels: Mapping[str, str] | None = None) -> bool:
    """Refuse a folder that would lose results; returns whether it holds anything. Writes nothing."""
    if folder.exists() and not folder.is_dir():
        raise HistoryError(f"output: {folder} is a file, not a results folder")
    case_file = folder / "case.json"
    existing = holds_anything(folder)
    if existing:   # before any evaluation: a link planted where the run will write is refused now
        for name in ("case.json", *RUN_FILES):
            if name != "evaluations.jsonl" and name != "checkpoint.pt":   # load() and load_state() say "corrupted"
                refuse_link(folder / name)
    if resume:
        if not os.path.lexists(case_file):
            if existing:
                raise HistoryError(f"output: {folder} holds no pinnbo run (no case.json); refusing to touch it")
            return existing
        if case_file.is_symlink() or not case_file.is_file():
            raise HistoryError(f"{case_file}: corrupted (not a regular file); refusing to touch {folder}")
        try:
            stored = read_stored_case(case_file)
        except ValueError as exc:
            raise HistoryError(f"{case_file}: corrupted, {exc}; refusing to touch {folder}") from None
        key = differing_key(stored, case)
        if key is not None:
            label = (labels or {}).get(key, key)
            raise HistoryError(
                f"{label}: {folder} was produced with a different {key} "
                f"({shown(stored.get(key))}, now {shown(case.get(key))}); use another --output"
            )
        before = stored.get(VARIABLES_KEY)
        if variables and isinstance(before, list) and before != list(variables):
            # Each record's x is a list in this order: read in another, every design would move.
            raise HistoryError(f"bounds: {folder} was produced with the design variables in the order "
                               f"({', '.join(map(str, before))}), now ({', '.join(variables)}); keep the "
                               "case's order or use another --output")
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
    folder itself, so no lock file is left behind and a killed process releases it. A folder made
    here and still empty when the command fails (an unreachable scheduler, a refused case) is
    removed: a refused command leaves nothing behind."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise HistoryError(f"output: {folder} is a file, not a results folder")
    created = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:   # a read-only parent is a write failure like a read-only folder (exit 1)
        raise WriteFailure(f"cannot create {folder} ({exc.strerror or exc})") from None
    try:
        import fcntl
    except ImportError:  # no flock (Windows): one process per folder is then the user's care
        fcntl = None
    fd = os.open(folder, os.O_RDONLY)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise HistoryError(f"output: {folder} is in use by another pinnbo process; wait for it to finish "
                                   "or use another --output") from None
        yield
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                folder.rmdir()   # only if empty
        raise
    finally:
        os.close(fd)
