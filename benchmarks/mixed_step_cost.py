"""Seconds per proposal on mixed boxes against continuous ones of the same dimension, and of gp-ehvi
with two objectives, side by side in one run (issue targets: a mixed proposal within 3× a continuous
one; gp-ehvi's step under 2 s at 60 observations and two objectives).

For each dimension d the continuous box is [0, 1]^d; the mixed one has the same d variables with a
quarter of them integers in [0, 10], a quarter choices among three names, and the rest real. Each
optimiser is told the same t designs (the seed's initial design of its box) with the values of a
smooth test function, asked once untimed, then ``--asks`` ask/tell rounds are timed and averaged;
one torch thread. gp-ehvi is timed on ZDT1 in d variables (two objectives).

    python benchmarks/mixed_step_cost.py --dims 4 8 --t 20 60 --asks 4 --output bench-results/cost/mixed.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent


def boxes(d: int):
    from pinnbo.space import Box, Variable

    continuous = Box.cube(0.0, 1.0, d)
    q = max(1, d // 4)
    variables = [Variable(f"n{i + 1}", "integer", 0, 10) for i in range(q)]
    variables += [Variable(f"c{i + 1}", "choice", choices=("a", "b", "c")) for i in range(q)]
    variables += [Variable(f"x{i + 1}", "real", 0.0, 1.0) for i in range(d - 2 * q)]
    return continuous, Box.of(variables)


def test_function(box, X: np.ndarray) -> np.ndarray:
    """A smooth function of the unit coordinates (a shifted sphere plus a ripple): the same
    landscape for both boxes, so the GP fits are comparable."""
    U = box.to_unit(X)
    return np.sum((U - 0.3) ** 2, axis=1) + 0.1 * np.sin(7 * U).sum(axis=1)


def time_asks(optimizer, tell, asks: int) -> float:
    optimizer.ask()        # untimed: the first fit
    seconds = []
    for _ in range(asks):
        start = time.perf_counter()
        x = optimizer.ask()
        seconds.append(time.perf_counter() - start)
        tell(x)
    return float(np.mean(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", nargs="+", type=int, default=[4, 8])
    parser.add_argument("--t", nargs="+", type=int, default=[20, 60])
    parser.add_argument("--asks", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=None, help="also write the table as JSON (benchmarks/results.py)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    from pinnbo import initial_design, load_problem
    from pinnbo.optimizers import make_optimizer

    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    print(f"machine: {cpu}, {os.cpu_count()} cores, one torch thread; commit {commit}; mean of {args.asks} asks "
          "after one untimed ask")
    print("| d | t | gp-ei continuous (s) | gp-ei mixed (s) | mixed / continuous | gp-ehvi, ZDT1 (s) |")
    print("|---|---|---|---|---|---|")
    rows = []
    for d in args.dims:
        continuous, mixed = boxes(d)
        zdt = load_problem("zdt1", dim=d)
        for t in args.t:
            row = []
            for box in (continuous, mixed):
                optimizer = make_optimizer("gp-ei", box, args.seed)
                X = initial_design(box, t, args.seed)
                for x, y in zip(X, test_function(box, X)):
                    optimizer.tell(x, float(y))
                row.append(time_asks(optimizer, lambda x, o=optimizer, b=box: o.tell(
                    x, float(test_function(b, x.reshape(1, -1))[0])), args.asks))
            ehvi = make_optimizer("gp-ehvi", zdt.domain, args.seed, objectives=zdt.objectives,
                                  reference=zdt.minimised_reference)
            for x in initial_design(zdt.domain, t, args.seed):
                ehvi.tell(x, zdt.objective(x))
            row.append(time_asks(ehvi, lambda x, o=ehvi: o.tell(x, zdt.objective(x)), args.asks))
            print(f"| {d} | {t} | {row[0]:.3f} | {row[1]:.3f} | {row[1] / row[0]:.2f} | {row[2]:.3f} |", flush=True)
            rows.append({"d": d, "t": t, "continuous": row[0], "mixed": row[1], "ehvi": row[2]})
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({"commit": commit, "cpu": f"{cpu}, {os.cpu_count()} cores",
                                           "date": date.today().isoformat(), "asks": args.asks, "rows": rows},
                                          indent=1))


if __name__ == "__main__":
    main()
