"""TuRBO's trust region (Eriksson et al., NeurIPS 2019) for PINN-BO in high dimension.

The sample is minimised over a cube of side L (unit coordinates) centred at the best design
observed, clipped to the box. L starts at 0.8; 3 successes in a row (a new best by more than
10⁻³·|best|) double it up to 1.6 (the whole box from any centre); max(4, d) failures in a row halve
it; below 2⁻⁷ it restarts at 0.8. TuRBO's restart draws a fresh initial design; ours keeps every
evaluation and only resets L, since the evaluations are the expensive part. The rule is replayed
from the told values at each ask, so resume and ask/tell stay exact, and its state is checkpointed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LENGTH = 0.8            # at the start and after a restart
LENGTH_MAX = 1.6
LENGTH_MIN = 2.0 ** -7  # below this, restart
SUCCESSES = 3           # in a row, to double L


@dataclass
class TrustRegion:
    """TuRBO's side-length rule, advanced by :meth:`update` with the values told since the last ask."""

    length: float = LENGTH
    successes: int = 0
    failures: int = 0
    restarts: int = 0
    seen: int = 0                   # evaluations already counted (index into the told list)
    best: float = float("inf")      # best minimisation value among them

    def update(self, values: list, dim: int) -> None:
        """Count each told value (None = failed evaluation, a failure) in order."""
        patience = max(4, dim)
        for v in values:
            if v is not None and v < self.best - 1e-3 * abs(self.best):
                self.successes, self.failures = self.successes + 1, 0
            else:
                self.successes, self.failures = 0, self.failures + 1
            if v is not None:
                self.best = min(self.best, v)
            if self.successes >= SUCCESSES:
                self.length, self.successes = min(2.0 * self.length, LENGTH_MAX), 0
            elif self.failures >= patience:
                self.length, self.failures = self.length / 2.0, 0
                if self.length < LENGTH_MIN:
                    self.length, self.restarts = LENGTH, self.restarts + 1
        self.seen += len(values)

    def bounds(self, centre: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The region in unit coordinates: the cube of side ``length`` at ``centre`` (d,), clipped."""
        return np.clip(centre - self.length / 2, 0.0, 1.0), np.clip(centre + self.length / 2, 0.0, 1.0)
