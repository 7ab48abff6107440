"""Samples of a density exp(V̂) restricted to a box (Kim & Sanz-Alonso, §5).

- Rejection sampling (one or two parameters): proposals uniform in the box, accepted with
  probability exp(V̂(x) − V̂max). The envelope is the surrogate's maximum; a proposal above it
  raises the envelope and restarts, so the samples are exact draws of exp(V̂) whatever the
  maximiser missed. Proposals are evaluated in batches: the GP mean is cheap per point in a batch.
- Random-walk Metropolis (more parameters, or a posterior too narrow for rejection in its box):
  ``CHAINS`` chains started at the surrogate's maximiser, Gaussian steps scaled per parameter by
  the prior standard deviation (capped at a quarter of the box), the common step size adapted
  during burn-in towards the acceptance rate that is optimal for a Gaussian target (0.44 in one
  dimension, 0.234 in many; Roberts & Rosenthal 2001); a proposal outside the box is rejected.
  Burn-in samples are dropped, and each chain keeps every ``THIN``-th state after it (neighbouring
  states of a random walk are strongly correlated); the acceptance rate after burn-in is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from pinnbo.problem import Box

#: Parameters up to which rejection sampling is tried first (the box's volume against the
#: posterior's makes it hopeless beyond).
REJECTION_MAX_DIM = 2
#: Rejection gives up (and Metropolis takes over) when fewer than this fraction of proposals pass.
REJECTION_MIN_ACCEPTANCE = 1e-3
REJECTION_BATCH = 4096
#: Parallel Metropolis chains (vectorised: one surrogate evaluation per step for all chains).
CHAINS = 8
#: Burn-in adaptation: the step is updated every ADAPT_EVERY iterations.
ADAPT_EVERY = 50
#: Every THIN-th state of a chain is kept after burn-in.
THIN = 8

Progress = Callable[[int, int], None]


@dataclass
class Samples:
    """Draws of the density and how they were made."""

    values: np.ndarray                  # (n, d)
    sampler: str                        # "rejection" or "metropolis"
    acceptance: float                   # accepted / proposed (after burn-in for Metropolis)
    details: dict = field(default_factory=dict)
    chains: np.ndarray | None = None    # Metropolis: (chains, draws per chain, d), for the diagnostics


def rejection(log_density: Callable[[np.ndarray], np.ndarray], domain: Box, n: int, log_max: float,
              rng: np.random.Generator, progress: Progress | None = None) -> Samples | None:
    """``n`` exact draws, or None when acceptance falls below REJECTION_MIN_ACCEPTANCE."""
    accepted: list[np.ndarray] = []
    count = proposed = 0
    while count < n:
        X = domain.from_unit(rng.random((REJECTION_BATCH, domain.dim)))
        logp = log_density(X)
        proposed += len(X)
        if np.max(logp) > log_max:       # the envelope was too low: raise it and start again
            log_max = float(np.max(logp))
            accepted, count, proposed = [], 0, 0
            continue
        keep = X[np.log(rng.random(len(X))) < logp - log_max]
        accepted.append(keep)
        count += len(keep)
        if progress is not None:
            progress(min(count, n), n)
        if proposed >= 50 * REJECTION_BATCH and count < REJECTION_MIN_ACCEPTANCE * proposed:
            return None
    return Samples(np.vstack(accepted)[:n], "rejection", count / proposed,
                   {"proposals": proposed, "envelope": log_max})


def metropolis(log_density: Callable[[np.ndarray], np.ndarray], domain: Box, n: int, burn_in: int,
               start: np.ndarray, scale: np.ndarray, rng: np.random.Generator,
               progress: Progress | None = None) -> Samples:
    """``n`` draws from CHAINS chains, each after ``burn_in`` iterations and thinned by THIN (module docstring)."""
    d = domain.dim
    target = 0.44 if d == 1 else 0.234
    per_chain = math.ceil(n / CHAINS)
    scale = np.minimum(np.asarray(scale, dtype=np.float64), domain.widths / 4)
    step = 2.38 / math.sqrt(d)
    current = np.repeat(np.asarray(start, dtype=np.float64).reshape(1, d), CHAINS, axis=0)
    current_logp = log_density(current)
    kept, accepted, window = [], 0, 0
    total = burn_in + per_chain * THIN
    for t in range(total):
        proposal = current + step * scale * rng.standard_normal((CHAINS, d))
        inside = np.all((proposal >= domain.lower_array) & (proposal <= domain.upper_array), axis=1)
        logp = np.full(CHAINS, -np.inf)
        if inside.any():
            logp[inside] = log_density(proposal[inside])
        move = np.log(rng.random(CHAINS)) < logp - current_logp
        current[move], current_logp[move] = proposal[move], logp[move]
        if t < burn_in:
            window += int(move.sum())
            if (t + 1) % ADAPT_EVERY == 0:
                rate = window / (ADAPT_EVERY * CHAINS)
                step *= math.exp(rate - target)
                window = 0
        else:
            accepted += int(move.sum())
            if (t - burn_in + 1) % THIN == 0:
                kept.append(current.copy())
        if progress is not None and (t % 100 == 0 or t == total - 1):
            progress(t + 1, total)
    chains = np.stack(kept, axis=1)                               # (CHAINS, per_chain, d)
    return Samples(chains.reshape(-1, d)[:n], "metropolis", accepted / (per_chain * THIN * CHAINS),
                   {"chains": CHAINS, "burn_in": burn_in, "thin": THIN, "step": step, "scale": scale.tolist()},
                   chains)
