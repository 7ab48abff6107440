"""What can go wrong for a user, and how a message quotes what the user gave.

Two kinds of error end a command with one line and no traceback:

- :class:`UserError`: a mistake in what the user gave (a case file, an option, a PDE, a results
  folder used the wrong way), found before any evaluation where it can be; exit code 2.
- :class:`RunStopped`: the run could not go on (a full disk, an oracle that fails every call);
  every completed evaluation is on disk and the message says how to continue; exit code 1.

Messages quote values from case files and the command line. Those can be huge (a long formula)
or, through YAML aliases, exponentially large when expanded (a "billion laughs" mapping is a few
hundred bytes on disk and gigabytes as text), so a message never calls ``repr`` on them directly:
:func:`shown` renders at most a few levels and items and cuts the result.
"""

from __future__ import annotations

import reprlib
from pathlib import Path

#: Characters of a user's value that a message quotes.
QUOTE_LIMIT = 200

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 8
_REPR.maxstring = QUOTE_LIMIT
_REPR.maxother = QUOTE_LIMIT
_REPR.maxlong = 60


def shown(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` in at most ``limit`` characters (``...`` where it was cut), built without
    expanding more than a few levels of a nested value."""
    try:
        text = _REPR.repr(value)
    except Exception:  # a user object whose repr fails is still named
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class UserError(ValueError):
    """A mistake in what the user gave; the message is one line that names the field or option."""


class CaseError(UserError):
    """A mistake in a case file or its command-line overrides."""


class ProblemError(UserError):
    """A mistake in a problem's definition or parameters."""


class PDEError(UserError):
    """A PDE declaration that cannot be compiled; the message names the offending symbol."""


class MethodError(UserError):
    """A mistake in a method's name or parameters."""


class HistoryError(UserError):
    """A results folder that cannot be used as asked."""


class RunStopped(Exception):
    """The run could not go on; every completed evaluation is on disk (one-line message)."""


class WriteFailure(RunStopped):
    """Writing to the results folder failed (a full disk, a file-size limit, a read-only folder).
    Nothing half-written is left: the log is cut back to its last whole record and temporary files
    are removed, so the run continues with ``--resume`` once the cause is fixed."""


def write_failure(path: Path, exc: OSError) -> WriteFailure:
    """The one-line error for an OSError raised while writing ``path``."""
    return WriteFailure(f"cannot write {path} ({exc.strerror or exc})")
