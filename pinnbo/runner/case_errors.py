"""A case file's validation errors as pinnbo's one line, ``field.path: what was expected, got
what``: pydantic's error records translated, the one a user fixes first chosen
(:mod:`pinnbo.runner.case` declares the fields)."""

from __future__ import annotations

import difflib
from typing import Sequence

from pydantic import ValidationError

from pinnbo.errors import UserError, shown


class Expected:
    """Field marker: what the field expects, for every error about the field's own value."""

    def __init__(self, text: str) -> None:
        self.text = text


_NOUNS = {"int_type": "an integer", "int_parsing": "an integer", "int_from_float": "an integer",
          "float_type": "a finite number", "float_parsing": "a finite number", "finite_number": "a finite number",
          "bool_type": "true or false", "bool_parsing": "true or false", "string_type": "a non-empty string",
          "string_too_short": "a non-empty string", "string_pattern_mismatch": "a non-empty string"}


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(error: dict, fields: dict, names: Sequence[str], inner: dict) -> str:
    """One pydantic error as pinnbo's one line ``field.path: what was expected, got what``."""
    loc, kind, value, ctx = tuple(error["loc"]), error["type"], error.get("input"), error.get("ctx") or {}
    where = _where(loc)
    if isinstance(ctx.get("error"), UserError):       # a validator's own message names its field
        return str(ctx["error"])
    if kind == "missing":
        return f"{where}: required field is missing"
    if kind == "extra_forbidden":
        if len(loc) == 1:
            hint = difflib.get_close_matches(str(loc[0]), names, n=1)
            return f"{where}: unknown field" + (f" (did you mean '{hint[0]}'?)" if hint else
                                                f"; expected one of {', '.join(names)}")
        mapping = inner.get(str(loc[0]))
        return f"{where}: unknown field" + (f"; expected one of {', '.join(mapping.__annotations__)}" if mapping else "")
    if len(loc) == 1 and str(loc[0]) in fields:
        expected = next((m.text for m in fields[str(loc[0])].metadata if isinstance(m, Expected)), None)
        if expected is not None:
            return f"{where}: expected {expected}, got {shown(value)}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than"):
        bound = next(iter(ctx.values()))
        sign = {"greater_than_equal": ">=", "less_than_equal": "<=", "greater_than": ">"}[kind]
        noun = "an integer" if isinstance(bound, int) else "a number"
        return f"{where}: expected {noun} {sign} {bound}, got {shown(value)}"
    if kind == "literal_error":
        return f"{where}: expected {ctx.get('expected', '').replace(chr(39), '')}, got {shown(value)}"
    if kind in ("dict_type", "typed_dict_type", "model_type"):
        return f"{where}: expected a mapping, got {type(value).__name__}"
    if kind in _NOUNS:
        return f"{where}: expected {_NOUNS[kind]}, got {shown(value)}"
    if kind == "value_error":
        return f"{where}: {ctx.get('error')}"
    return f"{where}: {error['msg']}"


def first_error(exc: ValidationError, fields: dict, names: Sequence[str], inner: dict) -> str:
    """The error a user fixes first, as one line: an unknown field, then a missing one, then the
    rest in the declaration's order. ``fields``: the model's fields (their Expected markers);
    ``names``: the fields a file may hold (the "did you mean" hint); ``inner``: field -> the
    TypedDict of a nested mapping, whose keys an unknown key's message lists."""
    errors = exc.errors(include_url=False)
    rank = {"extra_forbidden": 0, "missing": 1}
    return _message(min(errors, key=lambda e: rank.get(e["type"], 2)), fields, names, inner)
