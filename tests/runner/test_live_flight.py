"""The live display of an asynchronous run shows the evaluations in flight and the free workers."""

from __future__ import annotations

import io

from rich.console import Console

from pinnbo import load_problem, make_optimizer
from pinnbo.report.live import LiveProgress
from pinnbo.runner.loop import run
from pinnbo.runner.steps import RunSettings
from pinnbo.runner.simulated import SimulatedEngine


class Recording(LiveProgress):
    def __init__(self) -> None:
        super().__init__(Console(file=io.StringIO(), width=120, force_terminal=False), title="t")
        self.seen: list[tuple[int, int]] = []
        self.rendered: list[str] = []

    def on_flight(self, in_flight: int, workers: int) -> None:
        super().on_flight(in_flight, workers)
        self.seen.append((in_flight, workers))
        console = Console(file=io.StringIO(), width=120)
        console.print(self._render(self.history, self.last))
        self.rendered.append(console.file.getvalue())


def test_in_flight_and_free_workers_are_shown():
    problem = load_problem("dropwave", dim=2)
    observer = Recording()
    engine = SimulatedEngine(problem.objective, slots=3, duration=lambda k: 1.0 + 0.1 * k)
    run(problem, make_optimizer("random", problem, 0), RunSettings(budget=9, initial_points=4, seed=0),
        observer, engine=engine)
    observer.stop()
    assert max(n for n, _ in observer.seen) == 3 and observer.seen[-1] == (0, 3)
    assert "in flight" in observer.rendered[2] and "3" in observer.rendered[2]
    assert "free workers" in observer.rendered[-1]
