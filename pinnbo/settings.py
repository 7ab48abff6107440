"""Documented defaults that a case overrides: ``method_params`` of a method, and the sections nested
in them (Neural-CBO's ``pinn:``), each a dataclass of typed fields checked with one-line errors.

A field's annotation decides what it accepts (``bool``, ``int``, ``float``, ``str``, a tuple of
ints for layer widths, or another :class:`Settings` for a nested section given as a mapping);
class-level lists say what must be positive, non-negative or one of a few choices, which fields
take ``auto`` (chosen by the problem's dimension, :meth:`Settings.automatic`), and which are
internal: sizes the method was measured with, settable for CI's quick runs and tests but not shown
to a user (the JSON Schema of ``pinnbo schema``, the documentation, the "expected one of" lists).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar

import numpy as np

from pinnbo.errors import MethodError, shown


@dataclass
class Settings:
    """Base of a set of documented defaults; subclasses list their parameters as fields."""

    # Range rules, declared per subclass and checked by validate(); the message's noun follows the
    # field's type ("a positive integer" for int fields, "a positive number" for float fields).
    POSITIVE: ClassVar[tuple[str, ...]] = ()          # > 0
    NON_NEGATIVE: ClassVar[tuple[str, ...]] = ()      # >= 0
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {}
    WIDTHS: ClassVar[tuple[str, ...]] = ()            # non-empty lists of positive layer widths
    AUTO: ClassVar[tuple[str, ...]] = ()              # take "auto" (their default), else a number > 0
    INTERNAL: ClassVar[tuple[str, ...]] = ()          # measured sizes, not part of the user's surface

    def automatic(self, name: str, value: Any) -> Any:
        """The field's value, or ``value`` where it is ``auto``."""
        given = getattr(self, name)
        return value if given == "auto" else given

    @classmethod
    def user_fields(cls) -> list[str]:
        """The fields a user sees (every field but the internal ones)."""
        return [f.name for f in fields(cls) if not f.name.isupper() and f.name not in cls.INTERNAL]

    @classmethod
    def from_params(cls, params: dict | None, method: str, prefix: str = "method_params") -> "Settings":
        """The defaults with ``params`` applied; a MethodError naming ``prefix.field`` otherwise."""
        if params is not None and not isinstance(params, dict):
            raise MethodError(f"{prefix}: expected a mapping of parameters, got {shown(params)}")
        params = dict(params or {})
        hints = typing.get_type_hints(cls)
        known = {f.name for f in fields(cls) if not f.name.isupper()}
        for key, value in params.items():
            if key not in known:
                raise MethodError(f"{prefix}.{key}: unknown parameter of method '{method}'; expected one of "
                                  f"{', '.join(sorted(cls.user_fields()))}")
            if key in cls.AUTO and value == "auto":
                continue
            params[key] = _coerce(value, hints[key], f"{prefix}.{key}", method, auto=key in cls.AUTO)
        settings = cls(**params)
        settings.validate(prefix)
        return settings

    def validate(self, prefix: str = "method_params") -> None:
        """Raise MethodError naming the field for values out of range (subclasses may add rules)."""
        hints = typing.get_type_hints(type(self))
        for name in self.WIDTHS:
            widths = getattr(self, name)
            if not widths or any(w < 1 for w in widths):
                raise MethodError(f"{prefix}.{name}: expected a non-empty list of positive widths")
        for name in self.AUTO:
            if getattr(self, name) == 0:   # it meant "chosen by the dimension" once: refused, never read another way
                raise MethodError(f"{prefix}.{name}: expected auto or a number > 0, got 0 (0 no longer means "
                                  "automatic: write auto)")
        for name in self.POSITIVE + self.NON_NEGATIVE:
            value = getattr(self, name)
            if value == "auto":
                continue
            noun = "integer" if hints[name] is int else "number"
            if name in self.POSITIVE and not value > 0:
                raise MethodError(f"{prefix}.{name}: expected a positive {noun}, got {shown(value)}")
            if name in self.NON_NEGATIVE and not value >= 0:
                raise MethodError(f"{prefix}.{name}: expected {'an' if noun == 'integer' else 'a'} {noun} >= 0")
        for name, allowed in self.CHOICES.items():
            if getattr(self, name) not in allowed:
                raise MethodError(f"{prefix}.{name}: expected one of {', '.join(allowed)}, "
                                  f"got {shown(getattr(self, name))}")


def _coerce(value: Any, annotation: Any, field: str, method: str, auto: bool = False) -> Any:
    if isinstance(annotation, type) and is_dataclass(annotation) and issubclass(annotation, Settings):
        return annotation.from_params(value, method, field)
    if isinstance(value, bool) and annotation is not bool:
        raise MethodError(f"{field}: expected {'auto or ' if auto else ''}a number, got {shown(value)}")
    if auto and not isinstance(value, (int, float)):
        raise MethodError(f"{field}: expected auto or {'an integer' if annotation is int else 'a number'}, "
                          f"got {shown(value)}")
    if annotation is bool:
        if not isinstance(value, bool):
            raise MethodError(f"{field}: expected true or false, got {shown(value)}")
        return value
    if annotation is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int):
            raise MethodError(f"{field}: expected an integer, got {shown(value)}")
        return value
    if annotation is float:
        if not isinstance(value, (int, float)) or not np.isfinite(value):
            raise MethodError(f"{field}: expected a finite number, got {shown(value)}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise MethodError(f"{field}: expected a string, got {shown(value)}")
        return value
    if typing.get_origin(annotation) in (tuple, list):
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise MethodError(f"{field}: expected a list of integers, got {shown(value)}")
        return tuple(value)
    return value


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}


def settings_schema(cls: type[Settings]) -> dict:
    """The JSON Schema of ``cls``'s user fields: types, defaults, ranges, choices, ``auto``."""
    hints = typing.get_type_hints(cls)
    properties: dict[str, dict] = {}
    for f in fields(cls):
        if f.name.isupper() or f.name in cls.INTERNAL:
            continue
        annotation = hints[f.name]
        if isinstance(annotation, type) and is_dataclass(annotation) and issubclass(annotation, Settings):
            properties[f.name] = settings_schema(annotation)
            continue
        if typing.get_origin(annotation) in (tuple, list):
            entry: dict = {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}
        else:
            entry = {"type": _JSON_TYPES.get(annotation, "string")}
        if f.name in cls.POSITIVE:
            entry["minimum" if annotation is int else "exclusiveMinimum"] = 1 if annotation is int else 0
        elif f.name in cls.NON_NEGATIVE:
            entry["minimum"] = 0
        if f.name in cls.CHOICES:
            entry["enum"] = list(cls.CHOICES[f.name])
        if f.name in cls.AUTO:
            entry.pop("minimum", None)
            entry["exclusiveMinimum"] = 0
            entry = {"anyOf": [entry, {"const": "auto"}]}
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        entry["default"] = list(default) if isinstance(default, tuple) else default
        properties[f.name] = entry
    return {"type": "object", "properties": properties, "additionalProperties": False}
