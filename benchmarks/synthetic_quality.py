"""Surrogate quality of PINN-BO's fast defaults against the authors' released settings on the
synthetic cases, side by side in one run (issue 3: "settings that keep quality and are fast").

For each case and seed both settings are trained on the same data — the case's initial design
(scrambled Sobol from the seed, 50 points) — with the same PDE, and judged on 4096 held-out Sobol
points of the domain:
- ``rmse``: RMS error of the trained PINN's mean, divided by the objective's standard deviation on
  the held-out points (0 is perfect, 1 is no better than the constant mean);
- ``argmin regret``: f(x̂) − f*, with x̂ the held-out point where the trained mean is lowest (what a
  greedy step would propose next: lower is better);
- ``s``: wall time of the fit.
Ours: the defaults of :class:`pinnbo.optimizers.pinn_bo.PINNBOSettings` (first fit:
``initial_steps`` Adam steps on batches of the collocation set). Authors': their network, learning
rate and epochs per update, N_r = 40 000 full-batch collocation points (REFERENCES §1).

    python benchmarks/synthetic_quality.py --seeds 0 1 2 --cases dropwave rastrigin michalewicz cosine_mixture
    python benchmarks/synthetic_quality.py --seeds 0 --cases styblinski_tang
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent

from synthetic_timing import AUTHORS  # REFERENCES §1: their network, learning rate, epochs per update


def judge(optimizer, X: np.ndarray, y: np.ndarray, X_test: np.ndarray, f_test: np.ndarray, optimum: float) -> dict:
    """Fit ``optimizer``'s PINN on (X, y) and score its mean on the held-out points."""
    start = time.perf_counter()
    mean, std = optimizer._fit(X, y)
    seconds = time.perf_counter() - start
    model = optimizer._physical_model(mean, std)
    with torch.no_grad():
        pred = model(torch.as_tensor(X_test, dtype=torch.float64, device=optimizer.device)).reshape(-1)
    pred = pred.cpu().numpy()
    rmse = float(np.sqrt(np.mean((pred - f_test) ** 2)) / np.std(f_test))
    regret = float(f_test[int(np.argmin(pred))] - optimum)
    return {"rmse": rmse, "argmin_regret": regret, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(AUTHORS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--test-points", type=int, default=4096)
    parser.add_argument("--json", type=Path, default=None, help="append one JSON line per result here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from pinnbo.case import load_case
    from pinnbo.optimizers.base import initial_design, sobol_unit

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch threads {args.threads}", flush=True)
    print("| case | seed | settings | rmse / std(f) | argmin regret | fit s |", flush=True)
    print("|---|---|---|---|---|---|", flush=True)
    for name in args.cases:
        hidden, lr, epochs = AUTHORS[name]
        for seed in args.seeds:
            case = load_case(ROOT / "cases" / f"{name}.yaml")
            case.seed = seed
            problem = case.build_problem()
            X = initial_design(problem.domain, case.initial_points, seed)
            y = np.array([problem.objective(x) for x in X])
            X_test = problem.domain.from_unit(sobol_unit(args.test_points, problem.domain.dim, seed, "quality-test"))
            f_test = np.array([problem.objective(x) for x in X_test])
            settings = {
                "ours": {},
                "authors'": {"hidden": list(hidden), "learning_rate": lr, "collocation_points": 40000,
                             "collocation_batch": 40000, "initial_steps": epochs},
            }
            for label, params in settings.items():
                case.method_params = params
                optimizer = case.build_optimizer(problem)
                for xi, yi in zip(X, y):
                    optimizer.tell(xi, yi)
                result = judge(optimizer, *optimizer.observed(), X_test, f_test, problem.optimum)
                print(f"| {name} | {seed} | {label} | {result['rmse']:.3f} | {result['argmin_regret']:.4g} "
                      f"| {result['seconds']:.1f} |", flush=True)
                if args.json is not None:
                    with open(args.json, "a") as fh:
                        fh.write(json.dumps({"case": name, "seed": seed, "settings": label, **result}) + "\n")


if __name__ == "__main__":
    main()
