"""The calibration's figures: the samples over the surrogate density, and V̂ with the design points."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pinnbo.calibration.posterior import normalised_density
from pinnbo.calibration.surrogate import Surrogate
from pinnbo.problem import Box
from pinnbo.report.figures import pyplot, save_figure

#: Points per parameter of the 1-D curves.
CURVE_POINTS = 401
#: Points of the 1-D density grid (the paper's accuracy grid on [1, 14] has 1401).
DENSITY_GRID = 1401


def plot_density(values: np.ndarray, surrogate: Surrogate, domain: Box, folder: Path, posterior=None,
                 truth=None) -> None:
    """``density.png`` (one parameter: histogram over the normalised exp(V̂)) or ``pairs.png``;
    each with the Gaussian prior (``posterior``'s), the central 95% interval of the samples and,
    where the problem knows it, the true parameter."""
    plt = pyplot()
    names = domain.names
    truth = None if truth is None else np.asarray(truth, dtype=np.float64).reshape(-1)
    low, high = np.quantile(values, [0.025, 0.975], axis=0)

    def marks(ax, i: int, grid: np.ndarray, label: bool) -> None:
        if posterior is not None:
            m, v = float(posterior.prior_mean[i]), float(posterior.prior_variance[i])
            prior = np.exp(-0.5 * (grid - m) ** 2 / v) / np.sqrt(2 * np.pi * v)
            ax.plot(grid, prior, color="tab:gray", ls="--", lw=1, label="prior" if label else None)
        ax.axvspan(low[i], high[i], color="tab:orange", alpha=0.12, label="95% interval" if label else None)
        if truth is not None and i < len(truth):
            ax.axvline(truth[i], color="tab:red", lw=1.5, label="true value" if label else None)

    if domain.dim == 1:
        grid = np.linspace(domain.lower[0], domain.upper[0], DENSITY_GRID)
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.hist(values[:, 0], bins=60, density=True, color="tab:blue", alpha=0.5, label="samples")
        ax.plot(grid, normalised_density(surrogate(grid[:, None]), grid), color="k", lw=1.5,
                label="surrogate density exp(V̂)")
        marks(ax, 0, grid, True)
        ax.set_xlabel(names[0])
        ax.set_ylabel("posterior density")
        ax.set_title("posterior of the calibration", fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        save_figure(fig, folder / "density.png")
        return
    d = domain.dim
    fig, axes = plt.subplots(d, d, figsize=(2.6 * d, 2.6 * d), squeeze=False)
    for i in range(d):
        for j in range(d):
            ax = axes[i, j]
            if i == j:
                ax.hist(values[:, i], bins=50, density=True, color="tab:blue", alpha=0.6,
                        label="samples" if i == 0 else None)
                marks(ax, i, np.linspace(domain.lower[i], domain.upper[i], CURVE_POINTS), i == 0)
            elif i > j:
                ax.scatter(values[:, j], values[:, i], s=2, alpha=0.2, color="tab:blue")
                if truth is not None:
                    ax.scatter([truth[j]], [truth[i]], marker="x", color="tab:red", s=40, zorder=3)
            else:
                ax.axis("off")
            if i == d - 1:
                ax.set_xlabel(names[j])
            if j == 0 and i > 0:
                ax.set_ylabel(names[i])
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="upper right", fontsize=8)
    fig.suptitle("posterior of the calibration: pairs, prior (dashed), 95% intervals", fontsize=10)
    fig.tight_layout()
    save_figure(fig, folder / "pairs.png")


def plot_surrogate(surrogate: Surrogate, X: np.ndarray, V: np.ndarray, center: np.ndarray, domain: Box,
                   path: Path) -> None:
    """V̂ ± 2 sd along each parameter through ``center`` (the surrogate's maximiser), with the
    design points (projected onto that parameter)."""
    plt = pyplot()
    d = domain.dim
    fig, axes = plt.subplots(1, d, figsize=(5 * d, 3.6), squeeze=False)
    for i, ax in enumerate(axes[0]):
        line = np.repeat(center.reshape(1, d), CURVE_POINTS, axis=0)
        line[:, i] = np.linspace(domain.lower[i], domain.upper[i], CURVE_POINTS)
        mean, sd = surrogate.moments(line)
        ax.plot(line[:, i], mean, color="k", lw=1.5, label="surrogate V̂")
        ax.fill_between(line[:, i], mean - 2 * sd, mean + 2 * sd, color="gray", alpha=0.3, label="± 2 sd")
        ax.scatter(X[:, i], V, s=14, color="tab:red", zorder=3, label="design points")
        ax.set_xlabel(domain.names[i])
        ax.set_ylabel("V (log-posterior)")
        low = np.percentile(V, 10) if len(V) > 4 else V.min()
        ax.set_ylim(bottom=min(low, mean.max()) - 0.1 * (V.max() - low + 1e-12))
        if i == 0:
            ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
