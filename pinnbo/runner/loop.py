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

import logging
import math
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import torch

from pinnbo.errors import CaseError, HistoryError, ProblemError, RunStopped, shown
from pinnbo.interrupts import Terminated, held_interrupts
from pinnbo.optimizers.base import NOT_PROPOSED, Optimizer
from pinnbo.oracles.isolation import OracleFailure, call_oracle
from pinnbo.problem import Problem, read_outcome
from pinnbo.runner.history import ASKS, Evaluation, History, locked
from pinnbo.runner.state import CHECKPOINT, load_state, run_identity, save_state
from pinnbo.runner.warm_start import IMPORTED
from pinnbo.streams import initial_design, numpy_rng

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


def evaluate(problem: Problem, x: np.ndarray, index: int, seed: int, phase: str,
             timeout: float | None = None) -> tuple[Evaluation, float]:
    """Call the oracle once at ``x`` (d,). Returns the record and the oracle's wall time.

    The oracle's result is one number, or ``(f, c)`` for a problem with black-box constraints
    (:meth:`pinnbo.problem.Problem.split_outcome`). Noise as in :func:`observation`.
    KeyboardInterrupt propagates (the evaluation did not happen); every other way of not
    producing finite values is a failed evaluation with its reason.
    """
    start = time.perf_counter()
    outcome, error = oracle_outcome(problem.objective, x, timeout)
    seconds = time.perf_counter() - start
    return outcome_record(problem, x, index, seed, phase, outcome, error), seconds


def oracle_outcome(objective, x: np.ndarray, timeout: float | None = None) -> tuple[object, str | None]:
    """One isolated oracle call at ``x`` (d,): (its result, None), or (None, the reason it produced
    none). KeyboardInterrupt propagates. What an asynchronous run's workers execute."""
    try:
        return call_oracle(objective, np.array(x, dtype=np.float64), timeout), None
    except KeyboardInterrupt:
        raise
    except OracleFailure as exc:
        return None, str(exc)
    except SystemExit as exc:  # an oracle wrapping a script must not end the run
        return None, f"oracle called sys.exit({shown(exc.code)})"
    except Exception as exc:  # any oracle failure is data, not a crash
        return None, f"{type(exc).__name__}: {exc}".strip()


def outcome_record(problem: Problem, x: np.ndarray, index: int, seed: int, phase: str, outcome: object,
                   error: str | None) -> Evaluation:
    """The record of evaluation ``index`` from the oracle's ``outcome`` (or ``error``): its shape
    checked, noise added and the known constraints computed here, in the runner."""
    value, blackbox = float("nan"), {}
    if error is None:
        value, blackbox, error = read_outcome(problem, outcome)
    return observation(problem, x, index, seed, phase, value, error, constraints=blackbox)


def observation(problem: Problem, x: np.ndarray, index: int, seed: int, phase: str, value: float,
                error: str | None, add_noise: bool = True, constraints: dict[str, float] | None = None
                ) -> Evaluation:
    """The record of evaluation ``index`` at ``x`` (d,): ``value`` the oracle's true value (problem's
    sense) and ``constraints`` its black-box constraint values {name: c}, or ``error`` the reason it
    failed. The known constraints are computed here, exactly.

    Noise (``add_noise``): the objective gets ε ~ N(0, noise_std²) from the stream (seed, "noise", k),
    each black-box constraint c_i its own ε_i ~ N(0, noise_std_i²) from (seed, "noise", name_i, k),
    so the same evaluation index always gets the same draws, whichever method proposed it, and
    adding a constraint shifts neither the objective's noise nor another constraint's.
    A non-finite objective or constraint value fails the evaluation.
    """
    x_list = [float(v) for v in x]
    true_c: dict[str, float] = {}
    if error is None and not math.isfinite(value):
        error = f"oracle returned {value}"
    if error is None and problem.constraints:
        true_c, error = constraint_values(problem, np.asarray(x, dtype=np.float64), constraints or {})
    if error is not None:
        return Evaluation(index, x_list, None, None, "failed", error[:500], phase)
    observed = value
    if add_noise and problem.noise_std > 0:
        observed = value + problem.noise_std * float(numpy_rng(seed, "noise", index).standard_normal())
    observed_c = dict(true_c)
    for c in problem.constraints:
        if add_noise and not c.known and c.noise_std > 0:
            observed_c[c.name] += c.noise_std * float(numpy_rng(seed, "noise", c.name, index).standard_normal())
    feasible = all(v <= 0 for v in true_c.values()) if problem.constraints else None
    return Evaluation(index, x_list, observed, value, "ok", None, phase, observed_c, true_c, feasible)


def constraint_values(problem: Problem, x: np.ndarray, blackbox: dict[str, float]
                      ) -> tuple[dict[str, float], str | None]:
    """Every constraint's true value at ``x`` (d,), in the problem's order: the black-box ones
    from the oracle's ``blackbox``, the known ones computed. ({}, reason) if one is missing,
    fails or is not finite."""
    values: dict[str, float] = {}
    for c in problem.constraints:
        if c.known:
            try:
                v = float(np.asarray(c.function(x.reshape(1, -1)), dtype=np.float64).reshape(-1)[0])
            except Exception as exc:  # a user's formula or function: its failure is this evaluation's
                return {}, f"constraint {c.name}: {type(exc).__name__}: {exc}".strip()
        elif c.name in blackbox:
            v = float(blackbox[c.name])
        else:
            return {}, f"no value for constraint {c.name}"
        if not math.isfinite(v):
            return {}, f"constraint {c.name} is {v}"
        values[c.name] = v
    extra = [k for k in blackbox if k not in values]
    if extra:
        return {}, f"unexpected constraint value(s) {extra}; the problem's constraints are {list(values)}"
    return values, None


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
    dim = optimizer.domain.dim
    for record in history.evaluations:
        if len(record.x) != dim:
            raise HistoryError(f"evaluations.jsonl: corrupted record {record.index}: 'x' has {len(record.x)} "
                               f"values, the problem has {dim} variables")
        if not asynchronous and record.index >= max(start, n_init):
            replayed = optimizer.ask()
            if not np.allclose(replayed, record.x, rtol=1e-9, atol=1e-12):
                log.warning("evaluation %d does not replay exactly (different machine or version?); "
                            "continuing from the logged design", record.index)
        y = None if record.y is None else history_sign(history) * record.y
        _tell(optimizer, history, record, y, asynchronous)


def _tell(optimizer: Optimizer, history: History, record: Evaluation, y: float | None,
          asynchronous: bool = False) -> None:
    c = constraint_vector(history, record)
    if asynchronous:
        optimizer.tell(np.array(record.x), y, c, proposed=record.phase not in NOT_PROPOSED)
    elif c is None:  # the unconstrained call, exactly as before constraints existed
        optimizer.tell(np.array(record.x), y)
    else:
        optimizer.tell(np.array(record.x), y, c)


def history_sign(history: History) -> float:
    return -1.0 if history.sense == "maximize" else 1.0


def commit(history: History, optimizer: Optimizer | None, record: Evaluation, timing: dict,
           n_init: int, asynchronous: bool = False) -> None:
    """Step 3–4 of the loop: record (fsynced), tell, checkpoint, with Ctrl-C held until done.
    ``optimizer`` None: the caller keeps the checkpoint itself (``pinnbo tell``)."""
    with held_interrupts():
        history.append(record, timing)
        if optimizer is not None:
            _tell(optimizer, history, record, None if record.y is None else history_sign(history) * record.y,
                  asynchronous)
            if history.folder is not None and len(history) >= n_init:
                checkpoint(history, optimizer)


def record_imported(history: History, optimizer: Optimizer | None, problem: Problem, settings: RunSettings) -> None:
    """Record the imported evaluations that are not in the log yet (each once, in order), before
    the first evaluation of the run (:mod:`pinnbo.warm_start`)."""
    for k in range(len(history), len(settings.imported)):
        item = settings.imported[k]
        record = observation(problem, item.x, k, settings.seed, IMPORTED,
                             math.nan if item.value is None else item.value, item.error, add_noise=False,
                             constraints=item.constraints)
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
    from pinnbo.runner.asynchronous import read_asks, run_asynchronous

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
    from pinnbo.runner.cluster import DaskEngine

    try:
        return DaskEngine(problem.objective if settings.objective is None else settings.objective,
                          workers=settings.workers, scheduler=settings.scheduler, timeout=settings.timeout)
    except CaseError as exc:   # named as the user gave it (--scheduler or the case's field)
        field, _, rest = str(exc).partition(":")
        raise CaseError(f"{(settings.labels or {}).get(field, field)}:{rest}") from None


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
