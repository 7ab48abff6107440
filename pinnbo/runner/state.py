"""The optimiser's state files in a results folder: ``checkpoint.pt`` (after the last told
evaluation) and ``pending.pt`` (after an ``ask`` waiting for its ``tell``).

A results folder is data that users copy between machines and merge (a bench split over machines),
so reading one must not be able to run code: the files hold tensors and plain containers only and
are read with ``torch.load(weights_only=True)``, which refuses anything else instead of unpickling
it. Each file is bound to its run, the digest of the case (the fields a resumed run may not change)
and the seed, and says how many evaluations it has told: a checkpoint from another run, or one
ahead of the log it sits beside (records lost), is refused with a one-line error rather than
silently continuing a different run or restarting from zero.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import torch

from pinnbo.errors import HistoryError, shown
from pinnbo.files import write_bytes
from pinnbo.runner.folder import RESUMABLE_KEYS, VARIABLES_KEY

#: Version of the file layout; a file of another version is not this run's state.
FORMAT = 2
CHECKPOINT = "checkpoint.pt"
PENDING_STATE = "pending.pt"


def run_identity(case: dict) -> dict:
    """What binds a state file to its run: the digest of the case without the fields a resumed run
    may change (budget, output, device, ...), and the seed."""
    fixed = {k: v for k, v in case.items() if k not in RESUMABLE_KEYS and k != VARIABLES_KEY}
    text = json.dumps(fixed, sort_keys=True, default=str)
    return {"case": hashlib.sha256(text.encode()).hexdigest()[:16], "seed": case.get("seed")}


def save_state(path: Path, state: dict, n_told: int, identity: dict) -> None:
    """Write ``state`` (the optimiser's ``state_dict``: tensors and plain containers), valid once
    ``n_told`` evaluations are told, atomically: a crash or a full disk leaves the previous file and
    no ``.tmp``."""
    data = {"format": FORMAT, "case": identity["case"], "seed": identity["seed"], "n_told": int(n_told),
            "state": state}
    buffer = io.BytesIO()
    torch.save(data, buffer)   # in memory: torch reports a failed file write as a RuntimeError, not an OSError
    write_bytes(Path(path), buffer.getvalue())


def load_state(path: Path, identity: dict, device: torch.device | str = "cpu",
               recorded: int | None = None) -> dict | None:
    """The state file at ``path`` as ``{"n_told", "state"}``, None where there is none.

    Raises :class:`HistoryError` naming the file when it is not a readable pinnbo state (a
    directory, a pickle with code in it, a truncated file), belongs to another run, or has told more
    evaluations than the ``recorded`` ones in the log beside it."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    remedy = "delete it and --resume rebuilds the optimiser from evaluations.jsonl"
    if path.is_symlink() or not path.is_file():
        raise HistoryError(f"{path}: corrupted state file (not a regular file); {remedy}")
    try:
        data = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # weights-only loading refuses code as an UnpicklingError
        raise HistoryError(f"{path}: corrupted state file ({type(exc).__name__}: not tensors and plain "
                           f"containers); {remedy}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("n_told"), int) \
            or not isinstance(data.get("state"), dict):
        raise HistoryError(f"{path}: not a state file of this pinnbo version; {remedy}")
    if data.get("case") != identity["case"] or data.get("seed") != identity["seed"]:
        raise HistoryError(f"{path}: belongs to another run (seed {shown(data.get('seed'))}, case {shown(data.get('case'))}; "
                           f"this run: seed {shown(identity['seed'])}, case {shown(identity['case'])}); {remedy}")
    if recorded is not None and data["n_told"] > recorded:
        raise HistoryError(f"{path}: saved after {data['n_told']} evaluations but the log beside it records "
                           f"{recorded}: evaluations.jsonl has lost records; restore it, or {remedy} (every "
                           "recorded evaluation is kept)")
    return {"n_told": data["n_told"], "state": data["state"]}
