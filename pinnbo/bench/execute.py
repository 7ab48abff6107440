"""Running a bench's grid: each run with the normal run loop, in this process or in parallel on Dask
(:mod:`pinnbo.bench.cluster`), with Ctrl-C and SIGTERM forwarded so that every record is written
whole or dropped whole; then each case's analysis, table, curves and figure."""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from pinnbo.bench.analysis import analyse
from pinnbo.bench.cluster import BenchCluster
from pinnbo.bench.job import execute
from pinnbo.bench.live import BenchProgress
from pinnbo.bench.options import BenchError, BenchSettings
from pinnbo.bench.plan import RunJob, plan, run_is_complete
from pinnbo.bench.page import write_bench_report
from pinnbo.bench.tables import rich_table, write_case_outputs
from pinnbo.errors import CaseError, WriteFailure
from pinnbo.files import make_folder
from pinnbo.interrupts import Terminated, held_interrupts
from pinnbo.report.format import print_table
from pinnbo.runner.steps import RunInterrupted


class BenchInterrupted(Exception):
    """Ctrl-C (or SIGTERM, ``terminated``) during a bench: every completed evaluation of every run
    is on disk."""

    def __init__(self, message: str, terminated: bool = False) -> None:
        super().__init__(message)
        self.terminated = terminated


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


def _start_cluster(settings: BenchSettings, runs: int):
    """The Dask engine for ``runs`` runs (:mod:`pinnbo.bench.cluster`): started, or its scheduler
    reached, before anything is written. A Ctrl-C while it starts stops the bench once it is up."""
    try:
        with held_interrupts():
            return BenchCluster(min(settings.jobs, runs), settings.scheduler)
    except CaseError as exc:    # the scheduler, named as the bench's option
        message = str(exc)
        raise BenchError(f"--{message}" if message.startswith("scheduler:") else message) from None


def _run_on_cluster(engine, todo: list[RunJob], display: "BenchProgress | None", outcomes: dict) -> None:
    """The runs as tasks on ``engine``, at most ``--jobs`` at once; an interrupt is forwarded to
    every run, which stops as ``pinnbo run`` does."""
    try:
        engine.submit(todo)
        if display is not None:
            for job in todo:
                display.queued(job)
        while engine.under_way:
            time.sleep(0.2)
            _drain(engine.events, display)
            for job, result in engine.finished():
                outcomes[job.key] = result
                if display is not None:
                    display.finished(job.key, result["ok"])
        _drain(engine.events, display)
    except BaseException:
        engine.stop()
        raise


def _drain(events, display: "BenchProgress | None") -> None:
    while True:
        try:
            event = events.get_nowait()
        except queue.Empty:
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
    # Seed-major order: partial results stay balanced across methods and cases.
    grid = sorted((job for p in plans for job in p.jobs), key=lambda j: j.seed)
    todo = [job for job in grid if not job.complete]
    parallel = bool(todo) and (settings.scheduler is not None or (settings.jobs > 1 and len(todo) > 1))
    engine = _start_cluster(settings, len(todo)) if parallel else None
    display = None
    outcomes: dict[tuple, dict] = {}
    try:
        for case_plan in plans:
            # Every run writes under its case folder: a root that cannot be made is one user error
            # here, not a failed run per job and a traceback when the table is written.
            try:
                make_folder(case_plan.folder)
            except WriteFailure as exc:
                raise BenchError(f"--output: {exc}") from None
        if not quiet and todo:
            display = BenchProgress(len(grid), len(grid) - len(todo), min(settings.jobs, len(todo)),
                                    Console(stderr=True), title="bench")
        if engine is None:
            _run_in_process(todo, display, outcomes)
        else:
            _run_on_cluster(engine, todo, display, outcomes)
    except (KeyboardInterrupt, RunInterrupted) as exc:
        terminated = isinstance(exc, Terminated) or getattr(exc, "terminated", False)
        complete = sum(run_is_complete(j.folder, j.budget) for j in grid)
        raise BenchInterrupted(f"bench {'terminated' if terminated else 'interrupted'}: {complete} of {len(grid)} "
                               "runs complete, every completed evaluation is on disk; run the same command again "
                               "to continue", terminated) from None
    finally:
        if display is not None:
            display.stop()
        if engine is not None:
            engine.close()
    summaries = []
    for case_plan in plans:
        summary, rows = analyse(case_plan, outcomes)
        write_case_outputs(case_plan, summary, rows)
        write_bench_report(case_plan.folder, [(case_plan.folder, summary)])
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
