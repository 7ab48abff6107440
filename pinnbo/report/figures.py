"""The figures of a run: best value and regret against evaluations (several objectives: the Pareto
front), and for 2-D problems with a field (the heat plate) the field with the evaluated designs;
each titled with the case, the method and the seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pinnbo.files import write_figure
from pinnbo.problem import Problem
from pinnbo.runner.history import History


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def run_title(case: dict | None, problem: Problem) -> str:
    """What a run's figures are titled with: the case, the method and the seed."""
    case = case or {}
    parts = [str(case.get("name") or problem.name), str(case.get("method") or ""),
             f"seed {case['seed']}" if case.get("seed") is not None else ""]
    return " · ".join(p for p in parts if p)


def convergence_figure(history: History, problem: Problem, title: str, recommended=None):
    """Best value so far and every evaluation against the evaluations; where f* is known, a second
    panel with the regret on a log axis (the last-mile progress a linear axis hides).
    ``recommended``: (evaluation counts, recommended design's true or predicted value) to draw too."""
    plt = pyplot()
    regret = history.simple_regret() if problem.optimum is not None else None
    fig, axes = plt.subplots(1, 2 if regret is not None else 1, figsize=(11 if regret is not None else 6, 4),
                             squeeze=False)
    ax = axes[0][0]
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
    if recommended is not None and len(recommended[0]):
        ax.plot(recommended[0], recommended[1], lw=1.5, ls="--", marker="o", ms=3, color="tab:purple",
                label="recommended design")
    if problem.optimum is not None:
        ax.axhline(problem.optimum, color="k", ls="--", lw=1, label="f*")
    initial = sum(r.phase == "initial" for r in history.evaluations)
    for a in axes[0]:
        if initial:
            a.axvline(initial + 0.5, color="tab:orange", ls=":", lw=1, label="end of initial design")
        a.set_xlabel("evaluations")
    ax.set_ylabel(f"value ({problem.sense})")
    ax.legend(loc="best", fontsize=8)
    if regret is not None:
        right = axes[0][1]
        shown_regret = np.where(regret > 0, regret, np.nan)
        right.plot(n, shown_regret, lw=2, color="tab:blue", label="regret of the best so far")
        if recommended is not None and len(recommended[0]):
            gap = problem.sign * (np.asarray(recommended[1], dtype=np.float64) - problem.optimum)
            right.plot(recommended[0], np.where(gap > 0, gap, np.nan), lw=1.5, ls="--", marker="o", ms=3,
                       color="tab:purple", label="regret of the recommended design")
        if np.isfinite(shown_regret).any():
            right.set_yscale("log")
        right.set_ylabel("simple regret |f* − best| (log scale)")
        right.legend(loc="best", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_convergence(history: History, problem: Problem, path: Path, title: str | None = None) -> None:
    save_figure(convergence_figure(history, problem, title or problem.name), path)


def plot_pareto(summary: dict, problem: Problem, path: Path, title: str | None = None) -> None:
    save_figure(pareto_figure(summary, problem, title or problem.name), path)


def pareto_figure(summary: dict, problem: Problem, title: str):
    """Several objectives: the first two objectives of every evaluation on the front, joined as the
    staircase they dominate, with the reference point (the report's summary gives them)."""
    plt = pyplot()
    names = list(problem.objectives)[:2]
    front = sorted(((e["values"][names[0]], e["values"][names[1]]) for e in summary.get("pareto_front") or []))
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    if front:
        xs, ys = zip(*front)
        ax.step(xs, ys, where="post", color="tab:blue", lw=1.5)
        ax.scatter(xs, ys, color="tab:blue", s=24, zorder=3, label=f"Pareto front ({len(front)} designs)")
    reference = summary.get("reference")
    if reference:
        ax.scatter([reference[names[0]]], [reference[names[1]]], marker="x", color="k", s=50, label="reference point")
    ax.set_xlabel(f"{names[0]} ({problem.objectives[names[0]]})")
    ax.set_ylabel(f"{names[1]} ({problem.objectives[names[1]]})")
    ax.set_title(f"{title}: Pareto front", fontsize=9)
    ax.legend(loc="best", fontsize=8)
    ax.margins(0.05)
    fig.tight_layout()
    return fig


def save_figure(fig, path: Path) -> None:
    """Write ``fig`` as a PNG through :func:`pinnbo.files.write_figure` (rendered to bytes, so a
    link at ``path`` is refused rather than followed) and close it."""
    try:
        write_figure(fig, Path(path))
    finally:
        pyplot().close(fig)


def field_norm(values: np.ndarray):
    """A colour scale for a field: linear, or symmetric-logarithmic where a few extreme values (a
    heat plate's hot corner) would squeeze the rest of the field into one colour."""
    from matplotlib.colors import SymLogNorm

    finite = values[np.isfinite(values)]
    if not len(finite):
        return None
    low, q1, q3, high = np.quantile(finite, [0.0, 0.25, 0.75, 1.0])
    spread = q3 - q1
    if spread > 0 and high - low > 20 * spread:
        return SymLogNorm(linthresh=max(spread, 1e-12), vmin=low, vmax=high)
    return None


def field_figure(history: History, problem: Problem, title: str):
    """The problem's true field (2-D problems that have one) with the evaluated designs."""
    plt = pyplot()
    xs, ys, values = problem.field_plot(160)
    values = np.asarray(values, dtype=np.float64)
    fig, ax = plt.subplots(figsize=(6, 5))
    # values[j, i] = f(xs[i], ys[j])
    mesh = ax.pcolormesh(xs, ys, values, shading="auto", cmap="viridis", norm=field_norm(values))
    fig.colorbar(mesh, ax=ax, label=f"true value ({problem.sense})")
    ax.margins(0.03)
    X = history.X()
    if len(X):
        phases = np.array([r.phase for r in history.evaluations])
        initial = phases == "initial"
        ax.scatter(X[initial, 0], X[initial, 1], c="cyan", s=20, marker="s", edgecolors="k", linewidths=0.4,
                   label="initial design", clip_on=False, zorder=3)
        ax.scatter(X[~initial, 0], X[~initial, 1], c="white", edgecolors="k", s=20, linewidths=0.6,
                   label="proposed", clip_on=False, zorder=3)
        if history.constrained:
            infeasible = np.array([r.feasible is False for r in history.evaluations], dtype=bool)
            ax.scatter(X[infeasible, 0], X[infeasible, 1], c="tab:red", marker="x", s=22, label="infeasible",
                       clip_on=False, zorder=3)
        best = history.best()
        if best is not None:
            ax.scatter([best.x[0]], [best.x[1]], c="lime", marker="*", s=200, edgecolors="k", label="best",
                       clip_on=False, zorder=4)
    names = problem.domain.names
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.set_title(f"{title}: true field and evaluated designs", fontsize=9)
    # Below the axes: inside them the legend would hide the points near a corner, where the heat
    # plates' optima are.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4, fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def plot_field(history: History, problem: Problem, path: Path, title: str | None = None) -> None:
    save_figure(field_figure(history, problem, title or problem.name), path)
