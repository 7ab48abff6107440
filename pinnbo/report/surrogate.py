"""The report's model of a run: one GP of the successful evaluations, whatever method made them.

The same model as the recommended design's (:mod:`pinnbo.report.recommend`), so every report of a
problem shows the same kind of surrogate and two methods' reports compare. From it the report draws
the mean and standard deviation, the PDE residual of the mean where the problem declares a PDE (how
far what the data alone say is from the physics), and each variable's importance.
"""

from __future__ import annotations

import numpy as np
import torch

from pinnbo.models.gp import fit_gp
from pinnbo.problem import Problem
from pinnbo.streams import derived_seed

#: Most evaluations the model is fitted to (the latest): the fit is cubic in their number.
MAX_POINTS = 1000


#: Fewest points a residual is evaluated at (:meth:`ReportModel.residual`).
MIN_ROWS = 32


class ReportModel:
    """A GP of the objective on the encoded box (:mod:`pinnbo.space`), values in the problem's sense."""

    def __init__(self, problem: Problem, X: list[list], y: list[float], seed: int, noisy: bool) -> None:
        self.problem = problem
        domain = problem.domain
        X, y = X[-MAX_POINTS:], y[-MAX_POINTS:]
        self.encoded = np.stack([domain.encode(x) for x in X])
        unit = domain.to_unit(self.encoded)
        minimised = problem.sign * np.asarray(y, dtype=np.float64)
        with torch.random.fork_rng():
            torch.manual_seed(derived_seed(seed, "report") % (2**31))
            self.model = fit_gp(unit, minimised, noise_free=not noisy, categorical=domain.dims("choice"))
        self.model.eval()

    def _mean_tensor(self, encoded: torch.Tensor) -> torch.Tensor:
        """The mean in the problem's sense at encoded points, differentiable in them."""
        domain = self.problem.domain
        lower = torch.as_tensor(domain.lower_array, dtype=torch.float64)
        widths = torch.as_tensor(domain.widths, dtype=torch.float64)
        mean = self.model.posterior((encoded - lower) / widths).mean.reshape(-1)
        return -self.problem.sign * mean        # the GP models −sign·f

    def predict(self, encoded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation (problem's sense) at encoded points (n, d)."""
        domain = self.problem.domain
        unit = torch.as_tensor(domain.to_unit(np.asarray(encoded, dtype=np.float64)), dtype=torch.float64)
        means, sds = [], []
        with torch.no_grad():
            for chunk in torch.split(unit, 4096):
                posterior = self.model.posterior(chunk[:, None, :])   # a batch of single points: marginals only
                means.append(-self.problem.sign * posterior.mean.reshape(-1))
                sds.append(posterior.variance.clamp_min(0.0).sqrt().reshape(-1))
        return torch.cat(means).numpy(), torch.cat(sds).numpy()

    def residual(self, encoded: np.ndarray) -> np.ndarray | None:
        """|N[m] − g| of the mean m at encoded points (n, d), the first equation of the problem's
        PDE; None without one (or with several objectives)."""
        pde = self.problem.pde
        if pde is None or isinstance(pde, dict) or not hasattr(pde, "compile"):
            return None
        residual = pde.compile()
        domain = self.problem.domain
        points = torch.as_tensor(domain.physical(np.asarray(encoded, dtype=np.float64)))
        logs = list(domain.dims("log"))

        def mean(z: torch.Tensor) -> torch.Tensor:   # the PDE's inputs are physical values
            if logs:
                z = torch.cat([torch.log(z[:, i:i + 1]) if i in logs else z[:, i:i + 1] for i in range(z.shape[1])], 1)
            return self._mean_tensor(z)

        out = []
        for chunk in torch.split(points, 1024):
            n = len(chunk)
            # gpytorch's Matérn distance is torch.cdist, twice differentiable only on its
            # matrix-product path, which it takes beyond 25 rows: pad a short chunk.
            padded = torch.cat([chunk, chunk[-1:].expand(max(0, MIN_ROWS - n), -1)])
            with torch.enable_grad():
                r = residual(mean, padded)
            out.append(r[:n, 0].detach().abs())
        return torch.cat(out).numpy()

    def total_sobol(self, seed: int, n: int = 1024) -> np.ndarray:
        """Each variable's total Sobol index of the mean over the box (Jansen's estimator): the share
        of the mean's variance that goes with the variable, its interactions included. Discrete
        variables are drawn at their levels."""
        domain = self.problem.domain
        rng = np.random.default_rng(derived_seed(seed, "sobol"))
        d = domain.dim
        A = domain.snap(domain.from_unit(rng.random((n, d))))
        B = domain.snap(domain.from_unit(rng.random((n, d))))
        fA = self.predict(A)[0]
        total = np.zeros(d)
        variance = np.var(fA)
        if not variance > 0:
            return total
        for i in range(d):
            ABi = A.copy()
            ABi[:, i] = B[:, i]
            total[i] = 0.5 * np.mean((fA - self.predict(ABi)[0]) ** 2) / variance
        return total
