"""The physics-informed network (PINN) of PINN-BO, also Neural-CBO's objective with ``physics``
(docs/algorithms.md, "PINN-BO").

Surrogate. An NTK-parametrised tanh MLP h(z; θ) on inputs z = 2(x − lo)/(hi − lo) − 1 reads, in
physical units, f(x) = μ_y + s_y · h(z(x)) with (μ_y, s_y) the observations' mean and standard
deviation. The PDE residual N[f](x) − g(x) is taken by autograd on this physical function, so the
chain rule through the input normalisation is exact on any box.

Loss (PINN-BO, Eq. 1, with our weighting):
    L(θ) = mean_i (h(x_i) − ỹ_i)² + w_pde · mean_{j∈batch} ‖r_j‖² / (s_y · s_r(z_j))²
with ỹ the standardised observations, r_j ∈ R^K the residual of the K equations at collocation
points drawn once from the seed, and s_r(z_j) the prior root-mean-square of ‖r‖/s_y at z_j over a
few freshly initialised networks. Means over points, not the paper's sums, so N_r ≫ t collocation
terms do not swamp the data; the per-point s_r makes the PDE term dimensionless and stops points
where the operator's coefficients are huge (the beam's singular EI) from drowning the rest; the
norm sums a system's equations, so a point weighs the same whatever K.

First fit. ``initial_steps`` Adam steps; with a PDE and ``first_fit_max_steps`` above that, it goes
on in windows of ``FIT_WINDOW`` steps while a window's mean loss falls by more than
``FIT_TOLERANCE``: in the NTK parametrisation the first layer learns √d times slower in d
dimensions, so a PDE that carries the whole function is learned far more slowly than the data.
Later fits are ``steps_per_iteration`` warm-started steps.

Data-consistency backoff. A PDE whose solutions the network cannot reach in a few hundred steps
makes a flat function the easy minimum of the residual term, and the network then ignores its data.
After each fit, if the median absolute misfit on the standardised data exceeds ``misfit_tolerance``
the PDE weight is halved for the next fit; once the data fit with room to spare it doubles back
towards ``pde_weight``. The PDE shapes the surrogate where it agrees with the measurements and never
overrules them.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np
import torch

from pinnbo.errors import MethodError
from pinnbo.models import last_layer
from pinnbo.models.mlp import MLP, load_network_state, network_state
from pinnbo.models.transforms import standardise
from pinnbo.settings import Settings
from pinnbo.streams import sobol_unit, torch_generator

#: Adam steps per window of the first fit's convergence test, and the relative fall of a window's
#: mean loss below which the first fit stops.
FIT_WINDOW = 200
FIT_TOLERANCE = 0.02


@dataclass
class PINNSettings(Settings):
    """The PINN's sizes and weights (PINN-BO's own parameters; Neural-CBO's ``pinn:`` section)."""

    hidden: tuple[int, ...] = (64, 64)     # hidden layer widths
    collocation_points: int = 1024         # N_r, drawn once from the seed
    collocation_batch: int = 256           # collocation points per training step
    initial_steps: int = 600               # Adam steps of the first fit (at least)
    steps_per_iteration: int = 60          # Adam steps per later fit (warm start)
    learning_rate: float = 5e-3
    pde_weight: float = 1.0                # w_pde, the largest weight (lowered while the data do not fit)
    misfit_tolerance: float = 0.1          # median |data misfit| (standardised) that halves w_pde
    noise_variance: float = 1e-2           # σ_n² of the last-layer posterior, standardised units

    POSITIVE = ("collocation_points", "collocation_batch", "learning_rate", "misfit_tolerance", "noise_variance")
    NON_NEGATIVE = ("initial_steps", "steps_per_iteration", "pde_weight")
    WIDTHS = ("hidden",)
    INTERNAL = ("collocation_batch", "learning_rate", "misfit_tolerance", "noise_variance")


class PINNSurrogate:
    """The PINN on its own (module docstring): the network, its Adam, the collocation points, the
    residual scales s_r and the data-consistency backoff of the PDE weight.

    ``residual``: the compiled PDE (``pde.compile()``) or None (data only); ``settings`` its sizes
    and weights. ``init_keys`` name the network's initialisation stream under ``seed``; every other
    draw comes from streams named here (collocation points, residual scales) or from the
    ``generator`` passed to :meth:`fit` (collocation batches). ``bias_scale`` β of the NTK layers;
    ``first_fit_max_steps`` > ``settings.initial_steps``: with a PDE the first fit goes on while its
    loss falls, up to that many steps.
    """

    def __init__(self, domain, seed: int, *, residual, settings: PINNSettings, collocation_filter=None,
                 dtype: torch.dtype = torch.float64, device: torch.device | str = "cpu",
                 init_keys: tuple = ("network-init",), bias_scale: float = 0.1, first_fit_max_steps: int = 0) -> None:
        self.domain = domain
        self.seed = int(seed)
        self.hidden = tuple(settings.hidden)
        self.bias_scale = bias_scale
        self.n_collocation = settings.collocation_points
        self.collocation_batch = settings.collocation_batch
        self.initial_steps = settings.initial_steps
        self.steps_per_iteration = settings.steps_per_iteration
        self.initial_max_steps = first_fit_max_steps     # <= initial_steps: a first fit of exactly initial_steps
        self.first_fit_steps: int | None = None          # how many the first fit took (diagnostics)
        self.max_pde_weight = settings.pde_weight
        self.misfit_tolerance = settings.misfit_tolerance
        self.noise_variance = settings.noise_variance
        self.collocation_filter = collocation_filter
        self.dtype = dtype
        self.device = torch.device(device)
        self.model = MLP(domain.dim, self.hidden, torch_generator(self.seed, *init_keys),
                         bias_scale).to(self.device, self.dtype)
        self.adam = torch.optim.Adam(self.model.parameters(), lr=settings.learning_rate)
        self.residual = residual
        self.residual_scale: torch.Tensor | None = None   # (N_r,), see prior_residual_scale
        self.pde_weight = settings.pde_weight
        self.fitted = False
        self._lower = torch.as_tensor(domain.lower_array, dtype=self.dtype, device=self.device)
        self._width = torch.as_tensor(domain.widths, dtype=self.dtype, device=self.device)
        self.collocation = self.collocation_points() if self.residual is not None else None
        # The PDE's functions of the inputs alone at the collocation points, evaluated once.
        self.coefficients = residual.coefficients(self.collocation) if self.residual is not None else ()

    # -- PDE data -----------------------------------------------------------------------------------
    def collocation_points(self) -> torch.Tensor:
        """N_r points of the box (physical coordinates), drawn once from the seed, shape (N_r, d).

        A problem's ``collocation_filter`` removes points where its PDE is singular; we draw
        until N_r points survive.
        """
        n = self.n_collocation
        draw, kept = n, np.zeros((0, self.domain.dim))
        for attempt in range(20):
            unit = sobol_unit(draw, self.domain.dim, self.seed, "collocation", attempt)
            points = self.domain.from_unit(unit)
            if self.collocation_filter is not None:
                points = points[np.asarray(self.collocation_filter(points), dtype=bool)]
            kept = np.concatenate([kept, points])[:n]
            if len(kept) == n:
                break
            draw *= 2
        if len(kept) < n:
            raise MethodError("collocation_points: the problem's collocation filter rejects almost every point")
        return torch.as_tensor(kept, dtype=self.dtype, device=self.device)

    # -- the surrogate --------------------------------------------------------------------------------
    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        """Network inputs z = 2(x − lo)/(hi − lo) − 1 of physical designs (N, d)."""
        return network_inputs(x, self._lower, self._width)

    def last_layer_precision(self, Z: torch.Tensor) -> torch.Tensor:
        """U = λI + φᵀφ/σ_n² of the network's features at network inputs ``Z`` (n, d): the last
        layer's posterior precision given those designs (observed, or being evaluated: U needs no value)."""
        with torch.no_grad():
            phi = self.model.features(Z)
        return last_layer.precision(phi, self.noise_variance)

    def mean_and_variance(self, X: torch.Tensor, X_given: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """h(z) and the last layer's σ²(z) = φᵀU⁻¹φ at physical designs ``X`` (N, d), standardised
        units, given the designs ``X_given`` (n, d) (:meth:`last_layer_precision`)."""
        with torch.no_grad():
            z = self.normalise(X)
            U = self.last_layer_precision(self.normalise(X_given))
            return self.model(z), last_layer.variance(U, self.model.features(z))

    def physical_model(self, mean: float, std: float, network: MLP | None = None,
                       shifts: torch.Tensor | None = None) -> "PhysicalNetwork":
        """f(x) = μ_y + s_y h(z(x)) on physical inputs (N, d) → (N,): what the PDE constrains
        (``network`` h, default the trained one; ``shifts``: see :class:`PhysicalNetwork`)."""
        return PhysicalNetwork(self.model if network is None else network, self._lower, self._width, mean, std, shifts)

    def prior_residual_scale(self, mean: float, std: float, draws: int = 4) -> torch.Tensor:
        """s_r(z_j): prior root-mean-square of the standardised residual at each collocation point,
        shape (N_r,), over ``draws`` freshly initialised networks.

        Dividing each residual by its own prior scale whitens the PDE pseudo-observations the way
        heteroscedastic noise variances would: where the operator's coefficients are huge (the
        paper's beam, whose EI is singular at the 26 zeros of ρ) a point no longer drowns the
        others, and the term stays dimensionless whatever the PDE's order, units or domain size.
        """
        scales = torch.zeros(len(self.collocation), dtype=self.dtype, device=self.device)
        for k in range(draws):
            prior = MLP(self.domain.dim, self.hidden, torch_generator(self.seed, "residual-scale", k),
                        self.bias_scale).to(self.device, self.dtype)
            f = self.physical_model(mean, std, prior)
            for start in range(0, len(self.collocation), 4096):
                chunk = self.collocation[start:start + 4096]
                r = self.residual(f, chunk).detach() / std
                scales[start:start + len(chunk)] += r.pow(2).sum(dim=1) / draws
        scales = scales.sqrt()
        # A floor keeps a point whose prior residual happens to vanish from getting infinite weight.
        return torch.clamp(scales, min=1e-3 * float(scales.median()) + 1e-300)

    def fit(self, X: np.ndarray, y: np.ndarray, generator: torch.Generator) -> tuple[float, float]:
        """Train on standardised data (+ PDE residual); returns (μ_y, s_y). ``generator`` draws the
        collocation batches (the caller names its stream by step)."""
        mean, std = standardise(y)
        Z = self.normalise(torch.as_tensor(X, dtype=self.dtype, device=self.device))
        targets = torch.as_tensor((y - mean) / std, dtype=self.dtype, device=self.device)
        physical = self.physical_model(mean, std)
        if self.residual is not None and self.residual_scale is None:
            self.residual_scale = self.prior_residual_scale(mean, std)
        steps = self.steps_per_iteration if self.fitted else self.initial_steps
        n_col = 0 if self.collocation is None else len(self.collocation)
        batch = min(self.collocation_batch, n_col)
        use_pde = self.residual is not None and self.max_pde_weight > 0

        def train(count: int) -> float:
            """``count`` Adam steps; the mean loss over the last min(count, FIT_WINDOW) of them."""
            tail: deque = deque(maxlen=FIT_WINDOW)
            for _ in range(count):
                self.adam.zero_grad(set_to_none=True)
                loss = (self.model(Z) - targets).pow(2).mean()
                if use_pde:
                    idx = torch.randperm(n_col, generator=generator)[:batch].to(self.device)
                    coefficients = tuple(c[idx] for c in self.coefficients)
                    r = self.residual(physical, self.collocation[idx], coefficients) / (std * self.residual_scale[idx, None])
                    # ‖r_j‖² over a system's equations, as s_r whitens: a mean over them as well would
                    # divide the PDE's weight by the number of equations (50 for Cosine Mixture-50).
                    loss = loss + self.pde_weight * r.pow(2).sum(dim=1).mean()
                loss.backward()
                self.adam.step()
                tail.append(loss.detach())
            return float(torch.stack(list(tail)).mean()) if tail else math.inf

        previous = train(steps)
        if not self.fitted and use_pde:
            # The first fit goes on while its loss still falls (module docstring).
            done = steps
            while done + FIT_WINDOW <= self.initial_max_steps:
                current = train(FIT_WINDOW)
                done += FIT_WINDOW
                if not current < (1.0 - FIT_TOLERANCE) * previous:
                    break
                previous = current
            self.first_fit_steps = done
        if use_pde:
            # Data-consistency backoff (module docstring): the PDE may shape the surrogate but must
            # not stop it from fitting the measurements. The median is robust to the few points no
            # smooth surrogate can fit (a discontinuous corner).
            with torch.no_grad():
                misfit = float((self.model(Z) - targets).abs().median())
            if misfit > self.misfit_tolerance:
                self.pde_weight *= 0.5
            elif misfit < 0.5 * self.misfit_tolerance:
                self.pde_weight = min(self.max_pde_weight, 2.0 * self.pde_weight)
        self.fitted = True
        return mean, std

    def pde_precision(self, mean: float, std: float, generator: torch.Generator,
                      step: float = 1e-4) -> torch.Tensor | None:
        """The PDE's part of the last-layer precision, (m, m), or None without an active PDE term.

        The NTK-PINN posterior (PINN-BO, Eq. 4) in the last layer, U = λI + Σ_i φ_i φ_iᵀ/σ_n² +
        Σ_j Ω_jᵀ Ω_j/σ_n²: every collocation point is a pseudo-observation of its whitened residual r̂_j (K
        equations, O(1) under the prior as the standardised data are) with the data's noise
        variance, times the current (backed-off) w_pde. Ω_j = ∂r̂_j/∂δ (K × m) is the Jacobian with
        respect to a perturbation δ of the output weights, f = μ_y + s_y (h + φᵀδ); the sum over
        the N_r points is estimated on B = ``collocation_batch`` of them drawn from ``generator``,
        (N_r / B) Σ_{j∈B}. r̂ is affine in δ for a linear PDE (every shipped one), so Ω's columns
        are forward differences of size ``step``, exact up to round-off (about 1e-12 relative in
        float64, 1e-3 in float32, harmless in a precision matrix) and the Jacobian to O(step) for
        a nonlinear PDE. All m columns come from one residual evaluation over the B points
        repeated m + 1 times.
        """
        if self.residual is None or self.pde_weight <= 0 or self.residual_scale is None:
            return None
        n_col = len(self.collocation)
        idx = torch.randperm(n_col, generator=generator)[:min(self.collocation_batch, n_col)].to(self.device)
        points, scale = self.collocation[idx], self.residual_scale[idx]
        B, m = len(points), self.hidden[-1]
        directions = torch.cat([torch.zeros(1, m, dtype=self.dtype, device=self.device),
                                step * torch.eye(m, dtype=self.dtype, device=self.device)])   # (m + 1, m)
        shifts = directions.repeat_interleave(B, dim=0)                                      # (B (m + 1), m)
        perturbed = self.physical_model(mean, std, shifts=shifts)
        r = self.residual(perturbed, points.repeat(m + 1, 1)).detach()
        r = (r / (std * scale.repeat(m + 1)[:, None])).reshape(m + 1, B, -1)               # (m + 1, B, K)
        omega = ((r[1:] - r[0]) / step).permute(1, 2, 0).reshape(-1, m)                     # (B K, m)
        return omega.T @ omega * (self.pde_weight * n_col / (B * self.noise_variance))

    # -- checkpoints ------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return network_state(self.model, self.adam, residual_scale=self.residual_scale,
                             pde_weight=self.pde_weight, fitted=self.fitted)

    def load_state_dict(self, state: dict) -> None:
        load_network_state(self.model, self.adam, state)
        self.residual_scale = state["residual_scale"]
        self.pde_weight = state["pde_weight"]
        self.fitted = state["fitted"]


class PhysicalNetwork:
    """f(x) = μ + s (h(z(x)) + φ(z(x))ᵀδ_n) on physical inputs x (N, d) → (N,), z = 2(x − lo)/w − 1:
    the network in the units the PDE is written in. ``shifts`` δ (N, m), one perturbation of the
    output weights per row (:meth:`PINNSurrogate.pde_precision`), or None.

    ``axis_derivatives`` gives the PDE compiler (:meth:`pinnbo.pde.PDE.compile`) the derivatives
    along each axis from the network's Taylor mode, by the chain rule of the affine z(x):
    ∂ᵏf/∂x_iᵏ = s (2/w_i)ᵏ ∂ᵏ(h + φᵀδ)/∂z_iᵏ.
    """

    def __init__(self, network: MLP, lower: torch.Tensor, width: torch.Tensor, mean: float, std: float,
                 shifts: torch.Tensor | None = None) -> None:
        self.network, self.lower, self.width = network, lower, width
        self.mean, self.std, self.shifts = mean, std, shifts

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        z = network_inputs(x, self.lower, self.width)
        h = self.network(z)
        if self.shifts is not None:
            h = h + (self.network.features(z) * self.shifts).sum(dim=1)
        return self.mean + self.std * h

    def axis_derivatives(self, x: torch.Tensor, orders) -> tuple[torch.Tensor, dict[int, torch.Tensor]]:
        h, along = self.network.axis_derivatives(network_inputs(x, self.lower, self.width), orders, self.shifts)
        scale = 2.0 / self.width
        powers = torch.arange(1, max(orders, default=0) + 1, dtype=x.dtype, device=x.device)
        along = {i: self.std * scale[i] ** powers[:len(d), None] * d for i, d in along.items()}
        return self.mean + self.std * h, along


def network_inputs(x: torch.Tensor, lower: torch.Tensor, width: torch.Tensor) -> torch.Tensor:
    """z = 2(x − lo)/(hi − lo) − 1: the network's inputs of physical designs (N, d)."""
    return 2.0 * (x - lower) / width - 1.0
