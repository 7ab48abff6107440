"""Asynchronous runs: up to q evaluations in flight, a new proposal as soon as one comes back.

The loop (``pinnbo run --workers q``, or ``--scheduler``):
1. while fewer than q evaluations are in flight and told + pending < budget: evaluation k's design
   (an initial-design point, or ``optimizer.ask(pending=...)`` knowing the designs still being
   evaluated, :mod:`pinnbo.optimizers.base`); the ask {index, x, phase} appended to ``asks.jsonl``
   and fsynced, *then* dispatched to the engine (:mod:`pinnbo.runner.cluster`);
2. wait for one to come back; its record appended to ``evaluations.jsonl`` (fsynced), told,
   checkpointed (:func:`pinnbo.runner.steps.commit`); back to 1.
``batch`` waits for the whole batch of q before proposing the next q (synchronous batches).

The log is in completion order; each record keeps its ask index k, which keys its noise draw
and its method's random streams, so a record is the same whichever order the calls finished in.
``--resume`` replays the log into a fresh optimiser (:func:`pinnbo.runner.steps.restore`), then
dispatches again, unchanged, every ask without a record: a recorded evaluation is never repeated
and a pending one never re-proposed. The budget counts told + pending.

Completion order depends on the oracle's and the machine's timing, so an asynchronous run is
reproducible from its log, not byte-identical across reruns.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from pinnbo.errors import HistoryError
from pinnbo.files import append_line
from pinnbo.interrupts import Terminated
from pinnbo.optimizers.base import Optimizer
from pinnbo.problem import Box, Problem
from pinnbo.runner.folder import ASKS
from pinnbo.runner.history import History
from pinnbo.runner.evaluation import outcome_record
from pinnbo.runner.steps import (FailureStreak, RunInterrupted, RunObserver, RunSettings, commit, next_design,
                                 record_imported, recorded_design, restore, stop)
from pinnbo.streams import initial_design


@dataclass
class Ask:
    """A design handed to the engine: its evaluation index, the design (encoded, :mod:`pinnbo.space`;
    the ask log keeps it by value) and its phase."""

    index: int
    x: list[float]
    phase: str


def read_asks(folder: Path | None, domain: Box | None = None) -> list[Ask]:
    """The asks recorded in ``folder`` (none without a folder or a file), each checked against
    ``domain`` (its variables and box; None: a box of real variables, unchecked, as a test reads
    one): an ask is dispatched to an oracle as it stands,
    so a folder changed by hand must not send it a design it never proposed. A last line cut off
    by a crash was never dispatched and is dropped."""
    if folder is None:
        return []
    path = Path(folder) / ASKS
    if not os.path.lexists(path):
        return []
    if path.is_symlink() or not path.is_file():
        raise HistoryError(f"{path}: corrupted ask log (not a regular file)")
    lines = path.read_text(errors="replace").split("\n")
    asks = []
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            index, values, phase = int(data["index"]), list(data["x"]), str(data["phase"])
            if index < 0:
                raise ValueError
        except (KeyError, TypeError, ValueError, RecursionError):   # ValueError: JSON syntax, a huge integer
            raise HistoryError(f"{path}:{number}: corrupted ask; expected {{\"index\", \"x\", \"phase\"}}") from None
        where = f"{path}:{number}"
        if domain is None:
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
                raise HistoryError(f"{where}: corrupted ask; expected {{\"index\", \"x\", \"phase\"}}")
            asks.append(Ask(index, [float(v) for v in values], phase))
        else:
            asks.append(Ask(index, _checked_ask(values, domain, where), phase))
    return asks


def _checked_ask(values: list, domain: Box, where: str) -> list[float]:
    """The encoded design of an ask's values, refused unless it is a design of ``domain``."""
    if len(values) != domain.dim:
        raise HistoryError(f"{where}: corrupted ask: {len(values)} values for the {domain.dim} design variables "
                           f"({', '.join(domain.names)})")
    try:
        x = domain.encode(values)
    except ValueError as exc:
        raise HistoryError(f"{where}: corrupted ask: {exc}") from None
    for name, value, z, lo, hi in zip(domain.names, values, x, domain.lower, domain.upper):
        if not lo <= z <= hi:
            raise HistoryError(f"{where}: corrupted ask: {name} = {value!r} is outside the box "
                               f"({domain.variable(name).describe()})")
    return [float(z) for z in x]


def record_ask(folder: Path | None, ask: Ask, domain: Box) -> None:
    """Append ``ask`` (its design by value) to the ask log, fsynced: on disk before its design
    leaves the runner."""
    if folder is not None:
        line = {**asdict(ask), "x": domain.values(np.asarray(ask.x))}
        append_line(Path(folder) / ASKS, json.dumps(line, allow_nan=False))


def open_asks(history: History, imported: int = 0, *, domain: Box) -> tuple[dict[int, Ask], int]:
    """The asks of ``history``'s folder without a record (by index, in ask order) and the index
    of the next ask (after the ``imported`` evaluations), checked against ``domain``
    (:func:`read_asks`). An ask whose design is not the recorded one's is a foreign log: refused."""
    asks = read_asks(history.folder, domain)
    told = {r.index: r for r in history.evaluations}
    for ask in asks:
        record = told.get(ask.index)
        if record is not None and not np.allclose(recorded_design(domain, record), ask.x, rtol=0, atol=1e-12):
            raise HistoryError(f"{history.folder / ASKS}: ask {ask.index} does not match evaluation {ask.index} of "
                               "evaluations.jsonl; the folder was changed by hand")
    pending = {a.index: a for a in asks if a.index not in told}
    indices = [a.index for a in asks] + list(told)
    return pending, max([imported - 1, *indices], default=-1) + 1


def next_ask(k: int, settings: RunSettings, design: np.ndarray, optimizer: Optimizer,
             pending: dict[int, Ask]) -> tuple[Ask, float]:
    """Ask ``k`` (:func:`pinnbo.runner.steps.next_design`, knowing the ``pending`` asks) and the
    seconds it took."""
    x, phase, seconds = next_design(k, settings, design, optimizer, [(np.asarray(a.x), a.phase) for a in pending.values()])
    return Ask(k, [float(v) for v in x], phase), seconds


def run_asynchronous(problem: Problem, optimizer: Optimizer, settings: RunSettings, history: History,
                     observer: RunObserver | None, saved: dict | None, engine, batch: bool = False) -> History:
    """Run with ``engine`` (a :class:`~pinnbo.runner.cluster.DaskEngine` or a
    :class:`~pinnbo.runner.simulated.SimulatedEngine`) until ``settings.budget`` evaluations are
    recorded (module docstring). The caller closes the engine."""
    first = settings.first_proposal
    design = initial_design(problem.domain, settings.initial_points, settings.seed)
    failures = FailureStreak(first)
    started = time.monotonic()
    stats = {"workers": engine.slots, "oracle_seconds": 0.0, "resubmitted": 0}
    history.parallel = stats
    asked: dict[int, dict] = {}
    try:
        restore(history, optimizer, first, saved, asynchronous=True)
        record_imported(history, optimizer, problem, settings)
        pending, next_index = open_asks(history, len(settings.imported), domain=problem.domain)
        for ask in pending.values():    # dispatched before the interruption: again, unchanged
            engine.submit(ask.index, np.asarray(ask.x))
            stats["resubmitted"] += 1
        if observer is not None:
            observer.on_start(problem, settings, history)
        stopped = False
        while True:
            filling = not batch or not pending
            while filling and engine.in_flight < engine.slots and len(history) + len(pending) < settings.budget:
                if stop(history, settings, started):
                    stopped = True
                    break
                k = next_index
                ask, seconds = next_ask(k, settings, design, optimizer, pending)
                asked[k] = {"ask_seconds": round(seconds, 6), "pending_at_ask": len(pending)}
                record_ask(history.folder, ask, problem.domain)
                pending[k] = ask
                engine.submit(k, np.asarray(ask.x))
                next_index += 1
                _in_flight(observer, engine)
            if not pending or (stopped and not engine.in_flight):
                break
            for done in engine.wait():
                ask = pending.pop(done.index)
                record = outcome_record(problem, np.asarray(ask.x), ask.index, settings.seed, ask.phase,
                                        done.outcome, done.error)
                timing = {**asked.pop(done.index, {}), "oracle_seconds": round(done.seconds, 6),
                          "finished_seconds": round(done.finished, 6)}
                stats["oracle_seconds"] += done.seconds
                commit(history, optimizer, record, timing, first, asynchronous=True)
                if observer is not None:
                    observer.on_evaluation(record, timing, history)
                _in_flight(observer, engine)
                failures.check(history, record)
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        word = "terminated" if terminated else "interrupted"
        raise RunInterrupted(f"{word} after {len(history)} evaluations", terminated) from None
    finally:
        wall = time.monotonic() - started
        stats["wall_seconds"] = round(wall, 3)
        stats["oracle_seconds"] = round(stats["oracle_seconds"], 3)
        stats["utilisation"] = round(stats["oracle_seconds"] / (wall * engine.slots), 4) if wall > 0 else None
    if observer is not None:
        observer.on_finish(history)
    return history


def _in_flight(observer: RunObserver | None, engine) -> None:
    show = getattr(observer, "on_flight", None)
    if show is not None:
        show(engine.in_flight, engine.worker_count())
