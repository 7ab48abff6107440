"""``pinnbo report``: one self-contained HTML page of what a run knows (docs/guide/looking-at-a-run.md).

The page embeds its figures as PNG data (and a copy of each lies in ``report/`` beside it): no
script, no font and no style sheet is loaded from anywhere, and a content security policy forbids
it, so the file opens on an air-gapped machine and can be mailed. While a run is under way
(``pinnbo run --report``) the page asks the browser to reload it every few seconds.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import numpy as np

from pinnbo.files import make_folder, png_bytes, write_bytes, write_text
from pinnbo.pareto import hypervolume_curve
from pinnbo.problem import Problem
from pinnbo.report.figures import convergence_figure, field_figure, pareto_figure, pyplot, run_title
from pinnbo.report.format import fmt
from pinnbo.report.page_figures import (constraints_figure, designs, fitted, importance_figure, map_dims,
                                        residual_map, surrogate_figure, timings_figure)
from pinnbo.report.recommend import recommend
from pinnbo.report.summary import summarize
from pinnbo.results import RunResults, read_run
from pinnbo.runner.case import noise_model
from pinnbo.runner.folder import REPORT_FIGURES as FIGURES
from pinnbo.runner.history import History

REPORT = "report.html"
#: Seconds between reloads of a live report.
REFRESH_SECONDS = 10
#: Points along the run at which a noisy run's recommended design is recomputed for the curve.
RECOMMENDATION_POINTS = 8

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1150px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { padding: 0.2em 0.8em; text-align: left;
vertical-align: top; border-bottom: 1px solid #eee; } th { font-weight: 600; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; max-width: 900px; } .note { color: #555; font-size: 0.9em; }
.running { background: #fff6d5; padding: 0.4em 0.8em; border-radius: 4px; display: inline-block; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
"""
#: Nothing outside the page: images from data: addresses, styles inline, no script at all.
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


class Page:
    """The figures and sections of a report as they are built, rendered to HTML at the end."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.sections: list[str] = []

    def section(self, heading: str, body: str) -> None:
        self.sections.append(f"<section><h2>{html.escape(heading)}</h2>\n{body}</section>")

    def figure(self, name: str, fig, caption: str) -> str:
        """The figure as an <img> of its PNG data; a copy is written to report/<name>.png."""
        try:
            data = png_bytes(fig, dpi=100)
        finally:
            pyplot().close(fig)
        if self.folder is not None:
            write_bytes(self.folder / FIGURES / f"{name}.png", data)
        encoded = base64.b64encode(data).decode()
        return (f'<figure id="{name}"><img alt="{html.escape(caption)}" src="data:image/png;base64,{encoded}">'
                f"<figcaption>{html.escape(caption)}</figcaption></figure>\n")


def table(rows: list[tuple[str, str]]) -> str:
    return "<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows) \
        + "</table>\n"


def document(title: str, body: str, live: bool) -> str:
    refresh = f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">' if live else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">{refresh}'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def run_history(results: RunResults, problem: Problem) -> History:
    history = History(problem.sense, None, problem.optimum, [c.name for c in problem.constraints],
                      problem.domain.names)
    history.evaluations, history.timings = list(results.evaluations), list(results.timings)
    return history


def pde_text(problem: Problem) -> str | None:
    """The problem's PDE as a person writes it: ∂²T/∂x² + ∂²T/∂y² = 0."""
    from sympy.core.function import AppliedUndef
    from sympy.printing.str import StrPrinter

    powers = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")

    class Printer(StrPrinter):
        def _print_Derivative(self, expr):
            order = sum(int(c) for _, c in expr.variable_count)
            inner = expr.expr.func.__name__ if isinstance(expr.expr, AppliedUndef) else f"({self._print(expr.expr)})"
            below = "".join(f"∂{v}" + (str(c).translate(powers) if c > 1 else "") for v, c in expr.variable_count)
            return f"∂{str(order).translate(powers) if order > 1 else ''}{inner}/{below}"

        def _print_Function(self, expr):
            return expr.func.__name__ if isinstance(expr, AppliedUndef) else super()._print_Function(expr)

    pdes = problem.pde if isinstance(problem.pde, dict) else {"": problem.pde} if problem.pde is not None else {}
    printer, lines = Printer(), []
    for name, pde in pdes.items():
        for lhs, rhs in zip(getattr(pde, "lhs", ()), getattr(pde, "rhs", ())):
            lines.append(f"{name + ': ' if name else ''}{printer.doprint(lhs)} = {printer.doprint(rhs)}")
    return "\n".join(lines) or None


def write_run_report(folder: Path, problem: Problem, *, live: bool = False) -> Path:
    """Write ``folder``/report.html for the run in ``folder`` (module docstring); its path."""
    folder = Path(folder)
    results = read_run(folder)
    make_folder(folder / FIGURES)
    text = run_report_html(results, problem, live=live, folder=folder)
    write_text(folder / REPORT, text)
    return folder / REPORT


def run_report_html(results: RunResults, problem: Problem, *, live: bool = False, folder: Path | None = None) -> str:
    case = results.case
    history = run_history(results, problem)
    title = run_title(case, problem)
    seed = int(case.get("seed") or 0)
    noise = noise_model(case.get("observation_noise"))
    summary = results.summary
    if summary is None or summary.get("evaluations") != len(history):   # unfinished, or resumed since
        summary = summarize(history, problem, case) if not live or len(history) else None
    page = Page(folder)
    budget = case.get("budget")
    head = f"<h1>{html.escape(title)}</h1>\n"
    if live:
        head += (f'<p class="running">running: {len(history)} of {budget} evaluations recorded; this page reloads '
                 f"every {REFRESH_SECONDS} s</p>\n")
    page.sections.append(head + _case_table(case, problem, history, summary))

    if problem.objectives:
        _pareto(page, history, problem, summary, title)
    elif len(history):
        _convergence(page, history, problem, title, seed, noise)
    _surrogate(page, history, problem, summary, title, seed, noise)
    if problem.field_plot is not None and problem.domain.dim == 2 and len(history):
        page.section("True field", page.figure("field", field_figure(history, problem, title),
                                               "The problem's true field (known for this problem) and the evaluated "
                                               "designs."))
    if problem.constraints and len(history):
        rows = results.records()
        feasible = summary.get("feasible_fraction") if summary else None
        note = "" if feasible is None else f'<p class="note">feasible fraction: {fmt(feasible, 3)}</p>'
        page.section("Constraints", note + page.figure("constraints", constraints_figure(problem, rows, title),
                                                       "Each constraint at every evaluation (true values where "
                                                       "known); a design is feasible where all are ≤ 0."))
    if len(history):
        _timings(page, results, title)
    versions = (summary or {}).get("versions")
    if versions:
        page.sections.append(f'<p class="note">made by {html.escape(", ".join(f"{k} {v}" for k, v in versions.items()))}'
                             "</p>")
    return document(title, "\n".join(page.sections), live)


def _case_table(case: dict, problem: Problem, history: History, summary: dict | None) -> str:
    chosen = (summary or {}).get("method")      # a dict only where auto chose (report.summary)
    method = f"auto → {chosen['name']} ({chosen['reason']})" if isinstance(chosen, dict) else str(case.get("method"))
    rows = [("problem", problem.name), ("method", method), ("seed", str(case.get("seed"))),
            ("evaluations", f"{len(history)} of {case.get('budget')} ({history.n_failed} failed)"),
            ("variables", "; ".join(f"{v.name}: {v.describe()}" for v in problem.domain.variables))]
    pde = pde_text(problem)
    if pde:
        rows.append(("PDE", pde))
    if summary:
        if summary.get("best") is not None:
            best = summary["best"]
            rows.append(("best" + (" feasible" if history.constrained else ""),
                         f"{fmt(summary['best_value'])} at {_design(problem, best['x'])} (evaluation {best['index']})"))
        recommended = summary.get("recommended")
        if recommended is not None and recommended.get("predicted_sd"):
            rows.append(("recommended", f"{_design(problem, recommended['x'])}: predicted "
                                        f"{fmt(recommended['predicted'])} ± {fmt(recommended['predicted_sd'], 3)}"))
        if summary.get("optimum") is not None:
            rows.append(("f* (known)", fmt(summary["optimum"])))
        if summary.get("simple_regret") is not None:
            rows.append(("simple regret", fmt(summary["simple_regret"], 4)))
        if summary.get("hypervolume") is not None:
            rows.append(("hypervolume", fmt(summary["hypervolume"])))
    case_text = json.dumps({k: v for k, v in case.items() if v is not None}, indent=1, sort_keys=True)
    return table(rows) + f"<details><summary>the case</summary><pre>{html.escape(case_text)}</pre></details>\n"


def _design(problem: Problem, x: list) -> str:
    return "(" + ", ".join(f"{n} = {fmt(v, 4) if isinstance(v, float) else v}"
                           for n, v in zip(problem.domain.names, x)) + ")"


def _convergence(page: Page, history: History, problem: Problem, title: str, seed: int, noise) -> None:
    recommended = None
    noisy = noise is not None or problem.noise_std > 0 or any(r.ok and r.true is None for r in history.evaluations)
    if noisy and len(history) >= 3:
        counts = sorted({int(c) for c in np.linspace(3, len(history), RECOMMENDATION_POINTS)})
        points = []
        for count in counts:
            prefix = History(problem.sense, None, problem.optimum, history.constraint_names, history.variable_names)
            prefix.evaluations = history.evaluations[:count]
            entry = recommend(prefix, problem, seed, noise)
            if entry is not None:
                value = entry["true"] if entry["true"] is not None else entry["predicted"]
                points.append((count, value))
        recommended = tuple(zip(*points)) if points else None
    caption = "Best value so far (and every evaluation) against the number of evaluations"
    if problem.optimum is not None:
        caption += "; right: the simple regret on a log axis"
    if recommended is not None:
        caption += "; dashed: the recommended design (best posterior mean among the evaluated designs)"
    page.section("Convergence", page.figure("convergence", convergence_figure(history, problem, title, recommended),
                                            caption + "."))


def _pareto(page: Page, history: History, problem: Problem, summary: dict | None, title: str) -> None:
    if not summary:
        return
    body = page.figure("pareto", pareto_figure(summary, problem, title),
                       "The Pareto front of the evaluated designs and the reference point.")
    reference = summary.get("reference")
    if reference is not None and len(history) >= 2:
        names = list(problem.objectives)
        rows = [r for r in history.evaluations]
        values = np.array([[((r.objectives_true or r.objectives) or {}).get(n, np.nan) for n in names] for r in rows],
                          dtype=np.float64)
        ok = np.array([history.counts(r) and bool(r.objectives) for r in rows])
        curve = hypervolume_curve(values * problem.signs, ok, np.array([reference[n] for n in names]) * problem.signs)
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6, 3.6))
        ax.plot(np.arange(1, len(curve) + 1), curve, lw=2)
        ax.set_xlabel("evaluations")
        ax.set_ylabel("hypervolume dominated")
        ax.set_title(f"{title}: hypervolume", fontsize=9)
        fig.tight_layout()
        body += page.figure("hypervolume", fig, "The hypervolume the evaluated designs dominate, against the "
                                                "number of evaluations.")
    page.section("Pareto front", body)


def _surrogate(page: Page, history: History, problem: Problem, summary: dict | None, title: str, seed: int,
               noise) -> None:
    made = fitted(history, problem, seed, noise)
    if made is None:
        return
    model, ok = made
    recommended = (summary or {}).get("recommended") or (summary or {}).get("best")
    best = history.best()
    at = problem.domain.encode(recommended["x"] if recommended else (best.x if best is not None else ok[0].x))
    explain = ("A GP fitted to every successful evaluation (the same model for every method, so reports "
               "compare)")
    dims = map_dims(problem)
    if dims is not None:
        caption = f"{explain}: its mean (left) and standard deviation (right), with the evaluated designs."
    else:
        caption = (f"{explain}: its mean ± 2 standard deviations along each variable"
                   + (", the others held at the recommended design" if problem.domain.dim > 1 else "")
                   + ", and the evaluations' values.")
    page.section("Surrogate", page.figure("surrogate", surrogate_figure(model, ok, history, problem, at, title),
                                          caption))
    if dims is not None:
        X = designs(history, problem)
        best_x = None if best is None else X[[r.index for r in history.evaluations].index(best.index)]
        residual = residual_map(model, problem, X, [r.phase for r in history.evaluations], at, best_x, title)
        if residual is not None:
            page.section("PDE residual", page.figure(
                "residual", residual, "|N[m] − g| of the surrogate's mean m: where the data alone disagree with the "
                                      "declared PDE (small where the data pin the field down, or where the physics "
                                      "and the data agree)."))
    if problem.domain.dim >= 2:
        total = model.total_sobol(seed)
        rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{fmt(float(t), 3)}</td></tr>"
                       for n, t in sorted(zip(problem.domain.names, total), key=lambda p: -p[1]))
        page.section("Variable importance", page.figure(
            "importance", importance_figure(problem, total, title),
            "The total Sobol index of each variable for the surrogate's mean over the whole box: the share of its "
            "variance that goes with the variable, interactions included (near 0: the variable barely matters).")
            + f"<table><tr><th>variable</th><th>total Sobol index</th></tr>{rows}</table>")


def _timings(page: Page, results: RunResults, title: str) -> None:
    rows = results.records()
    ask = [r["ask_seconds"] for r in rows if r.get("ask_seconds") is not None]
    oracle = [r["oracle_seconds"] for r in rows if r.get("oracle_seconds") is not None]
    summary = table([("proposals", f"{fmt(float(np.sum(ask)), 3)} s in all, {fmt(float(np.mean(ask)), 3)} s each"
                      if ask else "not recorded"),
                     ("evaluations", f"{fmt(float(np.sum(oracle)), 3)} s in all, {fmt(float(np.mean(oracle)), 3)} s "
                      "each" if oracle else "not recorded")])
    page.section("Timings", summary + page.figure("timings", timings_figure(rows, title),
                                                  "Seconds per evaluation: the method's proposal and the oracle."))
