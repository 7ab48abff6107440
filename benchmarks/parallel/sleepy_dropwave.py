"""DropWave (2-D, with its PDE) whose oracle sleeps ``seconds`` per call: a stand-in for an
expensive simulation in benchmarks/parallel_speedup.py."""

import time

from pinnbo import load_problem
from pinnbo.problem import Problem


def sleepy_dropwave(seconds: float = 2.0) -> Problem:
    problem = load_problem("dropwave", dim=2)
    inner = problem.objective

    def objective(x):
        time.sleep(seconds)
        return inner(x)

    problem.objective = objective
    problem.name = "sleepy_dropwave"
    return problem
