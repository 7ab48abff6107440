"""One run of a bench's grid, with the normal run loop: what a bench runs in its own process and
what a Dask worker's child runs (:mod:`pinnbo.bench.cluster`), its progress forwarded as events."""

from __future__ import annotations

import time
import traceback
from typing import Callable

from pinnbo.bench.plan import RunJob
from pinnbo.files import write_json
from pinnbo.report.summary import summarize
from pinnbo.runner.build import build_optimizer, build_problem, run_settings
from pinnbo.runner.loop import run
from pinnbo.runner.steps import RunInterrupted


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
        write_json(job.folder / "summary.json", summarize(history, problem, job.case.to_dict()))
    except (KeyboardInterrupt, RunInterrupted):
        raise
    except Exception as exc:
        return {"key": job.key, "ok": False, "error": f"{type(exc).__name__}: {exc}".strip()[:500],
                "traceback": traceback.format_exc(limit=20), "seconds": time.perf_counter() - start}
    return {"key": job.key, "ok": True, "error": None, "seconds": time.perf_counter() - start}
