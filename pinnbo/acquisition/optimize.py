"""Maximising a BoTorch acquisition over the unit cube: a Sobol pool, BoTorch's Boltzmann choice of
restarts among the allowed points, L-BFGS-B from each (``optimize_acqf``), and the best candidate
that satisfies the known constraints and repeats no evaluated design (docs/algorithms.md, "The
duplicate rule").
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
import torch
from botorch.exceptions.warnings import OptimizationWarning
from botorch.optim import optimize_acqf
from botorch.optim.initializers import initialize_q_batch

from pinnbo.acquisition.mixed import maximize_mixed
from pinnbo.acquisition.search import (best_allowed, best_new, face_axes, farthest_from, nudged, spread_over_faces,
                                      to_nearest_face)
from pinnbo.space import Box


def maximize_acquisition(acq, pool: np.ndarray, evaluated: np.ndarray, *, num_restarts: int, maxiter: int,
                         duplicate_tol: float, violation: Callable[[np.ndarray], np.ndarray] | None = None,
                         device: torch.device | str = "cpu", on_boundary: bool = False,
                         domain: Box | None = None) -> np.ndarray:
    """argmax of ``acq`` (a BoTorch acquisition on unit-cube inputs) over the cube, (d,).

    ``pool`` (N, d) scores the starts and stays in the running; ``violation(points) -> (N,)`` the
    known constraints' total violation (0: allowed; None: no known constraints). The restarts start
    from allowed pool points only; candidates beside an evaluated design are nudged just beyond
    ``duplicate_tol``; the winner is the best allowed new candidate (the least violating one when
    none is allowed). ``on_boundary``: the cube's faces only (the pool spread over them, each
    restart's face coordinate fixed; :func:`pinnbo.acquisition.search.faces_only`). ``domain`` with
    integer or choice variables: the search over their levels of :mod:`pinnbo.acquisition.mixed`
    (the pool as its raw sample and fallback; no face search)."""
    if domain is not None and not domain.numeric:
        return maximize_mixed(acq, domain, evaluated, raw_samples=len(pool), num_restarts=num_restarts,
                              maxiter=maxiter, duplicate_tol=duplicate_tol, fallback_pool=lambda: pool,
                              violation=violation, device=device)
    d = pool.shape[1]
    dtype = torch.float64
    if on_boundary:
        pool = spread_over_faces(pool, np.zeros(d), np.ones(d))
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
        bounds = torch.stack([torch.zeros(d, dtype=dtype), torch.ones(d, dtype=dtype)]).to(device)
        groups = [(None, starts)]
        if on_boundary:    # one optimize_acqf per face, its coordinate fixed
            flat = starts[:, 0, :].detach().cpu().numpy()
            face = [(int(i), float(flat[j, i])) for j, i in enumerate(face_axes(flat, 0.0, 1.0))]
            groups = [({i: v}, starts[[j for j, f in enumerate(face) if f == (i, v)]]) for i, v in sorted(set(face))]
        refined_parts, value_parts = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizationWarning)
            warnings.filterwarnings("ignore", message="Optimization failed", category=RuntimeWarning)
            for fixed, group in groups:
                refined, refined_values = optimize_acqf(
                    acq, bounds=bounds, q=1, num_restarts=len(group), batch_initial_conditions=group,
                    options={"maxiter": maxiter}, return_best_only=False, fixed_features=fixed,
                )
                refined_parts.append(refined.reshape(-1, d).detach().cpu().double().numpy().clip(0.0, 1.0))
                value_parts.append(refined_values.reshape(-1).detach().cpu().double().numpy())
        candidates, values = np.concatenate(refined_parts), np.concatenate(value_parts)
        beside = nudged(candidates, evaluated, duplicate_tol)
        if on_boundary:
            beside = to_nearest_face(beside, np.zeros(d), np.ones(d))
        if len(beside):
            with torch.no_grad():
                nudged_values = acq(torch.as_tensor(beside, dtype=dtype, device=device).unsqueeze(1))
            candidates = np.concatenate([candidates, beside])
            values = np.concatenate([values, nudged_values.detach().cpu().double().numpy()])
    refined_violation = violation(candidates)
    candidates = np.concatenate([candidates, pool])
    values = np.concatenate([values, pool_values])
    return best_allowed(candidates, values, np.concatenate([refined_violation, pool_violation]), evaluated,
                        duplicate_tol)


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
