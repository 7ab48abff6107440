"""What a run shows and leaves behind: the live display, summary.json and the figures.

The report only reads the history; it never changes a run.
"""

from __future__ import annotations

import math
import platform
import time
from importlib import metadata
from pathlib import Path

import numpy as np
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.segment import Segments
from rich.table import Table

from pinnbo.history import EXPLORATION, Evaluation, History, write_failure, write_json_atomic
from pinnbo.problem import Problem
from pinnbo.warm_start import IMPORTED


def fmt(value: float | None, digits: int = 6) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{value:.{digits}g}"


def stop_live(live: Live) -> None:
    """Stop a rich Live display. Off a terminal (a CI log, `2>&1 | tee`) rich prints the last frame
    without a final newline, and what follows on stdout would continue its last line: end it."""
    live.stop()
    if not live.console.is_terminal:
        live.console.line()


class LiveProgress:
    """Rich live display: evaluation k/budget, best so far, last value, s/iteration, ETA; with
    constraints the best *feasible* value and the number of feasible evaluations."""

    def __init__(self, console: Console | None = None, title: str = "") -> None:
        self.console = console or Console(stderr=True)
        self.title = title
        self.live: Live | None = None
        self.progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 console=self.console, transient=False)
        self.task = None
        self.iteration_seconds: list[float] = []
        self.last_tick = time.perf_counter()
        self.problem: Problem | None = None
        self.budget = 0

    def on_start(self, problem, settings, history) -> None:
        self.problem, self.budget = problem, settings.budget
        self.task = self.progress.add_task(self.title or problem.name, total=settings.budget, completed=len(history))
        self.live = Live(self._render(history, None), console=self.console, refresh_per_second=8, transient=False)
        self.live.start()
        self.last_tick = time.perf_counter()

    def on_evaluation(self, record: Evaluation, timing: dict, history: History) -> None:
        now = time.perf_counter()
        self.iteration_seconds.append(now - self.last_tick)
        self.last_tick = now
        self.progress.update(self.task, completed=len(history))
        if self.live is not None:
            self.live.update(self._render(history, record))

    def on_finish(self, history: History) -> None:
        self.stop()

    def stop(self) -> None:
        if self.live is not None:
            stop_live(self.live)
            self.live = None

    def _render(self, history: History, record: Evaluation | None):
        table = Table.grid(padding=(0, 2))
        best = history.best()
        recent = self.iteration_seconds[-10:]
        per_iteration = float(np.mean(recent)) if recent else None
        remaining = self.budget - len(history)
        eta = per_iteration * remaining if per_iteration is not None else None
        # escape: an oracle's error text is not rich markup ("[/x]" in it would crash the display)
        last = "—" if record is None else (
            fmt(record.y) if record.ok else f"[red]failed[/red] ({escape(record.error or '')})")
        if record is not None and record.feasible is False:
            last += " [yellow](infeasible)[/yellow]"
        table.add_row("best feasible" if history.constrained else "best so far",
                      fmt(None if best is None else (best.true if best.true is not None else best.y)),
                      "at", "—" if best is None else "(" + ", ".join(fmt(v, 5) for v in best.x) + ")")
        table.add_row("last value", last, "s/iteration", fmt(per_iteration, 3))
        if history.constrained:
            table.add_row("feasible", f"{history.n_feasible}/{history.n_ok}", "violation",
                          fmt(history.cumulative_violation()["total"], 4))
        regret = history.simple_regret()
        table.add_row("simple regret", fmt(None if regret is None or not len(regret) else float(regret[-1]), 4),
                      "ETA", "—" if eta is None else f"{eta:.0f} s")
        if history.n_failed:
            table.add_row("failed", str(history.n_failed), "", "")
        return Group(self.progress, table)


def versions() -> dict:
    out = {"python": platform.python_version(), "machine": platform.machine()}
    for package in ("pinnbo", "torch", "numpy", "scipy", "sympy", "py-pde", "botorch"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out


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
        "evaluations": len(history),
        "failed": history.n_failed,
        "failures": [{"index": r.index, "x": r.x, "error": r.error} for r in history.evaluations if not r.ok],
        "best": best_entry,
        "best_value": best_value,
        "optimum": problem.optimum,
        "optimum_location": None if problem.optimum_location is None else [float(v) for v in problem.optimum_location],
        "simple_regret": problem.simple_regret(best_value) if best_value is not None else None,
        "seconds_per_iteration": float(np.mean(ask)) if ask else None,
        "oracle_seconds_per_evaluation": float(np.mean(oracle)) if oracle else None,
        "case": case,
        "versions": versions(),
    }
    imported = sum(r.phase == IMPORTED for r in history.evaluations)
    if imported:
        summary["imported"] = imported
    if history.stopped is not None:
        summary["stopped"] = history.stopped
    if history.n_exploration:
        summary.update(exploration_summary(history, problem))
    if history.constrained:
        summary.update(constraint_summary(history, problem))
    return summary


def _best_entry(best: Evaluation | None) -> tuple[dict | None, float | None]:
    """A best evaluation as the summary records it, and its value (true where known, else observed)."""
    if best is None:
        return None, None
    return ({"index": best.index, "x": best.x, "observed": best.y, "true": best.true},
            best.true if best.true is not None else best.y)


def exploration_summary(history: History, problem: Problem) -> dict:
    """The keys a run with random exploration points (GP-UCB+, EXPLOIT+) adds to its summary: the
    best without those points, so both readings of Kim & Sanz-Alonso's regret are reported
    (REFERENCES §4); ``best_value`` counts every evaluation."""
    entry, value = _best_entry(history.best(without_phase=EXPLORATION))
    return {
        "exploration_evaluations": history.n_exploration,
        "best_without_exploration": entry,
        "best_value_without_exploration": value,
        "simple_regret_without_exploration": problem.simple_regret(value) if value is not None else None,
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
    """summary.json, convergence.png and, for 2-D problems with a field, field.png."""
    summary = summarize(history, problem, case)
    if history.folder is None:
        return summary
    write_json_atomic(history.folder / "summary.json", summary)
    plot_convergence(history, problem, history.folder / "convergence.png")
    if problem.domain.dim == 2 and problem.field_plot is not None:
        plot_field(history, problem, history.folder / "field.png")
    return summary


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_convergence(history: History, problem: Problem, path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    n = np.arange(1, len(history) + 1)
    ax.plot(n, history.best_so_far(), lw=2, label="best feasible so far" if history.constrained else "best so far")
    values = np.array([r.true if r.true is not None else (r.y if r.y is not None else np.nan)
                       for r in history.evaluations], dtype=np.float64)
    if history.constrained:
        feasible = np.array([r.feasible is True for r in history.evaluations], dtype=bool)
        ax.scatter(n[feasible], values[feasible], s=10, alpha=0.6, color="gray", label="feasible evaluations")
        ax.scatter(n[~feasible], values[~feasible], s=12, alpha=0.6, color="tab:red", marker="x",
                   label="infeasible evaluations")
    else:
        ax.scatter(n, values, s=10, alpha=0.5, color="gray", label="evaluations")
    if problem.optimum is not None:
        ax.axhline(problem.optimum, color="k", ls="--", lw=1, label="f*")
    initial = sum(r.phase == "initial" for r in history.evaluations)
    if initial:
        ax.axvline(initial + 0.5, color="tab:orange", ls=":", lw=1, label="end of initial design")
    ax.set_xlabel("evaluations")
    ax.set_ylabel(f"value ({problem.sense})")
    ax.set_title(problem.name)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` at its natural width even where the terminal is narrower: rich would
    otherwise squeeze and crop its columns, and a cut number (``1.0266e-…``) reads as a wrong one.
    The terminal then wraps the long lines; every digit is printed."""
    natural = console.measure(table, options=console.options.update(width=100_000)).maximum
    if natural <= console.width:
        console.print(table)
    else:  # rendered at its own width, printed uncropped (Console.print caps any width at its own)
        console.print(Segments(console.render(table, console.options.update_width(natural))), crop=False)


def save_figure(fig, path: Path) -> None:
    """Write ``fig`` as a PNG and close it; a failed write is a one-line :class:`WriteFailure`."""
    try:
        fig.savefig(path, dpi=110)
    except OSError as exc:
        raise write_failure(Path(path), exc) from None
    finally:
        _pyplot().close(fig)


def plot_field(history: History, problem: Problem, path: Path) -> None:
    plt = _pyplot()
    xs, ys, values = problem.field_plot(160)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    mesh = ax.pcolormesh(xs, ys, np.asarray(values), shading="auto", cmap="inferno")  # values[j, i] = f(xs[i], ys[j])
    fig.colorbar(mesh, ax=ax)
    X = history.X()
    if len(X):
        phases = np.array([r.phase for r in history.evaluations])
        ax.scatter(X[phases == "initial", 0], X[phases == "initial", 1], c="cyan", s=18, marker="s", label="initial")
        ax.scatter(X[phases != "initial", 0], X[phases != "initial", 1], c="white", edgecolors="k", s=18, label="proposed")
        if history.constrained:
            infeasible = np.array([r.feasible is False for r in history.evaluations], dtype=bool)
            ax.scatter(X[infeasible, 0], X[infeasible, 1], c="tab:red", marker="x", s=22, label="infeasible")
        best = history.best()
        if best is not None:
            ax.scatter([best.x[0]], [best.x[1]], c="lime", marker="*", s=160, edgecolors="k", label="best")
    names = problem.domain.names
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(f"{problem.name}: field and queried points")
    # Below the axes: inside them the legend would hide the points near a corner, where the heat
    # plates' optima are.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4, fontsize=7, frameon=False)
    fig.tight_layout()
    save_figure(fig, path)
