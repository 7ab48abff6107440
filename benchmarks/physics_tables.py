"""docs/results.md's physics tables (benchmarks/results.py): does the PDE pay under ``method: auto``,
and what a step costs as the data grow."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from ask_seconds import window_seconds

from pinnbo.bench.statistics import REGRET_TARGETS, target_key
from pinnbo.report.format import fmt

PHYSICS = ("pde-gp", "pinn-bo")
GP = ("gp-ei", "gp-ucb")
GROWTH_COMMAND = ("python benchmarks/step_cost.py cases/heat_bc1.yaml cases/beam.yaml cases/liouville.yaml "
                  "benchmarks/kinds/beam_clamped.yaml benchmarks/kinds/reaction_diffusion.yaml "
                  "benchmarks/dimensions/laplace_3d.yaml benchmarks/dimensions/heat_4d.yaml "
                  "benchmarks/dimensions/helmholtz_6d.yaml benchmarks/kinds/heat_graded_flow.yaml "
                  "benchmarks/kinds/heat_box_bc3.yaml benchmarks/kinds/heat_box_graded_tensor_flow.yaml "
                  "--t 40 200 1000 --asks 3 --output bench-results/cost/step_cost.json")

# What a budget-40 run pays: the cases where auto runs a physics method, auto and gp-ei from the
# same initial designs, one job alone on the machine, read over evaluations 11-40, where half of
# pde-gp's asks fit from fresh starts (step_cost.py spreads one timed refit over its grid instead).
RUNS_COST_COMMAND = ("pinnbo bench cases/heat_bc1.yaml cases/heat_bc2.yaml cases/heat_bc3.yaml cases/beam.yaml "
                     "cases/dropwave.yaml cases/helmholtz.yaml cases/harmonic.yaml cases/liouville.yaml "
                     "benchmarks/kinds/*.yaml benchmarks/dimensions/laplace_3d.yaml "
                     "benchmarks/dimensions/helmholtz_3d.yaml benchmarks/dimensions/heat_3d.yaml "
                     "benchmarks/dimensions/heat_4d.yaml benchmarks/dimensions/reaction_diffusion_3d.yaml "
                     "benchmarks/dimensions/wave_3d.yaml benchmarks/dimensions/damped_wave_3d.yaml "
                     "benchmarks/dimensions/poisson_3d.yaml benchmarks/dimensions/poisson_4d.yaml "
                     "benchmarks/dimensions/poisson_5d.yaml benchmarks/dimensions/poisson_6d.yaml "
                     "benchmarks/dimensions/advection_diffusion_3d.yaml "
                     "benchmarks/dimensions/advection_diffusion_4d.yaml "
                     "benchmarks/dimensions/advection_diffusion_5d.yaml "
                     "benchmarks/dimensions/advection_diffusion_6d.yaml "
                     "--methods auto,gp-ei --reference auto --seeds 3 --budget 40 "
                     "--initial-points 10 --jobs 1 --output bench-results/runs-cost")
RUNS_COST_WINDOW = (10, 40)


def runs_seconds(folder: Path, method: str = "auto", baseline: str = "gp-ei") -> dict[str, tuple[float, float]]:
    """{seed: (``method``'s mean seconds per ask, ``baseline``'s)} over evaluations 11-40 of a bench
    case folder's runs, for the seeds that have both: each seed against the same initial design."""
    out = {}
    for run in sorted((folder / "runs" / method).glob("*/timings.jsonl")):
        other = folder / "runs" / baseline / run.parent.name
        if not (other / "timings.jsonl").exists():
            continue
        mine, theirs = (window_seconds(r, *RUNS_COST_WINDOW) for r in (run.parent, other))
        if mine and theirs:
            out[run.parent.name] = (float(np.mean(mine)), float(np.mean(theirs)))
    return out


def seed_ratios(seconds: dict[str, tuple[float, float]]) -> list[float]:
    """Each seed's seconds per ask over the same seed's gp-ei (:func:`runs_seconds`' pairs); both
    cost tables give their mean, so they agree row for row."""
    return [a / g for a, g in seconds.values()]


def runs_cost_rows(folders: dict[str, Path]) -> list[str]:
    """Per case (its folder from :data:`RUNS_COST_COMMAND`'s bench): what ``auto`` ran, its seconds
    per proposal and gp-ei's (means over seeds), and auto's over gp-ei's, per seed and their mean."""
    lines = ["| case | d | `auto` runs | s/proposal | `gp-ei` | × gp-ei, per seed | × gp-ei |",
             "|---|---|---|---|---|---|---|"]
    for case, folder in folders.items():
        seconds = runs_seconds(folder)
        chosen = auto_choice(folder, None)
        if not seconds or chosen is None:
            continue
        run = next(iter(sorted((folder / "runs" / "auto").glob("*/summary.json"))))
        dim = len(json.loads(run.read_text()).get("variables") or [])
        ratios = seed_ratios(seconds)
        mine, theirs = (float(np.mean([pair[k] for pair in seconds.values()])) for k in (0, 1))
        lines.append(f"| {case} | {dim} | `{chosen}` | {mine:.3f} | {theirs:.3f} | "
                     f"{', '.join(f'{r:.2f}' for r in ratios)} | {np.mean(ratios):.1f} |")
    return lines


def _to_target(result: dict | None) -> tuple[float, int]:
    """(median proposals to 1% with never = inf, -hits): sorts the better method first."""
    stats = (result or {}).get(target_key(REGRET_TARGETS[-1])) or {}
    median = stats.get("median")
    return (math.inf if median is None else median, -stats.get("hits", 0))


def _proposals(stats: dict | None) -> str:
    if not stats or not stats.get("n"):
        return "—"
    return f"{'—' if stats['median'] is None else fmt(stats['median'], 3)} [{stats['hits']}/{stats['n']}]"


def auto_choice(folder: Path, case_file: Path | None) -> str | None:
    """The method ``auto`` runs on a bench case: from its runs' summaries where the bench ran it,
    else by the rule on the case's problem (the runs would be that method's, proposal for
    proposal)."""
    for summary in sorted((folder / "runs" / "auto").glob("*/summary.json")):
        method = json.loads(summary.read_text()).get("method")
        if isinstance(method, dict):
            return method["name"]
    if case_file is None:
        return None
    from pinnbo.optimizers import choice_for
    from pinnbo.runner.build import build_problem
    from pinnbo.runner.case import load_case

    return choice_for(build_problem(load_case(case_file))).method


def run_cost(folder: Path | None, chosen: str) -> str:
    """``auto``'s seconds per proposal over gp-ei's in :data:`RUNS_COST_COMMAND`'s bench of a case
    (its ``folder``), the mean of the seeds' ratios as :func:`runs_cost_rows` gives it; 1.0 where
    ``auto`` runs gp-ei itself, — where the case was not timed."""
    if chosen == "gp-ei":
        return "1.0"
    seconds = runs_seconds(folder) if folder is not None else {}
    return f"{np.mean(seed_ratios(seconds)):.1f}" if seconds else "—"


def physics_summary(folders: dict[str, tuple[Path, Path | None]], runs_cost: Path | None) -> list[str]:
    """Per case (bench folder, case file): what ``auto`` runs, its proposals to 1% against the better GP's, its step
    cost over gp-ei's in budget-40 runs (``runs_cost``: :data:`RUNS_COST_COMMAND`'s output folder), and each
    physics method's proposals (where the bench ran ``auto`` and not the method it chose, the two are
    one: same streams, same proposals)."""
    key = target_key(REGRET_TARGETS[-1])
    lines = ["| case | d | `auto` runs | to 1% | better GP | to 1% | ratio | cost × gp-ei | `pde-gp` | `pinn-bo` |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for case, (folder, case_file) in folders.items():
        summary = json.loads((folder / "summary.json").read_text())
        results = summary["results"]
        chosen = auto_choice(folder, case_file)
        gps = sorted((m for m in GP if m in results), key=lambda m: _to_target(results[m]))
        if chosen is None or not gps:
            continue
        mine = results.get("auto") or results.get(chosen)
        g = gps[0]
        (am, _), (gm, _) = _to_target(mine), _to_target(results[g])
        ratio = "—" if math.isinf(am) else ("< 1" if math.isinf(gm) else f"{am / gm:.2f}")
        cost_text = run_cost(None if runs_cost is None else runs_cost / case, chosen)
        physics = " | ".join(_proposals((results.get(m) or (mine if m == chosen else {})).get(key)) for m in PHYSICS)
        run = next(iter(sorted((folder / "runs").glob("*/*/summary.json"))), None)
        dim = len(json.loads(run.read_text()).get("variables") or []) if run is not None else 0
        lines.append(f"| {case} | {dim or '—'} | `{chosen}` | {_proposals(mine.get(key))} "
                     f"| `{g}` | {_proposals(results[g].get(key))} | {ratio} | {cost_text} | {physics} |")
    return lines


def step_cost_section(path: Path | None) -> list[str]:
    """Seconds per proposal at 40, 200 and 1000 observations (benchmarks/step_cost.py)."""
    if path is None or not path.exists():
        return ["Not measured yet: `" + GROWTH_COMMAND + "`.", ""]
    data = json.loads(path.read_text())
    ts = data["t"]
    lines = ["| case | method | " + " | ".join(f"t = {t}" for t in ts) + " | × gp-ei |",
             "|---|---|" + "---|" * (len(ts) + 1)]
    for case, entry in data["cases"].items():
        rows = entry["rows"]
        for method, cells in rows.items():
            text = [f"{c['seconds']:.3g}" + (f" ({c['warm']:.3g} warm, {c['refit']:.3g} refit)" if "refit" in c else "")
                    for c in cells]
            ratios = ", ".join(f"{c['seconds'] / g['seconds']:.2g}" for c, g in zip(cells, rows.get("gp-ei", [])))
            lines.append(f"| {case} (d = {entry['dim']}) | `{method}` | " + " | ".join(text) + f" | {ratios or '—'} |")
    lines += ["", f"`{data['command']}`; commit {data['commit']}, {data['machine']}, {data['device']}, "
              f"{data['threads']} torch thread(s), {data['date']}.", ""]
    return lines


REFIT_COMMAND = ("python benchmarks/refit_outcomes.py CASE ROOT/CASE/runs/METHOD "
                 "--output bench-results/refits/CASE.json")


def refit_section(folder: Path | None) -> list[str]:
    """Where pde-gp's long starts end at its due refits, and what the deficit gate skips
    (benchmarks/refit_outcomes.py, one file per case)."""
    out = ["### Where a refit's long starts end", "",
           "pde-gp's fits replayed on finished runs (benchmarks/refit_outcomes.py): at every due refit after the first "
           "fit, whether the long starts' best evidence beat the warm fit's by more than 0.1 nats (won), came within "
           "0.1 (tied: the same basin) or fell behind (lost), and the refits the deficit gate skips "
           "(docs/algorithms.md, \"PDE-GP\"); a skipped refit whose long starts end behind the warm fit leaves the run "
           "as it was, the others are where a run with the gate can first differ. A run made at another commit is "
           "replayed under this commit's fits: its designs are a sample of histories, its fits this commit's.", "",
           "```bash", REFIT_COMMAND, "```", ""]
    found = sorted(folder.glob("*.json")) if folder is not None and folder.is_dir() else []
    if not found:
        return out + ["Not measured yet: run the command above for each case.", ""]
    out += ["| case | runs | refits | won | tied | lost | skipped | skipped, would have replaced the warm fit "
            "| runs made at |", "|---|---|---|---|---|---|---|---|---|"]
    commits, made_on = set(), set()
    for path in found:
        data = json.loads(path.read_text())
        t = data["tally"]
        commits.add(data["commit"])
        if "machine" in data:
            made_on.add(f"{data['machine']}, {data['date']}")
        out.append(f"| {data['case']} | {t['runs']} | {t['refits']} | {t['won']} | {t['tied']} | {t['lost']} "
                   f"| {t['skipped']} | {t['skipped_would_replace']} | {', '.join(data['runs_made_at'])} |")
    where = "".join(f"; {m}" for m in sorted(made_on))
    return out + ["", f"Replayed at commit {', '.join(sorted(commits))}{where}.", ""]
