"""The report's figures (:mod:`pinnbo.report.page`), each a matplotlib figure built from a run's data.

Maps use perceptual colour maps (viridis for values, cividis for uncertainty, a log scale for
residuals, which span decades), every axis is labelled with its variable, the points are drawn by
phase and the legend sits outside the axes, so the corners where a heat plate's optimum lies stay
visible.
"""

from __future__ import annotations

import numpy as np

from pinnbo.problem import Problem
from pinnbo.report.figures import pyplot
from pinnbo.report.surrogate import ReportModel
from pinnbo.runner.history import History

#: Points per axis of a map, and per slice.
GRID = 64


def _axis(problem: Problem, i: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Encoded and physical values along variable ``i`` (n points; a discrete variable's levels)."""
    v = problem.domain.variables[i]
    encoded = v.levels if v.discrete else np.linspace(*v.encoded_bounds, n)
    return encoded, (np.exp(encoded) if v.kind == "log" else encoded)


def _label(problem: Problem, i: int) -> str:
    v = problem.domain.variables[i]
    return f"{v.name} (log scale)" if v.kind == "log" else v.name


def _scatter_points(ax, problem: Problem, X: np.ndarray, phases: list[str], best: np.ndarray | None,
                    dims: tuple[int, int]) -> None:
    """Evaluated designs (physical values) on a map over variables ``dims``, by phase, and the best."""
    if not len(X):
        return
    i, j = dims
    phases = np.asarray(phases)
    initial = phases == "initial"
    ax.scatter(X[initial, i], X[initial, j], c="cyan", s=20, marker="s", edgecolors="k", linewidths=0.4,
               label="initial design", clip_on=False, zorder=3)
    ax.scatter(X[~initial, i], X[~initial, j], c="white", s=20, edgecolors="k", linewidths=0.6,
               label="proposed", clip_on=False, zorder=3)
    if best is not None:
        ax.scatter([best[i]], [best[j]], c="lime", marker="*", s=200, edgecolors="k", label="best",
                   clip_on=False, zorder=4)


def _map(ax, fig, problem: Problem, xs, ys, Z, label: str, cmap: str, log: bool = False) -> None:
    from matplotlib.colors import LogNorm

    Z = np.asarray(Z, dtype=np.float64)
    norm = None
    if log:
        positive = Z[np.isfinite(Z) & (Z > 0)]
        if len(positive):
            norm = LogNorm(vmin=max(positive.min(), positive.max() * 1e-8), vmax=positive.max())
        Z = np.where(Z > 0, Z, np.nan)
    mesh = ax.pcolormesh(xs, ys, Z, shading="auto", cmap=cmap, norm=norm)
    fig.colorbar(mesh, ax=ax, label=label)
    ax.margins(0.03)   # the points on the edges stay whole


def _legend_below(ax) -> None:
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4, fontsize=7, frameon=False)


def map_dims(problem: Problem) -> tuple[int, int] | None:
    """The two variables a map is drawn over: the problem's two when both are numbers on an
    interval, or a PDE's own two inputs (the others held at the recommended design); else None."""
    variables = problem.domain.variables
    own = getattr(problem.pde, "own_inputs", None) if problem.pde is not None and not isinstance(problem.pde, dict) \
        else None
    if own is not None and len(own) == 2 and len(variables) > 2:
        names = list(problem.domain.names)
        return names.index(own[0]), names.index(own[1])
    if len(variables) == 2 and not any(v.discrete for v in variables):
        return 0, 1
    return None


def _grid(problem: Problem, dims: tuple[int, int], at: np.ndarray):
    i, j = dims
    ei, xs = _axis(problem, i, GRID)
    ej, ys = _axis(problem, j, GRID)
    EI, EJ = np.meshgrid(ei, ej)          # Z[b, a] at (xs[a], ys[b])
    points = np.tile(at, (EI.size, 1))
    points[:, i], points[:, j] = EI.ravel(), EJ.ravel()
    return xs, ys, points, EI.shape


def surrogate_maps(model: ReportModel, problem: Problem, X: np.ndarray, phases: list[str], at: np.ndarray,
                   best: np.ndarray | None, title: str):
    """Mean and standard deviation of the report's model over a map (:func:`map_dims`)."""
    plt = pyplot()
    dims = map_dims(problem)
    xs, ys, points, shape = _grid(problem, dims, at)
    mean, sd = model.predict(points)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, Z, label, cmap in ((axes[0], mean, "posterior mean", "viridis"),
                               (axes[1], sd, "posterior standard deviation", "cividis")):
        _map(ax, fig, problem, xs, ys, Z.reshape(shape), label, cmap)
        _scatter_points(ax, problem, X, phases, best, dims)
        _axes_labels(ax, problem, dims)
    held = _held(problem, dims, at)
    fig.suptitle(f"{title}: surrogate{held}")
    _legend_below(axes[0])
    fig.tight_layout()
    return fig


def residual_map(model: ReportModel, problem: Problem, X: np.ndarray, phases: list[str], at: np.ndarray,
                 best: np.ndarray | None, title: str):
    """|PDE residual| of the surrogate's mean over a map; None without a PDE."""
    dims = map_dims(problem)
    if dims is None or model.residual(at[None, :]) is None:
        return None
    plt = pyplot()
    xs, ys, points, shape = _grid(problem, dims, at)
    residual = model.residual(points)
    fig, ax = plt.subplots(figsize=(6, 4.8))
    _map(ax, fig, problem, xs, ys, residual.reshape(shape), "|PDE residual| of the mean", "magma", log=True)
    _scatter_points(ax, problem, X, phases, best, dims)
    _axes_labels(ax, problem, dims)
    ax.set_title(f"{title}: PDE residual of the surrogate{_held(problem, dims, at)}", fontsize=9)
    _legend_below(ax)
    fig.tight_layout()
    return fig


def _held(problem: Problem, dims, at: np.ndarray) -> str:
    others = [k for k in range(problem.domain.dim) if k not in dims]
    if not others:
        return ""
    values = problem.domain.values(at)
    return " (" + ", ".join(f"{problem.domain.names[k]} = {_short(values[k])}" for k in others) + ")"


def _short(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _axes_labels(ax, problem: Problem, dims) -> None:
    ax.set_xlabel(_label(problem, dims[0]))
    ax.set_ylabel(_label(problem, dims[1]))
    for k, setter in zip(dims, (ax.set_xscale, ax.set_yscale)):
        if problem.domain.variables[k].kind == "log":
            setter("log")


def surrogate_slices(model: ReportModel, problem: Problem, X: np.ndarray, y: np.ndarray, at: np.ndarray,
                     title: str):
    """One panel per variable: the mean ± 2 sd along it through the recommended design ``at``
    (a discrete variable: at each level), and the evaluations' values against it. One variable:
    the whole curve."""
    plt = pyplot()
    d = problem.domain.dim
    cols = min(d, 3)
    rows = -(-d // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for k in range(d):
        ax = axes[k // cols][k % cols]
        v = problem.domain.variables[k]
        encoded, physical = _axis(problem, k, 200)
        points = np.tile(at, (len(encoded), 1))
        points[:, k] = encoded
        mean, sd = model.predict(points)
        values = np.asarray([row[k] for row in X], dtype=object)
        if v.discrete:
            labels = list(v.choices) if v.kind == "choice" else [str(int(e)) for e in encoded]
            positions = np.arange(len(encoded))
            ax.errorbar(positions, mean, yerr=2 * sd, fmt="o", color="tab:blue", capsize=4,
                        label="mean ± 2 sd")
            observed_positions = [labels.index(str(val)) if v.kind == "choice" else labels.index(str(int(val)))
                                  for val in values]
            ax.scatter(np.asarray(observed_positions) + 0.15, y, s=10, color="gray", alpha=0.6, label="evaluations")
            ax.set_xticks(positions, labels, rotation=30 if len(labels) > 4 else 0, fontsize=8)
        else:
            ax.plot(physical, mean, color="tab:blue", lw=1.5, label="mean")
            ax.fill_between(physical, mean - 2 * sd, mean + 2 * sd, color="tab:blue", alpha=0.2, label="± 2 sd")
            ax.scatter(values.astype(float), y, s=10, color="gray", alpha=0.6, label="evaluations")
            if v.kind == "log":
                ax.set_xscale("log")
            at_value = problem.domain.values(at)[k]
            ax.axvline(float(at_value), color="k", ls=":", lw=1, label="recommended")
        ax.set_xlabel(_label(problem, k))
        ax.set_ylabel(f"value ({problem.sense})" if k % cols == 0 else "")
    for k in range(d, rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    axes[0][0].legend(fontsize=7, loc="best")
    fig.suptitle(f"{title}: surrogate" + (" through the recommended design" if d > 1 else ""))
    fig.tight_layout()
    return fig


def importance_figure(problem: Problem, total: np.ndarray, title: str):
    """Each variable's total Sobol index of the surrogate's mean, largest first."""
    plt = pyplot()
    order = np.argsort(total)
    names = [problem.domain.names[i] for i in order]
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.35 * len(names) + 1))
    ax.barh(names, total[order], color="tab:blue")
    ax.set_xlabel("total Sobol index of the surrogate's mean (share of its variance)")
    ax.set_xlim(0, max(1.0, float(total.max()) * 1.05))
    ax.set_title(f"{title}: which variables matter", fontsize=9)
    fig.tight_layout()
    return fig


def constraints_figure(problem: Problem, rows: list[dict], title: str):
    """Every constraint's value (true where known) at each evaluation, c ≤ 0 feasible."""
    plt = pyplot()
    names = [c.name for c in problem.constraints]
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        n = np.array([r["number"] + 1 for r in rows if r.get(f"constraint_{name}") is not None])
        c = np.array([r.get(f"constraint_true_{name}", r.get(f"constraint_{name}")) for r in rows
                      if r.get(f"constraint_{name}") is not None], dtype=np.float64)
        ok = c <= 0
        ax.scatter(n[ok], c[ok], s=12, color="tab:green", label="satisfied")
        ax.scatter(n[~ok], c[~ok], s=14, color="tab:red", marker="x", label="violated")
        ax.axhline(0.0, color="k", lw=1)
        ax.set_xlabel("evaluation")
        ax.set_ylabel(f"{name} (≤ 0 feasible)")
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(f"{title}: constraints")
    fig.tight_layout()
    return fig


def timings_figure(rows: list[dict], title: str):
    """Seconds per evaluation: the method's proposal and the oracle's evaluation."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for key, label, color in (("ask_seconds", "proposal (method)", "tab:blue"),
                              ("oracle_seconds", "evaluation (oracle)", "tab:orange")):
        points = [(r["number"] + 1, r[key]) for r in rows if r.get(key) is not None and r[key] > 0]
        if points:
            n, s = zip(*points)
            ax.plot(n, s, marker=".", lw=1, color=color, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("seconds")
    ax.set_title(f"{title}: timings", fontsize=9)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def fitted(history: History, problem: Problem, seed: int, noise) -> tuple[ReportModel, list] | None:
    """The report's model of ``history`` and the evaluations it was fitted to; None with fewer than
    three successes or a constant value (nothing to model), or with several objectives."""
    if problem.objectives:
        return None
    ok = [r for r in history.evaluations if history.counts(r) and r.y is not None] or \
        [r for r in history.evaluations if r.ok and r.y is not None]
    if len(ok) < 3 or np.ptp([r.y for r in ok]) == 0:
        return None
    noisy = noise is not None or problem.noise_std > 0 or any(r.true is None for r in ok)
    return ReportModel(problem, [r.x for r in ok], [r.y for r in ok], seed, noisy), ok


def designs(history: History, problem: Problem) -> np.ndarray:
    """The evaluated designs as numbers (a log variable's value, an integer, a choice's index)."""
    domain = problem.domain
    if domain.plain:
        return history.X()
    return np.array([domain.physical(domain.encode(r.x)) for r in history.evaluations])


def surrogate_figure(model: ReportModel, ok: list, history: History, problem: Problem, at: np.ndarray, title: str):
    """Maps of the mean and sd where :func:`map_dims` finds two variables, else slices (a curve in 1-D)."""
    X = designs(history, problem)
    best = history.best()
    best_x = None if best is None else X[[r.index for r in history.evaluations].index(best.index)]
    if map_dims(problem) is not None:
        return surrogate_maps(model, problem, X, [r.phase for r in history.evaluations], at, best_x, title)
    return surrogate_slices(model, problem, [r.x for r in ok], np.array([r.y for r in ok], dtype=np.float64), at,
                            title)
