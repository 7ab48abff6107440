"""The optimisation loop: initial design, then ask → evaluate → record → tell, with checkpoints.

Order of operations per evaluation k (what makes runs lossless and resumable):
1. the design (:func:`next_design`): an initial-design point, or ``optimizer.ask()`` with the
   phase the optimiser gives it; evaluations imported from elsewhere come first
   (:mod:`pinnbo.runner.warm_start`);
2. the oracle call (isolated, under the case's ``timeout``: :mod:`pinnbo.oracles.isolation`), any
   exception, malformed result, non-finite value or timeout caught and recorded as a failed
   evaluation; the known constraints computed at the design (exact, no oracle);
3. the record appended to evaluations.jsonl and fsynced — before anything else can go wrong;
4. ``optimizer.tell``; then the optimiser's state is checkpointed atomically.
Steps 3–4 hold Ctrl-C until they are done (:func:`pinnbo.interrupts.held_interrupts`), so an
interrupted run stops either before an evaluation is recorded or after its record, tell and
checkpoint.

On resume the log is replayed into a fresh optimiser (:func:`restore`): records up to the
checkpoint are told directly; for records after it, ``ask`` is called again (deterministic, no
oracle call) to rebuild the training state, and the logged design is told. The resumed run
therefore continues exactly as the uninterrupted one would have. This relies on the optimiser
contract of :mod:`pinnbo.optimizers.base`: ``ask`` is a function of the seed, the told data and the
checkpointed state, and ``state_dict`` does not change in ``tell`` (told data lives in X, y and is
rebuilt from the log), so a state saved right after ``ask`` (``pinnbo ask``,
:mod:`pinnbo.runner.asktell`, which takes the same :func:`next_design` and :func:`commit`) equals the
one saved after the following ``tell``.
"""

from __future__ import annotations

import time


from pinnbo.errors import CaseError, ProblemError, shown
from pinnbo.interrupts import Terminated
from pinnbo.optimizers.base import Optimizer
from pinnbo.problem import Problem
from pinnbo.runner.asynchronous import read_asks, run_asynchronous
from pinnbo.runner.cluster import DaskEngine
from pinnbo.runner.evaluation import evaluate
from pinnbo.runner.folder import ASKS, locked
from pinnbo.runner.history import History
from pinnbo.runner.steps import (FailureStreak, RunInterrupted, RunObserver, RunSettings, commit, next_design,
                                 read_checkpoint, record_imported, restore, stop)
from pinnbo.streams import initial_design


def run(problem: Problem, optimizer: Optimizer, settings: RunSettings,
        observer: RunObserver | None = None, engine=None) -> History:
    """Run ``optimizer`` on ``problem`` until ``settings.budget`` evaluations are recorded: one at a
    time, or with several in flight (:mod:`pinnbo.runner.asynchronous`) when ``settings`` asks for
    workers or a scheduler, when ``engine`` is given (a simulated cluster), or when the folder holds
    an asynchronous run."""
    if problem.objective is None:
        raise ProblemError(f"oracle: problem {shown(problem.name)} is measured outside pinnbo; give the case "
                           "`oracle: {command: ...}` to run it, or use `pinnbo ask` / `pinnbo tell`")
    if settings.output is None:
        history = History(problem.sense, None, problem.optimum, problem.constraint_names)
        if settings.parallel or engine is not None:
            return _run_on_engine(problem, optimizer, settings, history, observer, None, engine)
        return _loop(problem, optimizer, settings, history, observer, None)
    with locked(settings.output):
        history = History.read(settings.output, settings.case or {}, problem.sense, problem.optimum,
                               resume=settings.resume, overwrite=settings.overwrite,
                               constraints=problem.constraint_names, variables=problem.domain.names,
                               labels=settings.labels, budget=settings.budget)
        saved = read_checkpoint(history, optimizer.device) if settings.resume else None   # before any write
        if not (settings.parallel or engine is not None or (settings.output / ASKS).exists()):
            history.begin(settings.case or {})
            return _loop(problem, optimizer, settings, history, observer, saved)
        return _run_on_engine(problem, optimizer, settings, history, observer, saved, engine)


def _run_on_engine(problem: Problem, optimizer: Optimizer, settings: RunSettings, history: History,
                   observer: RunObserver | None, saved: dict | None, engine) -> History:
    """The asynchronous loop on ``engine``, or on a Dask engine started here (and stopped after):
    started, or its scheduler reached, before the results folder is written."""
    read_asks(history.folder, problem.domain)   # a hand-edited ask is refused before anything starts
    own = engine is None
    if own:
        engine = _dask_engine(problem, settings)
    try:
        if history.folder is not None:
            history.begin(settings.case or {})
        return run_asynchronous(problem, optimizer, settings, history, observer, saved, engine, batch=settings.batch)
    finally:
        if own:
            engine.close()


def _dask_engine(problem: Problem, settings: RunSettings):
    try:
        return DaskEngine(problem.objective if settings.objective is None else settings.objective,
                          workers=settings.workers, scheduler=settings.scheduler, timeout=settings.timeout)
    except CaseError as exc:   # named as the user gave it (--scheduler or the case's field)
        field, _, rest = str(exc).partition(":")
        raise CaseError(f"{(settings.labels or {}).get(field, field)}:{rest}") from None


def _loop(problem: Problem, optimizer: Optimizer, settings: RunSettings, history: History,
          observer: RunObserver | None, saved: dict | None) -> History:
    first = settings.first_proposal
    design = initial_design(problem.domain, settings.initial_points, settings.seed)
    failures = FailureStreak(first)
    started = time.monotonic()
    try:
        restore(history, optimizer, first, saved)
        record_imported(history, optimizer, problem, settings)
        if observer is not None:
            observer.on_start(problem, settings, history)
        while len(history) < settings.budget and not stop(history, settings, started):
            k = len(history)
            x, phase, ask_seconds = next_design(k, settings, design, optimizer)
            record, oracle_seconds = evaluate(problem, x, k, settings.seed, phase, settings.timeout)
            timing = {"ask_seconds": round(ask_seconds, 6), "oracle_seconds": round(oracle_seconds, 6)}
            commit(history, optimizer, record, timing, first)
            if observer is not None:
                observer.on_evaluation(record, timing, history)
            failures.check(history, record)
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        word = "terminated" if terminated else "interrupted"
        raise RunInterrupted(f"{word} after {len(history)} evaluations", terminated) from None
    if observer is not None:
        observer.on_finish(history)
    return history
