"""A bench case's analysis: each complete run's best-so-far curve and numbers, each method's mean ±
standard error over seeds, and the tests of the reference method against the others."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from pinnbo.bench.plan import CasePlan, RunJob, run_is_complete
from pinnbo.bench.statistics import (
    REGRET_TARGETS,
    censored_summary,
    compare_proposals,
    compare_to_reference,
    mean_log10_regret,
    mean_se,
    mean_se_curve,
    normalised_regret,
    penalise_infeasible,
    proposals_to,
    target_key,
)
from pinnbo.pareto import hypervolume_curve
from pinnbo.report.show import read_json
from pinnbo.report.summary import versions
from pinnbo.runner.history import History
from pinnbo.space import objective_signs


def _history(job: RunJob, case_plan: CasePlan, optimum: float | None) -> History:
    history = History(case_plan.sense, job.folder, optimum, case_plan.constraints)
    history.load()
    history.evaluations = history.evaluations[: job.budget]
    history.timings = history.timings[: job.budget]
    return history


def hypervolume_so_far(history: History, case_plan: CasePlan) -> np.ndarray:
    """Several objectives: the hypervolume of the evaluations so far (true values where known;
    feasible ones with constraints) against the case's reference point, shape (n,)."""
    names = list(case_plan.objectives)
    signs = objective_signs(case_plan.objectives)
    Y = np.array([[(r.objectives_true or r.objectives).get(n, np.nan) for n in names] if r.ok else [np.nan] * len(names)
                  for r in history.evaluations], dtype=np.float64).reshape(-1, len(names)) * signs
    ok = np.array([history.counts(r) for r in history.evaluations], dtype=bool)
    return hypervolume_curve(Y, ok, case_plan.hypervolume_reference)


def best_known_hypervolume(case_plan: CasePlan) -> float | None:
    """The largest hypervolume any complete run of the case reached: the optimum of a problem whose
    Pareto front is unknown, so that proposals to a fraction of it can be counted."""
    finals = [hypervolume_so_far(_history(job, case_plan, None), case_plan)[-1] for job in case_plan.jobs
              if run_is_complete(job.folder, job.budget)]
    return max(finals) if finals else None


def _curves(job: RunJob, case_plan: CasePlan, optimum: float | None = None) -> tuple[np.ndarray, dict, dict]:
    """Best-so-far curve over the first ``budget`` evaluations (best feasible with constraints; the
    hypervolume with several objectives), the run's numbers, and its further curves: the normalised
    regret where f* is known and the constraint curves {"n_feasible", "cumulative_violation"} (each (n,))."""
    optimum = case_plan.optimum if optimum is None else optimum
    history = _history(job, case_plan, optimum)
    curve = hypervolume_so_far(history, case_plan) if case_plan.objectives else history.best_so_far()
    asks = [t.get("ask_seconds") for t, r in zip(history.timings, history.evaluations)
            if r.phase == "optimizer" and t.get("ask_seconds") is not None]
    final = float(curve[-1]) if len(curve) and math.isfinite(curve[-1]) else None
    numbers = {
        "seed": job.seed,
        "final_best": final,
        "simple_regret": None if optimum is None or final is None else abs(optimum - final),
        "seconds_per_iteration": float(np.mean(asks)) if asks else None,
        "failed_evaluations": history.n_failed,
        "initial_x": [r.x for r in history.evaluations[: job.case.initial_points]],
    }
    extra = {}
    if optimum is not None:
        initial = job.case.initial_points
        # several objectives: the initial design's hypervolume stands for its median value
        start = [float(curve[initial - 1])] if case_plan.objectives and len(curve) >= initial else \
            [e.true if e.ok else None for e in history.evaluations[:initial]]
        r = normalised_regret(curve, optimum, start)
        extra["normalised_regret"] = r
        numbers["mean_log10_regret"] = mean_log10_regret(r, initial)
        for target in REGRET_TARGETS:
            numbers[target_key(target)] = proposals_to(r, initial, target)
    numbers.update(_recommended(job, history, optimum))
    for phase in history.own_phases():
        # A method's own phase (GP-UCB+'s random points): the best without those evaluations too.
        without = history.best_so_far(without_phase=phase)
        value = float(without[-1]) if len(without) and math.isfinite(without[-1]) else None
        numbers[f"final_best_without_{phase}"] = value
        numbers[f"simple_regret_without_{phase}"] = None if optimum is None or value is None else abs(optimum - value)
    if history.constrained:
        violation = history.cumulative_violation()
        first = next((r.index + 1 for r in history.evaluations if r.feasible), None)
        numbers.update(n_feasible=history.n_feasible, feasible_fraction=history.feasible_fraction(),
                       cumulative_violation=violation["total"],
                       cumulative_violation_per_constraint=violation["per_constraint"],
                       first_feasible_evaluation=first)
        extra.update(n_feasible=history.feasible_so_far(), cumulative_violation=history.cumulative_violation_curve())
    return curve, numbers, extra


def _recommended(job: RunJob, history: History, optimum: float | None) -> dict:
    """Under noise, the true value (and regret) of the run's recommended design (its summary's, the
    best posterior mean) and of its best *observed* design: what a user without the true values
    would pick. Empty when the run's summary has no noisy recommendation or the truth is unknown."""
    summary = read_json(job.folder / "summary.json")
    recommended = summary.get("recommended") if isinstance(summary, dict) else None
    observed = history.best(key="y")
    if not isinstance(recommended, dict) or recommended.get("predicted_sd") == 0 or observed is None \
            or recommended.get("true") is None or observed.true is None:
        return {}
    out = {"recommended_true": float(recommended["true"]), "observed_best_true": float(observed.true)}
    if optimum is not None:
        out["recommended_regret"] = abs(optimum - out["recommended_true"])
        out["observed_best_regret"] = abs(optimum - out["observed_best_true"])
    return out


def analyse(case_plan: CasePlan, outcomes: dict, methods: Sequence[str] | None = None,
            reference: str | None = None) -> tuple[dict, list[list]]:
    """The case's summary (every number of the table) and the rows of curves.csv."""
    methods = list(methods if methods is not None else case_plan.methods)
    reference = reference or case_plan.reference
    rows: list[list] = []
    results: dict[str, dict] = {}
    finals: dict[str, list[float]] = {}
    optimum = case_plan.optimum
    if case_plan.objectives and optimum is None:
        optimum = best_known_hypervolume(case_plan)
    constrained = case_plan.constrained
    for method in methods:
        jobs = [j for j in case_plan.jobs if j.method == method]
        curves, runs, failed_runs, regret_curves = [], [], [], []
        for job in jobs:
            outcome = outcomes.get(job.key)
            if outcome is not None and not outcome["ok"]:
                failed_runs.append({"seed": job.seed, "error": outcome["error"], "traceback": outcome.get("traceback")})
                continue
            if not run_is_complete(job.folder, job.budget):
                continue
            curve, numbers, extra = _curves(job, case_plan, optimum)
            numbers.pop("initial_x")
            curves.append(curve)
            runs.append(numbers)
            if "normalised_regret" in extra:
                regret_curves.append(extra["normalised_regret"])
            for k, value in enumerate(curve, start=1):
                finite = math.isfinite(value)
                r = extra.get("normalised_regret")
                row = [method, job.seed, k, float(value) if finite else None,
                       abs(optimum - float(value)) if finite and optimum is not None else None,
                       None if r is None or not math.isfinite(r[k - 1]) else float(r[k - 1])]
                if constrained:
                    row += [int(extra["n_feasible"][k - 1]), float(extra["cumulative_violation"][k - 1])]
                rows.append(row)
        stacked = np.array(curves) if curves else np.zeros((0, case_plan.budget))
        mean_curve, se_curve = mean_se_curve(stacked)
        finals[method] = [r["final_best"] for r in runs]
        results[method] = {
            "runs": len(jobs),
            "completed": len(runs),
            "seeds": [r["seed"] for r in runs],
            "final_best": {**mean_se(finals[method]), "values": finals[method]},
            "simple_regret": None if optimum is None else
            {**mean_se([r["simple_regret"] for r in runs]), "values": [r["simple_regret"] for r in runs]},
            "seconds_per_iteration": {**mean_se([r["seconds_per_iteration"] for r in runs]),
                                      "values": [r["seconds_per_iteration"] for r in runs]},
            "failed_evaluations": int(sum(r["failed_evaluations"] for r in runs)),
            "failed_runs": failed_runs,
            "mean_curve": mean_curve,
            "se_curve": se_curve,
        }
        if optimum is not None:
            horizon = case_plan.budget - case_plan.initial_points
            for target in REGRET_TARGETS:
                key = target_key(target)
                results[method][key] = censored_summary([r[key] for r in runs], horizon)
            results[method]["mean_log10_regret"] = {**mean_se([r["mean_log10_regret"] for r in runs]),
                                                    "values": [r["mean_log10_regret"] for r in runs]}
            results[method]["median_regret_curve"] = _quantile_curves(regret_curves)
        for key in dict.fromkeys(k for r in runs for k in r if k.startswith("final_best_without_")):
            if all(key in r for r in runs):
                phase = key[len("final_best_without_"):]
                values = [r[key] for r in runs]
                results[method][key] = {**mean_se(values), "values": values}
                if optimum is not None:
                    regrets = [r[f"simple_regret_without_{phase}"] for r in runs]
                    results[method][f"simple_regret_without_{phase}"] = {**mean_se(regrets), "values": regrets}
        for key in ("recommended_true", "observed_best_true", "recommended_regret", "observed_best_regret"):
            if runs and all(key in r for r in runs):
                values = [r[key] for r in runs]
                results[method][key] = {**mean_se(values), "values": values}
        if constrained:
            results[method].update(constraint_results(runs, case_plan.constraints))
    tests = None
    if len(methods) > 1:
        if constrained:
            penalised, penalty = penalise_infeasible(finals, case_plan.sense)
            tests = compare_to_reference(penalised, reference, case_plan.sense)
            if tests is not None:
                tests["statistic"] = "final best feasible true value"
                tests["infeasible_seed_value"] = penalty
                tests["infeasible_seeds"] = ("a seed without a feasible point counts as the worst final best-feasible "
                                             "value of any run of the case (every method, every seed)")
        else:
            tests = compare_to_reference(finals, reference, case_plan.sense)
        if optimum is not None and tests is not None:
            key = target_key(REGRET_TARGETS[-1])
            tests["efficiency"] = compare_proposals(
                {m: results[m][key]["values"] for m in methods}, reference,
                case_plan.budget - case_plan.initial_points, REGRET_TARGETS[-1])
    summary = {
        "case": case_plan.case.name,
        "source": str(case_plan.source),
        "problem": case_plan.problem_name,
        "sense": case_plan.sense,
        "optimum": optimum,
        "budget": case_plan.budget,
        "initial_points": case_plan.initial_points,
        "seeds": sorted({j.seed for j in case_plan.jobs}),
        "methods": list(methods),
        **({"objectives": case_plan.objectives, "hypervolume_reference": list(case_plan.hypervolume_reference),
            "optimum_is": "known" if case_plan.optimum is not None else "the best hypervolume of any run"}
           if case_plan.objectives else {}),
        "smoke": case_plan.case.smoke,
        "device": case_plan.case.device,
        "results": results,
        "tests": tests,
        "versions": versions(),
    }
    if constrained:
        summary["constraints"] = list(case_plan.constraints)
    return summary, rows


def _quantile_curves(regrets: list[np.ndarray]) -> dict | None:
    """Per evaluation, the 25 %, 50 % and 75 % quantiles of the normalised regret over the runs
    (inf where a run has no value yet: such runs rank last; None in the curve where the quantile is
    such a run)."""
    if not regrets:
        return None
    q = np.quantile(np.stack(regrets), [0.25, 0.5, 0.75], axis=0, method="nearest")   # no inf − inf
    as_list = lambda row: [None if not math.isfinite(v) else float(v) for v in row]  # noqa: E731
    return {"q25": as_list(q[0]), "median": as_list(q[1]), "q75": as_list(q[2])}


def constraint_results(runs: list[dict], names: Sequence[str]) -> dict:
    """A method's constraint numbers over its completed runs (the per-seed values kept)."""
    fractions = [r["feasible_fraction"] for r in runs]
    totals = [r["cumulative_violation"] for r in runs]
    return {
        "no_feasible_seeds": [r["seed"] for r in runs if not r["n_feasible"]],
        "feasible_fraction": {**mean_se(fractions), "values": fractions},
        "cumulative_violation": {**mean_se(totals), "values": totals,
                                 "per_constraint": {n: mean_se([r["cumulative_violation_per_constraint"][n]
                                                                for r in runs])["mean"] for n in names}},
        "first_feasible_evaluation": {**mean_se([r["first_feasible_evaluation"] for r in runs]),
                                      "values": [r["first_feasible_evaluation"] for r in runs]},
    }
