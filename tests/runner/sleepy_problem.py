"""A problem file for the asynchronous-run tests: f(x) = (x0 − 0.3)² + (x1 + 0.2)², f* = 0, after
``seconds`` of sleep; every call appends "start <its parent's pid> <design> <its grandparent's pid>"
to ``log`` (a file survives the forked call) so a test can count how often each design was
evaluated and by which process (a Dask worker, or a bench run forked by one)."""

import os
import time

import numpy as np

from pinnbo import Box, Problem


def sleepy(seconds: float = 0.0, log: str = "") -> Problem:
    def objective(x: np.ndarray) -> float:
        if log:
            with open(log, "a") as fh:
                parent = os.getppid()
                with open(f"/proc/{parent}/stat") as stat:
                    grandparent = int(stat.read().rsplit(")", 1)[1].split()[1])
                fh.write(f"start {parent} {float(x[0])!r} {float(x[1])!r} {grandparent}\n")
        time.sleep(seconds)
        return float((x[0] - 0.3) ** 2 + (x[1] + 0.2) ** 2)

    return Problem(name="sleepy", domain=Box((-1.0, -1.0), (1.0, 1.0), ("a", "b")), objective=objective,
                   optimum=0.0, optimum_location=np.array([0.3, -0.2]))
