"""A Gaussian process conditioned on a linear PDE as well as on the data (docs/algorithms.md,
"PDE-GP"), as a BoTorch ``Model``.

For a linear operator L a GP prior f ~ GP(0, k) stays Gaussian under L: cov(L f(z), f(x)) =
L_z k(z, x) and cov(L f(z), L f(z')) = L_z L_z' k(z, z') (Raissi, Perdikaris & Karniadakis 2017;
Pförtner et al. 2022). Conditioning jointly on the observations y_i = f(x_i) + ε and on
L f(z_j) = g(z_j) at collocation points is exact Bayesian inference with the physics: with data
and a PDE that together pin f down (the beam's ODE leaves four constants free; Cosine Mixture's PDE
gives the whole gradient) the posterior is nearly the true function after a few evaluations.

- Kernel: squared exponential with a lengthscale per input, in physical coordinates so the PDE's
  derivatives need no chain rule (:mod:`pinnbo.models.se_kernel`), plus, where given, a basis of
  functions φ_j that the PDE's operator annihilates, each with an amplitude a_j ~ N(0, s²):
  f = g + Σ_j a_j φ_j with L φ_j = 0 adds s² ΦΦᵀ to the data's covariance and nothing to the
  PDE's, so the posterior is still exactly conditioned on the physics. A smooth kernel cannot
  follow a jump; the angle functions of a plate's corners carry it (:mod:`pinnbo.models.corners`),
  with a prior amplitude as large as the smooth part's spread.
- Units: the observations are standardised, f = μ + s f̃, so the PDE reads L f̃ = (g − c₀ μ)/s with
  c₀ the coefficient of f itself.
- Conditioning: every collocation equation is divided by the norm of its coefficients, an
  equivalent equation, so points where the operator's coefficients are huge (the beam's EI, which
  is infinite where its denominator vanishes) weigh as much as the others instead of dominating the
  matrix; a point where a coefficient or the source is not finite is left out.
- Hyper-parameters: the output scale s², the lengthscales, the observation noise σ² (at least
  ``NOISE_FLOOR``) and the PDE's own noise, a fraction ε of each equation's prior variance (at
  least ``PDE_NOISE_FLOOR``), by maximum of the evidence of the data given the PDE, p(y | L f̃ = t)
  (:meth:`PDEGP._negative_log_likelihood` says why not the joint evidence). A PDE the data
  contradict (a wrong source, a corner where the data jump) gets a large ε, so it never overrules
  the measurements.
- Later fits start from the previous step's optimum, and, whenever the data have grown by a tenth
  since the last such step, from long starts too (``long_starts``; the optimiser decides when and
  which): a warm start alone can stay in the basin that the first few observations chose while
  the evidence of the grown data prefers another, and a geometric schedule keeps the refits' share
  of a step's cost falling as the data grow. The evidence's gradient is in closed form
  (:mod:`pinnbo.models.evidence`). A warm fit's L-BFGS starts with the previous warm fit's
  curvature pairs (``CURVATURE_PAIRS``), and afresh where they lead it nowhere.
- Starts of the first fit: long lengthscales (``FIRST_LENGTHSCALES``), and, where the collocation
  points are dense enough to resolve it, a short one with the PDE taken as exact (ε at its floor):
  the hypothesis that the physics pins down a function with fine structure. The beam's deflection
  (a chirp, ℓ ≈ 0.017 of the beam) is found only from there; from the long starts the evidence
  settles on a flat function and calls the data noise, and the evidence of 10 observations may
  even prefer that. The evidence chooses among the long starts; the short start's optimum replaces
  its choice where it predicts each observation better from the others and the PDE (leave-one-out,
  Rasmussen & Williams 2006, §5.4.2).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple, Sequence

import torch
from botorch.models.model import Model
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from linear_operator import to_linear_operator

from pinnbo.models.evidence import EvidenceData, covariance_blocks, negative_log_evidence
from pinnbo.models.se_kernel import SEDerivatives, coefficient_products, gradient_products, operator_block, \
    point_block
from pinnbo.pde.compile import derivatives_by_autograd

#: Lower bounds of the observation noise (standardised units) and of the PDE's relative noise.
NOISE_FLOOR = 1e-6
PDE_NOISE_FLOOR = 1e-6
#: Lengthscale range as a fraction of the box's width in each input.
LENGTHSCALE_RANGE = (0.01, 10.0)
#: L-BFGS iterations of the hyper-parameter fit; the change of the objective (or of a raw
#: hyper-parameter) below which it stops, per observation, with a floor; and the starting
#: lengthscales (fractions of the width) of its starts when there is no earlier fit to start from.
#: The evidence of n observations, and its curvature in the hyper-parameters, grow in proportion to
#: n: a fixed tolerance would ask a fit of 1000 observations for 25 times the precision in the
#: hyper-parameters that it asks of one of 40, and spend a dozen evaluations on the last
#: thousandths of a nat. Up to 40 observations the floor holds.
FIT_ITERATIONS = 50
FIT_TOLERANCE = 1e-6
FIT_TOLERANCE_PER_OBSERVATION = 2.5e-8
FIRST_LENGTHSCALES = (0.2, 0.6)
#: The short start's lengthscale in collocation spacings (width · m^(−1/d) for m points in d
#: inputs): enough points per lengthscale that the PDE constrains the function between them. It is
#: a start only where it is shorter than the long starts (the beam's 256 points on one axis: 0.04).
SHORT_START_SPACINGS = 10.0
#: Curvature pairs (steps and gradient changes) of a warm fit's L-BFGS passed on to the next warm
#: fit, which starts from the same optimum with the data grown by one: the evidence's curvature
#: barely moves, and a fit that starts from an estimate of it instead of the identity skips the
#: iterations L-BFGS spends learning it again (Nocedal & Wright 2006, §7.2).
CURVATURE_PAIRS = 10
#: A fit from the previous values has settled where it gains less than this (nats of log evidence:
#: a Bayes factor under e, "not worth more than a bare mention" on Kass and Raftery's scale): the
#: hyper-parameters have stopped moving with the data. A warm fit whose first quasi-Newton step,
#: by the previous curvature, would gain more met data that moved the evidence, where that
#: curvature may lead it into another basin: it starts from the identity instead.
SETTLED_GAIN = 1.0


class _Run(NamedTuple):
    """One L-BFGS run of the fit (:meth:`PDEGP._optimise`)."""

    raw: torch.Tensor
    value: float
    start: float
    curvature: torch.Tensor | None
    seeded: bool


class PDEGP(Model):
    """A GP of one output conditioned on data and on a linear PDE at collocation points.

    Inputs are unit-cube coordinates, as for every pinnbo GP (the optimisers search the unit cube);
    the kernel and the PDE act on physical ones, x = ``lower`` + u · ``widths``. ``unit_X`` (n, d)
    and ``y`` (n,) the observations; ``unit_Z`` (m, d) collocation points; ``linear_form`` the PDE's
    :class:`~pinnbo.pde.LinearForm` (None: a plain GP with this kernel); ``start`` an earlier fit's
    hyper-parameters (:meth:`hyperparameters`), and ``long_starts`` lengthscales (fractions of the box)
    to fit from as well, a refit, keeping the best evidence. ``basis``: physical points (N, d) ->
    (N, J), functions the PDE's operator annihilates (module docstring; None: none), or, with
    ``basis_solves`` False, functions it does not, whose operator's values at the collocation points
    then enter the PDE's covariance blocks (:class:`pinnbo.models.evidence.EvidenceData`);
    ``basis_operator``: those values as an earlier model on the same collocation points found them
    (:attr:`basis_operator`), not computed again. The fit happens
    at construction; ``fit=False`` conditions on the data under ``start``'s values instead
    (``log_likelihood`` None, as with no data). ``warm_gain``: the log evidence the fit from
    ``start`` gained over ``start`` itself (None without one).
    """

    def __init__(self, unit_X: torch.Tensor, y: torch.Tensor, unit_Z: torch.Tensor | None, linear_form,
                 lower: torch.Tensor, widths: torch.Tensor, start: dict | None = None,
                 long_starts: Sequence[float] = (), fit: bool = True,
                 basis: Callable[[torch.Tensor], torch.Tensor] | None = None, basis_solves: bool = True,
                 basis_operator: torch.Tensor | None = None) -> None:
        super().__init__()
        self.lower, self.widths = lower, widths
        self.basis = basis
        X, Z = self.physical(unit_X), None if unit_Z is None else self.physical(unit_Z)
        self.X = X
        self.mean = float(y.mean()) if len(y) else 0.0
        self.scale = float(y.std()) if len(y) > 1 and float(y.std()) > 0 else 1.0
        self.targets = [(y - self.mean) / self.scale]
        self.terms = None
        self.Z = None
        self._products = None
        if linear_form is not None and Z is not None and len(Z):
            self.Z, self.terms, pde_targets = self._equations(Z, linear_form)
            self.targets.append(pde_targets)
            # the coefficients' part of K_fL and K_LL, the same in every evaluation of the fit
            identity = [[((0,) * X.shape[1], None)]]
            self._products = (coefficient_products(identity, self.terms), coefficient_products(self.terms, self.terms))
        self.target = torch.cat(self.targets)
        self.basis_operator = None if basis is None or basis_solves or self.terms is None else \
            basis_operator if basis_operator is not None else self._operator_of(basis, self.Z)
        self._evidence = EvidenceData(X, self.targets[0], self.Z, self.terms,
                                      self.targets[1] if self.terms is not None else None, self._products,
                                      None if basis is None else basis(X), self.basis_operator)
        self.long_start_deficit = None
        self.warm_gain = None
        # the chosen fit's L-BFGS curvature pairs where it was the warm start's (:meth:`hyperparameters`)
        self.curvature = start.get("curvature") if start and not fit else None
        if len(y) and fit:
            self.log_likelihood = self._fit(start, long_starts)
        else:     # nothing fitted (no evidence, or ``fit=False``): conditioned under ``start``'s values
            self.log_likelihood = None
            self.raw = self._raw(start) if start else self._raw({"lengthscale": FIRST_LENGTHSCALES[0] * widths})
        self._factorise()

    def physical(self, unit: torch.Tensor) -> torch.Tensor:
        return self.lower + unit * self.widths

    # -- the data -------------------------------------------------------------------------------------------
    def _equations(self, Z: torch.Tensor, linear_form):
        """Collocation points kept, their per-equation (α, c_α) terms divided by the coefficients'
        norm, and the matching targets, equation-major."""
        terms, sources = linear_form.terms(Z), linear_form.source(Z)
        keep = torch.ones(len(Z), dtype=torch.bool, device=Z.device)
        for e, eq in enumerate(terms):
            for _, c in eq:
                keep &= torch.isfinite(c)
            keep &= torch.isfinite(sources[:, e])
        Z, sources = Z[keep], sources[keep]
        normalised, targets = [], []
        for e, eq in enumerate(terms):
            coefficients = [(alpha, c[keep]) for alpha, c in eq]
            norm = torch.sqrt(sum(c ** 2 for _, c in coefficients)).clamp_min(1e-300)
            zero = next((c for alpha, c in coefficients if not any(alpha)), None)
            target = sources[:, e] - (0.0 if zero is None else zero * self.mean)
            normalised.append([(alpha, c / norm) for alpha, c in coefficients])
            targets.append(target / (norm * self.scale))
        return Z, normalised, torch.cat(targets)

    def _operator_of(self, functions: Callable[[torch.Tensor], torch.Tensor], Z: torch.Tensor) -> torch.Tensor:
        """The PDE's operator, as the fit's normalised terms, applied to each of ``functions``
        (physical points (N, d) -> (N, J)) at the collocation points ``Z``, by autograd: (m, J)."""
        points = Z.detach().clone().requires_grad_(True)
        values = functions(points)
        needed = [alpha for alpha, _ in self.terms[0]]
        columns = []
        for j in range(values.shape[1]):
            derivatives = derivatives_by_autograd(values[:, j], points, needed)
            columns.append(sum(c * derivatives[alpha] for alpha, c in self.terms[0]))
        return torch.stack(columns, -1).detach()

    # -- the covariance -------------------------------------------------------------------------------------
    def _blocks(self, lengthscale, outputscale, noise, pde_noise):
        """K_ff + σ² I, K_fL and K_LL + ε diag(K_LL) (the last two None without a PDE)."""
        blocks = covariance_blocks(self._evidence, lengthscale, outputscale, noise, pde_noise)
        return blocks.ff, blocks.fl, blocks.ll

    def _covariance(self, lengthscale, outputscale, noise, pde_noise) -> torch.Tensor:
        K, K_fl, K_ll = self._blocks(lengthscale, outputscale, noise, pde_noise)
        if K_fl is None:
            return K
        return torch.cat([torch.cat([K, K_fl], 1), torch.cat([K_fl.T, K_ll], 1)], 0)

    def _unpack(self, raw: torch.Tensor):
        d = self.X.shape[1]
        lo, hi = LENGTHSCALE_RANGE
        lengthscale = self.widths * (lo + (hi - lo) * torch.sigmoid(raw[:d]))
        outputscale = torch.exp(raw[d])
        noise = NOISE_FLOOR + torch.exp(raw[d + 1])
        pde_noise = PDE_NOISE_FLOOR + torch.exp(raw[d + 2])
        return lengthscale, outputscale, noise, pde_noise

    def _negative_log_likelihood(self, raw: torch.Tensor) -> torch.Tensor:
        """−log p(y | L f̃ = t) − log prior(ℓ): the evidence of the data given the PDE. The joint
        evidence p(y, t) would also reward a prior whose L f̃ has no variance at all (zero PDE
        targets are then certain), and a fit to it runs to infinite lengthscales and drops the data;
        conditioning on the PDE instead asks how well the physics-informed prior predicts the
        measurements (:mod:`pinnbo.models.evidence`, with its gradient in closed form)."""
        lengthscale, outputscale, noise, pde_noise = self._unpack(raw)
        return negative_log_evidence(self._evidence, lengthscale, outputscale, noise, pde_noise) \
            + _lengthscale_prior(lengthscale / self.widths)

    def _raw(self, values: dict) -> torch.Tensor:
        """Unconstrained parameters of hyper-parameter ``values`` (:meth:`hyperparameters`' keys;
        all but the lengthscale optional)."""
        lo, hi = LENGTHSCALE_RANGE
        dtype, device = self.X.dtype, self.X.device
        fractions = (torch.as_tensor(values["lengthscale"], dtype=dtype, device=device) / self.widths
                     ).clamp(lo * 1.001, hi * 0.999)
        p = (fractions - lo) / (hi - lo)
        rest = [values.get("outputscale", 1.0), max(values.get("noise", 1e-4) - NOISE_FLOOR, 1e-12),
                max(values.get("pde_noise", 1e-4) - PDE_NOISE_FLOOR, 1e-12)]
        return torch.cat([torch.log(p / (1 - p)), torch.log(torch.tensor(rest, dtype=dtype, device=device))])

    def _short_start(self) -> torch.Tensor | None:
        """The first fit's short start with the PDE exact, where the collocation resolves it
        (module docstring); None elsewhere."""
        if self.Z is None:
            return None
        short = SHORT_START_SPACINGS * len(self.Z) ** (-1.0 / self.X.shape[1])
        if short >= FIRST_LENGTHSCALES[0]:
            return None
        return self._raw({"lengthscale": short * self.widths, "pde_noise": PDE_NOISE_FLOOR})

    def _optimise(self, raw: torch.Tensor, curvature: torch.Tensor | None = None) -> "_Run":
        """L-BFGS on the negative log evidence from ``raw`` (:class:`_Run`: the optimum, its value,
        inf where the covariance does not factorise anywhere it went; the value at ``raw``; its last
        curvature pairs, :func:`_curvature_pairs`, None where its line search broke down; whether
        it started from ``curvature``). A line search that
        steps where the covariance does not factorise interpolates the infinite value into NaN
        parameters and ends there: the fit then keeps the best point it evaluated. ``curvature``:
        pairs of an earlier fit to start from (``CURVATURE_PAIRS``), unless the step they predict
        from the gradient at ``raw`` gains more than ``SETTLED_GAIN`` (data that moved the evidence,
        where the old curvature may lead into another basin): L-BFGS then starts from the identity."""
        raw = raw.clone().requires_grad_(True)
        tolerance = max(FIT_TOLERANCE, FIT_TOLERANCE_PER_OBSERVATION * len(self.targets[0]))
        optimiser = torch.optim.LBFGS([raw], max_iter=FIT_ITERATIONS, line_search_fn="strong_wolfe",
                                      tolerance_change=tolerance)
        if curvature is not None:
            _seed_curvature(optimiser, raw, curvature)
        best = [math.inf, None]
        at_start = []
        seeded = [curvature is not None]

        def closure():
            optimiser.zero_grad()
            loss = self._negative_log_likelihood(raw)
            value = float(loss.detach())
            if math.isfinite(value):
                loss.backward()
                if value < best[0]:
                    best[:] = [value, raw.detach().clone()]
            if not at_start:
                at_start.append(value)
                if curvature is not None and not (raw.grad is not None
                                                  and _predicted_gain(optimiser.state[raw], raw.grad) <= SETTLED_GAIN):
                    optimiser.state[raw]["n_iter"] = 0       # from the identity: L-BFGS's first iteration
                    seeded[0] = False
            return loss

        try:
            optimiser.step(closure)
        except RuntimeError:     # a line search into a non-positive-definite matrix
            pass
        pairs = _curvature_pairs(optimiser.state[raw])
        with torch.no_grad():
            value = float(self._negative_log_likelihood(raw))
        start = at_start[0] if at_start else math.inf
        if not math.isfinite(value) and best[1] is not None:
            return _Run(best[1], best[0], start, None, seeded[0])
        return _Run(raw.detach().clone(), value, start, pairs, seeded[0])

    def _warm_optimise(self, raw: torch.Tensor, curvature: torch.Tensor | None) -> "_Run":
        """:meth:`_optimise` from the previous optimum ``raw`` with the previous warm fit's
        ``curvature`` pairs, where the step they predict gains at most ``SETTLED_GAIN``; afresh from
        ``raw`` where, with them, it gained nothing or its line search broke down (a step the old
        curvature scaled too long for the grown data)."""
        if curvature is None or curvature.shape[-1] != raw.shape[-1]:
            return self._optimise(raw)
        run = self._optimise(raw, curvature)
        if run.seeded and (run.curvature is None or not run.value < run.start):
            return self._optimise(raw)
        return run

    def _fit(self, start: dict | None, long_starts: Sequence[float] = ()) -> float:
        """Fit the hyper-parameters (module docstring): from ``start`` (and from ``long_starts``, a
        refit), or from the first fit's long starts, the best evidence among them, replaced by the
        short start's optimum where that predicts the held-out observations better."""
        warm = [self._raw(start)] if start else []
        fresh = [self._raw({"lengthscale": f * self.widths}) for f in (long_starts if start else FIRST_LENGTHSCALES)]
        starts = warm + fresh
        best_raw, best, long_best = None, math.inf, math.inf
        warm_value, warm_pairs = math.inf, None
        for k, raw in enumerate(starts):
            if k == 0 and warm:
                raw, value, at_start, warm_pairs, _ = self._warm_optimise(raw, start.get("curvature"))
                warm_value = value
                if math.isfinite(value):
                    self.warm_gain = at_start - value
            else:
                raw, value, *_ = self._optimise(raw)
            if value < best:
                best, best_raw = value, raw
            if k >= len(warm):
                long_best = min(long_best, value)
        short = None if start else self._short_start()
        if short is not None:
            raw, value, *_ = self._optimise(short)
            if math.isfinite(value) and (best_raw is None or self._leave_one_out(raw) > self._leave_one_out(best_raw)):
                best, best_raw = value, raw
        if best_raw is None:          # no start gave a factorable matrix: the first, with its jitter
            best_raw = starts[0]
        self.raw = best_raw
        # Only a warm fit's pairs go on (a long start's describe its way from far off), where the
        # chosen fit ends where it did as far as the evidence tells (a long start that ties with it).
        self.curvature = warm_pairs if warm_value - best < SETTLED_GAIN else None
        # how far the long starts ended behind the chosen fit (None where none ran or it is not
        # finite): the optimiser skips them while they trail by more than new data could close
        deficit = long_best - best
        self.long_start_deficit = deficit if math.isfinite(deficit) else None
        return -best

    def _leave_one_out(self, raw: torch.Tensor) -> float:
        """Σ_i log p(y_i | y_−i, L f̃ = t), each observation predicted from the others and the PDE:
        with K the joint covariance and t the stacked targets, the held-out residual is
        [K⁻¹t]_i / [K⁻¹]_ii and its variance 1/[K⁻¹]_ii (Rasmussen & Williams 2006, Eqs. 5.10–5.12)."""
        K = self._covariance(*self._unpack(raw))
        L, info = torch.linalg.cholesky_ex(K)
        if int(info) != 0:
            return -math.inf
        inverse = torch.cholesky_inverse(L)
        n = len(self.targets[0])
        weights = (inverse @ self.target[:, None])[:n, 0]
        precision = inverse.diagonal()[:n]
        return float((0.5 * torch.log(precision) - 0.5 * weights ** 2 / precision).sum()
                     - 0.5 * n * math.log(2 * math.pi))

    def _factorise(self) -> None:
        with torch.no_grad():
            self.lengthscale, self.outputscale, self.noise, self.pde_noise = self._unpack(self.raw)
            K = self._covariance(self.lengthscale, self.outputscale, self.noise, self.pde_noise)
            jitter = 0.0
            while True:
                L, info = torch.linalg.cholesky_ex(K + jitter * torch.eye(len(K), dtype=K.dtype, device=K.device))
                if int(info) == 0:
                    break
                jitter = max(1e-10, 10 * jitter)
            self.cholesky = L
            self.alpha = torch.cholesky_solve(self.target[:, None], L)[:, 0]

    def hyperparameters(self) -> dict:
        """The fitted hyper-parameters, a start for the next fit (tensors: a state file holds them)."""
        values = {"lengthscale": self.lengthscale.detach().clone(), "outputscale": float(self.outputscale),
                  "noise": float(self.noise), "pde_noise": float(self.pde_noise)}
        if self.curvature is not None:
            values["curvature"] = self.curvature.clone()
        return values

    # -- predictions ------------------------------------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        return 1

    @functools.cached_property
    def _gradient_products(self):
        """The PDE block's products for its gradient in the posterior's points (:func:`point_block`):
        built at the acquisition's first differentiated evaluation, since a fit never reads them."""
        return gradient_products(self.X.shape[1], self.terms)

    def _cross(self, P: torch.Tensor, values: torch.Tensor | None = None) -> torch.Tensor:
        """cov(f̃(P), [f̃(X); L f̃(Z)]), shape (N_P, n + rows); ``values``: the basis at P, evaluated
        once by the caller that needs them too (the corners' and edges' functions cost more, with
        their gradient, than the kernel's blocks)."""
        k = operator_block(P, self.X, self.lengthscale, self.outputscale, None, None)
        if self.basis is not None:
            values = self.basis(P) if values is None else values
            k = k + self.outputscale * (values @ self._evidence.basis.T)
        if self.terms is None:
            return k
        # K_fL's coefficient products are rows (1, m), whatever the first set of points
        pde = point_block(P, self.Z, self.lengthscale, self.outputscale, self.terms, self._products[0],
                          self._gradient_products)
        if self.basis_operator is not None:
            pde = pde + self.outputscale * (values @ self.basis_operator.T)
        return torch.cat([k, pde], 1)

    def mean_derivatives(self, unit: torch.Tensor, multi_indices) -> dict:
        """{α: ∂^α of the posterior mean at unit points (N, d)}, in the data's units and physical
        coordinates (what a linearisation of the PDE about the mean needs; of the kernel's part:
        a model with a basis is conditioned on a linear PDE, never linearised)."""
        if self.basis is not None:
            raise ValueError("mean_derivatives: a PDE-GP with a basis gives no derivatives")
        P, alphas = self.physical(unit), [tuple(alpha) for alpha in multi_indices]
        operator = [[(alpha, None)] for alpha in alphas]        # one "equation" per derivative
        with torch.no_grad():
            k = operator_block(P, self.X, self.lengthscale, self.outputscale, operator, None)
            if self.terms is not None:
                k = torch.cat([k, operator_block(P, self.Z, self.lengthscale, self.outputscale, operator,
                                                 self.terms)], 1)
            values = (self.scale * (k @ self.alpha)).reshape(len(alphas), len(P))
        return {alpha: v + (0.0 if any(alpha) else self.mean) for alpha, v in zip(alphas, values)}

    def leave_one_out(self) -> float:
        """The fitted model's Σ_i log p(y_i | y_−i, PDE) (:meth:`_leave_one_out`): how well it
        predicts each observation from the others, comparable with another model's of the same data."""
        return self._leave_one_out(self.raw)

    def mean_and_variance(self, unit: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and variance of f at unit points (N, d), in the data's units; differentiable."""
        P = self.physical(unit)
        values = None if self.basis is None else self.basis(P)
        cross = self._cross(P, values)
        v = torch.linalg.solve_triangular(self.cholesky, cross.T, upper=False)
        mean = self.mean + self.scale * (cross @ self.alpha)
        prior = self.outputscale if values is None else self.outputscale * (1 + (values ** 2).sum(-1))
        variance = (prior - (v ** 2).sum(0)).clamp_min(1e-12) * self.scale ** 2
        return mean, variance

    def posterior(self, X: torch.Tensor, output_indices=None, observation_noise=False, posterior_transform=None,
                  **kwargs) -> GPyTorchPosterior:
        """The joint posterior of f at unit points ``X`` (batch × q × d): BoTorch's acquisitions
        (log EI, UCB, q-batches with pending points) take it unchanged."""
        X = self.physical(X)
        batch, q, d = X.shape[:-2], X.shape[-2], X.shape[-1]
        flat = X.reshape(-1, d)
        values = None if self.basis is None else self.basis(flat)
        cross = self._cross(flat, values)
        v = torch.linalg.solve_triangular(self.cholesky, cross.T, upper=False)      # (N, B·q)
        mean = (self.mean + self.scale * (cross @ self.alpha)).reshape(*batch, q)
        v = v.T.reshape(*batch, q, -1)
        Xb = X.reshape(*batch, q, d)
        prior = SEDerivatives(Xb.reshape(-1, d), Xb.reshape(-1, d), self.lengthscale, self.outputscale).k \
            if not batch else self._batched_prior(Xb)
        if values is not None:
            values = values.reshape(*batch, q, -1)
            prior = prior + self.outputscale * (values @ values.transpose(-1, -2))
        covariance = prior - v @ v.transpose(-1, -2)
        covariance = 0.5 * (covariance + covariance.transpose(-1, -2))
        # Rounding leaves a variance at a data point a hair below zero: floor it (a relative 1e-12).
        diagonal = torch.diagonal(covariance, dim1=-2, dim2=-1)
        floored = diagonal.clamp_min(1e-12 * float(self.outputscale)) + (self.noise if observation_noise else 0.0)
        covariance = (covariance - torch.diag_embed(diagonal) + torch.diag_embed(floored)) * self.scale ** 2
        # A joint posterior over several points (a q-batch, or NEHVI's baseline and a candidate) is
        # singular to rounding where points repeat noise-free data: a lazy covariance leaves its
        # factorisation to gpytorch's jittered Cholesky instead of failing. One point: dense, exact.
        joint = to_linear_operator(covariance) if q > 1 else covariance
        posterior = GPyTorchPosterior(MultivariateNormal(mean, joint))
        return posterior_transform(posterior) if posterior_transform is not None else posterior

    def _batched_prior(self, Xb: torch.Tensor) -> torch.Tensor:
        u = (Xb[..., :, None, :] - Xb[..., None, :, :]) / self.lengthscale
        return self.outputscale * torch.exp(-0.5 * (u ** 2).sum(-1))


def _lengthscale_prior(unit_lengthscale: torch.Tensor) -> torch.Tensor:
    """−log of BoTorch's default lengthscale prior on unit-cube lengthscales (Hvarfner et al. 2024),
    LogNormal(√2 + ½ log d, √3), up to a constant: the plain GP baselines fit under it too."""
    d = len(unit_lengthscale)
    loc, scale = math.sqrt(2) + 0.5 * math.log(d), math.sqrt(3)
    log = torch.log(unit_lengthscale)
    return ((log - loc) ** 2 / (2 * scale ** 2) + log).sum()


def _curvature_pairs(state: dict) -> torch.Tensor | None:
    """The last ``CURVATURE_PAIRS`` (gradient change y, step s) pairs of a torch L-BFGS's ``state``,
    (2, k, p), oldest first; None where it kept none or its last step length is not finite (a line
    search that broke down)."""
    step = state.get("t")
    if not state.get("old_dirs") or step is None or not math.isfinite(float(step)):
        return None
    return torch.stack([torch.stack(state["old_dirs"][-CURVATURE_PAIRS:]),
                        torch.stack(state["old_stps"][-CURVATURE_PAIRS:])]).detach().clone()


def _seed_curvature(optimiser: torch.optim.LBFGS, raw: torch.Tensor, curvature: torch.Tensor) -> None:
    """Start torch's L-BFGS on ``raw`` from the pairs ``curvature`` (:func:`_curvature_pairs`) instead
    of the identity: its state as after one iteration whose own pair is void (a zero step adds no
    pair), with the inverse Hessian's initial scale y·s/y·y of the newest pair (Nocedal & Wright
    2006, Eq. 7.20), the scale torch sets after each pair it keeps. The state's keys are torch's
    (``LBFGS.step`` reads them after its first evaluation)."""
    gradients, steps = (list(part.to(raw).unbind(0)) for part in curvature)
    newest = torch.dot(gradients[-1], steps[-1])
    optimiser.state[raw].update(
        func_evals=0, n_iter=1, d=torch.zeros_like(raw), t=0.0, prev_flat_grad=torch.zeros_like(raw),
        prev_loss=None, old_dirs=gradients, old_stps=steps,
        ro=[1.0 / torch.dot(y, s) for y, s in zip(gradients, steps)],
        H_diag=newest / torch.dot(gradients[-1], gradients[-1]))


def _predicted_gain(state: dict, gradient: torch.Tensor) -> float:
    """½ gᵀHg, the gain of a quasi-Newton step −Hg on a quadratic whose inverse Hessian H is the one
    torch's L-BFGS ``state`` holds (its pairs, their ρ and its initial scale, as
    :func:`_seed_curvature` put them; the two-loop recursion, Nocedal & Wright 2006, Algorithm 7.4)."""
    q, coefficients = gradient.detach().clone(), []
    for y, s, rho in zip(reversed(state["old_dirs"]), reversed(state["old_stps"]), reversed(state["ro"])):
        a = rho * torch.dot(s, q)
        q = q - a * y
        coefficients.append(a)
    r = q * state["H_diag"]
    for y, s, rho, a in zip(state["old_dirs"], state["old_stps"], state["ro"], reversed(coefficients)):
        r = r + s * (a - rho * torch.dot(y, r))
    return 0.5 * float(torch.dot(gradient, r))
