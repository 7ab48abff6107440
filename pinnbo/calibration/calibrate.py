"""From a finished design run to posterior samples: ``pinnbo calibrate`` after the run.

The design points are every successful evaluation of the run (its results folder); the surrogate
V̂ is fitted to them (:mod:`pinnbo.calibration.surrogate`), exp(V̂) is sampled in the box
(:mod:`pinnbo.calibration.sampling`), and ``<results>/calibration/`` receives:

- ``design.csv``: the design points, their V and phase;
- ``samples.csv``: the posterior samples, a column per parameter;
- ``posterior.json``: per parameter the mean, standard deviation and the central 90% and 95%
  intervals; the sampler, its acceptance rate and settings; the surrogate's maximiser;
- ``density.png`` (one parameter: a histogram of the samples over the surrogate's normalised
  density) or ``pairs.png`` (several: the samples' pair plot, histograms on the diagonal);
- ``surrogate.png``: V̂ ± 2 GP standard deviations with the design points (several parameters:
  V̂ along each parameter through the surrogate's maximiser, design points projected).

Everything is a function of the results folder and the case seed (stream "calibration"), so a
rerun on the same folder writes the same samples.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from pinnbo.calibration.diagnostics import diagnostics
from pinnbo.calibration.figures import plot_density, plot_surrogate
from pinnbo.calibration.posterior import LogPosterior
from pinnbo.calibration.sampling import REJECTION_MAX_DIM, Progress, Samples, metropolis, rejection
from pinnbo.calibration.surrogate import KERNEL, Surrogate, fit_surrogate, surrogate_maximum
from pinnbo.errors import UserError
from pinnbo.files import make_folder, write_json, write_text
from pinnbo.problem import Problem
from pinnbo.runner.history import History
from pinnbo.streams import derived_seed, numpy_rng

#: Posterior samples kept by default (the paper's figure shows 2000).
DEFAULT_SAMPLES = 2000
#: Most samples one command may ask for (memory and the CSV stay small).
MAX_SAMPLES = 1_000_000


class CalibrationError(UserError):
    """A calibration that cannot be made from what was given (one line)."""


@dataclass
class Calibration:
    """What :func:`calibrate` made: the surrogate, the samples and the summary it wrote."""

    surrogate: Surrogate
    samples: Samples
    summary: dict


def design_points(history: History) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(X (n, d), V (n,), phases) of the successful evaluations."""
    ok = [r for r in history.evaluations if r.ok]
    return (np.array([r.x for r in ok], dtype=np.float64).reshape(len(ok), -1),
            np.array([r.y for r in ok], dtype=np.float64), [r.phase for r in ok])


def summarise(values: np.ndarray, names: tuple[str, ...]) -> dict:
    """Per parameter: mean, sd, median and the central 90% and 95% intervals of ``values`` (n, d)."""
    out = {}
    for i, name in enumerate(names):
        column = values[:, i]
        q = np.quantile(column, [0.025, 0.05, 0.5, 0.95, 0.975])
        out[name] = {"mean": float(column.mean()), "sd": float(column.std(ddof=1)) if len(column) > 1 else 0.0,
                     "median": float(q[2]), "interval_90": [float(q[1]), float(q[3])],
                     "interval_95": [float(q[0]), float(q[4])]}
    return out


def check_samples(samples: int) -> None:
    """A CalibrationError naming ``--samples`` unless it is in [1, MAX_SAMPLES]."""
    if not 1 <= samples <= MAX_SAMPLES:
        raise CalibrationError(f"--samples: expected an integer in [1, {MAX_SAMPLES}], got {samples}")


def calibrate(history: History, problem: Problem, posterior: LogPosterior, folder: Path, seed: int,
              samples: int = DEFAULT_SAMPLES, progress: Progress | None = None) -> Calibration:
    """Fit the surrogate to the run's design points, sample exp(V̂), write ``folder`` (module docstring)."""
    check_samples(samples)
    X, V, phases = design_points(history)
    if len(V) < 2:
        raise CalibrationError(f"calibration: the run has {len(V)} successful evaluation(s); the surrogate needs at "
                               "least 2 (a larger --budget extends the run)")
    domain = problem.domain
    with torch.random.fork_rng():     # a failed GP fit restarts from random draws: seeded, never the clock
        torch.manual_seed(derived_seed(seed, "calibration", "fit"))
        surrogate = fit_surrogate(X, V, domain)
    x_max, v_max = surrogate_maximum(surrogate, seed, X)
    rng = numpy_rng(seed, "calibration", "sampling")
    drawn = None
    if domain.dim <= REJECTION_MAX_DIM:
        drawn = rejection(surrogate, domain, samples, v_max, rng, progress)
    if drawn is None:
        drawn = metropolis(surrogate, domain, samples, burn_in=samples, start=x_max,
                           scale=np.sqrt(posterior.prior_variance), rng=rng, progress=progress)
    summary = {
        "design_points": len(V),
        "design_phases": {p: phases.count(p) for p in dict.fromkeys(phases)},
        "surrogate": {"kernel": f"Matérn-5/2 ({KERNEL})", "sampled": "exp(posterior mean)",
                      "maximum": {"x": x_max.tolist(), "value": v_max}},
        "sampler": drawn.sampler, "samples": len(drawn.values), "acceptance": drawn.acceptance,
        "sampler_details": drawn.details,
        "parameters": summarise(drawn.values, domain.names),
        "diagnostics": diagnostics(drawn.values, drawn.chains, domain.names),
    }
    make_folder(folder)
    write_text(folder / "design.csv", _csv(list(domain.names) + ["V", "phase"],
                                           [[*x, v, p] for x, v, p in zip(X.tolist(), V.tolist(), phases)]))
    write_text(folder / "samples.csv", _csv(list(domain.names), drawn.values.tolist()))
    write_json(folder / "posterior.json", summary)
    plot_density(drawn.values, surrogate, domain, folder, posterior, problem.metadata.get("true_parameters"))
    plot_surrogate(surrogate, X, V, x_max, domain, folder / "surrogate.png")
    return Calibration(surrogate, drawn, summary)


def _csv(header: list[str], rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in row])
    return buffer.getvalue()
