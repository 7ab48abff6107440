"""Searching the design box for the next design, shared by every method: candidate pools, the
minimisation of a differentiable surrogate, and the duplicate rule.

The papers say ``x_t = argmin_x h(x)`` without saying how. :func:`minimize_surrogate` does what
BoTorch's ``optimize_acqf`` does in spirit: score a scrambled Sobol pool (plus perturbations of the
best designs seen), keep the top-k, refine them jointly with bounded L-BFGS-B on the torch
gradient. Whatever the method, the proposal is never within ``duplicate_tol`` (sup norm, unit box)
of an evaluated design: at a discontinuous corner a surrogate can keep pointing at the same design,
and a repeat costs a full evaluation and teaches nothing (docs/algorithms.md, "The duplicate rule").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.optimize
import torch

SurrogateFn = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Proposal:
    unit_x: np.ndarray  # (d,) in [0, 1]^d
    value: float        # surrogate value there


#: Sides of a jump: where the model jumps at the box's corners, two designs whose corner angles
#: (:func:`pinnbo.models.corners.corner_angles`, 0 on a corner's horizontal edge, 1 on its vertical
#: one, ½ at the corner) differ by this much or more lie on different sides of it (on the two edges
#: beside a corner, or one at the corner and one beside it) and are no repeat of each other however
#: close: their values differ by a share of the jump. A box's edges alike, by their angles
#: (:func:`pinnbo.models.corners.edge_angles`).
SIDE_GAP = 0.25
#: Unit designs (n, d) -> their corner angles (n, 4), where the model jumps at the corners (a box's
#: edge angles, (n, 12)).
Sides = Callable[[np.ndarray], np.ndarray]


def is_duplicate(u: np.ndarray, evaluated_unit: np.ndarray, tol: float, sides: Sides | None = None) -> bool:
    """Whether ``u`` (d,) lies within ``tol`` (sup norm, unit coordinates) of an evaluated design, on
    the same side of every jump with ``sides`` (``SIDE_GAP``)."""
    if sides is None or evaluated_unit.size == 0:
        return _repeats(u, evaluated_unit, tol)
    return _repeats(u, evaluated_unit, tol, sides(np.asarray(u)[None, :])[0], sides(evaluated_unit))


def _repeats(u: np.ndarray, evaluated_unit: np.ndarray, tol: float, side: np.ndarray | None = None,
             evaluated_sides: np.ndarray | None = None) -> bool:
    """:func:`is_duplicate` with the sides of ``u`` and of the evaluated designs computed already."""
    if evaluated_unit.size == 0:
        return False
    near = np.max(np.abs(evaluated_unit - u), axis=1) < tol
    if side is not None:
        near &= np.max(np.abs(evaluated_sides - side), axis=1) < SIDE_GAP
    return bool(near.any())


def _sides_of(points: np.ndarray, evaluated_unit: np.ndarray, sides: Sides | None):
    """The sides of ``points`` and of the evaluated designs, each row's once (None, None without)."""
    if sides is None or len(points) == 0 or evaluated_unit.size == 0:
        return [None] * len(points), None
    return sides(points), sides(evaluated_unit)


#: The stall rule (docs/algorithms.md, "The stall rule"): once STALL_COUNT evaluations since the best
#: last improved by STALL_GAIN of the observed range lay each within STALL_RADIUS (sup norm, unit box)
#: of an earlier design, a proposal that would be one more such repeat is replaced by the best one
#: ESCAPE_DISTANCE from every design, until the best improves; where the model jumps at the corners,
#: by a corner not yet evaluated first (:func:`pinnbo.acquisition.optimize.unvisited_corner`).
STALL_COUNT, STALL_RADIUS, STALL_GAIN, ESCAPE_DISTANCE = 3, 1e-3, 1e-3, 0.1


def repeats(u: np.ndarray, earlier_unit: np.ndarray, sides: Sides | None = None) -> bool:
    """Whether ``u`` repeats an earlier design for the stall rule: within ``STALL_RADIUS`` of one, on
    the same side of every jump with ``sides`` (:data:`SIDE_GAP`)."""
    return is_duplicate(u, earlier_unit, STALL_RADIUS, sides)


def repeated(points: np.ndarray, earlier_unit: np.ndarray, sides: Sides | None = None) -> np.ndarray:
    """(N,) :func:`repeats` of each of ``points`` (N, d), every design's sides computed once."""
    labels, earlier_labels = _sides_of(points, earlier_unit, sides)
    return np.array([_repeats(u, earlier_unit, STALL_RADIUS, label, earlier_labels)
                     for u, label in zip(points, labels)], dtype=bool)


def stalled(unit_X: np.ndarray, y: np.ndarray, sides: Sides | None = None) -> bool:
    """Whether the search has stalled on a resolved optimum, given the evaluations in order (unit
    designs (n, d), minimised values (n,)); ``sides``: designs on two sides of a jump are no
    repeat of each other (:data:`SIDE_GAP`).

    An optimistic acquisition (UCB) keeps re-measuring a resolved local optimum when its model is
    certain everywhere else. A run approaching a discontinuity repeats itself too, but improves the
    best on the way; so, as trust-region methods count failures since the last success (TuRBO), the
    repeats are counted since the best last improved."""
    unit_X, y = np.asarray(unit_X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = len(y)
    if n <= STALL_COUNT or not np.all(np.isfinite(y)):
        return False
    best_before = np.minimum.accumulate(y)[:-1]
    improved = np.flatnonzero(y[1:] < best_before - STALL_GAIN * float(np.ptp(y))) + 1
    since = int(improved[-1]) + 1 if len(improved) else 1
    labels = None if sides is None else sides(unit_X)
    return sum(_repeats(unit_X[i], unit_X[:i], STALL_RADIUS, *(() if labels is None else (labels[i], labels[:i])))
               for i in range(since, n)) >= STALL_COUNT


def farthest_from(points: np.ndarray, evaluated_unit: np.ndarray) -> int:
    """Index of the row of ``points`` (N, d) whose sup-norm distance to the nearest evaluated design
    is largest: the fallback when every candidate repeats an evaluated design."""
    gaps = np.min(np.max(np.abs(points[:, None, :] - evaluated_unit[None, :, :]), axis=2), axis=1)
    return int(np.argmax(gaps))


def _evaluate(fn: SurrogateFn, points: torch.Tensor, batch: int) -> torch.Tensor:
    with torch.no_grad():
        return torch.cat([fn(points[i:i + batch]).reshape(-1) for i in range(0, len(points), batch)])


def minimize_surrogate(
    fn: SurrogateFn,
    dim: int,
    *,
    seed: int,
    evaluated_unit: np.ndarray,
    n_pool: int = 2048,
    top_k: int = 8,
    refine_iterations: int = 50,
    duplicate_tol: float = 1e-4,
    local_starts: np.ndarray | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
    batch: int = 8192,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    on_boundary: bool = False,
) -> Proposal:
    """Approximate ``argmin_{u in [lower, upper]} fn(u)`` avoiding evaluated designs.

    ``fn`` maps unit-cube points (N, d) to surrogate values (N,) and must be differentiable.
    ``lower``, ``upper`` (d,): a sub-box of the unit cube to search (a trust region); the whole
    cube by default. ``local_starts`` (M, d) are extra pool points (e.g. perturbed incumbents),
    clipped to the box. ``on_boundary``: search the box's 2d faces only (where the maximum
    principle puts the minimum, :meth:`pinnbo.pde.PDE.minimum_on_boundary`): the pool is spread
    over the faces in turn, local starts go to their nearest face, and each refinement keeps its
    face's coordinate fixed. Returns the best non-duplicate candidate among the refined starts and
    the pool.
    """
    lower = np.zeros(dim) if lower is None else np.clip(np.asarray(lower, dtype=np.float64), 0.0, 1.0)
    upper = np.ones(dim) if upper is None else np.clip(np.asarray(upper, dtype=np.float64), 0.0, 1.0)
    if lower.shape != (dim,) or upper.shape != (dim,) or np.any(upper < lower):
        raise ValueError(f"minimize_surrogate: lower/upper must be ({dim},) with lower <= upper")
    engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed % (2**31))
    pool = torch.as_tensor(lower) + engine.draw(n_pool, dtype=torch.float64) * torch.as_tensor(upper - lower)
    if on_boundary:
        pool = torch.as_tensor(spread_over_faces(pool.numpy(), lower, upper))
    if local_starts is not None and len(local_starts):
        starts_in_box = np.clip(local_starts, lower, upper)
        if on_boundary:
            starts_in_box = to_nearest_face(starts_in_box, lower, upper)
        pool = torch.cat([pool, torch.as_tensor(starts_in_box, dtype=torch.float64)])
    pool = pool.to(device=device, dtype=dtype)
    values = _evaluate(fn, pool, batch)
    order = torch.argsort(values)
    k = min(top_k, len(pool))
    starts = pool[order[:k]].detach().cpu().double().numpy()
    start_lower, start_upper = lower, upper
    if on_boundary:      # each start keeps the coordinate that puts it on its face
        start_lower, start_upper = np.tile(lower, (len(starts), 1)), np.tile(upper, (len(starts), 1))
        rows, fixed = np.arange(len(starts)), face_axes(starts, lower, upper)
        start_lower[rows, fixed] = start_upper[rows, fixed] = starts[rows, fixed]
    refined = (_refine(fn, starts, refine_iterations, dtype, device, start_lower, start_upper)
               if refine_iterations > 0 else starts)

    neighbours = np.clip(nudged(refined, evaluated_unit, duplicate_tol), lower, upper)
    if on_boundary:
        neighbours = to_nearest_face(neighbours, lower, upper)
    refined = np.concatenate([refined, neighbours])
    refined_t = torch.as_tensor(refined, dtype=dtype, device=device)
    refined_values = _evaluate(fn, refined_t, batch).cpu().double().numpy()
    candidates = np.concatenate([refined, pool[order].detach().cpu().double().numpy()])
    candidate_values = np.concatenate([refined_values, values[order].cpu().double().numpy()])
    ranking = np.argsort(candidate_values, kind="stable")
    for i in ranking:
        if np.all(np.isfinite(candidates[i])) and not is_duplicate(candidates[i], evaluated_unit, duplicate_tol):
            return Proposal(candidates[i], float(candidate_values[i]))
    # Every candidate repeats an evaluated design: take the pool point farthest from all of them.
    pool_np = pool.detach().cpu().double().numpy()
    i = farthest_from(pool_np, evaluated_unit)
    return Proposal(pool_np[i], float(values[i]))


def faces_only(unit_X: np.ndarray, y: np.ndarray) -> bool:
    """Whether to search the faces only, for a PDE that puts the minimum there (the maximum
    principle, :meth:`pinnbo.pde.PDE.minimum_on_boundary`), given the observations (unit designs
    (n, d), values (n,)): yes until 2d designs lie on the faces and an interior one is still the
    best observed, which says the PDE is not the whole truth about the system (docs/algorithms.md,
    "The maximum principle")."""
    unit_X, y = np.asarray(unit_X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    on_face = np.any(at_bounds(unit_X, 0.0, 1.0, tol=1e-9), axis=1)      # 1e-9: a physical design's round trip
    finite = np.isfinite(y)
    if on_face.sum() < 2 * unit_X.shape[1] or not np.any(finite & on_face):
        return True
    return float(np.min(y[finite & on_face])) <= float(np.min(y[finite]))


def at_bounds(points: np.ndarray, lower, upper, tol: float = 0.0) -> np.ndarray:
    """(N, d) mask of the coordinates of ``points`` (N, d) that lie on a bound of [lower, upper]."""
    return (points <= np.asarray(lower) + tol) | (points >= np.asarray(upper) - tol)


def face_axes(points: np.ndarray, lower, upper) -> np.ndarray:
    """(N,) the coordinate that puts each of ``points`` (N, d), each on a face of [lower, upper], on
    its face (the first such, at an edge)."""
    return np.argmax(at_bounds(points, lower, upper), axis=1)


def on_or_off_faces(points: np.ndarray, margin: float) -> np.ndarray:
    """``points`` (N, d) in the unit cube with each coordinate that lies closer than ``margin`` to a
    face, yet not on it, moved out to ``margin`` from it: every coordinate on a face or at least
    ``margin`` from it. Where the model jumps at the edges, a design a hair off a face lies beside
    an edge on one face's side for the model's angle functions, but an oracle that takes points
    within its own tolerance onto the face reads it on the edge itself (the mean of its two faces),
    and the model would learn the one side's limit from the other's value."""
    low = (points > 0.0) & (points < margin)
    high = (points < 1.0) & (points > 1.0 - margin)
    return np.where(low, margin, np.where(high, 1.0 - margin, points))


def spread_over_faces(points: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``points`` (N, d) in [lower, upper] moved onto the box's 2d faces in turn (row j onto face
    j mod 2d: coordinate (j mod 2d) // 2 set to its lower bound, then its upper one)."""
    points = np.array(points, dtype=np.float64, copy=True)
    faces = np.arange(len(points)) % (2 * points.shape[1])
    axes = faces // 2
    points[np.arange(len(points)), axes] = np.where(faces % 2 == 0, lower[axes], upper[axes])
    return points


def to_nearest_face(points: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``points`` (N, d) in [lower, upper], each moved onto the nearest face of that box."""
    points = np.array(points, dtype=np.float64, copy=True)
    if not len(points):
        return points
    gaps = np.concatenate([points - lower, upper - points], axis=1)            # (N, 2d)
    nearest = np.argmin(gaps, axis=1)
    rows, axes = np.arange(len(points)), nearest % points.shape[1]
    points[rows, axes] = np.where(nearest < points.shape[1], lower[axes], upper[axes])
    return points


def nudged(points: np.ndarray, evaluated_unit: np.ndarray, tol: float, sides: Sides | None = None) -> np.ndarray:
    """Neighbours just beyond ``tol`` of the refined optima that repeat an evaluated design.

    When the surrogate's optimum is a design already evaluated (typically a corner of the box),
    the best new design is usually right beside it; the Sobol pool is far too coarse to hold it.
    Each duplicate gets 2d axis steps and one step towards the box centre, of size 1.05·tol
    (sup norm), so a boundary optimum is approached as closely as the tolerance allows; ``sides``:
    the duplicates on the same side of every jump (:func:`is_duplicate`).
    """
    out = []
    d = points.shape[1]
    labels, evaluated_labels = _sides_of(points, evaluated_unit, sides)
    for u, label in zip(points, labels):
        if not _repeats(u, evaluated_unit, tol, label, evaluated_labels):
            continue
        steps = np.concatenate([np.eye(d), -np.eye(d), np.sign(0.5 - u)[None, :]]) * 1.05 * tol
        out.append(np.clip(u + steps, 0.0, 1.0))
    return np.concatenate(out) if out else np.zeros((0, d))


def _refine(fn: SurrogateFn, starts: np.ndarray, iterations: int, dtype: torch.dtype,
            device: torch.device | str, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Joint bounded L-BFGS-B from k starts, shape (k, d), within [lower, upper] ((d,), or (k, d):
    a box per start); the sum decouples across starts."""
    k, d = starts.shape

    def value_and_grad(flat: np.ndarray) -> tuple[float, np.ndarray]:
        u = torch.tensor(flat.reshape(k, d), dtype=dtype, device=device, requires_grad=True)
        total = fn(u).sum()
        (grad,) = torch.autograd.grad(total, u)
        return float(total.detach()), grad.detach().cpu().double().numpy().reshape(-1)

    result = scipy.optimize.minimize(
        value_and_grad, starts.reshape(-1), jac=True, method="L-BFGS-B",
        bounds=list(zip(np.broadcast_to(lower, (k, d)).ravel(), np.broadcast_to(upper, (k, d)).ravel())),
        options={"maxiter": iterations},
    )
    return np.clip(result.x.reshape(k, d), lower, upper)


def candidate_pool(dim: int, seed: int, n_candidates: int, anchors: np.ndarray, local_candidates: int,
                   local_scale: float, rng: np.random.Generator) -> np.ndarray:
    """Candidates in the unit box: ``n_candidates`` scrambled Sobol points (scrambled by ``seed``)
    followed by ``local_candidates`` Gaussian perturbations (std ``local_scale``, clipped to the
    box) of the rows of ``anchors`` (k, d), taken in turn; shape (n_candidates + local, d)."""
    engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=seed)
    pool = engine.draw(n_candidates, dtype=torch.float64).numpy()
    if local_candidates > 0 and len(anchors):
        noise = rng.standard_normal((local_candidates, dim)) * local_scale
        local = np.clip(anchors[np.arange(local_candidates) % len(anchors)] + noise, 0.0, 1.0)
        pool = np.concatenate([pool, local])
    return pool


def best_new(points: np.ndarray, values: np.ndarray, evaluated: np.ndarray, tol: float) -> np.ndarray | None:
    """The highest-valued row of ``points`` (n, d) that is finite and not a repeat, or None."""
    for i in np.argsort(-values, kind="stable"):
        if np.isfinite(values[i]) and not is_duplicate(points[i], evaluated, tol):
            return points[i]
    return None


def best_allowed(points: np.ndarray, values: np.ndarray, violation: np.ndarray, evaluated: np.ndarray,
                 tol: float, sides: Sides | None = None) -> np.ndarray:
    """The best row of ``points`` by ``values`` (higher is better; non-finite last) among those with
    zero known ``violation`` that repeat no evaluated design (``sides``: on the same side of every
    jump, :func:`is_duplicate`); else the least violating new one; else the point farthest from
    every evaluated design."""
    score = np.where(np.isfinite(values), values, -np.inf)
    labels, evaluated_labels = _sides_of(points, evaluated, sides)
    for i in np.lexsort((-score, violation)):
        if not _repeats(points[i], evaluated, tol, labels[i], evaluated_labels):
            return points[i]
    return points[farthest_from(points, evaluated)]


def bound_snaps(u: np.ndarray, step: float) -> np.ndarray:
    """``u`` (d,) in the unit box with each coordinate alone moved to its lower and to its upper
    bound, and with every coordinate within ``step`` of a bound moved to it at once: at most
    (2d + 1, d) rows, the repeats of ``u`` (a coordinate already on that bound) removed.
    Engineering optima often have active box bounds, which Gaussian steps reach only by luck."""
    d = len(u)
    single = np.repeat(u[None, :], 2 * d, axis=0)
    single[np.arange(d), np.arange(d)] = 0.0
    single[d + np.arange(d), np.arange(d)] = 1.0
    nearer = np.where(u < 0.5, 0.0, 1.0)
    together = np.where(np.abs(u - nearer) <= step, nearer, u)[None, :]
    snaps = np.concatenate([single, together])
    return snaps[np.any(snaps != u, axis=1)]


def tiered_order(tiers: list[tuple[np.ndarray, tuple[np.ndarray, ...]]]) -> np.ndarray:
    """Candidate indices tier by tier, best tier first: each tier is (mask (N,), keys), its members
    ranked by their keys with the last key the most significant (as ``np.lexsort``). A constrained
    acquisition accepts a candidate of a worse tier (a known violation) only when every better
    candidate is a repeat."""
    return np.concatenate([np.flatnonzero(mask)[np.lexsort(tuple(key[mask] for key in keys))]
                           for mask, keys in tiers])


def perturbation_search(start: np.ndarray, start_score: float, score: Callable[[np.ndarray], np.ndarray],
                        evaluated: np.ndarray, tol: float, rng: np.random.Generator, step: float,
                        rounds: int, per_round: int) -> np.ndarray:
    """A (1 + λ) search from ``start`` (d,, unit box) for a higher ``score(points) -> (N,)`` (−inf
    where a point is not allowed): each round ``per_round`` Gaussian perturbations of the best so
    far plus its :func:`bound_snaps`, the step halving each round; a candidate replaces the best
    only if it scores higher and repeats no evaluated design."""
    best, best_score = start, start_score
    d = len(start)
    for _ in range(rounds):
        cand = np.clip(best + step * rng.standard_normal((per_round, d)), 0.0, 1.0)
        cand = np.concatenate([cand, bound_snaps(best, step)])
        values = score(cand)
        for j in np.argsort(-values, kind="stable"):
            if values[j] <= best_score:
                break
            if not is_duplicate(cand[j], evaluated, tol):
                best, best_score = cand[j], float(values[j])
                break
        step *= 0.5
    return best
