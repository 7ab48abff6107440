"""Several objectives: the Pareto front, the hypervolume it dominates, and the reference point
(docs/algorithms.md, "Several objectives").

Everything here works on *minimised* values, an (n, m) array of one column per objective with a
maximised objective's sign flipped, as every optimiser sees them. The hypervolume is the volume of
the region dominated by the front and bounded by the reference point r (every objective at most
r_j); a point that does not dominate r adds nothing. BoTorch computes it (its algorithm maximises,
so the values are negated on the way in).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from botorch.utils.multi_objective.hypervolume import Hypervolume, infer_reference_point
from botorch.utils.multi_objective.pareto import is_non_dominated


def pareto_mask(Y: np.ndarray) -> np.ndarray:
    """Which rows of ``Y`` (n, m, minimised) no other row dominates (a duplicate row is kept once)."""
    Y = np.asarray(Y, dtype=np.float64)
    if len(Y) == 0:
        return np.zeros(0, dtype=bool)
    return is_non_dominated(-torch.as_tensor(Y), deduplicate=True).numpy()


def hypervolume(Y: np.ndarray, reference: Sequence[float]) -> float:
    """The volume dominated by the rows of ``Y`` (n, m, minimised) and bounded by ``reference`` (m,)."""
    Y = np.asarray(Y, dtype=np.float64).reshape(-1, len(reference))
    ref = np.asarray(reference, dtype=np.float64)
    Y = Y[np.all(Y < ref, axis=1)]
    if len(Y) == 0:
        return 0.0
    front = Y[pareto_mask(Y)]
    return float(Hypervolume(ref_point=-torch.as_tensor(ref)).compute(-torch.as_tensor(front)))


def hypervolume_curve(Y: np.ndarray, ok: np.ndarray, reference: Sequence[float]) -> np.ndarray:
    """The hypervolume of the first k rows of ``Y`` whose ``ok`` is true, for k = 1..n, shape (n,)."""
    Y, ok = np.asarray(Y, dtype=np.float64), np.asarray(ok, dtype=bool)
    out = np.zeros(len(Y))
    front = np.zeros((0, len(reference)))
    for k in range(len(Y)):
        if ok[k]:
            front = np.concatenate([front, Y[k:k + 1]])
            front = front[pareto_mask(front)]
        out[k] = hypervolume(front, reference) if len(front) else 0.0
    return out


def inferred_reference(Y: np.ndarray) -> np.ndarray:
    """A reference point from the observed values (n, m, minimised), as Ax infers one: the nadir of
    their Pareto front moved out by 10 % of the front's range in each objective (BoTorch's
    ``infer_reference_point``, Ishibuchi et al. 2011)."""
    Y = np.asarray(Y, dtype=np.float64)
    front = Y[pareto_mask(Y)]
    return -infer_reference_point(-torch.as_tensor(front)).numpy()
