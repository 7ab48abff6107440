"""What a run leaves behind: summary.json and the figures. The report only reads the history; it
never changes a run."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

import numpy as np

from pinnbo.files import write_json
from pinnbo.optimizers.choice import AUTO, auto_choice
from pinnbo.problem import Problem
from pinnbo.report.figures import plot_convergence, plot_field, plot_pareto, run_title, save_figure
from pinnbo.report.page_figures import fitted, map_dims, surrogate_figure
from pinnbo.pareto import hypervolume, inferred_reference, pareto_mask
from pinnbo.report.recommend import recommend
from pinnbo.runner.case import noise_model
from pinnbo.runner.history import Evaluation, History
from pinnbo.runner.warm_start import IMPORTED


def versions() -> dict:
    """What produced a result: the packages' versions, the machine, and the commit of pinnbo's source
    where it runs from a git checkout (``pinnbo_commit``, "-dirty" with uncommitted changes)."""
    out = {"python": platform.python_version(), "machine": platform.machine(), "cpu": _cpu()}
    for package in ("pinnbo", "torch", "numpy", "scipy", "sympy", "py-pde", "botorch"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    commit = _source_commit()
    if commit is not None:
        out["pinnbo_commit"] = commit
    return out


def _cpu() -> str:
    """The processor's model name and the number of cores, as timings need them."""
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


@functools.lru_cache(maxsize=1)
def _source_commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def summarize(history: History, problem: Problem, case: dict | None = None) -> dict:
    """The run's summary (also written as summary.json)."""
    best = history.best()
    ask = [t.get("ask_seconds") for t, r in zip(history.timings, history.evaluations)
           if r.phase == "optimizer" and t.get("ask_seconds") is not None]
    oracle = [t.get("oracle_seconds") for t in history.timings if t.get("oracle_seconds") is not None]
    best_entry, best_value = _best_entry(best)
    summary = {
        "problem": problem.name,
        "sense": problem.sense,
        "variables": list(problem.domain.names),
        "domain": [v.to_dict() for v in problem.domain.variables],
        "evaluations": len(history),
        "failed": history.n_failed,
        "failures": [{"index": r.index, "x": r.x, "error": r.error} for r in history.evaluations if not r.ok],
        "best": best_entry,
        "best_value": best_value,
        "recommended": recommend(history, problem, int((case or {}).get("seed") or 0),
                                 noise_model((case or {}).get("observation_noise"))),
        "optimum": problem.optimum,
        "optimum_location": None if problem.optimum_location is None else [float(v) for v in problem.optimum_location],
        "simple_regret": problem.simple_regret(best_value) if best_value is not None else None,
        "seconds_per_iteration": float(np.mean(ask)) if ask else None,
        "oracle_seconds_per_evaluation": float(np.mean(oracle)) if oracle else None,
        "case": case,
        "versions": versions(),
    }
    choice = auto_choice((case or {}).get("method"), problem)
    if choice is not None:
        summary["method"] = {"name": choice.method, "chosen_by": AUTO, "reason": choice.reason}
    imported = sum(r.phase == IMPORTED for r in history.evaluations)
    if imported:
        summary["imported"] = imported
    if history.stopped is not None:
        summary["stopped"] = history.stopped
    if history.parallel is not None:
        summary["parallel"] = history.parallel
    for phase in history.own_phases():
        summary.update(phase_summary(history, problem, phase))
    if history.constrained:
        summary.update(constraint_summary(history, problem))
    if problem.objectives:
        summary.update(pareto_summary(history, problem))
    return summary


def pareto_summary(history: History, problem: Problem) -> dict:
    """The keys a run of several objectives adds: its Pareto front (the successful, feasible
    evaluations no other one dominates; true values where known, in each objective's own sense),
    the reference point (the problem's, or inferred from the front as Ax does) and the hypervolume."""
    names = list(problem.objectives)
    records = [r for r in history.evaluations if history.counts(r) and r.objectives]
    values = np.array([[(r.objectives_true or r.objectives)[n] for n in names] for r in records],
                      dtype=np.float64).reshape(-1, len(names))
    minimised = values * problem.signs
    front = pareto_mask(minimised) if len(records) else np.zeros(0, dtype=bool)
    reference = problem.minimised_reference
    if reference is None and len(records):
        reference = inferred_reference(minimised)
    volume = hypervolume(minimised, reference) if reference is not None and len(records) else None
    note = {}
    if volume == 0.0:   # a reference point better than every evaluation in some objective
        note = {"hypervolume_note": "no evaluated design dominates the reference point, so the hypervolume is 0: "
                                    "move the reference (params.reference) beyond the values a design can reach"}
    return {**note,
        "objectives": dict(problem.objectives),
        "pareto_front": [{"index": r.index, "x": r.x, "values": dict(zip(names, (float(v) for v in row)))}
                         for r, row, keep in zip(records, values, front) if keep],
        "reference": None if reference is None else dict(zip(names, (float(v) for v in reference * problem.signs))),
        "reference_inferred": problem.reference is None,
        "hypervolume": volume,
    }


def _best_entry(best: Evaluation | None) -> tuple[dict | None, float | None]:
    """A best evaluation as the summary records it, and its value (true where known, else observed)."""
    if best is None:
        return None, None
    return ({"index": best.index, "x": best.x, "observed": best.y, "true": best.true},
            best.true if best.true is not None else best.y)


def phase_summary(history: History, problem: Problem, phase: str) -> dict:
    """The keys a run with evaluations of a method's own ``phase`` adds to its summary: how many,
    and the best without them (GP-UCB+'s random points: both readings of Kim & Sanz-Alonso's
    regret); ``best_value`` counts every evaluation."""
    entry, value = _best_entry(history.best(without_phase=phase))
    return {
        f"{phase}_evaluations": sum(r.phase == phase for r in history.evaluations),
        f"best_without_{phase}": entry,
        f"best_value_without_{phase}": value,
        f"simple_regret_without_{phase}": problem.simple_regret(value) if value is not None else None,
    }


def constraint_summary(history: History, problem: Problem) -> dict:
    """The keys a constrained run adds to its summary: ``best``/``best_value`` are then the best
    feasible evaluation (true values decide feasibility)."""
    best = history.best()
    closest = history.least_violation() if best is None else None
    return {
        "constraints": [{"name": c.name, "known": c.known, "noise_std": c.noise_std} for c in problem.constraints],
        "best_feasible": None if best is None else {
            "index": best.index, "x": best.x, "value": best.true if best.true is not None else best.y,
            "observed": best.y, "constraints": best.constraints_true},
        "n_feasible": history.n_feasible,
        "feasible_fraction": history.feasible_fraction(),
        "cumulative_violation": history.cumulative_violation(),
        "least_violation": None if closest is None else {
            "index": closest.index, "x": closest.x,
            "violation": float(closest.violation(history.constraint_names).sum()),
            "constraints": closest.constraints_true},
    }


def write_report(history: History, problem: Problem, case: dict | None = None) -> dict:
    """summary.json, convergence.png (several objectives: pareto.png) and, for 2-D problems with a
    field, field.png; for other 1-D and 2-D problems, surrogate.png (the report's model)."""
    summary = summarize(history, problem, case)
    if history.folder is None:
        return summary
    write_json(history.folder / "summary.json", summary)
    title = run_title(case, problem)
    if problem.objectives:
        plot_pareto(summary, problem, history.folder / "pareto.png", title)
    else:
        plot_convergence(history, problem, history.folder / "convergence.png", title)
    if problem.domain.dim == 2 and problem.field_plot is not None:
        plot_field(history, problem, history.folder / "field.png", title)
    elif problem.domain.dim == 1 or map_dims(problem) is not None:
        # Every 1-D problem gets a curve and every 2-D one a map: the report's model of the run.
        made = fitted(history, problem, int((case or {}).get("seed") or 0),
                      noise_model((case or {}).get("observation_noise")))
        if made is not None:
            best = summary.get("recommended") or summary.get("best")
            save_figure(surrogate_figure(made[0], made[1], history, problem, problem.domain.encode(best["x"]), title),
                        history.folder / "surrogate.png")
    return summary
