"""The live display of a run: evaluation k/budget, best so far, last value, s/iteration, ETA; for
an asynchronous run the evaluations in flight and the free workers; under ``method: auto`` the
method it chose and why."""

from __future__ import annotations

import time

import numpy as np
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from pinnbo.problem import Problem
from pinnbo.report.format import fmt, stop_live
from pinnbo.runner.history import Evaluation, History


class LiveProgress:
    """Rich live display: evaluation k/budget, best so far, last value, s/iteration, ETA; with
    constraints the best *feasible* value and the number of feasible evaluations."""

    def __init__(self, console: Console | None = None, title: str = "", choice=None) -> None:
        self.console = console or Console(stderr=True)
        self.title = title
        self.choice = choice   # method: auto's Choice, shown above the table
        self.live: Live | None = None
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 console=self.console, transient=False)
        self.task = None
        self.iteration_seconds: list[float] = []
        self.last_tick = time.perf_counter()
        self.problem: Problem | None = None
        self.budget = 0
        self.flight: tuple[int, int] | None = None   # (in flight, workers) of an asynchronous run
        self.history: History | None = None
        self.last: Evaluation | None = None

    def on_start(self, problem, settings, history) -> None:
        self.problem, self.budget, self.history = problem, settings.budget, history
        self.task = self.progress.add_task(self.title or problem.name, total=settings.budget, completed=len(history))
        self.live = Live(self._render(history, None), console=self.console, refresh_per_second=8, transient=False)
        self.live.start()
        self.last_tick = time.perf_counter()

    def on_evaluation(self, record: Evaluation, timing: dict, history: History) -> None:
        now = time.perf_counter()
        self.iteration_seconds.append(now - self.last_tick)
        self.last_tick = now
        self.progress.update(self.task, completed=len(history))
        self.last = record
        if self.live is not None:
            self.live.update(self._render(history, record))

    def on_flight(self, in_flight: int, workers: int) -> None:
        self.flight = (in_flight, workers)
        if self.live is not None and self.history is not None:
            self.live.update(self._render(self.history, self.last))

    def on_finish(self, history: History) -> None:
        self.stop()

    def stop(self) -> None:
        if self.live is not None:
            stop_live(self.live)
            self.live = None

    def _render(self, history: History, record: Evaluation | None):
        table = Table.grid(padding=(0, 2))
        if self.choice is not None:
            table.add_row("method", f"auto → {self.choice.method}", "why", escape(self.choice.reason))
        best = history.best()
        recent = self.iteration_seconds[-10:]
        per_iteration = float(np.mean(recent)) if recent else None
        remaining = self.budget - len(history)
        eta = per_iteration * remaining if per_iteration is not None else None
        # escape: an oracle's error text is not rich markup ("[/x]" in it would crash the display)
        last = "—" if record is None else (
            fmt(record.y) if record.ok else f"[red]failed[/red] ({escape(record.error or '')})")
        if record is not None and record.feasible is False:
            last += " [yellow](infeasible)[/yellow]"
        if record is not None and record.objectives:   # several objectives: the last values, by name
            last = ", ".join(f"{n} {fmt(v, 4)}" for n, v in record.objectives.items())
        front = sum(1 for r in history.evaluations if history.counts(r) and r.objectives)
        if front:
            table.add_row("evaluated", f"{front} successful", "objectives", ", ".join(history.evaluations[-1].objectives
                                                                                       or ()))
        else:
            table.add_row("best feasible" if history.constrained else "best so far",
                          fmt(None if best is None else (best.true if best.true is not None else best.y)),
                          "at", "—" if best is None else "(" + ", ".join(fmt(v, 5) for v in best.x) + ")")
        table.add_row("last value", last, "s/iteration", fmt(per_iteration, 3))
        if history.constrained:
            table.add_row("feasible", f"{history.n_feasible}/{history.n_ok}", "violation",
                          fmt(history.cumulative_violation()["total"], 4))
        regret = history.simple_regret()
        table.add_row("simple regret", fmt(None if regret is None or not len(regret) else float(regret[-1]), 4),
                      "ETA", "—" if eta is None else f"{eta:.0f} s")
        if history.n_failed:
            table.add_row("failed", str(history.n_failed), "", "")
        if self.flight is not None:
            in_flight, workers = self.flight
            table.add_row("in flight", str(in_flight), "free workers", str(max(workers - in_flight, 0)))
        return Group(self.progress, table)
