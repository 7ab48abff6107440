"""``pinnbo run --report``: the run's report.html rewritten as evaluations arrive, so a long run can
be watched in a browser (the page reloads itself; :mod:`pinnbo.report.page`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pinnbo.problem import Problem
from pinnbo.report.page import write_run_report

#: Most of a run's wall time the live rewrites may take, all of them together: a rewrite waits
#: until the time spent on the page, this rewrite included (estimated by the last one), is at most
#: this share of the time the run has gone on.
SHARE = 0.05
#: What a first rewrite is assumed to cost, before one has been timed.
FIRST_ESTIMATE = 1.0


class LiveReport:
    """A run observer that rewrites the report, in at most a :data:`SHARE` of the run's time, and
    once more, final, at the end. ``then``: the observer it runs beside (the live display), or None."""

    def __init__(self, folder: Path, problem: Problem, then=None) -> None:
        self.folder, self.problem, self.then = Path(folder), problem, then
        self.cost = FIRST_ESTIMATE
        self.spent = 0.0
        self.started = time.perf_counter()
        self.broken = False

    def _write(self, live: bool) -> None:
        if self.broken:
            return
        start = time.perf_counter()
        try:
            write_run_report(self.folder, self.problem, live=live)
        except Exception as exc:   # the run matters more than its page: say so once and go on
            self.broken = True
            print(f"warning: report.html is no longer updated ({type(exc).__name__}: {exc}); the run goes on, "
                  f"and pinnbo report {self.folder} writes it afterwards", file=sys.stderr)
        self.cost = time.perf_counter() - start
        self.spent += self.cost

    def on_start(self, problem, settings, history) -> None:
        if self.then is not None:
            self.then.on_start(problem, settings, history)
        self.started = time.perf_counter()
        self._write(live=True)      # the page exists from the start; its figures come with the evaluations
        self.cost = max(self.cost, FIRST_ESTIMATE)   # a bare page says nothing of what a full one costs

    def on_evaluation(self, record, timing, history) -> None:
        if self.then is not None:
            self.then.on_evaluation(record, timing, history)
        if self.spent + self.cost <= SHARE * (time.perf_counter() - self.started):
            self._write(live=True)

    def on_finish(self, history) -> None:
        if self.then is not None:
            self.then.on_finish(history)
        self._write(live=False)

    def __getattr__(self, name):   # the live display's own hooks (an asynchronous run's workers in flight)
        if self.then is None:
            raise AttributeError(name)
        return getattr(self.then, name)

    def stop(self) -> None:
        if self.then is not None:
            self.then.stop()
