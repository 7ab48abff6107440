"""Seconds per PINN-BO iteration on every synthetic case: pinnbo's defaults against the authors'
released settings (REFERENCES §1 table), side by side in one run.

Ours: the mean wall time of ``--asks`` real asks (training + acquisition) after the case's initial
design. Authors': their network, N_r = 40 000 full-batch collocation points and epochs per update;
a full iteration costs tens of seconds to minutes on a CPU, so we time ``--steps`` of their training
steps and multiply by their epochs per update (acquisition excluded, so it is a lower bound).

    python benchmarks/synthetic_timing.py --asks 3 --steps 3
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent

# REFERENCES §1: hidden layers × width, learning rate, epochs per update (Adam, float64, N_r = 40 000).
AUTHORS = {
    "dropwave": ((50, 50, 50), 1e-3, 100),
    "styblinski_tang": ((500,), 0.02, 500),
    "rastrigin": ((50, 50, 50), 0.01, 200),
    "michalewicz": ((50, 50, 50), 0.01, 200),
    "cosine_mixture": ((50, 50, 50), 0.01, 200),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--asks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from pinnbo.case import load_case
    from pinnbo.optimizers.base import initial_design

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}")
    print("| case | d | ours: s/iteration (measured) | authors': s/iteration (step time × epochs) | ratio |")
    print("|---|---|---|---|---|")
    for name, (hidden, lr, epochs) in AUTHORS.items():
        case = load_case(ROOT / "cases" / f"{name}.yaml")
        problem = case.build_problem()
        X = initial_design(problem.domain, case.initial_points, case.seed)
        y = np.array([problem.objective(x) for x in X])

        ours = case.build_optimizer(problem)
        for xi, yi in zip(X, y):
            ours.tell(xi, yi)
        ours.ask()                      # the first fit is longer (initial_steps): not an iteration
        start = time.perf_counter()
        for _ in range(args.asks):
            x = ours.ask()
            ours.tell(x, problem.objective(x))
        ours_s = (time.perf_counter() - start) / args.asks

        case.method_params = {"hidden": list(hidden), "learning_rate": lr, "collocation_points": 40000,
                              "collocation_batch": 40000, "initial_steps": args.steps,
                              "steps_per_iteration": args.steps}
        theirs = case.build_optimizer(problem)
        for xi, yi in zip(X, y):
            theirs.tell(xi, yi)
        data = theirs.observed()
        theirs._fit(*data)               # scales + first steps outside the timing
        start = time.perf_counter()
        theirs._fit(*data)
        step = (time.perf_counter() - start) / args.steps
        print(f"| {name} | {problem.domain.dim} | {ours_s:.2f} | {step * epochs:.1f} ({step * 1000:.0f} ms × {epochs}) "
              f"| {step * epochs / ours_s:.0f}× |", flush=True)


if __name__ == "__main__":
    main()
