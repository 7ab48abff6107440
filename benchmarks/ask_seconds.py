"""Seconds per ask of each method inside a window of evaluations, read from a finished bench folder.

`benchmarks/iteration_cost.py` tells a fresh optimiser t designs at once and times the next asks;
this reads what real runs spent around evaluation t (their ``timings.jsonl``), so a method's state
is the one a run carries there (warm-started network, the residual GP's remembered outliers).
Run the bench alone (one job, nothing else on the machine) for timings worth comparing:

    pinnbo bench cases/dropwave.yaml --methods pinn-bo,gp-ei --seeds 2 --jobs 1 --quiet --output bench-results/cost
    python benchmarks/ask_seconds.py bench-results/cost/dropwave --window 180 200 --ratio pinn-bo gp-ei

``--refits`` splits each run's asks into those on pde-gp's refit grid (its first fit and the refits
with fresh starts, :func:`pinnbo.optimizers.pde_gp.restart_due`; the ask of evaluation i is made on
i observations in a sequential run) and the warm steps between them: where a pde-gp run's time goes.
A refit the deficit gate skips is counted on the grid, at a warm step's cost.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from pinnbo.optimizers.pde_gp import restart_due


def window_asks(run: Path, start: int, stop: int) -> list[tuple[int, float]]:
    """(index, ask_seconds) of the run's evaluations with start <= index < stop (optimizer phase only)."""
    rows = [json.loads(line) for line in (run / "timings.jsonl").read_text().splitlines() if line.strip()]
    return [(r["index"], r["ask_seconds"]) for r in rows
            if r.get("ask_seconds") is not None and start <= r["index"] < stop]


def window_seconds(run: Path, start: int, stop: int) -> list[float]:
    """ask_seconds of the run's evaluations with start <= index < stop (optimizer phase only)."""
    return [seconds for _, seconds in window_asks(run, start, stop)]


def refit_split(run: Path, start: int, stop: int) -> tuple[list[float], list[float]]:
    """(the ask_seconds on pde-gp's refit grid, the others) of the run's evaluations with
    start <= index < stop (optimizer phase only)."""
    grid, between = [], []
    for index, seconds in window_asks(run, start, stop):
        (grid if restart_due(index) else between).append(seconds)
    return grid, between


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case_folder", type=Path, help="a bench case folder, e.g. bench-results/cost/dropwave")
    parser.add_argument("--window", nargs=2, type=int, default=[180, 200], metavar=("START", "STOP"),
                        help="evaluation indices START <= index < STOP (0-based)")
    parser.add_argument("--ratio", nargs=2, metavar=("METHOD", "BASELINE"), help="print METHOD / BASELINE per seed")
    parser.add_argument("--refits", action="store_true",
                        help="split each run's asks into those on pde-gp's refit grid and the warm steps")
    args = parser.parse_args(argv)
    start, stop = args.window
    means: dict[str, dict[str, float]] = {}
    print(f"| method | seed | s/ask, evaluations {start + 1}–{stop} | asks |")
    print("|---|---|---|---|")
    for method_dir in sorted((args.case_folder / "runs").iterdir()):
        for run in sorted(method_dir.iterdir()):
            seconds = window_seconds(run, start, stop)
            if not seconds:
                continue
            means.setdefault(method_dir.name, {})[run.name] = float(np.mean(seconds))
            print(f"| {method_dir.name} | {run.name} | {np.mean(seconds):.3f} | {len(seconds)} |")
    if args.refits:
        print("\n| method | seed | s/ask on the refit grid | asks | s/ask between | asks | grid's share of the time |")
        print("|---|---|---|---|---|---|---|")
        for method_dir in sorted((args.case_folder / "runs").iterdir()):
            for run in sorted(method_dir.iterdir()):
                grid, between = refit_split(run, start, stop)
                if grid and between:
                    share = sum(grid) / (sum(grid) + sum(between))
                    print(f"| {method_dir.name} | {run.name} | {np.mean(grid):.3f} | {len(grid)} | "
                          f"{np.mean(between):.3f} | {len(between)} | {share:.2f} |")
    if args.ratio:
        method, baseline = args.ratio
        for seed, value in means.get(method, {}).items():
            if seed in means.get(baseline, {}):
                print(f"{method} / {baseline}, {seed}: {value / means[baseline][seed]:.2f}×")


if __name__ == "__main__":
    main()
