"""How well the GP surrogate of a calibration run approximates the true posterior, per design strategy
(Kim & Sanz-Alonso, §6.4, Tables 2 and 3; docs/guide/calibration.md).

For each method and seed the case is run through pinnbo's runner (every forward solve on disk, a
rerun skips complete runs), the surrogate V̂ is fitted to the design points as ``pinnbo calibrate``
does, and compared with the true log-posterior V computed from the real forward model:

- one parameter (Rössler): the true and the surrogate densities, each normalised on a grid of
  DENSITY_GRID points over the box (the paper: 1401 points on [1, 14]); the ℓ2 difference is the Euclidean
  norm of the difference of the two density vectors (the paper's definition).
- several parameters (Lorenz-63): the unnormalised densities exp(V) and exp(V̂) at a Latin
  hypercube of ``--reference-points`` points in the box (the paper: 30 000); the ℓ2 difference is
  reported as the norm over those points scaled by √(30 000 / points), the paper's scale.

Posterior samples of each run (``pinnbo calibrate``'s sampler, 2000 draws) give the coverage of the
true parameter by the 95% interval and, in one dimension, the sample mean and sd against the true
posterior's (from the grid). A one-sided Mann–Whitney test per pair says whether a "+" method's ℓ2
differences are smaller than gp-ucb's and random's (Benjamini–Hochberg across the pairs).

    python benchmarks/calibration_accuracy.py cases/rossler.yaml --seeds 20 --jobs 2 --output bench-results/calibration
    python benchmarks/calibration_accuracy.py cases/lorenz63.yaml --methods exploit+,random --seeds 5 \\
        --budget 100 --reference-points 1000 --jobs 2 --output bench-results/calibration
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.integrate import trapezoid

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pinnbo.bench.statistics import benjamini_hochberg  # noqa: E402
from pinnbo.calibration.figures import DENSITY_GRID  # noqa: E402

PAPER_POINTS = 30_000
PAPER = {"rossler": {"gp-ucb": "0.7134 ± 0.0004", "random": "1.1129 ± 0.9910", "exploit+": "0.4285 ± 0.0986",
                     "gp-ucb+": "0.3569 ± 0.0710"},
         "lorenz63": {"exploit+": "14.10 ± 1.34", "random": "80.68 ± 54.27"}}
PLUS = ("exploit+", "gp-ucb+")
#: The case's problem, built once by main() before the worker processes fork from it (a Lorenz-63
#: build solves 2000 time units for Γ).
_PROBLEM = None


def _problem(case_path: str):
    from pinnbo.runner.build import build_problem
    from pinnbo.runner.case import load_case

    return build_problem(load_case(case_path))


def _reference_points(problem, points: int) -> np.ndarray:
    from scipy.stats import qmc

    domain = problem.domain
    if domain.dim == 1:
        return np.linspace(domain.lower[0], domain.upper[0], DENSITY_GRID)[:, None]
    return domain.from_unit(qmc.LatinHypercube(d=domain.dim, seed=0).random(points))


def _true_values(X: np.ndarray) -> np.ndarray:
    return np.array([_PROBLEM.objective(x) for x in X])


def reference(points: int, jobs: int, folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """(points X, true V at X) of _PROBLEM, computed once with the real forward model and kept in ``folder``."""
    path = folder / f"reference-{points if _PROBLEM.domain.dim > 1 else DENSITY_GRID}.npz"
    if path.exists():
        stored = np.load(path)
        return stored["X"], stored["V"]
    X = _reference_points(_PROBLEM, points)
    started = time.perf_counter()
    chunks = np.array_split(X, max(1, jobs * 4))
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        V = np.concatenate(pool.map(_true_values, chunks))
    print(f"reference: {len(X)} forward solves in {time.perf_counter() - started:.0f} s", flush=True)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(path, X=X, V=V)
    return X, V


def one_run(args: tuple) -> dict:
    """Run (or read) one method × seed and measure its surrogate against the reference."""
    case_path, method, seed, budget, folder, X_ref, V_ref = args
    import torch

    torch.set_num_threads(1)
    from pinnbo.bench.plan import recorded_evaluations
    from pinnbo.calibration import calibrate, calibration_of
    from pinnbo.calibration.posterior import normalised_density
    from pinnbo.runner.build import build_optimizer, run_settings
    from pinnbo.runner.case import load_case
    from pinnbo.runner.loop import run

    case = load_case(case_path, {"method": method, "seed": seed, "budget": budget, "output": str(folder)})
    problem = _PROBLEM      # the overrides (method, seed, budget, output) do not change the problem
    resume = recorded_evaluations(folder) > 0
    history = run(problem, build_optimizer(case, problem), run_settings(case, problem, resume=resume), None)
    # pinnbo calibrate's own surrogate and samples (2000 draws)
    result = calibrate(history, problem, calibration_of(problem), folder / "calibration", seed, 2000)
    V_hat = result.surrogate(X_ref)
    if problem.domain.dim == 1:
        grid = X_ref[:, 0]
        p_true, p_hat = normalised_density(V_ref, grid), normalised_density(V_hat, grid)
        l2 = float(np.linalg.norm(p_true - p_hat))
    else:
        l2 = float(np.linalg.norm(np.exp(V_ref) - np.exp(V_hat)) * np.sqrt(PAPER_POINTS / len(V_ref)))
    truth = problem.metadata.get("true_parameters")
    stats = result.summary["parameters"]
    covered = None if truth is None else all(lo <= t <= hi for t, (lo, hi) in
                                             zip(truth, (s["interval_95"] for s in stats.values())))
    return {"method": method, "seed": seed, "l2": l2, "covered": covered, "evaluations": len(history),
            "mean": [s["mean"] for s in stats.values()], "sd": [s["sd"] for s in stats.values()],
            "sampler": result.summary["sampler"], "acceptance": result.summary["acceptance"]}


def one_sided(smaller: list[float], larger: list[float]) -> float:
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(smaller, larger, alternative="less").pvalue)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", help="a calibration case file, e.g. cases/rossler.yaml")
    parser.add_argument("--methods", default="gp-ucb,random,exploit+,gp-ucb+")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=None, help="override the case's budget (forward solves)")
    parser.add_argument("--reference-points", type=int, default=2000, help="Latin hypercube points (d > 1)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--output", type=Path, default=Path("bench-results/calibration"))
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    global _PROBLEM
    _PROBLEM = problem = _problem(args.case)
    name = problem.name
    folder = args.output / name
    X_ref, V_ref = reference(args.reference_points, args.jobs, folder)
    methods = args.methods.split(",")
    tasks = [(args.case, m, s, args.budget, folder / "runs" / m / f"seed{s}", X_ref, V_ref)
             for m in methods for s in range(args.seeds)]
    started = time.perf_counter()
    # Not multiprocessing.Pool: its workers are daemons, and the runner forks every oracle call.
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        rows = list(pool.map(one_run, tasks))
    seconds = time.perf_counter() - started

    from pinnbo.report.summary import versions

    report = {"case": args.case, "problem": name, "seeds": args.seeds, "budget": args.budget,
              "cpu": versions().get("cpu"), "commit": versions().get("pinnbo_commit"),
              "date": time.strftime("%Y-%m-%d", time.gmtime()),
              "reference_points": len(X_ref), "seconds": seconds, "runs": rows, "methods": {}}
    if problem.domain.dim == 1:
        from pinnbo.calibration.posterior import normalised_density

        grid = X_ref[:, 0]
        p = normalised_density(V_ref, grid)
        mean = float(trapezoid(grid * p, grid))
        report["true_posterior"] = {"mean": mean, "sd": float(np.sqrt(trapezoid((grid - mean) ** 2 * p, grid)))}
    for m in methods:
        mine = [r for r in rows if r["method"] == m]
        l2 = np.array([r["l2"] for r in mine])
        entry = {"l2_mean": float(l2.mean()), "l2_sd": float(l2.std(ddof=1)) if len(l2) > 1 else 0.0,
                 "covered": sum(bool(r["covered"]) for r in mine), "runs": len(mine),
                 "paper": PAPER.get(name, {}).get(m)}
        if "true_posterior" in report:
            entry["mean_error"] = float(np.mean([abs(r["mean"][0] - report["true_posterior"]["mean"]) for r in mine]))
            entry["sd_error"] = float(np.mean([abs(r["sd"][0] - report["true_posterior"]["sd"]) for r in mine]))
        report["methods"][m] = entry
    pairs = [(a, b) for a in methods if a in PLUS for b in methods if b not in PLUS]
    p_raw = [one_sided([r["l2"] for r in rows if r["method"] == a], [r["l2"] for r in rows if r["method"] == b])
             for a, b in pairs]
    report["tests"] = [{"smaller": a, "than": b, "p": p, "p_adjusted": q}
                       for (a, b), p, q in zip(pairs, p_raw, benjamini_hochberg(p_raw))]
    (folder / "accuracy.json").write_text(json.dumps(report, indent=2) + "\n")
    print(markdown(report))
    return 0


def markdown(report: dict) -> str:
    one_d = "true_posterior" in report
    where = "; ".join(str(report[k]) for k in ("commit", "cpu", "date") if report.get(k))
    lines = [f"{report['problem']}: {report['seeds']} seeds, reference {report['reference_points']} points, "
             f"{report['seconds']:.0f} s in the last invocation (runs already on disk are read, not rerun)"
             + (f"; {where}" if where else "") + ".", "",
             "| method | ℓ2 difference (mean ± sd) | paper | 95% interval covers x* |"
             + (" mean error | sd error |" if one_d else ""),
             "|---|---|---|---|" + ("---|---|" if one_d else "")]
    for m, e in report["methods"].items():
        row = f"| {m} | {e['l2_mean']:.4f} ± {e['l2_sd']:.4f} | {e['paper'] or '—'} | {e['covered']}/{e['runs']} |"
        if one_d:
            row += f" {e['mean_error']:.3f} | {e['sd_error']:.3f} |"
        lines.append(row)
    if one_d:
        t = report["true_posterior"]
        lines += ["", f"True posterior (grid): mean {t['mean']:.4f}, sd {t['sd']:.4f}."]
    if report["tests"]:
        lines += ["", "One-sided Mann–Whitney, H1: the first method's ℓ2 differences are smaller (BH-adjusted p):", ""]
        lines += [f"- {t['smaller']} < {t['than']}: p = {t['p']:.2g} (adjusted {t['p_adjusted']:.2g})"
                  for t in report["tests"]]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
