"""``pinnbo run --report``: the run's report.html rewritten as evaluations arrive, so a long run can
be watched in a browser (the page reloads itself; :mod:`pinnbo.report.page`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pinnbo.problem import Problem
from pinnbo.report.page import write_run_report

#: Most of a run's wall time the live report may take: a rewrite waits until the run has gone on
#: for ``1 / SHARE`` times as long as the last rewrite took.
SHARE = 0.05


class LiveReport:
    """A run observer that rewrites the report, at most a :data:`SHARE` of the run's time, and once
    more, final, at the end. ``then``: the observer it runs beside (the live display), or None."""

    def __init__(self, folder: Path, problem: Problem, then=None) -> None:
        self.folder, self.problem, self.then = Path(folder), problem, then
        self.cost = 0.0
        self.last = 0.0
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
        self.last = time.perf_counter()
        self.cost = self.last - start

    def on_start(self, problem, settings, history) -> None:
        if self.then is not None:
            self.then.on_start(problem, settings, history)
        self._write(live=True)

    def on_evaluation(self, record, timing, history) -> None:
        if self.then is not None:
            self.then.on_evaluation(record, timing, history)
        if time.perf_counter() - self.last >= self.cost / SHARE:
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
