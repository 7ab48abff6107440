"""pde-gp's hyper-parameter fit three ways, side by side in one run: warm-started with fresh refits as
the data grow (the default), warm-started only, and fitted afresh every step.

pde-gp starts each step's marginal-likelihood fit from the previous step's hyper-parameters
(``earlier_fit``) and, whenever the data have grown by a tenth, from the first fit's starts too
(``restart_due``). This runs the case's seeds the three ways from the same initial designs and
prints the proposals to 1 % and the seconds per run.

    python benchmarks/pde_gp_warm_start.py cases/heat_bc1.yaml --seeds 10 --budget 40
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

import numpy as np

import pinnbo.optimizers.pde_gp as pde_gp
from pinnbo.files import write_text
from pinnbo import optimize
from pinnbo.report.summary import versions
from pinnbo.runner.build import build_problem
from pinnbo.runner.case import load_case


def to_one_percent(history, problem, n0: int) -> int | None:
    sign = problem.sign
    best = np.minimum.accumulate([sign * r.true for r in history.evaluations])
    gap0 = best[n0 - 1] - sign * problem.optimum
    return next((k - n0 + 1 for k in range(n0, len(best)) if best[k] - sign * problem.optimum <= 0.01 * gap0), None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", type=Path)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--initial-points", type=int, default=10)
    parser.add_argument("--output", type=Path, default=Path("bench-results/cost/pde_gp_warm_start.json"))
    args = parser.parse_args(argv)
    problem = build_problem(load_case(args.case, {}))
    warm, due = pde_gp.earlier_fit, pde_gp.restart_due
    rows = {}
    for label, start, restart in (("warm start and refits", warm, due), ("warm start only", warm, lambda n: False),
                                  ("fresh fit every step", lambda fits, n: None, due)):
        pde_gp.earlier_fit, pde_gp.restart_due = start, restart
        for seed in range(args.seeds):
            began = time.perf_counter()
            history = optimize(problem, "pde-gp", budget=args.budget, initial_points=args.initial_points, seed=seed,
                               progress=False)
            k = to_one_percent(history, problem, args.initial_points)
            rows.setdefault(label, []).append({"seed": seed, "to_1pct": k, "seconds": time.perf_counter() - began})
            print(f"{label} seed {seed}: to 1% {k}", flush=True)
    pde_gp.earlier_fit, pde_gp.restart_due = warm, due
    for label, runs in rows.items():
        reached = [r["to_1pct"] for r in runs if r["to_1pct"] is not None]
        print(f"{label}: {np.median(reached) if reached else '—'} [{len(reached)}/{len(runs)}], "
              f"{np.median([r['seconds'] for r in runs]):.1f} s per run")
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    write_text(args.output, json.dumps({"command": "python benchmarks/pde_gp_warm_start.py " + " ".join(
        sys.argv[1:] if argv is None else argv), "commit": commit, "machine": versions()["cpu"],
        "date": str(date.today()), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
