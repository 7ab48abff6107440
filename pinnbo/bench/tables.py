"""What a bench case leaves: the table (markdown and terminal), curves.csv and the convergence figure."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Callable

import numpy as np
from rich.table import Table

from pinnbo.bench.options import seeds_text
from pinnbo.bench.plan import CasePlan
from pinnbo.bench.statistics import REGRET_TARGETS, target_key
from pinnbo.files import make_folder, write_json, write_text
from pinnbo.report.figures import pyplot, save_figure
from pinnbo.report.format import fmt


# Columns of the table: (header, cell(summary, method) -> text); constrained cases add theirs
# (best feasible, seeds without one, feasible fraction, violation) in table_columns.
def _pm(stats: dict | None, digits: int = 5) -> str:
    if not stats or stats.get("mean") is None:
        return "—"
    return fmt(stats["mean"], digits) + ("" if stats.get("se") is None else f" ± {fmt(stats['se'], 2)}")


def _test_cell(summary: dict, method: str, key: str, tests: dict | None = None) -> str:
    tests = tests or summary.get("tests")
    if not tests or method == tests["reference"]:
        return "—"
    value = tests["baselines"].get(method, {}).get(key)
    if value is None:
        return "—"
    text = f"{value:.2g}"
    if key == "p_adjusted" and value <= tests["alpha"]:
        text += " *"
    return text


def _proposals_cell(stats: dict | None) -> str:
    """Median proposals to a target and the runs that got there: "12 [9/10]", "— [3/10]" when
    fewer than half did."""
    if not stats or not stats["n"]:
        return "—"
    median = "—" if stats["median"] is None else fmt(stats["median"], 3)
    return f"{median} [{stats['hits']}/{stats['n']}]"


def _percent(stats: dict) -> dict:
    """A fraction's mean ± s.e. in percent."""
    return {k: (None if stats.get(k) is None else 100.0 * stats[k]) for k in ("mean", "se")}


def _runs_cell(result: dict) -> str:
    text = f"{result['completed']}/{result['runs']}"
    return text + (f" ({len(result['failed_runs'])} failed)" if result["failed_runs"] else "")


def own_phases(summary: dict) -> list[str]:
    """The methods' own phases whose best-without the case's results hold (GP-UCB+'s exploration)."""
    keys = (k for m in summary["methods"] for k in summary["results"][m] if k.startswith("final_best_without_"))
    return [k[len("final_best_without_"):] for k in dict.fromkeys(keys)]


def table_columns(summary: dict) -> list[tuple[str, Callable[[dict, str], str]]]:
    """(header, cell(summary, method) -> text), explained in the notes of :func:`markdown_table`."""
    r = lambda m: summary["results"][m]  # noqa: E731
    constrained = "constraints" in summary
    columns = [
        ("method", lambda s, m: m),
        ("runs", lambda s, m: _runs_cell(r(m))),
        ("hypervolume" if "objectives" in summary else "best feasible" if constrained else "best",
         lambda s, m: _pm(r(m)["final_best"])),
    ]
    if constrained:
        columns.append(("no feasible", lambda s, m: f"{len(r(m)['no_feasible_seeds'])}/{r(m)['completed']}"))
    if summary["optimum"] is not None:
        columns.append(("regret", lambda s, m: _pm(r(m)["simple_regret"])))
        columns += [(f"to {100 * t:g}%", lambda s, m, key=target_key(t): _proposals_cell(r(m).get(key)))
                    for t in REGRET_TARGETS]
        columns.append(("log₁₀ r", lambda s, m: _pm(r(m).get("mean_log10_regret"), 3)))
    if all("recommended_regret" in r(m) for m in summary["methods"]):
        # Under noise: the true regret of the design each run recommends, and of its best observed one.
        columns += [("regret (recommended)", lambda s, m: _pm(r(m)["recommended_regret"])),
                    ("regret (best observed)", lambda s, m: _pm(r(m)["observed_best_regret"]))]
    for phase in own_phases(summary):
        key = f"final_best_without_{phase}"
        columns.append((f"best w/o {phase}", lambda s, m, key=key: _pm(r(m).get(key))))
    if constrained:
        columns += [("feasible %", lambda s, m: _pm(_percent(r(m)["feasible_fraction"]), 3)),
                    ("violation", lambda s, m: _pm(r(m)["cumulative_violation"], 3))]
    columns += [
        ("s/iter", lambda s, m: _pm(r(m)["seconds_per_iteration"], 3)),
        ("failed", lambda s, m: str(r(m)["failed_evaluations"])),
    ]
    if summary.get("tests"):
        columns += [("p", lambda s, m: _test_cell(s, m, "p_value")),
                    ("p (BH)", lambda s, m: _test_cell(s, m, "p_adjusted"))]
        if summary["tests"].get("efficiency"):
            target = summary["tests"]["efficiency"]["target"]
            columns.append((f"p to {100 * target:g}% (BH)",
                            lambda s, m: _test_cell(s, m, "p_adjusted", s["tests"]["efficiency"])))
    return columns


def table_rows(summary: dict) -> tuple[list[str], list[list[str]]]:
    columns = table_columns(summary)
    return [c[0] for c in columns], [[cell(summary, m) for _, cell in columns] for m in summary["methods"]]


def _caption(summary: dict) -> str:
    seeds = summary["seeds"]
    optimum = "unknown" if summary["optimum"] is None else fmt(summary["optimum"])
    return (f"{summary['case']} ({summary['problem']}, {summary['sense']}, f* {optimum}): budget "
            f"{summary['budget']} incl. {summary['initial_points']} initial points, seeds "
            f"{seeds_text(seeds)}" + (", smoke" if summary["smoke"] else ""))


def table_notes(summary: dict) -> list[str]:
    constrained = "constraints" in summary
    if constrained:
        notes = [f"best feasible: mean ± standard error, over the seeds that found a feasible point, of the best "
                 f"true (noise-free) value among feasible evaluations (every c_i <= 0 on true values) after the last "
                 f"evaluation ({summary['sense']}); no feasible: seeds that found none / completed runs.",
                 "feasible %: percentage of successful evaluations that were feasible; violation: cumulative "
                 "violation Σ_t Σ_i max(c_i(x_t), 0) over the run (true values); mean ± standard error over seeds."]
    else:
        notes = [f"best: mean ± standard error over seeds of the best true (noise-free) value after the last "
                 f"evaluation ({summary['sense']})."]
    if "objectives" in summary:
        reference = ", ".join(f"{n} {fmt(v)}" for n, v in zip(summary["objectives"], summary["hypervolume_reference"]))
        notes.append(f"hypervolume: several objectives ({', '.join(f'{n} ({s})' for n, s in summary['objectives'].items())}): "
                     f"the hypervolume dominated by the evaluations (true values; feasible ones with constraints) "
                     f"against the reference point ({reference}, minimised values), mean ± standard error over "
                     f"seeds; f* below is {summary.get('optimum_is', 'known')}, and m0 the hypervolume of the "
                     "seed's initial design.")
    if summary["optimum"] is not None:
        notes.append(f"regret: simple regret |f* − best| with f* = {fmt(summary['optimum'])}"
                     + (" (seeds with a feasible point)." if constrained else "."))
    if summary["optimum"] is not None:
        horizon = summary["budget"] - summary["initial_points"]
        notes.append("to 10%, to 1%: proposals after the initial design until the normalised regret "
                     "r_n = |f* − best_n| / |f* − m0| (best_n feasible with constraints; m0: the median true value of "
                     "the seed's initial design, the same for every method) is at most 0.1 or 0.01; median over the runs [runs that got there / "
                     f"runs]; a run that never did counts as more than the {horizon} proposals of the budget, and "
                     "the median is — when fewer than half got there. log₁₀ r: the mean of log₁₀ r_n over the "
                     "proposals (lower is better; it rewards getting there early), mean ± standard error.")
    if all("recommended_regret" in summary["results"][m] for m in summary["methods"]):
        notes.append("regret (recommended), regret (best observed): under noise, the true regret of the design each "
                     "run recommends (the evaluated design with the best posterior mean) and of the design with the "
                     "best observed (noisy) value: what a user who sees only measurements would pick.")
    for phase in own_phases(summary):
        notes.append(f"best w/o {phase}: the same, leaving out the evaluations of phase {phase} (GP-UCB+'s and "
                     "EXPLOIT+'s uniformly random points are exploration); the budget still counts them. The tests "
                     "use best.")
    notes += ["s/iter: seconds per iteration, surrogate fit + acquisition (oracle excluded), mean over the "
              "optimizer-phase evaluations of each run, then over runs.",
              "failed: failed evaluations (oracle errors or non-finite values) over all runs; runs: complete/planned."]
    tests = summary.get("tests")
    if tests:
        better = "lower" if summary["sense"] == "minimize" else "higher"
        notes.append(f"p: one-sided Welch t-test of {tests['reference']} against the method (H1: "
                     f"{tests['reference']}'s final best{' feasible' if constrained else ''} is {better}); p (BH): "
                     f"Benjamini–Hochberg adjusted across the {len(tests['baselines'])} baseline(s); * significant at "
                     f"{tests['alpha']}.")
        if tests.get("efficiency"):
            notes.append(f"p to 1% (BH): one-sided Mann–Whitney U test of {tests['reference']} against the method on "
                         "the proposals to 1% (H1: fewer), runs that never got there ranked last, "
                         "Benjamini–Hochberg adjusted across the baselines.")
        if constrained and tests.get("infeasible_seed_value") is not None and \
                any(summary["results"][m]["no_feasible_seeds"] for m in summary["methods"]):
            notes.append(f"In the tests (not in the means), a seed without a feasible point counts as "
                         f"{fmt(tests['infeasible_seed_value'])}, the worst final best-feasible value of any run of "
                         "the case.")
    return notes


def markdown_table(summary: dict) -> str:
    headers, rows = table_rows(summary)
    lines = [f"# {summary['case']}", "", _caption(summary), "",
             "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += [""] + [f"- {note}" for note in table_notes(summary)]
    return "\n".join(lines) + "\n"


def rich_table(summary: dict) -> Table:
    headers, rows = table_rows(summary)
    table = Table(title=_caption(summary), title_justify="left")
    for header in headers:
        # fold, never an ellipsis: a cut number (1.0266e-…) is a wrong number
        table.add_column(header, justify="left" if header == "method" else "right", overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def write_curves_csv(path: Path, rows: list[list], constrained: bool = False) -> None:
    """curves.csv; a constrained case adds the feasible count and the cumulative violation so far."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["method", "seed", "evaluation", "best_true", "simple_regret", "normalised_regret"]
                    + (["n_feasible", "cumulative_violation"] if constrained else []))
    for method, seed, k, *values in rows:
        writer.writerow([method, seed, k] + ["" if v is None else repr(v) for v in values])
    write_text(path, text.getvalue())


def plot_bench_convergence(summary: dict, path: Path) -> None:
    save_figure(bench_convergence_figure(summary), path)


def bench_convergence_figure(summary: dict):
    """Mean best so far ± s.e. per method; beside it, where f* is known, the median normalised regret
    (log scale) with its interquartile band."""
    plt = pyplot()
    regret = summary["optimum"] is not None and any(
        summary["results"][m].get("median_regret_curve") for m in summary["methods"])
    fig, axes = plt.subplots(1, 2 if regret else 1, figsize=(12, 4.2) if regret else (6.5, 4.2), squeeze=False)
    ax = axes[0, 0]
    n = np.arange(1, summary["budget"] + 1)
    constrained = "constraints" in summary
    for method in summary["methods"]:
        result = summary["results"][method]
        if not result["completed"]:
            continue
        mean = np.array([np.nan if v is None else v for v in result["mean_curve"]])
        se = np.array([0.0 if v is None else v for v in result["se_curve"]])
        (line,) = ax.plot(n, mean, lw=2, label=f"{method} (n={result['completed']})")
        ax.fill_between(n, mean - se, mean + se, color=line.get_color(), alpha=0.2, lw=0)
        quantiles = result.get("median_regret_curve") if regret else None
        if quantiles:
            q = {k: np.array([np.nan if v is None else max(v, 1e-8) for v in quantiles[k]], dtype=float)
                 for k in ("q25", "median", "q75")}
            axes[0, 1].plot(n, q["median"], lw=2, color=line.get_color(), label=method)
            axes[0, 1].fill_between(n, q["q25"], q["q75"], color=line.get_color(), alpha=0.15, lw=0)
    if summary["optimum"] is not None:
        ax.axhline(summary["optimum"], color="k", ls="--", lw=1, label="f*")
    for a in axes[0]:
        a.axvline(summary["initial_points"] + 0.5, color="gray", ls=":", lw=1, label="end of initial design")
        a.set_xlabel("evaluations")
    ax.set_ylabel(f"best {'feasible ' if constrained else ''}true value ({summary['sense']})")
    ax.set_title(f"{summary['case']}: mean best {'feasible ' if constrained else ''}so far ± s.e."
                 + (" (seeds with a feasible point)" if constrained else ""))
    ax.legend(loc="best", fontsize=8)
    if regret:
        right = axes[0, 1]
        right.set_yscale("log")
        for target in REGRET_TARGETS:
            right.axhline(target, color="k", ls="--", lw=0.8)
        right.set_ylabel("normalised regret |f* − best| / |f* − m0|")
        right.set_title("median over seeds, 25–75 % band")
    fig.tight_layout()
    return fig


def write_case_outputs(case_plan: CasePlan, summary: dict, rows: list[list]) -> None:
    make_folder(case_plan.folder)
    write_curves_csv(case_plan.folder / "curves.csv", rows, case_plan.constrained)
    write_text(case_plan.folder / "table.md", markdown_table(summary))
    write_json(case_plan.folder / "summary.json", summary)
    plot_bench_convergence(summary, case_plan.folder / "convergence.png")
