"""Random search: the scrambled Sobol sequence of the initial design, continued.

Point t of the run is point t of the same sequence that produced the shared initial design, so
random search differs from the other methods only after the initial design.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pinnbo.optimizers.base import MethodSettings, Optimizer
from pinnbo.streams import derived_seed


@dataclass
class RandomSearchSettings(MethodSettings):
    """Random search has no parameters."""


class RandomSearch(Optimizer):
    name = "random"
    Settings = RandomSearchSettings
    handles_constraints = True   # it ignores them by design; runs report the best feasible design
    variable_kinds = ("real", "log", "integer", "choice")   # exact: each level an equal share of [0, 1]
    multi_objective = True       # it ignores the values

    def propose(self) -> np.ndarray:
        engine = torch.quasirandom.SobolEngine(
            self.domain.dim, scramble=True, seed=derived_seed(self.seed, "initial-design") % (2**31)
        )
        engine.fast_forward(self.ask_index)
        return self.domain.from_unit(engine.draw(1, dtype=torch.float64).numpy()[0])
