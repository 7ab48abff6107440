"""Documented defaults that a case overrides: ``method_params`` of a method, and the sections nested
in them (Neural-CBO's ``pinn:``), each a dataclass of typed fields checked with one-line errors.

A field's annotation decides what it accepts (``bool``, ``int``, ``float``, ``str``, a tuple of
ints for layer widths, or another :class:`Settings` for a nested section given as a mapping);
class-level lists say what must be positive, non-negative or one of a few choices.
"""

from __future__ import annotations

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
                                  f"{', '.join(sorted(known))}")
            params[key] = _coerce(value, hints[key], f"{prefix}.{key}", method)
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
        for name in self.POSITIVE:
            if not getattr(self, name) > 0:
                noun = "integer" if hints[name] is int else "number"
                raise MethodError(f"{prefix}.{name}: expected a positive {noun}")
        for name in self.NON_NEGATIVE:
            if not getattr(self, name) >= 0:
                noun = "an integer" if hints[name] is int else "a number"
                raise MethodError(f"{prefix}.{name}: expected {noun} >= 0")
        for name, allowed in self.CHOICES.items():
            if getattr(self, name) not in allowed:
                raise MethodError(f"{prefix}.{name}: expected one of {', '.join(allowed)}, "
                                  f"got {shown(getattr(self, name))}")


def _coerce(value: Any, annotation: Any, field: str, method: str) -> Any:
    if isinstance(annotation, type) and is_dataclass(annotation) and issubclass(annotation, Settings):
        return annotation.from_params(value, method, field)
    if isinstance(value, bool) and annotation is not bool:
        raise MethodError(f"{field}: expected a number, got {shown(value)}")
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
