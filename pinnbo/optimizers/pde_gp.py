"""PDE-GP: Bayesian optimisation with a Gaussian process conditioned on the problem's PDE
(docs/algorithms.md, "PDE-GP").

The surrogate (:class:`pinnbo.models.pde_gp.PDEGP`) is a squared-exponential GP conditioned on the
observations and on L f = g at collocation points drawn once from the seed (space-filling Sobol
points in the box, outside the problem's singular set). Each step refits its hyper-parameters by
the evidence of the data given the PDE, warm-started from the previous step's (and afresh as the
data grow by each tenth, :func:`restart_due`, unless the fresh starts trail far behind,
:func:`long_starts_due`), and proposes the minimiser of BoTorch's lower confidence bound μ − σ on
it (``UpperConfidenceBound`` with ``maximize=False``, ``optimize_acqf`` from Sobol starts, never a
repeat), μ − σ/2 under an operator whose own solutions oscillate where nothing jumps
(``OSCILLATING_BETA``). Without a PDE the method is a plain GP with the same kernel.

A nonlinear PDE R[f] = 0 conditions the GP through its Gauss–Newton linearisation (Chen, Hosseini,
Owhadi & Stuart 2021): about a function f₀, Σ_α ∂R/∂(∂^α f)|f₀ ∂^α f = Σ_α ∂R/∂(∂^α f)|f₀ ∂^α f₀ −
R[f₀] is linear (:meth:`pinnbo.pde.PDE.linearised_form`). Each step linearises about the mean of
the GP of the data alone, conditions on that, and linearises again about the new posterior mean,
up to ``GAUSS_NEWTON_ITERATIONS`` fits, each from the one before (a refit's fresh starts go into
the first only: a new linearisation moves the PDE's targets a little, not the basin), or under its
values once a fit barely moves them (``SETTLED_GAIN``). Where the
result predicts the held-out observations worse than the data alone (leave-one-out), the step uses
the GP of the data alone: the PDE never overrules the measurements.

Where the problem declares boundary data that jump where its faces meet (``boundary_continuous``
False), the PDE is elliptic in two variables (Laplace's and Poisson's equations, a conductor
whose conductivity differs along its axes, is a tensor or varies over the plate, heat carried by a
flow) or in three with a constant conductivity along the axes, and no boundary condition is
declared, the GP adds the corner functions (a box's edge functions, their slopes and curvatures
along the edges) to its prior (:mod:`pinnbo.models.corners`; where the coefficients vary, a graded
conductor's divided by √k or the frozen operator's at each corner, and a box's curvatures, with the
operator's values on them at the collocation points in the PDE's covariance blocks):
the solution's jump at a corner is then part of the model instead
of a cliff the smooth kernel approaches proposal by proposal, and two designs on different sides
of a jump are no repeat of each other in the duplicate and stall rules
(:data:`pinnbo.acquisition.search.SIDE_GAP`). Where the PDE has no maximum principle the search
covers the whole box and the functions are centred, −½ and ½ on a jump's two sides (the prior's
variance shared by both; :mod:`pinnbo.models.corners`).

Where the PDE's maximum principle puts the minimum on the boundary, the bound is minimised over the
box's faces until the data say otherwise (:func:`pinnbo.acquisition.search.faces_only`;
docs/algorithms.md, "The maximum principle").

Collocation rows cost O((n + rows)³) per fit, so there are at most ``MAX_COLLOCATION_ROWS`` of them:
``collocation_points`` points for one equation, fewer per equation for a system (Cosine
Mixture-50's fifty equations get ten points each, each equation its own points). By default a
problem of one design variable gets 256 points, 0.004 of the width apart. They determine a
high-order operator's solution with fine structure between them (the beam's deflection, whose
lengthscale is 0.017 of the beam), where 128 find it from only some initial designs, and a step
costs a fifth of what it would with 512. From two variables up, 128 per equation keep a step near
a GP's cost (docs/results.md). From four variables up they lie 0.30 of the box apart or more, wider
than a known source's features, so half of one linear equation's interior points (three quarters
where the source is concentrated) are drawn where its source is large
(:meth:`PDEGPOptimizer._where_the_source_is`), and from six variables up a source spread over the
box gets 256 points (``SPREAD_SOURCE_DIMENSION``).

With designs still being evaluated (asynchronous runs) the bound is BoTorch's MC qUCB of the new
point jointly with them (:mod:`pinnbo.acquisition.pending`; the PDE-GP's posterior is joint).

Several objectives: one PDE-GP per objective, conditioned on that objective's linear PDE where the
problem gives one (its own collocation points) and a plain GP with the same kernel otherwise, and
BoTorch's qLogNEHVI over them, as gp-ehvi (docs/algorithms.md, "Several objectives").
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from botorch.acquisition import UpperConfidenceBound
from botorch.acquisition.multi_objective.logei import qLogNoisyExpectedHypervolumeImprovement
from botorch.acquisition.multi_objective.objective import WeightedMCMultiOutputObjective
from botorch.exceptions.warnings import NumericsWarning
from botorch.models.model import ModelList
from botorch.sampling import ListSampler, SobolQMCNormalSampler

from pinnbo.acquisition.optimize import search_acquisition, unvisited_corner
from pinnbo.acquisition.search import ESCAPE_DISTANCE, faces_only, repeats, stalled
from pinnbo.acquisition.pending import pending_ucb
from pinnbo.errors import MethodError, PDEError
from pinnbo.models.corners import corner_sides, jump_functions, jump_functions_solve, jump_shape
from pinnbo.models.gp import earlier_fit, record_fit
from pinnbo.models.pde_gp import FIRST_LENGTHSCALES, PDEGP, SETTLED_GAIN
from pinnbo.optimizers.base import MethodSettings, Optimizer
from pinnbo.pareto import inferred_reference
from pinnbo.pde import LinearisedForm
from pinnbo.pde.boundary import ConditionedForm, ConditionedLinearisedForm, declared_values
from pinnbo.streams import derived_seed, sobol_unit

#: The most collocation rows (points × equations) one fit conditions on, and the points per
#: equation by default for one design variable and from two up (module docstring).
MAX_COLLOCATION_ROWS = 512
COLLOCATION_POINTS_1D = 256
COLLOCATION_POINTS = 128
#: From this many design variables up, half of a linear PDE's interior collocation points are drawn
#: where its known source is large (:meth:`PDEGPOptimizer._where_the_source_is`), from a Sobol pool
#: of ``SOURCE_POOL`` points: 128 points lie 0.30 of the box apart in 4 variables and 0.38 in 5,
#: wider than a source's features, which the uniform points then miss (docs/algorithms.md,
#: "Collocation where the source is").
SOURCE_WEIGHTED_DIMENSION = 4
SOURCE_POOL = 4096
#: A source whose |g| weights over the pool have an effective sample size (Kish's, (Σw)²/Σw²) below
#: this share of the pool is concentrated: a plume covers a few per cent of the box, a product of
#: sines a third. Three quarters of the interior's points then go where it is and a quarter stays
#: uniform; a source spread over the box keeps half of them uniform, whose hold on the rest of the
#: box it needs more than a larger share of points where it is (docs/algorithms.md, "Collocation
#: where the source is").
CONCENTRATED_SOURCE = 0.15
#: From this many design variables up, a source spread over the box (not concentrated) gets
#: ``SPREAD_SOURCE_POINTS`` points per equation by default: in 6 variables 128 points lie 0.45 of
#: the box apart, and such a source shapes the solution everywhere, which twice the points hold
#: (docs/algorithms.md, "Collocation where the source is"); a concentrated source gained nothing
#: from them at twice the step's cost.
SPREAD_SOURCE_DIMENSION = 6
SPREAD_SOURCE_POINTS = 256
#: Points on a boundary condition's plane: one, for one design variable; else the planes of all
#: the conditions together get the interior's points over this share.
BOUNDARY_SHARE = 2
#: Where the model carries the corners' angle functions, the face search keeps this far (unit
#: coordinates) from the corners, where the model takes the mean of its two edges' limits
#: (:func:`pinnbo.acquisition.optimize._refine_on_faces`): a billionth of the width, closer to the
#: corner than any design a user would tell apart from it, yet on one edge only.
CORNER_MARGIN = 1e-9
#: How near a boundary condition's plane (unit coordinates) a design counts as on it: the face
#: search's and L-BFGS-B's points on a face are exactly there.
PLANE_TOLERANCE = 1e-12
#: UCB's β (μ − σ): the PDE-conditioned posterior is confident where the PDE shapes the function,
#: and β = 4 (gp-ucb's) spent proposals exploring basins it had already ruled out; log EI,
#: whose improvement is small on the boundary, reached 1% on fewer heat-plate seeds
#: (docs/archive/retired-options.md, "PDE-GP").
UCB_BETA = 1.0
#: UCB's β where the operator oscillates (:meth:`pinnbo.pde.PDE.oscillates`, a Helmholtz operator)
#: and the model carries no jump functions: the PDE-conditioned posterior places the basins, the
#: optimum lies inside one of them, and μ − σ spent proposals on the rim of the basin it had found
#: (docs/algorithms.md, "PDE-GP"). Where the data jump the bound stays wide: the jumps' amplitudes
#: are the data's to find.
OSCILLATING_BETA = 0.25
#: Gauss–Newton fits per step for a nonlinear PDE, at most, and the relative change of the
#: linearisation point (the mean's derivatives at the collocation points) below which they stop.
GAUSS_NEWTON_ITERATIONS = 3
GAUSS_NEWTON_TOLERANCE = 1e-4


def settled(gain: float | None) -> bool:
    """Whether a fit that gained ``gain`` nats over its start (None: no warm start) has settled
    (:data:`pinnbo.models.pde_gp.SETTLED_GAIN`). A Gauss–Newton step's auxiliary fits that have
    settled stop: the step's later linearisations are conditioned under its first fit's values, and
    the GP of the data alone keeps its values until the next point of the refit grid
    (:func:`restart_due`), where it is fitted again. The fit at the first linearisation, the model
    proposals come from, runs at every step as every pde-gp fit does."""
    return gain is not None and gain < SETTLED_GAIN


#: A step refits from long starts (:func:`refit_starts`) as well as from the previous step's optimum
#: when its observations cross a point of the geometric grid RESTART_GROWTH^k (every step up to 12,
#: then ever more rarely: 14, 15, 16, 18, ..., 42, 46, 50, ...; docs/algorithms.md, "PDE-GP").
RESTART_GROWTH = 1.1


def restart_due(n: int) -> bool:
    """Whether the fit on ``n`` observations also starts afresh (``RESTART_GROWTH``)."""
    if n < 2:
        return True
    step = math.log(RESTART_GROWTH)
    return math.floor(math.log(n) / step) > math.floor(math.log(n - 1) / step)


#: A due refit skips the long starts while they trail: where they last ended D nats of log evidence
#: behind the chosen fit, at n₀ observations, until D ≤ DEFICIT_PER_OBSERVATION · (n − n₀). A new
#: observation moves two fits' log evidence apart by the difference of its log predictive densities
#: under them, a few nats where both predict it; a beam's long starts settle on a flat function that
#: calls the data noise and fall behind by about four nats per observation (docs/algorithms.md,
#: "PDE-GP"). A skipped refit whose long starts would have lost leaves the fit as it was.
DEFICIT_PER_OBSERVATION = 10.0


#: The long starts of a refit (lengthscales, fractions of the box): the shorter of the first fit's
#: (:data:`pinnbo.models.pde_gp.FIRST_LENGTHSCALES`), and both while the observations are fewer than
#: ``EARLY_REFITS`` times the first fit's. The start from 0.6 decides a refit, ending best by more
#: than a tie, on a few refits in a hundred, most of them among the first two after the first fit,
#: while the evidence of a dozen points still has several basins; elsewhere it ends where the warm
#: start or the start from 0.2 does, and it costs half a refit (docs/algorithms.md, "PDE-GP").
REFIT_LENGTHSCALES = FIRST_LENGTHSCALES[:1]
EARLY_REFITS = 1.25


def long_starts_due(n: int, earlier: dict | None) -> bool:
    """Whether the fit on ``n`` observations starts afresh as well as from ``earlier`` (the fit it
    warm-starts from, with the long starts' bookkeeping :func:`with_long_starts` put there): on the
    refit grid (:func:`restart_due`), unless they last trailed by more than the observations since
    could close (``DEFICIT_PER_OBSERVATION``)."""
    if not restart_due(n):
        return False
    if earlier is None or earlier.get("long_starts_deficit") is None:
        return True
    return earlier["long_starts_deficit"] <= DEFICIT_PER_OBSERVATION * (n - earlier["long_starts_at"])


def refit_starts(n: int, earlier: dict | None) -> tuple[float, ...]:
    """The long starts of the fit on ``n`` observations that warm-starts from ``earlier`` (none where
    :func:`long_starts_due` says so): ``REFIT_LENGTHSCALES``, or the first fit's while the data are
    few (``EARLY_REFITS``; a fit recorded without the first fit's observations counts as late)."""
    if not long_starts_due(n, earlier):
        return ()
    first = None if earlier is None else earlier.get("first_fit_at")
    return FIRST_LENGTHSCALES if first is not None and n < EARLY_REFITS * first else REFIT_LENGTHSCALES


def with_long_starts(params: dict, n: int, deficit: float | None, earlier: dict | None) -> dict:
    """``params`` (a fit's hyper-parameters) with the observations of the first fit and the long
    starts' last deficit and the observations it was measured at: this fit's where its long starts
    ran, else carried over from ``earlier``."""
    first = n if earlier is None else earlier.get("first_fit_at")
    if first is not None:
        params = {**params, "first_fit_at": first}
    if deficit is not None:
        return {**params, "long_starts_at": n, "long_starts_deficit": float(deficit)}
    if earlier is not None and earlier.get("long_starts_deficit") is not None:
        return {**params, "long_starts_at": earlier["long_starts_at"],
                "long_starts_deficit": earlier["long_starts_deficit"]}
    return params


@dataclass
class PDEGPSettings(MethodSettings):
    """Documented defaults of PDE-GP (override with ``method_params``)."""

    collocation_points: int = "auto"  # PDE points per equation, within MAX_COLLOCATION_ROWS; auto: 256 for
                                      # one design variable, 128 from two up
    num_restarts: int = 10            # L-BFGS-B starts of optimize_acqf
    raw_samples: int = 512            # Sobol points scored to choose the starts
    maxiter: int = 200                # L-BFGS-B iterations per start
    duplicate_tol: float = 1e-4       # sup-norm distance (unit box) that counts as a repeat

    POSITIVE = ("num_restarts", "raw_samples", "maxiter")
    NON_NEGATIVE = ("collocation_points", "duplicate_tol")
    AUTO = ("collocation_points",)
    INTERNAL = ("duplicate_tol",)


def covered_share(weights: np.ndarray) -> float:
    """The share of a pool that sampling weights (summing to 1) effectively cover: Kish's effective
    sample size 1/Σw², over the pool's size (1 for equal weights, 1/N for one point)."""
    return 1.0 / float((weights ** 2).sum()) / len(weights)


class PDEGPOptimizer(Optimizer):
    """PDE-GP ask/tell optimiser (minimises)."""

    name = "pde-gp"
    Settings = PDEGPSettings
    multi_objective = True      # a PDE per objective that has one, qLogNEHVI on them
    # An integer may be a parameter of the PDE (its own variables are real): the squared-exponential
    # kernel takes it as a number, and the acquisition is maximised over its levels.
    variable_kinds = ("real", "log", "integer")
    SMOKE_PARAMS = {"collocation_points": 16, "num_restarts": 2, "raw_samples": 32, "maxiter": 20}

    def __init__(self, domain, seed=0, *, settings=None, pde=None, collocation_filter=None, device="cpu"):
        super().__init__(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device)
        # a linear PDE conditions the GP exactly; a nonlinear one through its linearisation about
        # the GP's own mean (Gauss–Newton, module docstring)
        self.linear_form = self.linearised = None
        # Several objectives: a linear PDE per objective that has one (module docstring).
        self.forms: dict = {}
        self.collocations: dict = {}
        if isinstance(pde, dict):
            for name, law in pde.items():
                if not law.is_linear():
                    raise MethodError(f"method: pde-gp with several objectives takes linear PDEs; {name}'s is not "
                                      "(gp-ehvi takes the objectives without it)")
                self.collocations[name], self.forms[name] = self._collocation(law, law.linear_form(), name)
            pde = None
        self.collocation = None
        if pde is not None:
            if pde.is_linear():
                self.collocation, self.linear_form = self._collocation(pde, pde.linear_form())
            else:
                try:
                    form = pde.linearised_form()
                except PDEError as exc:   # a term with no derivative to linearise by (floor, sign of u)
                    raise MethodError(f"method: pde-gp cannot linearise this PDE ({exc}); pinn-bo takes it") from None
                self.collocation, self.linearised = self._collocation(pde, form)
        self.boundary_minimum = pde is not None and pde.minimum_on_boundary(domain.named_bounds)
        self._oscillates = pde is not None and pde.oscillates()
        # the planes where a condition declares the value itself: (axis, unit coordinate, values)
        self._declared = [] if pde is None else [
            (*self._plane(c), values) for c in pde.boundary if (values := declared_values(c)) is not None]
        self._basis_operator = None     # the operator on the corner functions at the collocation points
        self._jump_shapes: dict = {}    # jump_shape's answer per declared boundary continuity
        self.model: PDEGP | None = None
        # Hyper-parameters of the two latest fits, (step, values): a step starts from the latest fit
        # of an earlier step, so asking twice before a tell starts from the same values. A
        # nonlinear PDE's GP of the data alone keeps its own.
        self._fits: list[tuple[int, dict]] = []
        self._data_fits: list[tuple[int, dict]] = []

    def _collocation(self, pde, form, *keys: str) -> tuple[torch.Tensor, object]:
        """Unit-cube collocation points (rows, d) of ``pde``'s ``form``, equation-major blocks of
        equal size, drawn once (``keys``: an objective's own stream), and the form to condition on
        there: with boundary conditions, the interior's points then each condition's on its plane,
        and the form that stacks them (:mod:`pinnbo.pde.boundary`)."""
        s, d = self.settings, self.domain.dim
        source = self._source(form, keys)
        spread = source is not None and source[2] and d >= SPREAD_SOURCE_DIMENSION
        wanted = s.automatic("collocation_points", COLLOCATION_POINTS_1D if d == 1
                             else SPREAD_SOURCE_POINTS if spread else COLLOCATION_POINTS)
        # a plane of one variable is a point: one row says all there is; the faces of d − 1
        # variables share a fraction of the interior's points
        conditions = pde.boundary
        on_plane = 1 if d == 1 else max(1, wanted // (BOUNDARY_SHARE * max(1, len(conditions))))
        per_equation = max(1, min(wanted, (MAX_COLLOCATION_ROWS - on_plane * len(conditions)) // form.n_equations))
        blocks = [self._where_the_source_is(self._draw(per_equation, None, "collocation", *keys), source, keys)]
        for k, condition in enumerate(conditions):
            axis, at = self._plane(condition)
            blocks.append(self._draw(on_plane, (axis, min(max(at, 0.0), 1.0)), "boundary", k, *keys))
        points = torch.as_tensor(np.concatenate(blocks), dtype=torch.float64, device=self.device)
        if not conditions:
            return points, form
        forms = [c.pde.linear_form() for c in conditions]
        sizes = [len(b) for b in blocks]
        stacked = ConditionedLinearisedForm if isinstance(form, LinearisedForm) else ConditionedForm
        return points, stacked(form, forms, sizes)

    def _source(self, form, keys: tuple) -> tuple[np.ndarray, np.ndarray, bool] | None:
        """From ``SOURCE_WEIGHTED_DIMENSION`` variables up, a Sobol pool of the unit cube, the one
        linear equation's |g| there as weights summing to one, and whether the source is spread
        over the box (its weights' share at least ``CONCENTRATED_SOURCE``); None for a source-free
        equation (g constant), a system, a linearised nonlinear PDE (its source moves with the
        linearisation point) and a singular set."""
        d = self.domain.dim
        if (d < SOURCE_WEIGHTED_DIMENSION or form.n_equations != 1 or isinstance(form, LinearisedForm)
                or self.collocation_filter is not None):
            return None
        pool = sobol_unit(SOURCE_POOL, d, self.seed, self.name, "collocation-source", *keys)
        g = form.source(torch.as_tensor(self.domain.from_unit(pool), dtype=torch.float64))[:, 0].abs().numpy()
        if not np.ptp(g) > 0:
            return None
        weights = g / g.sum()
        return pool, weights, covered_share(weights) >= CONCENTRATED_SOURCE

    def _where_the_source_is(self, points: np.ndarray, source: tuple[np.ndarray, np.ndarray, bool] | None,
                             keys: tuple) -> np.ndarray:
        """The interior's collocation ``points`` (count, d), their second half (three quarters
        where the source is concentrated, ``CONCENTRATED_SOURCE``), replaced by points of the
        ``source`` pool (:meth:`_source`) drawn with probability proportional to |g|: where the
        source is large the solution bends most, and the equations there pin down what uniform
        points too sparse for the source's features leave to the data. The rest keep the PDE's
        hold on the rest of the box. Without a source the points stay as drawn."""
        if source is None:
            return points
        pool, weights, spread = source
        keep = len(points) // (2 if spread else 4)
        # a source that vanishes on most of the pool has fewer points to give without repeats
        keep = max(keep, len(points) - int(np.count_nonzero(weights)))
        rng = np.random.default_rng(derived_seed(self.seed, self.name, "collocation-source-choice", *keys))
        chosen = rng.choice(len(pool), size=len(points) - keep, replace=False, p=weights)
        return np.concatenate([points[:keep], pool[chosen]])

    def _plane(self, condition) -> tuple[int, float]:
        """A boundary condition's plane in the unit cube: (the design variable's axis, its unit
        coordinate there)."""
        axis = self.domain.names.index(condition.input)
        return axis, (condition.at - self.domain.lower_array[axis]) / self.domain.widths[axis]

    def _draw(self, count: int, plane: tuple[int, float] | None, *stream) -> np.ndarray:
        """``count`` Sobol points of the unit cube (on the plane ``(axis, value)`` where given),
        outside the problem's singular set."""
        points = sobol_unit(4 * count, self.domain.dim, self.seed, self.name, *stream)
        if plane is not None:
            points[:, plane[0]] = plane[1]
        if self.collocation_filter is not None:
            points = points[np.asarray(self.collocation_filter(self.domain.from_unit(points)), dtype=bool)]
        return points[:count]

    def propose(self) -> np.ndarray:
        s = self.settings
        X, y = self.observed()
        evaluated, unit_X = self.evaluated_unit(), self.domain.to_unit(X)
        if len(y) == 0:
            return self.random_design()
        dtype = torch.float64
        lower = torch.as_tensor(self.domain.lower_array, dtype=dtype, device=self.device)
        widths = torch.as_tensor(self.domain.widths, dtype=dtype, device=self.device)
        seed = derived_seed(self.seed, self.name, self.ask_index, "botorch")
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            unit_X_t = torch.as_tensor(unit_X, dtype=dtype, device=self.device)
            if self.objectives:
                acq = self._hypervolume_acquisition(unit_X_t, y, lower, widths, seed)
                pool = sobol_unit(s.raw_samples, self.domain.dim, self.seed, self.name, self.ask_index, "raw-samples")
                return self.domain.from_unit(self._search(acq, pool).best(evaluated, self.duplicate_tol))
            y_t = torch.as_tensor(y, dtype=dtype, device=self.device)
            start = earlier_fit(self._fits, self.n_told)
            long_starts = refit_starts(len(y), start)
            basis, sides, exact = self._jumps(lower, widths)
            if self.linearised is None:
                self.model = PDEGP(unit_X_t, y_t, self.collocation, self.linear_form, lower, widths, start=start,
                                   long_starts=long_starts, basis=basis, basis_solves=exact,
                                   basis_operator=self._basis_operator)
                self._basis_operator = self.model.basis_operator     # the collocation's: fixed for the run
                deficit = self.model.long_start_deficit
            else:
                self.model, deficit = self._gauss_newton(unit_X_t, y_t, lower, widths, start, long_starts)
            self._fits = record_fit(self._fits, self.n_told,
                                    with_long_starts(self.model.hyperparameters(), len(y), deficit, start))
            beta = self.beta
            acq = UpperConfidenceBound(self.model, beta=beta, maximize=False) if not self.pending else \
                pending_ucb(self.model, beta, self.pending_unit(), seed, self.device, maximize=False)
            pool = sobol_unit(s.raw_samples, self.domain.dim, self.seed, self.name, self.ask_index, "raw-samples")
            on_boundary = self.boundary_minimum and faces_only(unit_X, y)
            known = self._known_elsewhere(float(np.min(y)))
            found = self._search(acq, pool, on_boundary, sides is not None, known)
            # sides: the design beside a measured corner on an edge takes that edge's limit, not the
            # corner's mean of two nor the other edge's, and is no repeat of it
            unit = found.best(evaluated, self.duplicate_tol, sides)
            # The stall rule, its escape an unevaluated corner where the model jumps at the corners
            # (their values fix the jumps' amplitudes), else chosen from the same search; noise-free
            # only: under declared noise a replicate is information.
            if self.duplicate_tol > 0 and repeats(unit, evaluated, sides) and stalled(unit_X, y, sides):
                corner = None if sides is None else unvisited_corner(acq, evaluated, sides, known, self.device)
                unit = found.best(evaluated, ESCAPE_DISTANCE, sides) if corner is None else corner
        return self.domain.from_unit(unit)

    @property
    def beta(self) -> float:
        """UCB's β: ``OSCILLATING_BETA`` under an oscillating operator whose model carries no jump
        functions, ``UCB_BETA`` elsewhere."""
        return OSCILLATING_BETA if self._oscillates and self._jump_shape() is None else UCB_BETA

    def _jump_shape(self):
        """:func:`pinnbo.models.corners.jump_shape` of the problem, read off the PDE's symbols once a
        run for each declared boundary continuity."""
        if self.boundary_continuous not in self._jump_shapes:
            self._jump_shapes[self.boundary_continuous] = jump_shape(self.domain, self.pde, self.boundary_continuous)
        return self._jump_shapes[self.boundary_continuous]

    def _jumps(self, lower: torch.Tensor, widths: torch.Tensor):
        """Where the boundary data jump (module docstring): the corner functions, physical points
        (N, 2) -> (N, 4) (a box's edge functions, their slopes and curvatures along the edges, (N, 3) ->
        (N, 36): :func:`pinnbo.models.corners.jump_functions`), for the model's prior, centred
        where the PDE has no maximum principle (module docstring); the
        sides of a jump, unit designs (n, d) -> their angles, which the duplicate and stall rules
        tell apart (:data:`pinnbo.acquisition.search.SIDE_GAP`); whether the functions solve the PDE
        (:func:`pinnbo.models.corners.jump_functions_solve`). (None, None, True) elsewhere (a
        nonlinear PDE has none)."""
        shape = self._jump_shape()
        if shape is None:
            return None, None, True
        upper = lower + widths
        low, wide = lower.cpu().numpy(), widths.cpu().numpy()
        bounds = torch.as_tensor(low, dtype=torch.float64), torch.as_tensor(low + wide, dtype=torch.float64)
        # centred where the search covers the whole box: pinnbo.models.corners' module docstring
        centred = not self.boundary_minimum
        return (lambda points: jump_functions(points, lower, upper, shape, centred=centred),
                lambda unit: corner_sides(torch.as_tensor(low + np.asarray(unit) * wide, dtype=torch.float64),
                                          *bounds, shape).numpy(),
                jump_functions_solve(shape))

    def _search(self, acq, pool: np.ndarray, on_boundary: bool = False, jumps: bool = False, violation=None):
        """The acquisition's search over the design box, over the levels of an integer parameter
        too (:func:`~pinnbo.acquisition.optimize.search_acquisition`); its ``best`` chooses among
        new designs. ``jumps``: the model jumps at the corners (:meth:`_jumps`), and the search
        keeps ``CORNER_MARGIN`` off them. ``violation``: the designs ruled out
        (:meth:`_known_elsewhere`)."""
        s = self.settings
        return search_acquisition(acq, pool, num_restarts=s.num_restarts, maxiter=s.maxiter, violation=violation,
                                  device=self.device, on_boundary=on_boundary, domain=self.domain,
                                  face_margin=CORNER_MARGIN if jumps else 0.0)

    def _known_elsewhere(self, best: float):
        """The designs not worth an evaluation, as a known-constraint violation of unit points
        (N, d) -> (N,): those on a plane where a boundary condition declares the value (h = b),
        unless the declared value beats ``best``, the least value observed. The bound's search would
        otherwise take a point on such a plane between its collocation points, where the posterior
        is uncertain, for a value the declaration already gives (a fixed string's or membrane's 0).
        None without such a condition."""
        if not self._declared:
            return None

        def violation(points: np.ndarray) -> np.ndarray:
            out = np.zeros(len(points))
            for axis, at, values in self._declared:
                on = np.flatnonzero(np.abs(points[:, axis] - at) <= PLANE_TOLERANCE)
                if len(on):
                    physical = torch.as_tensor(self.domain.from_unit(points[on]), dtype=torch.float64)
                    out[on[values(physical).numpy() >= best]] = 1.0
            return out

        return violation

    def _hypervolume_acquisition(self, unit_X: torch.Tensor, Y: np.ndarray, lower: torch.Tensor,
                                 widths: torch.Tensor, seed: int):
        """Several objectives: a PDE-GP per objective (conditioned on its PDE where it has one, a
        plain GP with the same kernel otherwise) and BoTorch's qLogNEHVI on them, as gp-ehvi's
        (docs/algorithms.md, "Several objectives"); the reference point the problem's or inferred."""
        Y = Y.reshape(len(Y), -1)
        models = [PDEGP(unit_X, torch.as_tensor(Y[:, j], dtype=unit_X.dtype, device=self.device),
                        self.collocations.get(name), self.forms.get(name), lower, widths)
                  for j, name in enumerate(self.objectives)]
        reference = self.reference if self.reference is not None else inferred_reference(Y)
        m = len(models)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NumericsWarning)
            return qLogNoisyExpectedHypervolumeImprovement(
                ModelList(*models), ref_point=(-np.asarray(reference)).tolist(), X_baseline=unit_X,
                # the models' posteriors are independent (a PosteriorList): one sampler each
                sampler=ListSampler(*(SobolQMCNormalSampler(torch.Size([64]), seed=(seed + j) % (2**31))
                                      for j in range(m))),
                objective=WeightedMCMultiOutputObjective(weights=-torch.ones(m, dtype=unit_X.dtype, device=self.device)),
                prune_baseline=True,
                X_pending=torch.as_tensor(self.pending_unit(), dtype=unit_X.dtype, device=self.device)
                if self.pending else None)

    def _gauss_newton(self, unit_X: torch.Tensor, y: torch.Tensor, lower: torch.Tensor, widths: torch.Tensor,
                      start: dict | None, long_starts: tuple) -> tuple[PDEGP, float | None]:
        """PDE-GP conditioned on the nonlinear PDE linearised about its own posterior mean at the
        collocation points, refitted about each new mean (at most ``GAUSS_NEWTON_ITERATIONS`` fits,
        fewer once the mean stops moving); the first linearisation is about the GP of the data
        alone, which stands in for it where it predicts the held-out data better (module
        docstring). With it, the first fit's long-start deficit (the only fit that has long starts)."""
        Z, needed = self.collocation, self.linearised.multi_indices
        # The data alone, from its own previous fit and afresh on the refit schedule, never from the
        # PDE-GP's values: a PDE fit whose output scale collapsed (a flat function, the data as
        # noise) would pass that on to the linearisation point and to the fallback below.
        # Settled (``SETTLED_GAIN``), it keeps its values until the refit grid.
        earlier = earlier_fit(self._data_fits, self.n_told)
        keep = earlier is not None and not restart_due(len(y)) and settled(earlier.get("warm_gain"))
        data_only = PDEGP(unit_X, y, None, None, lower, widths, start=earlier, long_starts=long_starts,
                          fit=not keep)
        gain = earlier["warm_gain"] if keep else data_only.warm_gain
        self._data_fits = record_fit(self._data_fits, self.n_told, {**data_only.hyperparameters(), **(
            {} if gain is None else {"warm_gain": float(gain)})})
        physical = data_only.physical(Z)        # where every PDEGP here evaluates the PDE
        point = data_only.mean_derivatives(Z, needed)
        deficit, refit = None, True
        for _ in range(GAUSS_NEWTON_ITERATIONS):
            model = PDEGP(unit_X, y, Z, self.linearised.at(physical, point), lower, widths, start=start,
                          long_starts=long_starts, fit=refit)
            deficit = model.long_start_deficit if deficit is None else deficit
            # a later linearisation moves the PDE's targets a little: its fit starts from this one,
            # or keeps its values where that fit barely moved them (``SETTLED_GAIN``)
            start, long_starts = model.hyperparameters(), ()
            refit = refit and not settled(model.warm_gain)
            previous, point = point, model.mean_derivatives(Z, needed)
            if all(float((point[a] - previous[a]).abs().max()) <= GAUSS_NEWTON_TOLERANCE
                   * (1.0 + float(previous[a].abs().max())) for a in needed):
                break
        # The PDE never overrules the data: a linearisation that predicts the held-out observations
        # worse than the data alone do (a wrong branch of the nonlinear PDE's solutions) sits out.
        if model.leave_one_out() < data_only.leave_one_out():
            return data_only, deficit
        return model, deficit

    # -- checkpoints ----------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"fits": copy.deepcopy(self._fits), "data_fits": copy.deepcopy(self._data_fits)}

    def load_state_dict(self, state: dict) -> None:
        self._fits = copy.deepcopy(state["fits"])
        self._data_fits = copy.deepcopy(state.get("data_fits", []))     # none: the next fit starts afresh
