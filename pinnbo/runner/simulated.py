"""A discrete-event stand-in for a cluster: ``slots`` virtual workers on a virtual clock.

Each call runs the real oracle at once, in the runner (isolated as always), but comes back at
virtual time start + ``duration(index)``, in that order; proposals take no virtual time. An
asynchronous run on it makes the decisions it would make on a cluster whose calls take those
durations, without the wait: what ``benchmarks/parallel_simulation.py`` measures over q.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable

import numpy as np

from pinnbo.runner.cluster import Completed
from pinnbo.runner.evaluation import oracle_outcome


class SimulatedEngine:
    def __init__(self, objective: Any, *, slots: int, duration: Callable[[int], float],
                 timeout: float | None = None) -> None:
        self.objective = objective
        self.slots = int(slots)
        self.duration = duration
        self.timeout = timeout
        self.clock = 0.0
        self.queue: list[tuple[float, int, Any, str | None, float]] = []

    def submit(self, index: int, x: np.ndarray) -> None:
        outcome, error = oracle_outcome(self.objective, x, self.timeout)
        seconds = float(self.duration(index))
        heapq.heappush(self.queue, (self.clock + seconds, index, outcome, error, seconds))

    @property
    def in_flight(self) -> int:
        return len(self.queue)

    def worker_count(self) -> int:
        return self.slots

    def wait(self) -> list[Completed]:
        finished, index, outcome, error, seconds = heapq.heappop(self.queue)
        self.clock = finished
        return [Completed(index, outcome, error, seconds, finished)]

    def close(self) -> None:
        self.queue.clear()
