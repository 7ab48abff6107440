"""The steps every run takes around an evaluation, shared by the sequential loop
(:mod:`~pinnbo.runner.loop`), the asynchronous one (:mod:`~pinnbo.runner.asynchronous`) and
ask/tell (:mod:`~pinnbo.runner.asktell`): the run's settings, the next design, recording and
telling an evaluation with its checkpoint, replaying a log into a fresh optimiser, the evaluations
imported from elsewhere, and the stopping rules. The order of operations that makes a run lossless
and resumable is :mod:`pinnbo.runner.loop`'s docstring."""

from __future__ import annotations

import logging
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import torch

from pinnbo.errors import HistoryError, RunStopped
from pinnbo.interrupts import held_interrupts
from pinnbo.optimizers.base import NOT_PROPOSED, Optimizer
from pinnbo.problem import Box, Problem
from pinnbo.runner.evaluation import observation
from pinnbo.runner.history import Evaluation, History
from pinnbo.runner.state import CHECKPOINT, load_state, run_identity, save_state
from pinnbo.runner.warm_start import IMPORTED

log = logging.getLogger(__name__)


@dataclass
class RunSettings:
    budget: int
    initial_points: int
    seed: int = 0
    output: Path | None = None
    case: dict | None = None        # the resolved case, stored with the results
    resume: bool = False
    overwrite: bool = False
    timeout: float | None = None    # seconds per oracle call; None: no limit
    labels: dict | None = None      # case field -> the command-line option that set it (messages)
    imported: tuple = ()            # evaluations made elsewhere, recorded first (pinnbo.runner.warm_start)
    target: float | None = None     # stop once the best observed value reaches this (problem's sense)
    max_time: float | None = None   # stop after this many seconds of this command
    workers: int = 1                # evaluations in flight (pinnbo.runner.asynchronous); 1: sequential
    scheduler: str | None = None    # an existing Dask scheduler's address instead of a local cluster
    batch: bool = False             # synchronous batches of `workers` instead of asynchronous proposals
    objective: object = None        # what a worker builds the objective from (a CaseObjective); None: problem's

    @property
    def parallel(self) -> bool:
        return self.workers > 1 or self.scheduler is not None

    @property
    def first_proposal(self) -> int:
        """Index of the first evaluation the optimiser proposes: after the imported evaluations and
        the initial-design points they leave (imported ones take initial points' places)."""
        m = len(self.imported)
        return m + max(self.initial_points - m, 0)

    def planned_design(self, k: int, design: np.ndarray) -> np.ndarray | None:
        """The initial-design point of evaluation ``k`` (``design`` the seed's initial design),
        None for an imported evaluation or one the optimiser proposes."""
        m = len(self.imported)
        return design[k - m] if m <= k < self.first_proposal else None


class RunObserver(Protocol):
    def on_start(self, problem: Problem, settings: RunSettings, history: History) -> None: ...
    def on_evaluation(self, record: Evaluation, timing: dict, history: History) -> None: ...
    def on_finish(self, history: History) -> None: ...


class OracleBroken(RunStopped):
    """The oracle failed on every call of the initial design, or on :data:`FAILURE_STREAK` calls
    in a row: the run stops rather than spend its budget on failures (every record is on disk)."""


#: Consecutive failed evaluations after which a run stops (counted within one command, so a
#: ``--resume`` after the oracle is fixed goes on).
FAILURE_STREAK = 10


class FailureStreak:
    """Counts the failed evaluations this command made in a row and stops the run (raises
    :class:`OracleBroken`) when they are the whole initial design or :data:`FAILURE_STREAK` long."""

    def __init__(self, n_init: int) -> None:
        self.n_init = n_init
        self.streak: list[Evaluation] = []

    def check(self, history: History, record: Evaluation) -> None:
        self.streak = [] if record.ok else self.streak + [record]
        initial_failed = len(history) == self.n_init and not any(r.ok for r in history.evaluations)
        if self.streak and (initial_failed or len(self.streak) >= FAILURE_STREAK):
            first = self.streak[0]
            what = (f"all {self.n_init} evaluations of the initial design" if initial_failed
                    else f"{len(self.streak)} evaluations in a row")
            raise OracleBroken(f"oracle: {what} failed, the first (evaluation {first.index}) with: {first.error}")


class RunInterrupted(Exception):
    """Ctrl-C (or SIGTERM: ``terminated``) during a run: every completed evaluation is on disk."""

    def __init__(self, message: str, terminated: bool = False) -> None:
        super().__init__(message)
        self.terminated = terminated


def constraint_vector(history: History, record: Evaluation) -> np.ndarray | None:
    """What the optimiser is told of ``record``'s constraints: the observed values, shape (K,)
    in the problem's order; None unconstrained or failed."""
    if not history.constraint_names or not record.ok:
        return None
    return np.array([record.constraints[n] for n in history.constraint_names], dtype=np.float64)


def checkpoint(history: History, optimizer: Optimizer, name: str = CHECKPOINT, n_told: int | None = None) -> None:
    """Save the optimiser's state, valid once ``n_told`` (default ``optimizer.n_told``) records are
    told, to ``name`` in the history's folder, bound to its run (:mod:`pinnbo.state`)."""
    save_state(history.folder / name, optimizer.state_dict(), optimizer.n_told if n_told is None else n_told,
               run_identity(history.case))


def read_checkpoint(history: History, device: torch.device | str = "cpu") -> dict | None:
    """The checkpoint beside ``history``'s log (None without one); refused with a one-line
    HistoryError when it is corrupted, another run's, or ahead of the log."""
    if history.folder is None:
        return None
    return load_state(history.folder / CHECKPOINT, run_identity(history.case), device, recorded=len(history))


def restore(history: History, optimizer: Optimizer, n_init: int, saved: dict | None = None,
            asynchronous: bool = False) -> None:
    """Rebuild the optimiser's state from the log and ``saved`` (a :func:`read_checkpoint`)
    without calling the oracle. Afterwards the optimiser is in the state of an uninterrupted run
    that has just told ``len(history)`` evaluations. ``asynchronous``: the log of a run with
    evaluations in flight (:mod:`pinnbo.runner.asynchronous`), whose asks did not alternate with its
    tells: every record is told without replaying an ask."""
    start = 0
    if saved is not None:
        try:
            optimizer.load_state_dict(saved["state"])
        except Exception as exc:  # half-loaded weights would silently change the run
            raise HistoryError(f"{history.folder / CHECKPOINT}: does not fit this optimiser ({type(exc).__name__}); "
                               "delete it and the run is rebuilt from evaluations.jsonl") from None
        start = saved["n_told"]
    for record in history.evaluations:
        x = recorded_design(optimizer.domain, record)
        if not asynchronous and record.index >= max(start, n_init):
            replayed = optimizer.ask()
            if not np.allclose(replayed, x, rtol=1e-9, atol=1e-12):
                log.warning("evaluation %d does not replay exactly (different machine or version?); "
                            "continuing from the logged design", record.index)
        y = told_value(history, record)
        _tell(optimizer, history, record, y, asynchronous)


def recorded_design(domain: Box, record: Evaluation) -> np.ndarray:
    """The encoded design (d,) of a logged record (designs are logged by value, :mod:`pinnbo.space`);
    a one-line HistoryError when it does not fit the problem's variables."""
    try:
        return domain.encode(record.x)
    except ValueError as exc:
        raise HistoryError(f"evaluations.jsonl: corrupted record {record.index}: 'x': {exc}") from None


def _tell(optimizer: Optimizer, history: History, record: Evaluation, y: float | None,
          asynchronous: bool = False) -> None:
    # The design as logged, so a resumed run tells exactly what the uninterrupted one told.
    c = constraint_vector(history, record)
    x = recorded_design(optimizer.domain, record)
    noise = {} if record.sd is None else {"sd": record.sd}
    if asynchronous:
        optimizer.tell(x, y, c, proposed=record.phase not in NOT_PROPOSED, **noise)
    elif c is None:  # the unconstrained call, exactly as before constraints existed
        optimizer.tell(x, y, **noise)
    else:
        optimizer.tell(x, y, c, **noise)


def history_sign(history: History) -> float:
    return -1.0 if history.sense == "maximize" else 1.0


def told_value(history: History, record: Evaluation) -> float | dict | None:
    """What the optimiser is told of ``record``: the minimised value, the observed values {name: value}
    of several objectives (the optimiser knows their senses), or None for a failure."""
    if record.objectives:
        return dict(record.objectives) if record.ok else None
    return None if record.y is None else history_sign(history) * record.y


def commit(history: History, optimizer: Optimizer | None, record: Evaluation, timing: dict,
           n_init: int, asynchronous: bool = False) -> None:
    """Step 3–4 of the loop: record (fsynced), tell, checkpoint, with Ctrl-C held until done.
    ``optimizer`` None: the caller keeps the checkpoint itself (``pinnbo tell``)."""
    with held_interrupts():
        history.append(record, timing)
        if optimizer is not None:
            _tell(optimizer, history, record, told_value(history, record),
                  asynchronous)
            if history.folder is not None and len(history) >= n_init:
                checkpoint(history, optimizer)


def record_imported(history: History, optimizer: Optimizer | None, problem: Problem, settings: RunSettings) -> None:
    """Record the imported evaluations that are not in the log yet (each once, in order), before
    the first evaluation of the run (:mod:`pinnbo.warm_start`)."""
    for k in range(len(history), len(settings.imported)):
        item = settings.imported[k]
        record = observation(problem, item.x, k, settings.seed, IMPORTED,
                             math.nan if item.value is None else item.value, item.error, measured=True,
                             constraints=item.constraints, given=item.values, sd=item.sd)
        commit(history, optimizer, record, {}, settings.first_proposal)


def stop(history: History, settings: RunSettings, started: float) -> bool:
    """Whether a stopping rule holds before the next evaluation: the best observed value has
    reached ``settings.target``, or ``settings.max_time`` seconds have passed since ``started``
    (time.monotonic). Sets ``history.stopped`` to what happened, for the summary."""
    if settings.target is not None:
        best = history.best(key="y")
        if best is not None and (best.y >= settings.target if history.sense == "maximize"
                                 else best.y <= settings.target):
            history.stopped = {"rule": "target", "target": settings.target, "evaluation": best.index,
                               "value": best.y}
            return True
    elapsed = time.monotonic() - started
    if settings.max_time is not None and elapsed >= settings.max_time:
        history.stopped = {"rule": "max_time", "max_time": settings.max_time, "seconds": round(elapsed, 3),
                           "evaluations": len(history)}
        return True
    return False


def next_design(k: int, settings: RunSettings, design: np.ndarray, optimizer: Optimizer,
                pending: Sequence[tuple[np.ndarray, str]] = ()) -> tuple[np.ndarray, str, float]:
    """Evaluation ``k``'s design, its phase and the seconds it took: an initial-design point
    (``design``, the seed's initial design) or the optimiser's proposal, knowing the ``pending``
    (design, phase) still being evaluated (asynchronous runs)."""
    start = time.perf_counter()
    x = settings.planned_design(k, design)
    phase = "initial"
    if x is None:
        with warnings.catch_warnings():
            # gpytorch clamps a posterior variance that round-off made slightly negative and warns
            # each time; the clamp is the right answer, and the warnings buried the live display.
            warnings.filterwarnings("ignore", message="Negative variance values detected")
            x = optimizer.ask(pending)
        phase = optimizer.phase
    return x, phase, time.perf_counter() - start
