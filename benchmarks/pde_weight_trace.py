"""PINN-BO's PDE weight after each fit of a stored run, by replaying it ask by ask.

The data-consistency backoff (module docstring of ``pinnbo/models/pinn.py``) halves the PDE
weight after every fit whose median misfit exceeds ``misfit_tolerance``; the weight is in the
checkpoint but not in the run's records. This script rebuilds the run's optimiser from its stored
``case.json`` (case file, seed, method parameters), tells it the initial designs, then for every
later evaluation asks (refitting as the run did), checks that the proposal equals the recorded one
and tells the recorded value, printing the weight at each step.

    python benchmarks/pde_weight_trace.py cases/heat_bc2.yaml bench-results/all_methods/heat_bc2/runs/pinn-bo/seed0
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from pinnbo.runner.build import build_optimizer, build_problem
from pinnbo.runner.case import load_case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", help="the run's case file")
    parser.add_argument("run", type=Path, help="the run's folder (evaluations.jsonl, case.json)")
    parser.add_argument("--every", type=int, default=5, help="print every k-th step")
    args = parser.parse_args()
    torch.set_num_threads(1)
    stored = json.loads((args.run / "case.json").read_text())
    case = load_case(args.case, {"seed": stored["seed"]})
    case.method = stored.get("method", "pinn-bo")
    case.method_params = stored.get("method_params", {})
    problem = build_problem(case)
    opt = build_optimizer(case, problem)
    rows = [json.loads(line) for line in (args.run / "evaluations.jsonl").read_text().splitlines() if line]

    def tell(row):
        y = None if row["y"] is None else row["y"] * problem.sign
        opt.tell(np.array(row["x"]), y)

    initial = [r for r in rows if r.get("phase") == "initial"]
    for row in initial:
        tell(row)
    identical, trace = True, []
    for row in rows[len(initial):]:
        x = opt.ask()
        identical &= bool(np.allclose(x, row["x"], rtol=0.0, atol=1e-9))
        trace.append((row["index"], opt.surrogate.pde_weight))
        tell(row)
    print(f"{args.run}: replayed proposals identical to the run's: {identical}")
    print("evaluation  pde_weight")
    for index, weight in trace[::args.every]:
        print(f"{index:10d}  {weight:.3g}")


if __name__ == "__main__":
    main()
