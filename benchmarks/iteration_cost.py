"""Seconds per iteration of every method at t = 50 and t = 200 observations on a 2-D case, side by
side in one run (the target: a physics-informed step within 3× of GP-EI's at the same t).

One iteration is what ``pinnbo run`` times as ``ask_seconds``: the surrogate fit plus the
acquisition, oracle excluded. For each method and each t the optimiser is told the same t designs
(the case's scrambled Sobol sequence from the seed) with their true values, asked once untimed
(the first fit of a network method is its longer cold start, not a steady-state iteration), and then
``--asks`` further ask/tell rounds are timed and averaged. GP-UCB+ and EXPLOIT+ alternate a GP
proposal with a uniformly random point, so with an even ``--asks`` their figure is per observation,
half a GP step.

    python benchmarks/iteration_cost.py --case cases/dropwave.yaml --t 50 200 --asks 4
    python benchmarks/iteration_cost.py --case cases/beam.yaml --methods pinn-bo pde-gp gp-ei --t 20 40 \
        --asks 8 --output bench-results/cost/beam.json     # the "Does the PDE pay?" cost column (benchmarks/results.py)
    python benchmarks/iteration_cost.py --methods pinn-bo --params '{"pinn-bo": {"residual_gp": false}}'
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=Path, default=ROOT / "cases" / "dropwave.yaml")
    parser.add_argument("--methods", nargs="+", default=None, help="default: every unconstrained method")
    parser.add_argument("--t", nargs="+", type=int, default=[50, 200])
    parser.add_argument("--asks", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--params", type=json.loads, default={},
                        help='method_params per method as JSON, e.g. \'{"pinn-bo": {"residual_gp": false}}\'')
    parser.add_argument("--output", type=Path, default=None, help="also write the table as JSON to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from pinnbo import initial_design
    from pinnbo.optimizers import METHODS
    from pinnbo.runner.build import build_optimizer, build_problem
    from pinnbo.runner.case import load_case

    case = load_case(args.case)
    problem = build_problem(case)
    methods = args.methods or [m for m, cls in METHODS.items() if m != "neural-cbo" and m != "gp-cei"]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}; "
          f"case {case.name} (d = {problem.domain.dim}); mean of {args.asks} asks after one untimed ask")
    print("| method | " + " | ".join(f"s/iteration at t = {t}" for t in args.t) + " |")
    print("|---|" + "---|" * len(args.t))
    sign = problem.sign
    table: dict[str, list[float]] = {}
    for method in methods:
        row = []
        for t in args.t:
            X = initial_design(problem.domain, t + args.asks + 1, case.seed)[:t]
            case.method = method
            case.method_params = dict(args.params.get(method, {}))
            optimizer = build_optimizer(case, problem)
            for x in X:
                optimizer.tell(x, sign * problem.objective(x))
            x = optimizer.ask()
            optimizer.tell(x, sign * problem.objective(x))
            seconds = []
            for _ in range(args.asks):
                start = time.perf_counter()
                x = optimizer.ask()
                seconds.append(time.perf_counter() - start)
                optimizer.tell(x, sign * problem.objective(x))
            row.append(float(np.mean(seconds)))
        table[method] = row
        print(f"| {method} | " + " | ".join(f"{s:.3f}" for s in row) + " |", flush=True)
    if args.output is not None:
        from pinnbo.report.summary import versions
        produced = versions()
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({
            "case": case.name, "t": args.t, "asks": args.asks, "threads": args.threads,
            "commit": produced.get("pinnbo_commit"), "cpu": produced["cpu"], "date": date.today().isoformat(),
            "seconds_per_iteration": table}, indent=2) + "\n")
    if "pinn-bo" in table and "gp-ei" in table:
        ratios = [p / g for p, g in zip(table["pinn-bo"], table["gp-ei"])]
        print("PINN-BO / GP-EI: " + ", ".join(f"t = {t}: {r:.2f}×" for t, r in zip(args.t, ratios)))


if __name__ == "__main__":
    main()
