"""The figures of a run: best value against evaluations (several objectives: the Pareto front), and
for 2-D problems with a field (the heat plate) the field with the queried points."""

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


def plot_convergence(history: History, problem: Problem, path: Path) -> None:
    plt = pyplot()
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


def plot_pareto(summary: dict, problem: Problem, path: Path) -> None:
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
    ax.set_title(f"{problem.name}: Pareto front")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def save_figure(fig, path: Path) -> None:
    """Write ``fig`` as a PNG through :func:`pinnbo.files.write_figure` (rendered to bytes, so a
    link at ``path`` is refused rather than followed) and close it."""
    try:
        write_figure(fig, Path(path))
    finally:
        pyplot().close(fig)


def plot_field(history: History, problem: Problem, path: Path) -> None:
    plt = pyplot()
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
