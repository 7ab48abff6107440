"""Settings shared by the BoTorch GP methods (:mod:`~pinnbo.optimizers.gp_bo`,
:mod:`~pinnbo.optimizers.gp_cei`): the GP's noise model and the effort of BoTorch's
``optimize_acqf`` (``raw_samples`` Sobol points scored, the best ``num_restarts`` refined by
L-BFGS-B for at most ``maxiter`` iterations)."""

from __future__ import annotations

from dataclasses import dataclass

from pinnbo.errors import MethodError
from pinnbo.optimizers.base import MethodSettings


@dataclass
class GPSettings(MethodSettings):
    """Documented defaults shared by the GP methods (override with ``method_params``)."""

    num_restarts: int = 10          # L-BFGS-B starts of optimize_acqf
    raw_samples: int = 512          # Sobol points scored to choose the starts
    maxiter: int = 200              # L-BFGS-B iterations per start
    noise_free: bool = False        # true: noise fixed at noise_floor; false: learned noise
    noise_floor: float = 1e-5       # fixed noise variance, standardised units (noise_free only)
    duplicate_tol: float = 1e-4     # sup-norm distance (unit box) that counts as a repeat

    POSITIVE = ("num_restarts", "raw_samples", "maxiter", "noise_floor")
    NON_NEGATIVE = ("duplicate_tol",)
    INTERNAL = ("duplicate_tol",)

    def validate(self, prefix: str = "method_params") -> None:
        super().validate(prefix)
        if self.raw_samples < self.num_restarts:
            raise MethodError(f"{prefix}.raw_samples: must be at least num_restarts ({self.num_restarts}), "
                              f"got {self.raw_samples}")
