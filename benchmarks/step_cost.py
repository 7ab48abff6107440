"""Seconds per proposal of pde-gp, pinn-bo and gp-ei as the data grow (40, 200 and 1000 observations),
side by side in one process, the methods one after the other (the target: the physics default
within 2× gp-ei's step at every size on CPU).

For each method and each t the optimiser is told t designs (the case's scrambled Sobol sequence
from the seed) with their true values, asked once untimed, then ``--asks`` further ask/tell rounds
are timed. pde-gp refits its hyper-parameters from the long starts only when its observations
cross a point of a geometric grid (:func:`pinnbo.optimizers.pde_gp.restart_due`, about one step in
t·ln 1.1 near t), and not while they trail by more than the observations since could close
(:func:`pinnbo.optimizers.pde_gp.long_starts_due`: D nats behind, again after D / 10 more
observations), which a few consecutive asks mostly miss. Its refit step is timed on its own, with
the long starts of a refit long after the first fit (:data:`pinnbo.optimizers.pde_gp.REFIT_LENGTHSCALES`;
a run's first refits run more, :func:`pinnbo.optimizers.pde_gp.refit_starts`), and the figure
reported for it is the average over the schedule, warm + (refit − warm) / every, where every =
max(t·ln 1.1, D / 10) observations and D is the timed refit's deficit.

    python benchmarks/step_cost.py cases/heat_bc1.yaml benchmarks/dimensions/helmholtz_6d.yaml \\
        --t 40 200 1000 --asks 3 --output bench-results/cost/step_cost.json
    python benchmarks/step_cost.py cases/heat_bc1.yaml --device cuda --threads 4     # where CUDA exists
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np
import torch

import pinnbo.optimizers.pde_gp as pde_gp
from pinnbo.errors import MethodError
from pinnbo.files import write_text
from pinnbo.report.summary import versions
from pinnbo.runner.build import build_optimizer, build_problem
from pinnbo.runner.case import load_case
from pinnbo.streams import initial_design


def timed_asks(optimizer, problem, asks: int) -> list[float]:
    seconds = []
    for _ in range(asks):
        began = time.perf_counter()
        x = optimizer.ask()
        seconds.append(time.perf_counter() - began)
        optimizer.tell(x, problem.sign * problem.objective(x))
    return seconds


def measure(case, problem, method: str, t: int, asks: int) -> dict:
    X = initial_design(problem.domain, t + asks + 2, case.seed)[:t]
    optimizer = build_optimizer(case.model_copy(update={"method": method, "method_params": {}}), problem)
    for x in X:
        optimizer.tell(x, problem.sign * problem.objective(x))
    timed_asks(optimizer, problem, 1)                 # the first fit, from scratch: not a steady step
    due = pde_gp.restart_due
    pde_gp.restart_due = lambda n: False
    try:
        steady = float(np.mean(timed_asks(optimizer, problem, asks)))
    finally:
        pde_gp.restart_due = due
    row = {"seconds": steady}
    if method == "pde-gp":
        # a refit of a run, long after its first fit: the later refits' long starts, the gate held open
        starts = pde_gp.refit_starts
        pde_gp.refit_starts = lambda n, earlier: pde_gp.REFIT_LENGTHSCALES
        try:
            refit = float(np.mean(timed_asks(optimizer, problem, 1)))
        finally:
            pde_gp.refit_starts = starts
        deficit = optimizer.state_dict()["fits"][-1][1].get("long_starts_deficit") or 0.0
        every = max(t * math.log(pde_gp.RESTART_GROWTH), deficit / pde_gp.DEFICIT_PER_OBSERVATION)
        row = {"warm": steady, "refit": refit, "long_starts_every": every,
               "seconds": steady + (refit - steady) / every}
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--methods", nargs="+", default=["pde-gp", "pinn-bo", "gp-ei"])
    parser.add_argument("--t", nargs="+", type=int, default=[40, 200, 1000])
    parser.add_argument("--asks", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--output", type=Path, default=Path("bench-results/cost/step_cost.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    produced = versions()
    out = {"command": "python benchmarks/step_cost.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "commit": produced.get("pinnbo_commit"), "machine": produced["cpu"], "date": str(date.today()),
           "device": args.device, "threads": args.threads, "t": args.t, "cases": {}}
    for path in args.cases:
        case = load_case(path, {"device": args.device})
        problem = build_problem(case)
        rows = {}
        print(f"{case.name} (d = {problem.domain.dim}), {args.device}, {args.threads} thread(s)", flush=True)
        for method in args.methods:
            try:
                rows[method] = [measure(case, problem, method, t, args.asks) for t in args.t]
            except MethodError as exc:     # pinn-bo and a PDE with boundary conditions: not timed
                print(f"  {method}: {exc}", flush=True)
                continue
            print(f"  {method}: " + ", ".join(f"t = {t}: {r['seconds']:.3f} s" for t, r in zip(args.t, rows[method])),
                  flush=True)
        out["cases"][case.name] = {"dim": problem.domain.dim, "rows": rows}
        args.output.parent.mkdir(parents=True, exist_ok=True)
        write_text(args.output, json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
