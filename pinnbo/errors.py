"""User mistakes and how their messages quote what the user gave: briefly.

Error messages quote values from case files and the command line. Those can be huge (a long
formula) or, through YAML aliases, exponentially large when expanded (a "billion laughs" mapping is
a few hundred bytes on disk and gigabytes as text), so a message never calls ``repr`` on them
directly: :func:`shown` renders at most a few levels and items and cuts the result.
"""

from __future__ import annotations

import reprlib

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


class CaseError(ValueError):
    """A user mistake in a case file or its command-line overrides (one-line message)."""
