"""Running a bench's grid: each run with the normal run loop, in this process or in parallel worker
processes, with Ctrl-C and SIGTERM forwarded so that every record is written whole or dropped whole;
then each case's analysis, table, curves and figure."""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rich.console import Console

from pinnbo.bench.analysis import analyse
from pinnbo.bench.live import BenchProgress
from pinnbo.bench.options import BenchError, BenchSettings
from pinnbo.bench.plan import RunJob, plan, run_is_complete
from pinnbo.bench.tables import rich_table, write_case_outputs
from pinnbo.interrupts import Terminated, signals_ignored
from pinnbo.report.format import print_table
from pinnbo.report.summary import summarize
from pinnbo.runner.build import build_optimizer, build_problem, run_settings
from pinnbo.runner.history import write_json_atomic
from pinnbo.runner.loop import RunInterrupted, run


class BenchInterrupted(Exception):
    """Ctrl-C (or SIGTERM, ``terminated``) during a bench: every completed evaluation of every run
    is on disk."""

    def __init__(self, message: str, terminated: bool = False) -> None:
        super().__init__(message)
        self.terminated = terminated


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
    start = time.perf_counter()
    try:
        problem = build_problem(job.case)
        optimizer = build_optimizer(job.case, problem)
        settings = run_settings(job.case, problem, resume=True)
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
    try:
        if settings.jobs == 1 or len(todo) <= 1:
            _run_in_process(todo, display, outcomes)
        else:
            _run_in_pool(todo, settings.jobs, display, outcomes)
    except (KeyboardInterrupt, RunInterrupted) as exc:
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
        console = console or Console()
        for summary, case_plan in zip(summaries, plans):
            print_table(console, rich_table(summary))
            console.print(f"results in {case_plan.folder}/ (table.md, curves.csv, convergence.png, summary.json)")
        if len(grid) - len(todo):
            console.print(f"{len(grid) - len(todo)} complete run(s) skipped")
    return BenchResult(summaries, [p.folder for p in plans], len(todo), len(grid) - len(todo), failed)
