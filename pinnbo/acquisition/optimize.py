"""Maximising a BoTorch acquisition over the unit cube: a Sobol pool, BoTorch's Boltzmann choice of
restarts among the allowed points, L-BFGS-B from each (``optimize_acqf``) (:func:`search_acquisition`),
and the best candidate that satisfies the known constraints and repeats no evaluated design
(:meth:`Candidates.best`; docs/algorithms.md, "The duplicate rule").
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from botorch.acquisition import AcquisitionFunction
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim import optimize_acqf
from botorch.optim.initializers import initialize_q_batch

from pinnbo.acquisition.mixed import maximize_mixed
from pinnbo.acquisition.search import (Sides, best_allowed, best_new, face_axes, farthest_from, nudged,
                                      on_or_off_faces, repeated, spread_over_faces, to_nearest_face)
from pinnbo.space import Box

#: Where the model jumps at the cube's corners and edges, the search over the whole cube stops once
#: an L-BFGS-B iteration raises the acquisition by less than this fraction of its value (scipy's
#: ``ftol``): its supremum may be a limit along an edge that no point attains, toward which each
#: iteration's line search meets the jump beside it and shortens its step many times for a gain
#: that no longer moves the design.
JUMP_FTOL = 1e-5

#: Where the model jumps, the whole cube's search also caps each L-BFGS-B line search at this many
#: evaluations (scipy's ``maxls``, 20 by default): a line search that steps across a jump meets a
#: value the slope did not predict and shortens its step toward the limit beside it, and a restart
#: creeping to such a limit otherwise spends up to 20 evaluations an iteration for a design that
#: no longer moves. Two failed line searches in a row end the restart where it stands; the limits
#: beside the corners are candidates of their own (:func:`corner_limits`).
JUMP_MAXLS = 5


def maximize_acquisition(acq, pool: np.ndarray, evaluated: np.ndarray, *, num_restarts: int, maxiter: int,
                         duplicate_tol: float, violation: Callable[[np.ndarray], np.ndarray] | None = None,
                         device: torch.device | str = "cpu", on_boundary: bool = False,
                         domain: Box | None = None, face_margin: float = 0.0,
                         sides: Sides | None = None) -> np.ndarray:
    """argmax of ``acq`` (a BoTorch acquisition on unit-cube inputs) over the cube, (d,): one
    :func:`search_acquisition` and its best new candidate (:meth:`Candidates.best`), with
    ``duplicate_tol`` and ``sides`` as there."""
    return search_acquisition(acq, pool, num_restarts=num_restarts, maxiter=maxiter, violation=violation,
                              device=device, on_boundary=on_boundary, domain=domain,
                              face_margin=face_margin).best(evaluated, duplicate_tol, sides)


@dataclass
class Candidates:
    """One search of an acquisition over the unit cube: its refined candidates and its scored pool,
    among which :meth:`best` chooses. Choosing again with a larger distance from the designs (the
    stall rule's escape, docs/algorithms.md) reuses the search: another L-BFGS-B run from other
    starts of the same pool on the same acquisition finds mostly the same local maxima."""

    acq: AcquisitionFunction
    refined: np.ndarray               # (N, d), the restarts' ends
    refined_values: np.ndarray        # (N,)
    refined_violation: np.ndarray     # (N,)
    pool: np.ndarray                  # (M, d), scored and in the running
    pool_values: np.ndarray           # (M,)
    pool_violation: np.ndarray        # (M,)
    violation: Callable[[np.ndarray], np.ndarray]
    on_boundary: bool
    device: torch.device | str

    def best(self, evaluated: np.ndarray, duplicate_tol: float, sides: Sides | None = None) -> np.ndarray:
        """The best allowed candidate that repeats no evaluated design (within ``duplicate_tol``,
        sup norm; the least violating one when none is allowed): the refined candidates, the points
        just beyond ``duplicate_tol`` beside those that repeat one (on the faces for a face
        search), and the pool. ``sides``: where the model jumps at the cube's corners, designs on
        two sides of a jump are no repeat of each other however close (a corner and the design
        beside it, the designs beside it on its two edges; :data:`pinnbo.acquisition.search.SIDE_GAP`)."""
        candidates, values, violation = self.refined, self.refined_values, self.refined_violation
        beside = nudged(candidates, evaluated, duplicate_tol, sides)
        if self.on_boundary:
            d = candidates.shape[1]
            beside = to_nearest_face(beside, np.zeros(d), np.ones(d))
        if len(beside):
            with torch.no_grad():
                nudged_values = self.acq(torch.as_tensor(beside, dtype=torch.float64, device=self.device).unsqueeze(1))
            candidates = np.concatenate([candidates, beside])
            values = np.concatenate([values, nudged_values.detach().cpu().double().numpy()])
            violation = np.concatenate([violation, self.violation(beside)])
        return best_allowed(np.concatenate([candidates, self.pool]), np.concatenate([values, self.pool_values]),
                            np.concatenate([violation, self.pool_violation]), evaluated, duplicate_tol, sides)


@dataclass
class MixedCandidates:
    """The search over integer and choice levels (:func:`pinnbo.acquisition.mixed.maximize_mixed`),
    run by each :meth:`best`: it rules the evaluated designs out as it searches."""

    acq: AcquisitionFunction
    domain: Box
    pool: np.ndarray
    num_restarts: int
    maxiter: int
    violation: Callable[[np.ndarray], np.ndarray] | None
    device: torch.device | str

    def best(self, evaluated: np.ndarray, duplicate_tol: float, sides: Sides | None = None) -> np.ndarray:
        return maximize_mixed(self.acq, self.domain, evaluated, raw_samples=len(self.pool),
                              num_restarts=self.num_restarts, maxiter=self.maxiter, duplicate_tol=duplicate_tol,
                              fallback_pool=lambda: self.pool, violation=self.violation, device=self.device)


def search_acquisition(acq, pool: np.ndarray, *, num_restarts: int, maxiter: int,
                       violation: Callable[[np.ndarray], np.ndarray] | None = None,
                       device: torch.device | str = "cpu", on_boundary: bool = False,
                       domain: Box | None = None, face_margin: float = 0.0) -> Candidates | MixedCandidates:
    """Search ``acq`` (a BoTorch acquisition on unit-cube inputs) over the cube for its maxima, the
    choice among them left to the result's ``best``.

    ``pool`` (N, d) scores the starts and stays in the running; ``violation(points) -> (N,)`` the
    known constraints' total violation (0: allowed; None: no known constraints). The restarts start
    from allowed pool points only. ``on_boundary``: the cube's faces only (the pool spread over
    them, each restart's face coordinate fixed; :func:`pinnbo.acquisition.search.faces_only`), its
    free coordinates ``face_margin`` or more from the faces' own edges (:func:`_refine_on_faces`),
    the cube's corners and the limits beside them then scored as candidates of their own
    (:func:`corner_limits`); over the whole cube, a ``face_margin`` says the model jumps there
    (:data:`JUMP_FTOL`, :data:`JUMP_MAXLS`), the corners and the limits beside them along every
    edge are candidates too, and every coordinate of a candidate lies on a face or ``face_margin``
    or more from it (:func:`_on_or_off_faces`). ``domain`` with integer or choice variables: the
    search over their levels of :mod:`pinnbo.acquisition.mixed` (the pool as its raw sample and
    fallback; no face search)."""
    if domain is not None and not domain.numeric:
        return MixedCandidates(acq, domain, pool, num_restarts, maxiter, violation, device)
    d = pool.shape[1]
    dtype = torch.float64
    if on_boundary:
        pool = spread_over_faces(pool, np.zeros(d), np.ones(d))
    if face_margin > 0:     # the corners the refinement keeps off or stops short of, candidates in their own right
        pool = np.concatenate([pool, corner_limits(d, face_margin, along_edges=d == 2 or not on_boundary)])
    violation = violation or (lambda points: np.zeros(len(points)))
    pool_violation = violation(pool)
    with torch.no_grad():
        pool_values = acq(torch.as_tensor(pool, dtype=dtype, device=device).unsqueeze(1))
    pool_values = pool_values.detach().cpu().double().numpy()
    starts_from = np.flatnonzero((pool_violation == 0.0) & np.isfinite(pool_values))
    candidates, values = np.zeros((0, d)), np.zeros(0)
    if len(starts_from):
        X0 = torch.as_tensor(pool[starts_from], dtype=dtype, device=device).unsqueeze(1)
        v0 = torch.as_tensor(pool_values[starts_from], dtype=dtype, device=device)
        starts, _ = initialize_q_batch(X0, v0, n=min(num_restarts, len(starts_from)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizationWarning)
            warnings.filterwarnings("ignore", message="Optimization failed", category=RuntimeWarning)
            warnings.filterwarnings("ignore", message="Unknown solver options")   # factr, where scipy's own runs
            if on_boundary:
                candidates, values = _refine_on_faces(acq, starts[:, 0, :], maxiter, face_margin)
            else:
                bounds = torch.stack([torch.zeros(d, dtype=dtype), torch.ones(d, dtype=dtype)]).to(device)
                options = {"maxiter": maxiter}
                if face_margin > 0:
                    options.update(ftol=JUMP_FTOL, factr=None, maxls=JUMP_MAXLS)
                refined, refined_values = optimize_acqf(
                    acq, bounds=bounds, q=1, num_restarts=len(starts), batch_initial_conditions=starts,
                    options=options, return_best_only=False,
                )
                candidates = refined.reshape(-1, d).detach().cpu().double().numpy().clip(0.0, 1.0)
                values = refined_values.reshape(-1).detach().cpu().double().numpy()
                if face_margin > 0:
                    candidates, values = _on_or_off_faces(acq, candidates, values, face_margin, device)
    return Candidates(acq, candidates, values, violation(candidates), pool, pool_values, pool_violation, violation,
                      on_boundary, device)


def _on_or_off_faces(acq, candidates: np.ndarray, values: np.ndarray, margin: float,
                     device: torch.device | str) -> tuple[np.ndarray, np.ndarray]:
    """The whole cube's refined ``candidates`` (N, d) with each coordinate on a face or ``margin``
    or more from it (:func:`~pinnbo.acquisition.search.on_or_off_faces`: L-BFGS-B creeping toward
    a limit beside an edge ends a hair off the face, where the oracle reads the edge itself), and
    the acquisition re-evaluated where one moved: beside a corner the move can change the side
    the model reads the point on."""
    moved = on_or_off_faces(candidates, margin)
    changed = np.flatnonzero(np.any(moved != candidates, axis=1))
    if len(changed):
        values = values.copy()
        with torch.no_grad():
            values[changed] = acq(torch.as_tensor(moved[changed], dtype=torch.float64, device=device)
                                  .unsqueeze(1)).detach().cpu().double().numpy()
    return moved, values


def corner_limits(d: int, margin: float, along_edges: bool = True) -> np.ndarray:
    """The unit cube's 2^d corners and, ``along_edges``, the points ``margin`` beside each corner
    along its d edges: (2^d (d + 1), d), or (2^d, d) without them. Candidates of their own where
    the model jumps at the corners: its value at a corner is not the limit beside it, and the
    refinement reaches a limit beside a corner only from a start on that edge, so a bound that
    peaks there with no start close by would leave that side of the jump unproposed; the search
    over the whole cube creeps toward such a limit and stops short of it (:data:`JUMP_FTOL`). The
    face search of a box leaves them out: there a point beside a vertex on a face lies beside two
    edges whose functions read it as on another face's side (docs/algorithms.md, PDE-GP, the
    graded heat box), and the limits are left to the refinement."""
    corners = ((np.arange(2 ** d)[:, None] >> np.arange(d)[None, :]) & 1).astype(np.float64)
    if not along_edges:
        return corners
    beside = []
    for axis in range(d):
        moved = corners.copy()
        moved[:, axis] = np.where(corners[:, axis] > 0.5, 1.0 - margin, margin)
        beside.append(moved)
    return np.concatenate([corners] + beside)


def unvisited_corner(acq, evaluated: np.ndarray, sides: Sides | None,
                     violation: Callable[[np.ndarray], np.ndarray] | None = None,
                     device: torch.device | str = "cpu") -> np.ndarray | None:
    """The stall rule's escape where the model jumps at the cube's corners: of the corners that
    repeat no evaluated design (within the stall radius, on the same side of every jump) and break
    no known constraint (``violation``), the one where ``acq`` is largest; None once every corner
    has been evaluated. A corner's value is the mean of its edges' limits and fixes the amplitude
    of its jump functions, which no design away from it measures; a search stalled on an optimum
    it has resolved leaves them at their prior, where the supremum is often a limit beside a corner
    (docs/algorithms.md, "The stall rule")."""
    corners = corner_limits(evaluated.shape[1], 0.0, along_edges=False)
    fresh = ~repeated(corners, evaluated, sides)
    if violation is not None:
        fresh &= violation(corners) <= 0
    if not fresh.any():
        return None
    corners = corners[fresh]
    with torch.no_grad():
        values = acq(torch.as_tensor(corners, dtype=torch.float64, device=device).unsqueeze(1))
    return corners[int(torch.argmax(values))]


class OnFaces(AcquisitionFunction):
    """``acq`` on the unit cube's 2d faces, parameterised so that one batched L-BFGS-B refines
    starts on different faces together: an input (d − 1 free coordinates, face k) is the cube point
    with coordinate k // 2 at k % 2 and the free coordinates in the other places, in order. The
    face index is a batch-shaped fixed feature of ``optimize_acqf``, so each start keeps its face."""

    def __init__(self, acq, d: int) -> None:
        super().__init__(model=acq.model)
        self.acq, self.d = acq, d

    def to_cube(self, X: torch.Tensor) -> torch.Tensor:
        face = X[..., -1:].round().long()
        axis = face // 2
        j = torch.arange(self.d, device=X.device)
        free = torch.gather(X[..., :-1], -1, torch.where(j < axis, j, j - 1).clamp(0, self.d - 2).expand(
            *X.shape[:-1], self.d))
        return torch.where(j == axis, (face % 2).to(X), free)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.acq(self.to_cube(X))


def _refine_on_faces(acq, starts: torch.Tensor, maxiter: int, margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """L-BFGS-B from ``starts`` (b, d), each on a face of the unit cube, over its own face
    (:class:`OnFaces`), its free coordinates within [``margin``, 1 − ``margin``]: (refined (b, d),
    their acquisition values (b,)). In one variable the faces are the two ends: nothing to refine.
    A model that jumps where faces meet (the corners' angle functions of
    :mod:`pinnbo.models.corners`) takes another value at the corner than beside it; a line search
    that steps onto the corner meets a jump instead of a slope and shortens its step until the
    iteration limit, so the search keeps just off it."""
    b, d = starts.shape
    if d == 1:
        with torch.no_grad():
            values = acq(starts.unsqueeze(1))
        return starts.detach().cpu().double().numpy(), values.detach().cpu().double().numpy()
    flat = starts.detach().cpu().double().numpy()
    axes = face_axes(flat, 0.0, 1.0)
    face = 2 * axes + (flat[np.arange(b), axes] > 0.5)
    free = flat[np.arange(d)[None, :] != axes[:, None]].reshape(b, d - 1).clip(margin, 1.0 - margin)
    X0 = torch.as_tensor(np.concatenate([free, face[:, None]], 1), dtype=starts.dtype, device=starts.device)
    lower = torch.full((d,), margin, dtype=starts.dtype, device=starts.device)
    upper = 1.0 - lower
    lower[-1], upper[-1] = 0, 2 * d - 1
    on_faces = OnFaces(acq, d)
    refined, values = optimize_acqf(
        on_faces, bounds=torch.stack([lower, upper]), q=1, num_restarts=b,
        batch_initial_conditions=X0.unsqueeze(1), options={"maxiter": maxiter}, return_best_only=False,
        fixed_features={d - 1: X0[:, -1]},
    )
    with torch.no_grad():
        cube = on_faces.to_cube(refined.reshape(b, d))
    return cube.detach().cpu().double().numpy().clip(0.0, 1.0), values.reshape(-1).detach().cpu().double().numpy()


def best_new_or_beside(acq, candidates: np.ndarray, values: np.ndarray, evaluated: np.ndarray, duplicate_tol: float,
                       fallback_pool: Callable[[], np.ndarray], device: torch.device | str = "cpu") -> np.ndarray:
    """The best of ``candidates`` (N, d; their acquisition ``values``) that repeats no evaluated
    design; when every one does (each restart converged onto an evaluated design), the best new
    point just beside them (:func:`~pinnbo.acquisition.search.nudged`), then of the pool
    ``fallback_pool()`` draws (only then), scored by ``acq``; that pool's point farthest from the
    evaluated designs as the last resort."""
    def best_of(pool: np.ndarray) -> np.ndarray | None:
        if len(pool) == 0:
            return None
        with torch.no_grad():
            pool_values = acq(torch.as_tensor(pool, dtype=torch.float64, device=device).unsqueeze(1))
        return best_new(pool, pool_values.detach().cpu().double().numpy(), evaluated, duplicate_tol)

    choice = best_new(candidates, values, evaluated, duplicate_tol)
    if choice is None:
        choice = best_of(nudged(candidates, evaluated, duplicate_tol))
    if choice is None:
        pool = fallback_pool()
        choice = best_of(pool)
        if choice is None:
            choice = pool[farthest_from(pool, evaluated)]
    return choice
