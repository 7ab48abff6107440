"""Random streams: one seed in the case drives every random draw of a run.

A stream is named by keys under the case seed (``derived_seed(seed, "initial-design")``,
``(seed, method, step, "thompson")``), so streams never share state and adding a draw to one
cannot shift any other; a method's draws at step t come from streams named by (seed, method, t),
which is what makes ``ask`` repeatable and a resumed run identical to an uninterrupted one.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch

from pinnbo.problem import Box


def derived_seed(seed: int, *keys: Any) -> int:
    """A 63-bit seed for the random stream named by ``keys`` under the case seed.

    Streams never share state, so adding a draw to one cannot shift any other.
    """
    text = "/".join([str(int(seed))] + [str(k) for k in keys])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") & ((1 << 63) - 1)


def numpy_rng(seed: int, *keys: Any) -> np.random.Generator:
    return np.random.default_rng(derived_seed(seed, *keys))


def torch_generator(seed: int, *keys: Any) -> torch.Generator:
    gen = torch.Generator(device="cpu")
    gen.manual_seed(derived_seed(seed, *keys))
    return gen


def sobol_unit(n: int, dim: int, seed: int, *keys: Any) -> np.ndarray:
    """n scrambled Sobol points in [0, 1]^dim, shape (n, dim), from the named stream."""
    engine = torch.quasirandom.SobolEngine(dim, scramble=True, seed=derived_seed(seed, *keys) % (2**31))
    return engine.draw(n, dtype=torch.float64).numpy()


def initial_design(domain: Box, n: int, seed: int) -> np.ndarray:
    """The initial design shared by every method for a seed: scrambled Sobol, shape (n, d).

    A discrete variable's column is balanced instead: its k levels each taken ⌊n/k⌋ or ⌈n/k⌉
    times (every level once before any twice; with n < k, n different levels drawn uniformly),
    in an order shuffled by its own stream, so the choices are covered evenly and no level is
    favoured by rounding."""
    unit = sobol_unit(n, domain.dim, seed, "initial-design")
    for i in domain.dims("integer", "choice"):
        k = len(domain.variables[i].levels)
        rng = numpy_rng(seed, "initial-design", "levels", domain.names[i])
        if n <= k:
            levels = rng.choice(k, size=n, replace=False)
        else:
            levels = rng.permutation(np.concatenate([rng.permutation(k) for _ in range(-(-n // k))])[:n])
        unit[:, i] = (levels + 0.5) / k
    return domain.from_unit(unit)
