"""Several methods × several seeds on the same cases, side by side, with statistics (``pinnbo bench``).

Protocol (REFERENCES §7): every method runs every case for seeds 0..N-1 (or the seeds given); for a
seed all methods share the initial design (the run loop draws it from the seed) and every random
stream; the initial points count in the budget; the statistics use the true (noise-free) values.

What a bench leaves, one folder per case (default ``bench-results/<case>/``):

- ``runs/<method>/seed<k>/``: each run's own results folder, written by the normal run loop
  (``evaluations.jsonl``, ``timings.jsonl``, ``case.json``, ``checkpoint.pt``, ``summary.json``), so
  every run is resumable on its own and ``pinnbo show`` reads it. Per-run figures are not drawn.
- ``curves.csv``: best-so-far curves, columns method, seed, evaluation (1..budget), best_true,
  simple_regret (empty where f* is unknown or nothing has succeeded yet).
- ``table.md``: mean ± standard error of the final best value and of the simple regret, seconds per
  iteration, failures, and the one-sided tests of the reference method against each baseline.

Constrained cases (c_i(x) <= 0 feasible): "best" is the best *feasible* true value, averaged over the
seeds that found a feasible point (the table says how many found none); the table adds the feasible
fraction of the evaluations and the cumulative violation Σ_t Σ_i max(c_i(x_t), 0); curves.csv adds
``n_feasible`` and ``cumulative_violation`` columns. The tests compare final best feasible values with
a seed that found no feasible point counted as the worst final best-feasible value of any run of the
case (every method, every seed): leaving such seeds out would reward a method for failing to find
feasibility on its hard seeds, and a penalty from the case's own runs needs no problem-specific bound.
The reference method defaults to ``neural-cbo`` and the methods to those that handle constraints.
- ``convergence.png``: mean best-so-far per method with a shaded ± standard error band.
- ``summary.json``: every number of the table, the per-seed values, the mean curves and the tests.

Restarting a bench skips the runs that are complete (``budget`` lines in evaluations.jsonl and a
summary.json) and resumes the others with the run loop's ``resume``, so no oracle call is repeated.

Every run uses one torch thread, in the parent (``--jobs 1``) as in worker processes: results then
do not depend on ``--jobs`` (thread count changes floating-point reduction order), and two
processes with default threads thrash on a small machine (a PINN step went from 6 ms to 100+ ms).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
import multiprocessing
import os
import queue
import re
import signal
import threading
import time
import traceback
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

from pinnbo.case import MAX_BUDGET, MAX_SEED, Case, CaseError, load_case
from pinnbo.errors import shown
from pinnbo.history import (EXPLORATION, History, HistoryError, differing_key, holds_anything, read_stored_case,
                            write_failure, write_json_atomic, write_text_atomic)
from pinnbo.interrupts import signals_ignored
from pinnbo.optimizers import METHODS, MethodError
from pinnbo.pde import PDEError
from pinnbo.problem import ProblemError
from pinnbo.state import CHECKPOINT, load_state, run_identity

REFERENCE = "pinn-bo"       # the method tested against every other one
MAX_SEEDS = 10_000          # seeds in one bench
MAX_JOBS = 256              # parallel runs
CONSTRAINED_REFERENCE = "neural-cbo"   # ... on a constrained case
ALPHA = 0.05                # significance level of the BH-adjusted p-values shown in the table


class BenchError(CaseError):
    """A user mistake in the bench's options (one-line message naming the option)."""


class BenchInterrupted(Exception):
    """Ctrl-C (or SIGTERM, ``terminated``) during a bench: every completed evaluation of every run
    is on disk."""

    def __init__(self, message: str, terminated: bool = False) -> None:
        super().__init__(message)
        self.terminated = terminated


# -- settings -----------------------------------------------------------------------------------------
@dataclass
class BenchSettings:
    cases: list[Path]
    methods: list[str] | None           # None: each case's default (default_methods)
    seeds: tuple[int, ...] = tuple(range(10))   # parse_seeds' result
    budget: int | None = None
    jobs: int = 1
    output: Path = Path("bench-results")
    params: dict[str, dict] = field(default_factory=dict)   # per-method overrides of the defaults
    reference: str | None = None        # None: each case's default (default_reference)
    device: str | None = None
    smoke: bool = False

    @classmethod
    def from_options(cls, cases: Sequence[str | Path], methods: str | Sequence[str] | None, seeds: int | str,
                     budget: int | None = None, jobs: int = 1, output: str | Path | None = None,
                     params: str | dict | None = None, reference: str | None = None,
                     device: str | None = None, smoke: bool = False) -> "BenchSettings":
        """Validate command-line style options; every mistake is a BenchError naming the option."""
        if not cases:
            raise BenchError("cases: give at least one case file")
        method_list = None if methods is None else parse_methods(methods)
        seeds = parse_seeds(seeds)
        if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
            raise BenchError(f"--jobs: expected an integer from 1 to {MAX_JOBS}, got {shown(jobs)}")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                                   or not 2 <= budget <= MAX_BUDGET):
            raise BenchError(f"--budget: expected an integer from 2 to {MAX_BUDGET}, got {shown(budget)}")
        if reference is not None and reference not in METHODS:
            raise BenchError(f"--reference: unknown method {shown(reference)}; expected one of {', '.join(sorted(METHODS))}")
        if reference is not None and method_list is not None and reference not in method_list:
            # the tests would silently vanish from every table
            raise BenchError(f"--reference: {shown(reference)} is not among --methods ({', '.join(method_list)}); "
                             "add it there or leave --reference out")
        return cls(cases=[Path(c) for c in cases], methods=method_list, seeds=seeds, budget=budget, jobs=jobs,
                   output=Path(output) if output is not None else Path("bench-results"),
                   params=parse_params(params, method_list if method_list is not None else sorted(METHODS)),
                   reference=reference, device=device, smoke=smoke)


def parse_seeds(seeds: int | str | Sequence[int]) -> tuple[int, ...]:
    """``--seeds``: N (seeds 0..N-1), a range ``5-9`` (inclusive), a list ``0,3,7``, or ranges and
    seeds mixed (``0-2,7``); so one grid can be split over machines and its folders merged."""
    expected = (f"N (seeds 0..N-1, 1 <= N <= {MAX_SEEDS}), a range a-b or a list a,b,c of at most {MAX_SEEDS} "
                f"seeds from 0 to {MAX_SEED}")
    if isinstance(seeds, bool):
        raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
    if isinstance(seeds, int):
        if not 1 <= seeds <= MAX_SEEDS:
            raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
        return tuple(range(seeds))
    if not isinstance(seeds, str):
        out = tuple(seeds)
        if not out or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in out):
            raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
    else:
        text = seeds.strip()
        if re.fullmatch(r"\d+", text):
            return parse_seeds(int(text))
        out = []
        for part in text.split(","):
            match = re.fullmatch(r"\s*(\d{1,20})\s*(?:-\s*(\d{1,20})\s*)?", part)
            if match is None or (match[2] is not None and int(match[2]) < int(match[1])) \
                    or len(out) + int(match[2] or match[1]) - int(match[1]) + 1 > MAX_SEEDS:
                raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
            out += range(int(match[1]), int(match[2] or match[1]) + 1)
        out = tuple(out)
    if len(out) > MAX_SEEDS or any(k > MAX_SEED for k in out):
        raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
    if len(set(out)) != len(out):
        raise BenchError(f"--seeds: seed {next(k for k in out if out.count(k) > 1)} is given twice in {shown(seeds)}")
    return tuple(sorted(out))


def seeds_text(seeds: Sequence[int]) -> str:
    """0..9 for a contiguous run of seeds, else the list."""
    seeds = list(seeds)
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(k) for k in seeds)


def default_reference(constrained: bool) -> str:
    """The method tested against the others: PINN-BO, or Neural-CBO on a constrained case."""
    return CONSTRAINED_REFERENCE if constrained else REFERENCE


def default_methods(constrained: bool, reference: str | None = None) -> list[str]:
    """Every registered method for its kind of case (those that handle constraints for a constrained
    case; the unconstrained ones otherwise), the reference first."""
    reference = reference or default_reference(constrained)
    names = sorted(m for m, cls in METHODS.items()
                   if (cls.handles_constraints if constrained else not cls.constrained_method))
    return ([reference] if reference in names else []) + [m for m in names if m != reference]


def parse_methods(methods: str | Sequence[str] | None) -> list[str]:
    """``"pinn-bo,random"`` → ``["pinn-bo", "random"]`` (duplicates dropped); None → every registered
    method, the reference first."""
    if methods is None:
        return default_methods(False)
    items = methods.split(",") if isinstance(methods, str) else list(methods)
    out: list[str] = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        if item not in METHODS:
            hint = difflib.get_close_matches(item, METHODS, n=1)
            raise BenchError(f"--methods: unknown method {shown(item)}" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                             + f"; expected one of {', '.join(sorted(METHODS))}")
        if item not in out:
            out.append(item)
    if not out:
        raise BenchError("--methods: give at least one method, e.g. --methods pinn-bo,random")
    return out


def parse_params(params: str | dict | None, methods: Sequence[str]) -> dict[str, dict]:
    """``--params '{"pinn-bo": {"pde_weight": 0.5}}'`` (JSON text, or a path to a JSON file) →
    per-method overrides, each checked against that method's documented parameters."""
    if params is None or params == "":
        return {}
    if isinstance(params, str):
        text = params
        if not text.lstrip().startswith("{"):
            if not Path(text).is_file():
                raise BenchError(f"--params: {shown(text)} is neither a JSON object nor a JSON file; expected e.g. "
                                 "'{\"pinn-bo\": {\"pde_weight\": 0.5}}' or params.json")
            text = Path(text).read_text()
        try:
            params = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BenchError(f"--params: invalid JSON ({exc.msg} at column {exc.colno}); expected "
                             "e.g. '{\"pinn-bo\": {\"pde_weight\": 0.5}}'") from None
    if not isinstance(params, dict):
        raise BenchError("--params: expected a JSON object of methods, e.g. '{\"pinn-bo\": {\"pde_weight\": 0.5}}'")
    out = {}
    for method, overrides in params.items():
        if method not in methods:
            raise BenchError(f"--params: {shown(method)} is not one of --methods ({', '.join(methods)})")
        if not isinstance(overrides, dict):
            raise BenchError(f"--params: {method}: expected an object of parameters, got {type(overrides).__name__}")
        try:
            METHODS[method].Settings.from_params(overrides, method)
        except MethodError as exc:
            raise BenchError(f"--params: {method}: {exc}") from None
        out[method] = dict(overrides)
    return out


# -- the grid -------------------------------------------------------------------------------------------
@dataclass
class RunJob:
    """One (case, method, seed) run; ``case`` is the run's resolved case (picklable)."""

    case: Case
    case_name: str
    method: str
    seed: int
    done_before: int = 0        # evaluations already on disk when the bench started
    complete: bool = False

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.case_name, self.method, self.seed)

    @property
    def folder(self) -> Path:
        return self.case.output_dir

    @property
    def budget(self) -> int:
        return self.case.budget


@dataclass
class CasePlan:
    """One case of the bench: its folder, what the problem is, and its runs."""

    source: Path
    case: Case
    folder: Path
    problem_name: str
    sense: str
    optimum: float | None
    jobs: list[RunJob]
    methods: list[str] = field(default_factory=list)
    reference: str = REFERENCE
    constraints: tuple[str, ...] = ()     # the problem's constraint names (empty: unconstrained)

    @property
    def constrained(self) -> bool:
        return bool(self.constraints)

    @property
    def budget(self) -> int:
        return self.case.budget

    @property
    def initial_points(self) -> int:
        return self.case.initial_points


def run_folder(case_folder: Path, method: str, seed: int) -> Path:
    return Path(case_folder) / "runs" / method / f"seed{seed}"


def recorded_evaluations(folder: Path) -> int:
    """Complete lines in the run's evaluations.jsonl (0 when there is none)."""
    path = Path(folder) / "evaluations.jsonl"
    if not path.is_file() or path.is_symlink():  # not a log: the run's own checks say what it is
        return 0
    return sum(1 for line in path.read_bytes().split(b"\n")[:-1] if line.strip())


def run_is_complete(folder: Path, budget: int) -> bool:
    """A run is complete when it has ``budget`` evaluations and its summary.json (written last)."""
    return recorded_evaluations(folder) >= budget and (Path(folder) / "summary.json").exists()


def _check_resumable(folder: Path, case: dict) -> None:
    """Refuse, before anything runs, a run folder that holds a different run (the run loop would too,
    but only once a worker reached it)."""
    folder = Path(folder)
    if not holds_anything(folder):
        return
    stored_file = folder / "case.json"
    if not stored_file.exists():
        raise BenchError(f"--output: {folder} is not empty and holds no pinnbo run (no case.json); "
                         "use another --output")
    try:
        stored = read_stored_case(stored_file)
    except ValueError as exc:
        raise BenchError(f"--output: {stored_file} {exc}; use another --output") from None
    key = differing_key(stored, case)
    if key is not None:
        raise BenchError(f"--output: {folder} holds a run with a different {key} ({shown(stored.get(key))}, now "
                         f"{shown(case.get(key))}); use another --output or delete that folder")
    try:  # its state file too: a run must not fail in a worker on what can be refused here
        load_state(folder / CHECKPOINT, run_identity(case), recorded=recorded_evaluations(folder))
    except HistoryError as exc:
        raise BenchError(str(exc)) from None


def plan(settings: BenchSettings) -> list[CasePlan]:
    """Load and check every case, build each problem once (heat-plate fields are solved here and
    cached on disk, so workers only load them), and lay out the runs."""
    plans: list[CasePlan] = []
    overrides = {"budget": settings.budget, "device": settings.device, "smoke": settings.smoke or None}
    for source in settings.cases:
        try:
            base = load_case(source, overrides)
            problem = base.build_problem()
        except (CaseError, MethodError, ProblemError, PDEError) as exc:
            message = str(exc)
            raise BenchError(message if message.startswith("case:") else f"{source}: {message}") from None
        if problem.metadata.get("oracle") == "outside":
            raise BenchError(f"{source}: problem {shown(problem.name)} is measured outside pinnbo; a bench needs an "
                             "oracle it can call (give the case `oracle: {command: ...}`)")
        if any(p.case.name == base.name for p in plans):
            raise BenchError(f"cases: two cases are named {shown(base.name)}; each case needs its own folder")
        folder = settings.output / base.name
        constrained = bool(problem.constraints)
        reference = settings.reference or default_reference(constrained)
        methods = settings.methods if settings.methods is not None else default_methods(constrained, reference)
        if constrained:
            blind = [m for m in methods if not METHODS[m].handles_constraints]
            if blind:
                able = ", ".join(sorted(m for m, c in METHODS.items() if c.handles_constraints))
                raise BenchError(f"--methods: {shown(blind[0])} ignores constraints and case {shown(base.name)} has "
                                 f"{', '.join(problem.constraint_names)}; use methods among {able} (the default for "
                                 "a constrained case), and bench unconstrained cases separately")
        jobs = []
        for seed in settings.seeds:
            for method in methods:
                # The case's own method_params were written for its method: kept for that method
                # only; --params overrides on top. Every other method runs with its defaults.
                method_params = dict(base.method_params) if method == base.method else {}
                method_params.update(settings.params.get(method, {}))
                case = replace(base, method=method, method_params=method_params, seed=seed,
                               output=str(run_folder(folder, method, seed)))
                if method_params:
                    try:
                        METHODS[method].Settings.from_params(method_params, method)
                    except MethodError as exc:
                        raise BenchError(f"{source}: {method}: {exc}") from None
                job = RunJob(case, base.name, method, seed)
                _check_resumable(job.folder, case.to_dict())
                job.done_before = recorded_evaluations(job.folder)
                job.complete = run_is_complete(job.folder, job.budget)
                jobs.append(job)
        plans.append(CasePlan(Path(source), base, folder, problem.name, problem.sense, problem.optimum, jobs,
                              methods, reference, problem.constraint_names))
    return plans


# -- one run (in this process or a worker) ----------------------------------------------------------------
class _Reporter:
    """Run observer that forwards progress events: ("start", key, k, budget, initial_points, time) and
    ("evaluation", key, k, best, time)."""

    def __init__(self, key: tuple, notify: Callable[[tuple], None]) -> None:
        self.key, self.notify = key, notify

    def on_start(self, problem, settings, history) -> None:
        self.notify(("start", self.key, len(history), settings.budget, settings.initial_points, time.time()))

    def on_evaluation(self, record, timing, history) -> None:
        best = history.best()
        value = None if best is None else (best.true if best.true is not None else best.y)
        self.notify(("evaluation", self.key, len(history), value, time.time()))

    def on_finish(self, history) -> None:
        pass


def execute(job: RunJob, notify: Callable[[tuple], None] | None = None) -> dict:
    """Run (or resume, or just finish) one job with the normal run loop; write its summary.json last.

    Failures of the run itself (a bug in a method, an out-of-memory) are returned, not raised, so one
    bad run does not stop the bench; Ctrl-C is raised."""
    from pinnbo.report import summarize
    from pinnbo.run import RunInterrupted, run

    start = time.perf_counter()
    try:
        problem = job.case.build_problem()
        optimizer = job.case.build_optimizer(problem)
        settings = job.case.run_settings(problem, resume=True)
        observer = _Reporter(job.key, notify) if notify is not None else None
        history = run(problem, optimizer, settings, observer)
        write_json_atomic(job.folder / "summary.json", summarize(history, problem, job.case.to_dict()))
    except (KeyboardInterrupt, RunInterrupted):
        raise
    except Exception as exc:
        return {"key": job.key, "ok": False, "error": f"{type(exc).__name__}: {exc}".strip()[:500],
                "traceback": traceback.format_exc(limit=20), "seconds": time.perf_counter() - start}
    return {"key": job.key, "ok": True, "error": None, "seconds": time.perf_counter() - start}


_EVENTS: Any = None     # the worker's queue to the parent, set by _init_worker


def _init_worker(events) -> None:
    """Each worker: one torch thread before any work; progress events go to the parent's queue;
    interrupts only act inside a job (pinnbo.interrupts.interruptible_job)."""
    import torch

    from pinnbo.interrupts import worker_interrupts

    worker_interrupts()
    torch.set_num_threads(1)
    global _EVENTS
    _EVENTS = events


def _execute_in_worker(job: RunJob) -> dict:
    """One job in a pool worker. An interrupt (Ctrl-C from the terminal, or SIGTERM forwarded by
    the parent) stops the run cleanly and comes back as a result, not an exception: the parent
    is already stopping the pool and reads no more results."""
    from pinnbo.interrupts import interruptible_job
    from pinnbo.run import RunInterrupted

    try:
        with interruptible_job():
            return execute(job, _EVENTS.put if _EVENTS is not None else None)
    except (KeyboardInterrupt, RunInterrupted):
        return {"key": job.key, "ok": False, "error": "interrupted", "traceback": None, "seconds": None}


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _run_in_process(todo: list[RunJob], display: "BenchProgress | None", outcomes: dict) -> None:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for job in todo:
            if display is not None:
                display.queued(job)
            result = execute(job, display.event if display is not None else None)
            outcomes[job.key] = result
            if display is not None:
                display.finished(job.key, result["ok"])
    finally:
        torch.set_num_threads(threads)


def _run_in_pool(todo: list[RunJob], jobs: int, display: "BenchProgress | None", outcomes: dict) -> None:
    context = multiprocessing.get_context("spawn")     # fork after torch/OpenMP started can hang
    events = context.Queue()
    saved = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    os.environ.update({name: "1" for name in THREAD_VARIABLES})  # BLAS reads these at import, in the child
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=context,
                               initializer=_init_worker, initargs=(events,))
    try:
        # The workers start (spawn) inside submit and import for seconds before their initializer
        # installs the job-aware handlers (pinnbo.interrupts.signals_ignored).
        with signals_ignored():
            pending = {pool.submit(_execute_in_worker, job): job for job in todo}
        if display is not None:
            for job in todo:
                display.queued(job)
        while pending:
            done, _ = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(events, display)
            for future in done:
                job = pending.pop(future)
                try:
                    result = future.result()
                except BrokenProcessPool as exc:
                    result = {"key": job.key, "ok": False, "error": f"worker process died ({exc})",
                              "traceback": None, "seconds": None}
                outcomes[job.key] = result
                if display is not None:
                    display.finished(job.key, result["ok"])
        _drain(events, display)
    except BaseException:
        _stop_pool(pool)
        raise
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    pool.shutdown(wait=True)


STOP_GRACE_SECONDS = 30.0


def _stop_pool(pool: ProcessPoolExecutor, grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop the pool on the parent's interrupt: queued runs are cancelled, each running one gets
    SIGTERM and stops as `pinnbo run` does (its last record finished, its oracle worker stopped),
    and the parent waits for that. Ctrl-C from a terminal has reached the workers already; a
    SIGTERM sent to the parent alone (a scheduler, a container stop) has not. A worker still alive
    after ``grace`` seconds (one still importing, an interrupt lost inside a library's cleanup)
    is killed, as is every worker on a second interrupt while waiting: a record is written whole
    or dropped whole on resume, so nothing finished is lost either way."""
    processes = list((getattr(pool, "_processes", None) or {}).values())   # before shutdown clears it
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + grace
    try:
        while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
            # Sent again each round: a worker that was still importing at the first one, then
            # took a job already in the pool's call queue, stops at the next.
            for process in processes:
                if process.is_alive():
                    try:
                        os.kill(process.pid, signal.SIGTERM)
                    except (ProcessLookupError, PermissionError):
                        pass
            for process in processes:
                process.join(0.5)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()


def _drain(events, display: "BenchProgress | None") -> None:
    while True:
        try:
            event = events.get_nowait()
        except (queue.Empty, OSError, ValueError):
            return
        if display is not None:
            display.event(event)


# -- live display -----------------------------------------------------------------------------------------
class BenchProgress:
    """Rich live display over the whole grid: runs done/total, elapsed, ETA, and per running job its
    current evaluation, best so far and elapsed time.

    The ETA counts optimizer-phase evaluations only (initial-design points cost no surrogate fit):
    those left × each method's seconds per such evaluation so far, over the parallel jobs."""

    def __init__(self, total: int, complete: int, jobs: int, console: Console | None = None,
                 title: str = "bench") -> None:
        self.console = console or Console(stderr=True)
        self.total, self.done, self.failed, self.jobs, self.title = total, complete, 0, jobs, title
        self.started = time.time()
        self.lock = threading.Lock()
        self.waiting: dict[tuple, int] = {}                  # key -> optimizer evaluations left
        self.running: dict[tuple, dict] = {}
        self.spent: dict[str, list[float]] = {}              # method -> [seconds, optimizer evaluations]
        self.live = Live(self, console=self.console, refresh_per_second=4, transient=False)
        self.live.start()

    def queued(self, job: RunJob) -> None:
        with self.lock:
            self.waiting[job.key] = job.budget - max(job.done_before, job.case.initial_points, 0)

    def event(self, event: tuple) -> None:
        kind, key = event[0], event[1]
        with self.lock:
            if kind == "start":
                _, _, k, budget, n_init, stamp = event
                self.waiting.pop(key, None)
                self.running[key] = {"k": k, "budget": budget, "n_init": n_init, "best": None, "started": stamp,
                                     "last": stamp, "t0": stamp if k >= n_init else None, "k0": k}
            elif kind == "evaluation" and key in self.running:
                _, _, k, best, stamp = event
                run = self.running[key]
                run.update(k=k, best=best, last=stamp)
                if run["t0"] is None and k >= run["n_init"]:
                    run["t0"], run["k0"] = stamp, k

    def finished(self, key: tuple, ok: bool) -> None:
        with self.lock:
            self.waiting.pop(key, None)
            run = self.running.pop(key, None)
            if run is not None and run["t0"] is not None:
                spent = self.spent.setdefault(key[1], [0.0, 0])
                spent[0] += run["last"] - run["t0"]
                spent[1] += run["k"] - run["k0"]
            if ok:
                self.done += 1
            else:
                self.failed += 1

    def eta(self) -> float | None:
        now = time.time()
        spent = {m: list(v) for m, v in self.spent.items()}
        for key, run in self.running.items():
            if run["t0"] is not None:
                entry = spent.setdefault(key[1], [0.0, 0])
                entry[0] += now - run["t0"]
                entry[1] += run["k"] - run["k0"]
        rates = {m: seconds / n for m, (seconds, n) in spent.items() if n > 0}
        work = [(key[1], run["budget"] - max(run["k"], run["n_init"])) for key, run in self.running.items()]
        work += [(key[1], left) for key, left in self.waiting.items()]
        if not work:
            return 0.0
        if not rates:
            return None
        fallback = float(np.mean(list(rates.values())))
        seconds = sum(rates.get(method, fallback) * max(left, 0) for method, left in work)
        return seconds / max(1, min(self.jobs, len(work)))

    def __rich__(self):
        with self.lock:
            now = time.time()
            eta = self.eta()
            head = Table.grid(padding=(0, 1))
            head.add_row(f"[bold]{self.title}[/bold]",
                         ProgressBar(total=self.total, completed=self.done + self.failed, width=30),
                         f"{self.done}/{self.total} runs", f"elapsed {_duration(now - self.started)}",
                         f"ETA {'—' if eta is None else _duration(eta)}",
                         f"[red]{self.failed} failed[/red]" if self.failed else "")
            body = Table.grid(padding=(0, 2))
            for key, run in sorted(self.running.items(), key=lambda item: item[1]["started"]):
                case, method, seed = key
                body.add_row(f"  {case}", method, f"seed {seed}", f"evaluation {run['k']}/{run['budget']}",
                             f"best {_fmt(run['best'])}", _duration(now - run["started"]))
            return Group(head, body)

    def stop(self) -> None:
        from pinnbo.report import stop_live

        stop_live(self.live)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _fmt(value: float | None, digits: int = 6) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}g}"


# -- statistics -------------------------------------------------------------------------------------------
def mean_se(values: Sequence[float]) -> dict:
    """Mean and standard error (sample std / √n) of the finite values; se is None for n < 2."""
    finite = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    n = len(finite)
    return {"mean": float(finite.mean()) if n else None,
            "se": float(finite.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
            "n": n}


def welch_one_sided(reference: Sequence[float], baseline: Sequence[float], sense: str) -> dict:
    """One-sided Welch t-test, H1: the reference is better than the baseline in the problem's sense
    (lower mean when minimising, higher when maximising). p is None when it cannot be computed
    (fewer than two values in a group, or no variance in either)."""
    from scipy import stats

    a = np.array([v for v in reference if v is not None and math.isfinite(v)], dtype=np.float64)
    b = np.array([v for v in baseline if v is not None and math.isfinite(v)], dtype=np.float64)
    alternative = "greater" if sense == "maximize" else "less"
    out = {"alternative": alternative, "t": None, "p_value": None, "n_reference": len(a), "n_baseline": len(b)}
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return out
    with warnings.catch_warnings():   # one group without spread: scipy warns, the test stays valid
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
    if math.isfinite(result.statistic) and math.isfinite(result.pvalue):
        out["t"], out["p_value"] = float(result.statistic), float(result.pvalue)
    return out


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values (step-up, monotone, capped at 1) over the p-values that
    are not None; None stays None. Reject H0_i at level q when adjusted_i <= q."""
    index = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    m = len(index)
    if not m:
        return out
    p = np.array([p_values[i] for i in index], dtype=np.float64)
    order = np.argsort(p, kind="stable")
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    for rank, position in enumerate(order):
        out[index[position]] = float(adjusted[rank])
    return out


def compare_to_reference(finals: dict[str, Sequence[float]], reference: str, sense: str) -> dict | None:
    """Welch tests of ``reference`` against each other method, BH-corrected across those baselines."""
    if reference not in finals:
        return None
    baselines = [m for m in finals if m != reference]
    tests = {m: welch_one_sided(finals[reference], finals[m], sense) for m in baselines}
    adjusted = benjamini_hochberg([tests[m]["p_value"] for m in baselines])
    for m, p_adj in zip(baselines, adjusted):
        tests[m]["p_adjusted"] = p_adj
        tests[m]["significant"] = None if p_adj is None else bool(p_adj <= ALPHA)
    return {"reference": reference, "statistic": "final best true value",
            "test": "one-sided Welch t-test (H1: reference better), Benjamini-Hochberg across baselines",
            "alpha": ALPHA, "baselines": tests}


# -- analysis and outputs -----------------------------------------------------------------------------------
def _curves(job: RunJob, case_plan: CasePlan) -> tuple[np.ndarray, dict, dict]:
    """Best-so-far curve over the first ``budget`` evaluations (best feasible with constraints),
    the run's numbers, and its constraint curves {"n_feasible", "cumulative_violation"} (each (n,))."""
    optimum = case_plan.optimum
    history = History(case_plan.sense, job.folder, optimum, case_plan.constraints)
    history.load()
    history.evaluations = history.evaluations[: job.budget]
    history.timings = history.timings[: job.budget]
    curve = history.best_so_far()
    asks = [t.get("ask_seconds") for t, r in zip(history.timings, history.evaluations)
            if r.phase == "optimizer" and t.get("ask_seconds") is not None]
    final = float(curve[-1]) if len(curve) and math.isfinite(curve[-1]) else None
    numbers = {
        "seed": job.seed,
        "final_best": final,
        "simple_regret": None if optimum is None or final is None else abs(optimum - final),
        "seconds_per_iteration": float(np.mean(asks)) if asks else None,
        "failed_evaluations": history.n_failed,
        "initial_x": [r.x for r in history.evaluations[: job.case.initial_points]],
    }
    extra = {}
    if history.n_exploration:
        # GP-UCB+ / EXPLOIT+: the best without their random points too (REFERENCES §4).
        without = history.best_so_far(without_phase=EXPLORATION)
        value = float(without[-1]) if len(without) and math.isfinite(without[-1]) else None
        numbers.update(final_best_without_exploration=value,
                       simple_regret_without_exploration=None if optimum is None or value is None
                       else abs(optimum - value))
    if history.constrained:
        violation = history.cumulative_violation()
        first = next((r.index + 1 for r in history.evaluations if r.feasible), None)
        numbers.update(n_feasible=history.n_feasible, feasible_fraction=history.feasible_fraction(),
                       cumulative_violation=violation["total"],
                       cumulative_violation_per_constraint=violation["per_constraint"],
                       first_feasible_evaluation=first)
        extra = {"n_feasible": history.feasible_so_far(), "cumulative_violation": history.cumulative_violation_curve()}
    return curve, numbers, extra


def analyse(case_plan: CasePlan, outcomes: dict, methods: Sequence[str] | None = None,
            reference: str | None = None) -> tuple[dict, list[list]]:
    """The case's summary (every number of the table) and the rows of curves.csv."""
    methods = list(methods if methods is not None else case_plan.methods)
    reference = reference or case_plan.reference
    rows: list[list] = []
    results: dict[str, dict] = {}
    finals: dict[str, list[float]] = {}
    optimum = case_plan.optimum
    constrained = case_plan.constrained
    for method in methods:
        jobs = [j for j in case_plan.jobs if j.method == method]
        curves, runs, failed_runs = [], [], []
        for job in jobs:
            outcome = outcomes.get(job.key)
            if outcome is not None and not outcome["ok"]:
                failed_runs.append({"seed": job.seed, "error": outcome["error"], "traceback": outcome.get("traceback")})
                continue
            if not run_is_complete(job.folder, job.budget):
                continue
            curve, numbers, extra = _curves(job, case_plan)
            numbers.pop("initial_x")
            curves.append(curve)
            runs.append(numbers)
            for k, value in enumerate(curve, start=1):
                finite = math.isfinite(value)
                row = [method, job.seed, k, float(value) if finite else None,
                       abs(optimum - float(value)) if finite and optimum is not None else None]
                if constrained:
                    row += [int(extra["n_feasible"][k - 1]), float(extra["cumulative_violation"][k - 1])]
                rows.append(row)
        stacked = np.array(curves) if curves else np.zeros((0, case_plan.budget))
        mean_curve, se_curve = _mean_se_curve(stacked)
        finals[method] = [r["final_best"] for r in runs]
        results[method] = {
            "runs": len(jobs),
            "completed": len(runs),
            "seeds": [r["seed"] for r in runs],
            "final_best": {**mean_se(finals[method]), "values": finals[method]},
            "simple_regret": None if optimum is None else
            {**mean_se([r["simple_regret"] for r in runs]), "values": [r["simple_regret"] for r in runs]},
            "seconds_per_iteration": {**mean_se([r["seconds_per_iteration"] for r in runs]),
                                      "values": [r["seconds_per_iteration"] for r in runs]},
            "failed_evaluations": int(sum(r["failed_evaluations"] for r in runs)),
            "failed_runs": failed_runs,
            "mean_curve": mean_curve,
            "se_curve": se_curve,
        }
        if runs and all("final_best_without_exploration" in r for r in runs):
            values = [r["final_best_without_exploration"] for r in runs]
            results[method]["final_best_without_exploration"] = {**mean_se(values), "values": values}
            if optimum is not None:
                regrets = [r["simple_regret_without_exploration"] for r in runs]
                results[method]["simple_regret_without_exploration"] = {**mean_se(regrets), "values": regrets}
        if constrained:
            results[method].update(constraint_results(runs, case_plan.constraints))
    from pinnbo.report import versions

    tests = None
    if len(methods) > 1:
        if constrained:
            penalised, penalty = penalise_infeasible(finals, case_plan.sense)
            tests = compare_to_reference(penalised, reference, case_plan.sense)
            if tests is not None:
                tests["statistic"] = "final best feasible true value"
                tests["infeasible_seed_value"] = penalty
                tests["infeasible_seeds"] = ("a seed without a feasible point counts as the worst final best-feasible "
                                             "value of any run of the case (every method, every seed)")
        else:
            tests = compare_to_reference(finals, reference, case_plan.sense)
    summary = {
        "case": case_plan.case.name,
        "source": str(case_plan.source),
        "problem": case_plan.problem_name,
        "sense": case_plan.sense,
        "optimum": optimum,
        "budget": case_plan.budget,
        "initial_points": case_plan.initial_points,
        "seeds": sorted({j.seed for j in case_plan.jobs}),
        "methods": list(methods),
        "smoke": case_plan.case.smoke,
        "device": case_plan.case.device,
        "results": results,
        "tests": tests,
        "versions": versions(),
    }
    if constrained:
        summary["constraints"] = list(case_plan.constraints)
    return summary, rows


def constraint_results(runs: list[dict], names: Sequence[str]) -> dict:
    """A method's constraint numbers over its completed runs (the per-seed values kept)."""
    fractions = [r["feasible_fraction"] for r in runs]
    totals = [r["cumulative_violation"] for r in runs]
    return {
        "no_feasible_seeds": [r["seed"] for r in runs if not r["n_feasible"]],
        "feasible_fraction": {**mean_se(fractions), "values": fractions},
        "cumulative_violation": {**mean_se(totals), "values": totals,
                                 "per_constraint": {n: mean_se([r["cumulative_violation_per_constraint"][n]
                                                                for r in runs])["mean"] for n in names}},
        "first_feasible_evaluation": {**mean_se([r["first_feasible_evaluation"] for r in runs]),
                                      "values": [r["first_feasible_evaluation"] for r in runs]},
    }


def penalise_infeasible(finals: dict[str, list[float | None]], sense: str
                        ) -> tuple[dict[str, list[float | None]], float | None]:
    """Final best-feasible values with each seed that found no feasible point (None) replaced by the
    worst final value of any run of the case; unchanged (all None) when no run found one."""
    found = [v for values in finals.values() for v in values if v is not None and math.isfinite(v)]
    if not found:
        return finals, None
    worst = max(found) if sense == "minimize" else min(found)
    return {m: [worst if v is None else v for v in values] for m, values in finals.items()}, float(worst)


def _mean_se_curve(curves: np.ndarray) -> tuple[list, list]:
    """Per-evaluation mean and standard error over the runs with a value there (NaN-aware)."""
    mean, se = [], []
    for column in curves.T:
        stats = mean_se(column.tolist())
        mean.append(stats["mean"])
        se.append(stats["se"])
    return mean, se


# Columns of the table: (header, cell(summary, method) -> text); constrained cases add theirs
# (best feasible, seeds without one, feasible fraction, violation) in table_columns.
def _pm(stats: dict | None, digits: int = 5) -> str:
    if not stats or stats.get("mean") is None:
        return "—"
    return _fmt(stats["mean"], digits) + ("" if stats.get("se") is None else f" ± {_fmt(stats['se'], 2)}")


def _test_cell(summary: dict, method: str, key: str) -> str:
    tests = summary.get("tests")
    if not tests or method == tests["reference"]:
        return "—"
    value = tests["baselines"].get(method, {}).get(key)
    if value is None:
        return "—"
    text = f"{value:.2g}"
    if key == "p_adjusted" and value <= tests["alpha"]:
        text += " *"
    return text


def _percent(stats: dict) -> dict:
    """A fraction's mean ± s.e. in percent."""
    return {k: (None if stats.get(k) is None else 100.0 * stats[k]) for k in ("mean", "se")}


def _runs_cell(result: dict) -> str:
    text = f"{result['completed']}/{result['runs']}"
    return text + (f" ({len(result['failed_runs'])} failed)" if result["failed_runs"] else "")


def table_columns(summary: dict) -> list[tuple[str, Callable[[dict, str], str]]]:
    """(header, cell(summary, method) -> text), explained in the notes of :func:`markdown_table`."""
    r = lambda m: summary["results"][m]  # noqa: E731
    constrained = "constraints" in summary
    columns = [
        ("method", lambda s, m: m),
        ("runs", lambda s, m: _runs_cell(r(m))),
        ("best feasible" if constrained else "best", lambda s, m: _pm(r(m)["final_best"])),
    ]
    if constrained:
        columns.append(("no feasible", lambda s, m: f"{len(r(m)['no_feasible_seeds'])}/{r(m)['completed']}"))
    if summary["optimum"] is not None:
        columns.append(("regret", lambda s, m: _pm(r(m)["simple_regret"])))
    if any("final_best_without_exploration" in r(m) for m in summary["methods"]):
        columns.append(("best w/o random", lambda s, m: _pm(r(m).get("final_best_without_exploration"))))
    if constrained:
        columns += [("feasible %", lambda s, m: _pm(_percent(r(m)["feasible_fraction"]), 3)),
                    ("violation", lambda s, m: _pm(r(m)["cumulative_violation"], 3))]
    columns += [
        ("s/iter", lambda s, m: _pm(r(m)["seconds_per_iteration"], 3)),
        ("failed", lambda s, m: str(r(m)["failed_evaluations"])),
    ]
    if summary.get("tests"):
        columns += [("p", lambda s, m: _test_cell(s, m, "p_value")),
                    ("p (BH)", lambda s, m: _test_cell(s, m, "p_adjusted"))]
    return columns


def table_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    columns = table_columns(summary)
    return [c[0] for c in columns], [[cell(summary, m) for _, cell in columns] for m in summary["methods"]]


def _caption(summary: dict) -> str:
    seeds = summary["seeds"]
    optimum = "unknown" if summary["optimum"] is None else _fmt(summary["optimum"])
    return (f"{summary['case']} ({summary['problem']}, {summary['sense']}, f* {optimum}): budget "
            f"{summary['budget']} incl. {summary['initial_points']} initial points, seeds "
            f"{seeds_text(seeds)}" + (", smoke" if summary["smoke"] else ""))


def table_notes(summary: dict) -> list[str]:
    constrained = "constraints" in summary
    if constrained:
        notes = [f"best feasible: mean ± standard error, over the seeds that found a feasible point, of the best "
                 f"true (noise-free) value among feasible evaluations (every c_i <= 0 on true values) after the last "
                 f"evaluation ({summary['sense']}); no feasible: seeds that found none / completed runs.",
                 "feasible %: percentage of successful evaluations that were feasible; violation: cumulative "
                 "violation Σ_t Σ_i max(c_i(x_t), 0) over the run (true values); mean ± standard error over seeds."]
    else:
        notes = [f"best: mean ± standard error over seeds of the best true (noise-free) value after the last "
                 f"evaluation ({summary['sense']})."]
    if summary["optimum"] is not None:
        notes.append(f"regret: simple regret |f* − best| with f* = {_fmt(summary['optimum'])}"
                     + (" (seeds with a feasible point)." if constrained else "."))
    if any("final_best_without_exploration" in summary["results"][m] for m in summary["methods"]):
        notes.append("best w/o random: the same, leaving out the uniformly random points of GP-UCB+ / EXPLOIT+ "
                     "(phase exploration); their budget still counts them. The tests use best.")
    notes += ["s/iter: seconds per iteration, surrogate fit + acquisition (oracle excluded), mean over the "
              "optimizer-phase evaluations of each run, then over runs.",
              "failed: failed evaluations (oracle errors or non-finite values) over all runs; runs: complete/planned."]
    tests = summary.get("tests")
    if tests:
        better = "lower" if summary["sense"] == "minimize" else "higher"
        notes.append(f"p: one-sided Welch t-test of {tests['reference']} against the method (H1: "
                     f"{tests['reference']}'s final best{' feasible' if constrained else ''} is {better}); p (BH): "
                     f"Benjamini–Hochberg adjusted across the {len(tests['baselines'])} baseline(s); * significant at "
                     f"{tests['alpha']}.")
        if constrained and tests.get("infeasible_seed_value") is not None and \
                any(summary["results"][m]["no_feasible_seeds"] for m in summary["methods"]):
            notes.append(f"In the tests (not in the means), a seed without a feasible point counts as "
                         f"{_fmt(tests['infeasible_seed_value'])}, the worst final best-feasible value of any run of "
                         "the case.")
    return notes


def markdown_table(summary: dict) -> str:
    headers, rows = table_rows(summary)
    lines = [f"# {summary['case']}", "", _caption(summary), "",
             "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += [""] + [f"- {note}" for note in table_notes(summary)]
    return "\n".join(lines) + "\n"


def rich_table(summary: dict) -> Table:
    headers, rows = table_rows(summary)
    table = Table(title=_caption(summary), title_justify="left")
    for header in headers:
        # fold, never an ellipsis: a cut number (1.0266e-…) is a wrong number
        table.add_column(header, justify="left" if header == "method" else "right", overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def write_curves_csv(path: Path, rows: list[list], constrained: bool = False) -> None:
    """curves.csv; a constrained case adds the feasible count and the cumulative violation so far."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["method", "seed", "evaluation", "best_true", "simple_regret"]
                    + (["n_feasible", "cumulative_violation"] if constrained else []))
    for method, seed, k, best, regret, *more in rows:
        writer.writerow([method, seed, k, "" if best is None else repr(best), "" if regret is None else repr(regret)]
                        + [repr(v) for v in more])
    write_text_atomic(path, text.getvalue())


def plot_bench_convergence(summary: dict, path: Path) -> None:
    from pinnbo.report import _pyplot, save_figure

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    n = np.arange(1, summary["budget"] + 1)
    for method in summary["methods"]:
        result = summary["results"][method]
        if not result["completed"]:
            continue
        mean = np.array([np.nan if v is None else v for v in result["mean_curve"]])
        se = np.array([0.0 if v is None else v for v in result["se_curve"]])
        (line,) = ax.plot(n, mean, lw=2, label=f"{method} (n={result['completed']})")
        ax.fill_between(n, mean - se, mean + se, color=line.get_color(), alpha=0.2, lw=0)
    if summary["optimum"] is not None:
        ax.axhline(summary["optimum"], color="k", ls="--", lw=1, label="f*")
    ax.axvline(summary["initial_points"] + 0.5, color="gray", ls=":", lw=1, label="end of initial design")
    ax.set_xlabel("evaluations")
    constrained = "constraints" in summary
    ax.set_ylabel(f"best {'feasible ' if constrained else ''}true value ({summary['sense']})")
    ax.set_title(f"{summary['case']}: mean best {'feasible ' if constrained else ''}so far ± s.e."
                 + (" (seeds with a feasible point)" if constrained else ""))
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def write_case_outputs(case_plan: CasePlan, summary: dict, rows: list[list]) -> None:
    try:
        case_plan.folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failure(case_plan.folder, exc) from None
    write_curves_csv(case_plan.folder / "curves.csv", rows, case_plan.constrained)
    write_text_atomic(case_plan.folder / "table.md", markdown_table(summary))
    write_json_atomic(case_plan.folder / "summary.json", summary)
    plot_bench_convergence(summary, case_plan.folder / "convergence.png")


# -- the bench ----------------------------------------------------------------------------------------------
@dataclass
class BenchResult:
    summaries: list[dict]
    folders: list[Path]
    ran: int                    # runs started (or resumed) in this invocation
    skipped: int                # runs already complete
    failed: list[dict]          # {"case", "method", "seed", "error"}


def run_bench(settings: BenchSettings, console: Console | None = None, quiet: bool = False) -> BenchResult:
    """Run the grid (skipping complete runs), then write each case's curves, table, figure, summary."""
    plans = plan(settings)
    for case_plan in plans:
        # Every run writes under its case folder: a root that cannot be made is one user error here,
        # not a failed run per job and a traceback when the table is written.
        try:
            case_plan.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BenchError(f"--output: cannot create {case_plan.folder} ({exc.strerror or exc})") from None
    # Seed-major order: partial results stay balanced across methods and cases.
    grid = sorted((job for p in plans for job in p.jobs), key=lambda j: j.seed)
    todo = [job for job in grid if not job.complete]
    display = None
    if not quiet and todo:
        display = BenchProgress(len(grid), len(grid) - len(todo), min(settings.jobs, len(todo)),
                                Console(stderr=True),
                                title="bench")
    outcomes: dict[tuple, dict] = {}
    from pinnbo.run import RunInterrupted

    try:
        if settings.jobs == 1 or len(todo) <= 1:
            _run_in_process(todo, display, outcomes)
        else:
            _run_in_pool(todo, settings.jobs, display, outcomes)
    except (KeyboardInterrupt, RunInterrupted) as exc:
        from pinnbo.interrupts import Terminated

        terminated = isinstance(exc, Terminated) or getattr(exc, "terminated", False)
        complete = sum(run_is_complete(j.folder, j.budget) for j in grid)
        raise BenchInterrupted(f"bench {'terminated' if terminated else 'interrupted'}: {complete} of {len(grid)} "
                               "runs complete, every completed evaluation is on disk; run the same command again "
                               "to continue", terminated) from None
    finally:
        if display is not None:
            display.stop()
    summaries = []
    for case_plan in plans:
        summary, rows = analyse(case_plan, outcomes)
        write_case_outputs(case_plan, summary, rows)
        summaries.append(summary)
    failed = [{"case": k[0], "method": k[1], "seed": k[2], "error": o["error"]}
              for k, o in outcomes.items() if not o["ok"]]
    if not quiet:
        from pinnbo.report import print_table

        console = console or Console()
        for summary, case_plan in zip(summaries, plans):
            print_table(console, rich_table(summary))
            console.print(f"results in {case_plan.folder}/ (table.md, curves.csv, convergence.png, summary.json)")
        if len(grid) - len(todo):
            console.print(f"{len(grid) - len(todo)} complete run(s) skipped")
    return BenchResult(summaries, [p.folder for p in plans], len(todo), len(grid) - len(todo), failed)
