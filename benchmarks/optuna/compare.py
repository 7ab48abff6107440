"""PinnboSampler inside Optuna against Optuna's own samplers on PDE cases (docs/results.md).

For each case and seed, three Optuna studies start from the same initial design (pinnbo's shared
scrambled Sobol points, enqueued) and run ``--trials`` trials: PinnboSampler(method="pde-gp",
pde=<the case's PDE>), TPESampler and GPSampler, each seeded with the seed. The figure of merit is
the number of trials after the initial design until the best value is within 1 % of the initial
design's gap to f* (pinnbo bench's "to 1 %").

    python benchmarks/optuna/compare.py cases/heat_bc1.yaml cases/harmonic.yaml --seeds 10 --trials 40
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
import optuna

from pinnbo.files import write_text
from pinnbo.integrations.optuna import PinnboSampler
from pinnbo.runner.build import build_problem
from pinnbo.runner.case import load_case
from pinnbo.streams import initial_design


def study_run(problem, sampler, seed: int, trials: int, initial: np.ndarray) -> tuple[list[float], float]:
    names = problem.domain.names
    direction = "maximize" if problem.sense == "maximize" else "minimize"
    study = optuna.create_study(direction=direction, sampler=sampler)
    for x in initial:
        study.enqueue_trial(dict(zip(names, map(float, x))))

    def objective(trial):
        x = np.array([trial.suggest_float(n, lo, hi) for n, lo, hi in zip(names, problem.domain.lower,
                                                                            problem.domain.upper)])
        return float(problem.objective(x))

    start = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    return [t.value for t in study.trials], time.perf_counter() - start


def to_target(values: list[float], problem, n0: int, fraction: float = 0.01) -> int | None:
    sign = problem.sign
    best = np.minimum.accumulate(sign * np.asarray(values, dtype=np.float64))
    f_star = sign * problem.optimum
    gap0 = best[n0 - 1] - f_star
    for k in range(n0, len(values)):
        if best[k] - f_star <= fraction * gap0:
            return k - n0 + 1
    return 0 if gap0 <= 0 else None


def _cpu() -> str:
    from pinnbo.report.summary import versions

    return versions()["cpu"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--initial-points", type=int, default=10)
    parser.add_argument("--output", type=Path, default=Path("bench-results/optuna/compare.json"))
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    results = {}
    for path in args.cases:
        case = load_case(path, {})
        problem = build_problem(case)
        rows = {}
        for seed in range(args.seeds):
            initial = initial_design(problem.domain, args.initial_points, seed)
            samplers = {
                "pinnbo pde-gp": PinnboSampler(method="pde-gp", pde=problem.pde, seed=seed,
                                               initial_points=args.initial_points),
                "optuna TPE": optuna.samplers.TPESampler(seed=seed),
                "optuna GP": optuna.samplers.GPSampler(seed=seed),
            }
            for label, sampler in samplers.items():
                values, seconds = study_run(problem, sampler, seed, args.trials, initial)
                k = to_target(values, problem, args.initial_points)
                rows.setdefault(label, []).append({"seed": seed, "to_1pct": k, "seconds": seconds,
                                                   "best": max(values) if problem.sense == "maximize" else min(values)})
                print(f"{case.name} seed {seed} {label}: to 1% {k} ({seconds:.1f} s)", flush=True)
        results[case.name] = rows
    args.output.parent.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parent).stdout.strip()
    meta = {"command": "python benchmarks/optuna/compare.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "commit": commit, "machine": _cpu(), "optuna": optuna.__version__, "date": str(date.today()),
            "trials": args.trials, "initial_points": args.initial_points, "seeds": args.seeds}
    write_text(args.output, json.dumps({"meta": meta, "results": results}, indent=1))
    print("\n| case | sampler | trials to 1 % (median) | seeds reaching 1 % | seconds per study (median) |")
    print("|---|---|---|---|---|")
    for name, rows in results.items():
        for label, runs in rows.items():
            reached = [r["to_1pct"] for r in runs if r["to_1pct"] is not None]
            median = f"{np.median(reached):g}" if len(reached) == len(runs) else \
                (f"{np.median(reached):g} (reached)" if reached else "never")
            print(f"| {name} | {label} | {median} | {len(reached)}/{len(runs)} | "
                  f"{np.median([r['seconds'] for r in runs]):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
