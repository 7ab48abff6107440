"""The optimisation loop: initial design, then ask → evaluate → record → tell, with checkpoints.

Order of operations per evaluation k (what makes runs lossless and resumable):
1. the design: initial-design point k (k < n_init) or ``optimizer.ask()``;
2. the oracle call, any exception or non-finite value caught and recorded as a failed evaluation;
3. the record appended to evaluations.jsonl and fsynced — before anything else can go wrong;
4. ``optimizer.tell``; then the optimiser's state is checkpointed atomically.

On resume the log is replayed into a fresh optimiser: records up to the checkpoint are told
directly; for records after it, ``ask`` is called again (deterministic, no oracle call) to rebuild
the training state, and the logged design is told. The resumed run therefore continues exactly as
the uninterrupted one would have.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from pinnbo.history import Evaluation, History
from pinnbo.optimizers.base import Optimizer, initial_design, numpy_rng
from pinnbo.problem import Problem

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


class RunObserver(Protocol):
    def on_start(self, problem: Problem, settings: RunSettings, history: History) -> None: ...
    def on_evaluation(self, record: Evaluation, timing: dict, history: History) -> None: ...
    def on_finish(self, history: History) -> None: ...


class RunInterrupted(Exception):
    """Ctrl-C during a run: every completed evaluation is on disk."""


def evaluate(problem: Problem, x: np.ndarray, index: int, seed: int, phase: str) -> tuple[Evaluation, float]:
    """Call the oracle once at ``x`` (d,). Returns the record and the oracle's wall time.

    Observation noise ε_k ~ N(0, noise_std²) comes from the stream (seed, "noise", k), so the
    same evaluation index always gets the same noise draw, whichever method proposed it.
    """
    start = time.perf_counter()
    try:
        value = float(problem.objective(np.array(x, dtype=np.float64)))
        error = None if np.isfinite(value) else f"oracle returned {value}"
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # any oracle failure is data, not a crash
        value, error = float("nan"), f"{type(exc).__name__}: {exc}".strip()
    seconds = time.perf_counter() - start
    x_list = [float(v) for v in x]
    if error is not None:
        return Evaluation(index, x_list, None, None, "failed", error[:500], phase), seconds
    observed = value
    if problem.noise_std > 0:
        observed = value + problem.noise_std * float(numpy_rng(seed, "noise", index).standard_normal())
    return Evaluation(index, x_list, observed, value, "ok", None, phase), seconds


def _checkpoint(folder: Path, optimizer: Optimizer) -> None:
    path = folder / "checkpoint.pt"
    tmp = folder / "checkpoint.pt.tmp"
    torch.save({"n_told": optimizer.n_told, "state": optimizer.state_dict()}, tmp)
    os.replace(tmp, path)


def _replay(history: History, optimizer: Optimizer, n_init: int) -> None:
    """Rebuild the optimiser's state from the log (and checkpoint) without calling the oracle."""
    folder = history.folder
    start = 0
    if folder is not None and (folder / "checkpoint.pt").exists():
        checkpoint = torch.load(folder / "checkpoint.pt", map_location=optimizer.device, weights_only=False)
        if checkpoint["n_told"] <= len(history):
            optimizer.load_state_dict(checkpoint["state"])
            start = checkpoint["n_told"]
    for record in history.evaluations:
        if record.index >= max(start, n_init):
            replayed = optimizer.ask()
            if not np.allclose(replayed, record.x, rtol=1e-9, atol=1e-12):
                log.warning("evaluation %d does not replay exactly (different machine or version?); "
                            "continuing from the logged design", record.index)
        y = None if record.y is None else history_sign(history) * record.y
        optimizer.tell(np.array(record.x), y)


def history_sign(history: History) -> float:
    return -1.0 if history.sense == "maximize" else 1.0


def run(problem: Problem, optimizer: Optimizer, settings: RunSettings,
        observer: RunObserver | None = None) -> History:
    """Run ``optimizer`` on ``problem`` until ``settings.budget`` evaluations are recorded."""
    history = History(problem.sense, settings.output, problem.optimum)
    if settings.output is not None:
        History.prepare(settings.output, settings.case or {}, resume=settings.resume, overwrite=settings.overwrite)
        if settings.resume:
            history.load()
    design = initial_design(problem.domain, settings.initial_points, settings.seed)
    _replay(history, optimizer, settings.initial_points)
    if observer is not None:
        observer.on_start(problem, settings, history)
    sign = problem.sign
    try:
        while len(history) < settings.budget:
            k = len(history)
            start = time.perf_counter()
            if k < settings.initial_points:
                x, phase = design[k], "initial"
            else:
                x = optimizer.ask()
                phase = getattr(optimizer, "last_role", "optimizer")
            ask_seconds = time.perf_counter() - start
            record, oracle_seconds = evaluate(problem, x, k, settings.seed, phase)
            timing = {"ask_seconds": round(ask_seconds, 6), "oracle_seconds": round(oracle_seconds, 6)}
            history.append(record, timing)
            optimizer.tell(np.array(record.x), None if record.y is None else sign * record.y)
            if settings.output is not None and k + 1 >= settings.initial_points:
                _checkpoint(settings.output, optimizer)
            if observer is not None:
                observer.on_evaluation(record, timing, history)
    except KeyboardInterrupt:
        raise RunInterrupted(f"interrupted after {len(history)} evaluations") from None
    if observer is not None:
        observer.on_finish(history)
    return history
