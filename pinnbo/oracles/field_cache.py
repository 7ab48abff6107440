"""Solved fields kept across plates and processes: py-pde assembles its sparse Laplacian in Python,
so a 256² solve costs several seconds and a cached load a few milliseconds.

A field is kept by the digest of the canonical text of what determines it (its key): in this
process's memory, so a second plate with the same data reuses it, and as an ``.npz`` in a folder
shared by processes (``$PINNBO_CACHE``, else ``~/.cache/pinnbo``), written to a temporary name and
renamed (:func:`pinnbo.files.write_bytes`) so that a concurrent run never reads half a field. A file that does not load, holds another
key or a field of the wrong shape is solved again and replaced. Files load without pickle.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

from pinnbo.errors import RunStopped, UserError
from pinnbo.files import write_bytes


def default_cache_dir() -> Path:
    """``$PINNBO_CACHE`` when set, else ``~/.cache/pinnbo``."""
    env = os.environ.get("PINNBO_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pinnbo"


class FieldCache:
    """Fields by key, in memory and on disk; ``stats`` counts how each was found (a solve, a load
    from disk, a memory hit), which is how a test sees that a cached field is not solved again."""

    def __init__(self) -> None:
        self.memory: dict[str, np.ndarray] = {}
        self.stats = {"solves": 0, "disk_loads": 0, "memory_hits": 0}

    def clear_memory(self) -> None:
        """Forget the fields of this process (as a fresh process would); the files stay."""
        self.memory.clear()

    @staticmethod
    def path(folder: Path, name: str, key: str) -> Path:
        return Path(folder) / f"{name}-{hashlib.sha256(key.encode('utf-8')).hexdigest()}.npz"

    def get(self, key: str, folder: Path, name: str, shape: tuple[int, ...], solve: Callable[[], np.ndarray],
            extra: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The field of ``key`` (read-only, ``shape``): from memory, from ``folder``, or ``solve()``d
        and saved there with the ``extra`` arrays beside it (the grid, for a reader)."""
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
        cached = self.memory.get(digest)
        if cached is not None:
            self.stats["memory_hits"] += 1
            return cached
        path = self.path(folder, name, key)
        field = _load(path, key, shape)
        if field is None:
            field = solve()
            self.stats["solves"] += 1
            if field.shape != shape or not np.all(np.isfinite(field)):
                raise RuntimeError("the solver returned a field of the wrong shape or with non-finite values")
            _save(path, key, field, extra or {})
        else:
            self.stats["disk_loads"] += 1
        field.setflags(write=False)
        self.memory[digest] = field
        return field


def _load(path: Path, key: str, shape: tuple[int, ...]) -> np.ndarray | None:
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            stored = str(data["key"])
            field = np.array(data["cells"], dtype=np.float64)
    except Exception:  # a truncated or foreign file: solve again and overwrite it
        return None
    if stored != key or field.shape != shape or not np.all(np.isfinite(field)):
        return None
    return field


def _save(path: Path, key: str, field: np.ndarray, extra: dict[str, np.ndarray]) -> None:
    """Through :func:`pinnbo.files.write_bytes` (a fresh temporary, renamed; no link followed). A
    cache that cannot be written costs a solve next time, never the run: a warning."""
    buffer = io.BytesIO()
    np.savez(buffer, key=np.array(key), cells=field, **extra)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)   # the cache folder may be a link the user made
        write_bytes(path, buffer.getvalue())
    except (OSError, UserError, RunStopped) as exc:
        warnings.warn(f"cannot write the field cache in {path.parent} ({exc})", stacklevel=4)


#: The fields of this process (every plate shares it).
FIELDS = FieldCache()
