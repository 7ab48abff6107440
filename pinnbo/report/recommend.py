"""The recommended design of a run: the evaluated design with the best posterior mean
(docs/algorithms.md, "The recommended design").

Under noise the best *observed* value is biased: among many noisy measurements the luckiest one
wins. Ax and BoTorch recommend instead the evaluated design whose posterior mean is best, which
pools each measurement with its neighbours. pinnbo does the same with one model for every method,
so the recommendation does not depend on which surrogate proposed the designs: a GP of the
successful evaluations (:func:`pinnbo.models.gp.fit_gp`, the mixed kernel with choice variables)
with its noise fitted. Without noise the posterior mean at an evaluated design is its observation,
and the recommendation is the best observed design (no model is fitted). Where the problem's
boundary data jump at the corners and the corner functions solve its PDE
(:func:`pinnbo.models.corners.jump_shape`), the GP's kernel adds them: a smooth kernel takes a
corner and a design 10⁻⁹ beside it on an edge, whose values differ by half the jump, for one point
(on the noisy heat plate it recommended the corner itself on every seed).
"""

from __future__ import annotations

import numpy as np
import torch

from pinnbo.models.corners import CornerKernel, jump_shape
from pinnbo.models.gp import fit_gp
from pinnbo.problem import Problem
from pinnbo.runner.history import History
from pinnbo.streams import derived_seed

#: Most evaluations the recommendation's GP is fitted to (the latest ones): its fit is cubic in n.
MAX_POINTS = 2000


def recommend(history: History, problem: Problem, seed: int = 0, noise: str | float | None = None) -> dict | None:
    """``{"index", "x", "predicted", "predicted_sd", "observed", "true"}`` of the recommended design
    (module docstring), values in the problem's sense; None before the first success (with
    constraints: the first feasible evaluation). ``noise``: the case's observation noise (None,
    "learned" or a known sd). The observations are taken as noisy when it is declared, when the
    problem adds synthetic noise, and for measurements (a program's, told, imported: no true value);
    a known sd (the case's, or each measurement's own) fixes the GP's noise, otherwise it is fitted."""
    records = [r for r in history.evaluations if history.counts(r) and r.y is not None][-MAX_POINTS:]
    if not records:
        return None
    noisy = noise is not None or problem.noise_std > 0 or any(r.true is None for r in records)
    default = noise if isinstance(noise, float) else None
    sds = [default if r.sd is None else r.sd for r in records]
    known = None if any(v is None for v in sds) else np.asarray(sds, dtype=np.float64)
    domain = problem.domain
    sign = problem.sign
    unit = domain.to_unit(np.stack([domain.encode(r.x) for r in records]))
    y = sign * np.array([r.y for r in records], dtype=np.float64)   # minimised
    if not noisy or len(records) < 3 or np.ptp(y) == 0:
        # Noise-free, the posterior mean at a design is its observation: the best observed design.
        best = int(np.argmin(y))
        return _entry(records[best], float(y[best] * sign), 0.0 if not noisy else None)
    with torch.random.fork_rng():
        torch.manual_seed(derived_seed(seed, "recommend") % (2**31))
        jumps, shape = None, jump_shape(domain, problem.pde, problem.boundary_continuous)
        if shape is not None:
            jumps = CornerKernel(torch.as_tensor(domain.lower_array, dtype=torch.float64),
                                 torch.as_tensor(domain.lower_array + domain.widths, dtype=torch.float64), shape)
        model = fit_gp(unit, y, noise_free=False, categorical=domain.dims("choice"), noise_sd=known, jumps=jumps)
        with torch.no_grad():
            posterior = model.posterior(torch.as_tensor(unit, dtype=torch.float64))
            mean = -posterior.mean.reshape(-1).numpy()              # the GP models −y
            sd = posterior.variance.clamp_min(0.0).sqrt().reshape(-1).numpy()
    best = int(np.argmin(mean))
    return _entry(records[best], float(mean[best] * sign), float(sd[best]))


def _entry(record, predicted: float, sd: float | None) -> dict:
    return {"index": record.index, "x": record.x, "predicted": predicted, "predicted_sd": sd,
            "observed": record.y, "true": record.true}
