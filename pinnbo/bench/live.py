"""The live display of a bench: runs done/total, elapsed time, ETA, and each running job's
evaluation and best so far."""

from __future__ import annotations

import threading
import time

import numpy as np
from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

from pinnbo.bench.plan import RunJob
from pinnbo.report.format import duration, fmt, stop_live


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
                         f"{self.done}/{self.total} runs", f"elapsed {duration(now - self.started)}",
                         f"ETA {'—' if eta is None else duration(eta)}",
                         f"[red]{self.failed} failed[/red]" if self.failed else "")
            body = Table.grid(padding=(0, 2))
            for key, run in sorted(self.running.items(), key=lambda item: item[1]["started"]):
                case, method, seed = key
                body.add_row(f"  {case}", method, f"seed {seed}", f"evaluation {run['k']}/{run['budget']}",
                             f"best {fmt(run['best'])}", duration(now - run["started"]))
            return Group(head, body)

    def stop(self) -> None:
        stop_live(self.live)
