"""Asynchronous runs on a virtual clock: time to a target regret and speed-up T1/Tq over q workers.

Each run is a real asynchronous run (:mod:`pinnbo.runner.asynchronous`) of a shipped case with the
real oracle, on :class:`pinnbo.runner.simulated.SimulatedEngine`: q virtual workers, each call
taking ``constant`` (1) or ``lognormal`` (exp N(0, 1), drawn from (seed, "duration", k), the same
for every method and q) units of virtual time; proposals take none. q = 1 is the sequential run
(tested record for record). Per (case, method, q, durations) over the seeds: proposals after the
initial design to r_n <= 1% (the bench's normalised regret, same initial designs), virtual time to
1% and the speed-up T1/Tq (medians over seeds that reached 1%), final r_n, and, for each q > 1, a
two-sided Mann–Whitney test of proposals-to-1% (censored runs last) and of the final regret against
q = 1: "within the noise of sequential" is p > 0.05.

    python benchmarks/parallel_simulation.py --cases heat_bc1 heat_bc2 beam --methods pinn-bo gp-ei \\
        --q 1 4 --durations constant --seeds 10 --budget 40 --jobs 2 --output bench-results/parallel/quality
    python benchmarks/parallel_simulation.py --report bench-results/parallel/quality

Runs already in ``<output>/runs.jsonl`` are kept (the script resumes); ``--report`` writes
``table.md`` and ``speedup.png`` beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.01


def duration_model(kind: str, seed: int):
    from pinnbo.streams import numpy_rng

    if kind == "constant":
        return lambda k: 1.0
    if kind == "lognormal":
        return lambda k: float(np.exp(numpy_rng(seed, "duration", k).standard_normal()))
    raise SystemExit(f"--durations: expected constant or lognormal, got {kind!r}")


_PROBLEMS: dict = {}


def one_run(case_name: str, method: str, seed: int, q: int, durations: str, budget: int) -> dict:
    import torch

    torch.set_num_threads(1)
    from pinnbo.runner.build import build_optimizer, build_problem
    from pinnbo.runner.case import load_case
    from pinnbo.runner.loop import run
    from pinnbo.runner.steps import RunSettings
    from pinnbo.runner.simulated import SimulatedEngine

    case = load_case(ROOT / "cases" / f"{case_name}.yaml", {"method": method, "seed": seed, "budget": budget})
    if case_name not in _PROBLEMS:      # one problem per process: py-pde solves once per boundary set
        _PROBLEMS[case_name] = build_problem(case)
    problem = _PROBLEMS[case_name]
    optimizer = build_optimizer(case, problem)
    settings = RunSettings(budget=budget, initial_points=case.initial_points, seed=seed, output=None)
    engine = SimulatedEngine(problem.objective, slots=q, duration=duration_model(durations, seed), timeout=case.timeout)
    history = run(problem, optimizer, settings, engine=engine)
    from datetime import date

    from pinnbo.report.summary import versions

    return {"case": case_name, "method": method, "seed": seed, "q": q, "durations": durations, "budget": budget,
            "versions": versions(), "date": date.today().isoformat(),
            "initial_points": case.initial_points, "optimum": problem.optimum, "sense": problem.sense,
            "records": [{"index": r.index, "true": r.true if r.true is not None else r.y, "phase": r.phase,
                         "finished": t.get("finished_seconds"), "ask_seconds": t.get("ask_seconds")}
                        for r, t in zip(history.evaluations, history.timings)]}


def key(run: dict) -> tuple:
    return run["case"], run["method"], run["seed"], run["q"], run["durations"], run["budget"]


def measure(args) -> None:
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "runs.jsonl"
    done = {key(json.loads(line)) for line in path.read_text().splitlines()} if path.exists() else set()
    # q = 1 makes the same decisions whatever the durations: one run (constant), its times
    # recomputed for the other models by the analysis.
    jobs = [(c, m, s, q, d, args.budget) for c in args.cases for m in args.methods for s in range(args.seeds)
            for q in args.q for d in (["constant"] if q == 1 else args.durations)
            if (c, m, s, q, d, args.budget) not in done]
    print(f"{len(jobs)} runs to do ({len(done)} recorded)", flush=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(one_run, *job): job for job in jobs}
        for future in as_completed(futures):
            result = future.result()
            with open(path, "a") as fh:
                fh.write(json.dumps(result) + "\n")
            print("done", *futures[future], flush=True)


def analyse(runs: list[dict]) -> list[dict]:
    from scipy import stats

    from pinnbo.bench.statistics import censored_summary, normalised_regret, proposals_to

    from pinnbo.streams import numpy_rng

    derived = []
    lognormal = {(r["case"], r["method"]) for r in runs if r["durations"] == "lognormal"}
    for run in runs:   # the sequential run under each other duration model (module docstring)
        if run["q"] == 1 and run["durations"] == "constant" and (run["case"], run["method"]) in lognormal:
            clock = np.cumsum([float(np.exp(numpy_rng(run["seed"], "duration", r["index"]).standard_normal()))
                               for r in run["records"]])
            derived.append({**run, "durations": "lognormal",
                            "records": [{**r, "finished": float(t)} for r, t in zip(run["records"], clock)]})
    by_seed: dict = {}
    for run in runs + derived:
        records = run["records"]
        n0 = run["initial_points"]
        initial = [r["true"] for r in sorted(records, key=lambda r: r["index"])[:n0]]
        sign = 1.0 if run["sense"] == "minimize" else -1.0
        values = np.array([np.nan if r["true"] is None else sign * r["true"] for r in records])
        best = np.fmin.accumulate(np.where(np.isnan(values), np.inf, values))
        best = np.where(np.isinf(best), np.nan, best)
        r = normalised_regret(sign * best, run["optimum"], initial)
        hit = proposals_to(r, n0, TARGET)
        reached = np.flatnonzero(r <= TARGET)
        time_to = float(records[int(reached[0])]["finished"]) if len(reached) else None
        asks = [x["ask_seconds"] for x in records if x["phase"] != "initial" and x["ask_seconds"] is not None]
        by_seed.setdefault((run["case"], run["method"], run["durations"], run["q"]), []).append(
            {"seed": run["seed"], "proposals": hit, "time": time_to, "final": float(r[-1]), "horizon": run["budget"] - n0,
             "ask": float(np.mean(asks)) if asks else None})
    rows = []
    for (case, method, durations, q), group in sorted(by_seed.items()):
        group.sort(key=lambda g: g["seed"])
        horizon = group[0]["horizon"]
        base = by_seed.get((case, method, durations, 1))
        summary = censored_summary([g["proposals"] for g in group], horizon)
        times = [g["time"] for g in group if g["time"] is not None]
        row = {"case": case, "method": method, "durations": durations, "q": q, "seeds": len(group),
               "proposals_median": summary["median"], "hits": summary["hits"],
               "time_median": float(np.median(times)) if len(times) * 2 >= len(group) else None,
               "final_median": float(np.median([g["final"] for g in group])),
               "ask_seconds": float(np.mean([g["ask"] for g in group if g["ask"] is not None] or [math.nan]))}
        if base is not None and q > 1:
            base = sorted(base, key=lambda g: g["seed"])
            t1 = {g["seed"]: g["time"] for g in base}
            ratios = [t1[g["seed"]] / g["time"] for g in group if t1.get(g["seed"]) and g["time"]]
            row["speedup_median"] = float(np.median(ratios)) if ratios else None
            a = [horizon + 1 if g["proposals"] is None else g["proposals"] for g in group]
            b = [horizon + 1 if g["proposals"] is None else g["proposals"] for g in base]
            row["p_proposals"] = None if len(set(a) | set(b)) < 2 else float(stats.mannwhitneyu(a, b).pvalue)
            row["p_final"] = float(stats.mannwhitneyu([g["final"] for g in group], [g["final"] for g in base]).pvalue)
        rows.append(row)
    return rows


def report(folder: Path) -> None:
    runs = [json.loads(line) for line in (folder / "runs.jsonl").read_text().splitlines()]
    rows = analyse(runs)
    (folder / "analysis.json").write_text(json.dumps(rows, indent=2) + "\n")

    def f(v, digits=3):
        return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"

    lines = ["| case | method | durations | q | seeds | proposals to 1% [hits] | time to 1% | speed-up T1/Tq | "
             "final r_n (median) | p (proposals, vs q=1) | p (final, vs q=1) | ask s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['method']} | {r['durations']} | {r['q']} | {r['seeds']} | "
                     f"{f(r['proposals_median'])} [{r['hits']}/{r['seeds']}] | {f(r['time_median'])} | "
                     f"{f(r.get('speedup_median'))} | {f(r['final_median'])} | {f(r.get('p_proposals'), 2)} | "
                     f"{f(r.get('p_final'), 2)} | {f(r['ask_seconds'], 2)} |")
    (folder / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for (case, method, durations) in sorted({(r["case"], r["method"], r["durations"]) for r in rows}):
        series = [(r["q"], r.get("speedup_median") if r["q"] > 1 else 1.0) for r in rows
                  if (r["case"], r["method"], r["durations"]) == (case, method, durations)]
        series = [(q, s) for q, s in series if s is not None]
        if len(series) > 1:
            ax.plot(*zip(*series), marker="o", label=f"{case} {method} ({durations})")
    ax.plot([1, 16], [1, 16], color="grey", linestyle=":", label="ideal")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("workers q")
    ax.set_ylabel("speed-up T1/Tq to 1% regret (median)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(folder / "speedup.png", dpi=120)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["heat_bc1"])
    parser.add_argument("--methods", nargs="+", default=["pinn-bo", "gp-ei"])
    parser.add_argument("--q", nargs="+", type=int, default=[1, 2, 4, 8, 16])
    parser.add_argument("--durations", nargs="+", default=["constant", "lognormal"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2)))
    parser.add_argument("--output", default="bench-results/parallel/simulation")
    parser.add_argument("--report", metavar="FOLDER")
    args = parser.parse_args(argv)
    if args.report:
        report(Path(args.report))
        return
    measure(args)
    report(Path(args.output))


if __name__ == "__main__":
    sys.exit(main())
