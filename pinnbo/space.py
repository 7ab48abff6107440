"""The design space: variables of four kinds and the box the optimisers search.

A variable is ``real`` (an interval), ``log`` (an interval searched on a log scale), ``integer``
(every integer of an interval) or ``choice`` (one of a list of names). The optimisers see one
continuous box, the *encoded* coordinates:

- real: the value itself, on [lower, upper];
- log: ln(value), on [ln lower, ln upper], so a uniform draw is log-uniform and a GP's stationary
  kernel works on orders of magnitude (the log warp);
- integer: the value, on [lower − ½, upper + ½]; a point rounds to the nearest integer, so each
  integer owns a cell of width 1 and a uniform draw picks each one with the same probability;
- choice: the index of the name, on [−½, k − ½], rounded the same way.

Proposals are snapped to valid designs (:meth:`Box.snap`); the evaluation log keeps designs *by
value* (:meth:`Box.values`: a float, an int, a name) and :meth:`Box.encode` takes them back.
A box of real variables only is the plain box every method has always searched: encoding is the
identity there and nothing is rounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from pinnbo.errors import ProblemError, shown

#: Most design variables a problem may have: the surrogates' cost grows with d, and beyond this
#: a problem is better reduced before it is optimised.
MAX_DIMENSION = 1000

KINDS = ("real", "log", "integer", "choice")


@dataclass(frozen=True)
class Variable:
    """One design variable. ``lower``/``upper``: its interval (real, log, integer; the integer's
    ends included); ``choices``: its names (choice)."""

    name: str
    kind: str = "real"
    lower: float = 0.0
    upper: float = 1.0
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        field = f"variables.{self.name}"
        if self.kind not in KINDS:
            raise ProblemError(f"{field}: kind {shown(self.kind)}; expected one of {', '.join(KINDS)}")
        if self.kind == "choice":
            object.__setattr__(self, "choices", tuple(self.choices))
            if len(self.choices) < 2 or not all(isinstance(c, str) and c for c in self.choices):
                raise ProblemError(f"{field}: expected a list of at least two names, got {shown(list(self.choices))}")
            if len(set(self.choices)) != len(self.choices):
                raise ProblemError(f"{field}: the choices must be different, got {shown(list(self.choices))}")
            object.__setattr__(self, "lower", 0.0)
            object.__setattr__(self, "upper", float(len(self.choices) - 1))
            return
        lo, hi = self.lower, self.upper
        if self.kind == "integer":
            if not all(_is_integer(v) for v in (lo, hi)):
                raise ProblemError(f"{field}: expected integer bounds [lower, upper], got [{lo}, {hi}]")
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise ProblemError(f"{field}: bounds must be finite, got [{lo}, {hi}]")
        if not lo < hi:
            raise ProblemError(f"{field}: lower bound {lo:g} must be below upper bound {hi:g}")
        if self.kind == "log" and lo <= 0:
            raise ProblemError(f"{field}: a log scale needs bounds > 0, got [{lo:g}, {hi:g}]")
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)

    @property
    def discrete(self) -> bool:
        return self.kind in ("integer", "choice")

    @property
    def encoded_bounds(self) -> tuple[float, float]:
        """The interval the optimisers search for this variable (module docstring)."""
        if self.kind == "log":
            return math.log(self.lower), math.log(self.upper)
        if self.discrete:
            return self.lower - 0.5, self.upper + 0.5
        return self.lower, self.upper

    @property
    def levels(self) -> np.ndarray:
        """The encoded values a discrete variable takes (its integers, or 0..k−1)."""
        return np.arange(self.lower, self.upper + 1.0)

    def value(self, z: float) -> float | int | str:
        """The design value of encoded coordinate ``z``."""
        if self.kind == "log":
            return float(min(max(math.exp(z), self.lower), self.upper))
        if self.kind == "integer":
            return int(min(max(round(z), self.lower), self.upper))
        if self.kind == "choice":
            return self.choices[int(min(max(round(z), 0), len(self.choices) - 1))]
        return float(z)

    def encoded(self, value: Any) -> float:
        """The encoded coordinate of a design value, or a ValueError saying what was expected."""
        if self.kind == "choice":
            if isinstance(value, str) and value in self.choices:
                return float(self.choices.index(value))
            raise ValueError(f"{self.name}: expected one of {', '.join(self.choices)}, got {shown(value)}")
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not math.isfinite(value):
            raise ValueError(f"{self.name}: expected {self.describe()}, got {shown(value)}")
        if self.kind == "integer":
            if not _is_integer(value):
                raise ValueError(f"{self.name}: expected an integer, got {shown(value)}")
            return float(value)
        if self.kind == "log":
            if value <= 0:
                raise ValueError(f"{self.name}: expected a number > 0 (a log-scale variable), got {shown(value)}")
            return math.log(value)
        return float(value)

    def to_dict(self) -> dict:
        """The variable as JSON (a summary's ``domain``): name, kind and range or choices."""
        if self.kind == "choice":
            return {"name": self.name, "kind": "choice", "choices": list(self.choices)}
        if self.kind == "integer":
            return {"name": self.name, "kind": "integer", "lower": int(self.lower), "upper": int(self.upper)}
        return {"name": self.name, "kind": self.kind, "lower": self.lower, "upper": self.upper}

    def describe(self) -> str:
        """The variable's kind and range as a case file writes it."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "integer":
            return f"an integer in [{int(self.lower)}, {int(self.upper)}]"
        scale = " (log scale)" if self.kind == "log" else ""
        return f"a number in [{self.lower:g}, {self.upper:g}]{scale}"


def _is_integer(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating)) and \
        math.isfinite(v) and float(v) == int(v)


@dataclass(frozen=True)
class Box:
    """The box of encoded design variables (module docstring).

    ``lower`` and ``upper`` have length d; ``names`` are the variables' names (the symbols the
    PDE is written in, when there is one). ``variables``: their kinds (:class:`Variable`); left
    out, every variable is real on [lower, upper]. :meth:`of` builds a box from variables.
    """

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    names: tuple[str, ...] = ()
    variables: tuple[Variable, ...] = ()

    def __post_init__(self) -> None:
        lower = tuple(float(v) for v in self.lower)
        upper = tuple(float(v) for v in self.upper)
        names = tuple(self.names) or tuple(f"x{i + 1}" for i in range(len(lower)))
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "names", names)
        if len(lower) == 0:
            raise ProblemError("bounds: a domain needs at least one variable")
        if len(lower) > MAX_DIMENSION:
            raise ProblemError(f"bounds: at most {MAX_DIMENSION} design variables, got {len(lower)}")
        if len(lower) != len(upper) or len(names) != len(lower):
            raise ProblemError(
                f"bounds: lower ({len(lower)}), upper ({len(upper)}) and names ({len(names)}) "
                "must have the same length"
            )
        if len(set(names)) != len(names):
            raise ProblemError(f"bounds: variable names must be unique, got {list(names)}")
        for name, lo, hi in zip(names, lower, upper):
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ProblemError(f"bounds.{name}: bounds must be finite, got [{lo}, {hi}]")
            if not lo < hi:
                raise ProblemError(f"bounds.{name}: lower bound {lo} must be below upper bound {hi}")
        variables = tuple(self.variables) or tuple(Variable(n, "real", lo, hi) for n, lo, hi in zip(names, lower, upper))
        if tuple(v.name for v in variables) != names or \
                any(v.encoded_bounds != (lo, hi) for v, lo, hi in zip(variables, lower, upper)):
            raise ProblemError("bounds: the variables do not match the box; build it with Box.of(variables)")
        object.__setattr__(self, "variables", variables)
        object.__setattr__(self, "_discrete", tuple(i for i, v in enumerate(variables) if v.discrete))

    @property
    def named_bounds(self) -> dict[str, tuple[float, float]]:
        """Each variable's name -> (lower, upper): the box a PDE in these names holds on."""
        return {name: (lo, hi) for name, lo, hi in zip(self.names, self.lower, self.upper)}

    @classmethod
    def of(cls, variables: Sequence[Variable]) -> "Box":
        """The box searched for ``variables`` (module docstring)."""
        variables = tuple(variables)
        bounds = [v.encoded_bounds for v in variables]
        return cls(tuple(b[0] for b in bounds), tuple(b[1] for b in bounds), tuple(v.name for v in variables),
                   variables)

    @classmethod
    def cube(cls, low: float, high: float, dim: int, prefix: str = "x") -> "Box":
        """[low, high]^dim with variables named x1..xd."""
        return cls((low,) * dim, (high,) * dim, tuple(f"{prefix}{i + 1}" for i in range(dim)))

    # -- kinds ------------------------------------------------------------------------------------------
    @property
    def plain(self) -> bool:
        """Every variable real: the encoding is the identity."""
        return all(v.kind == "real" for v in self.variables)

    @property
    def numeric(self) -> bool:
        """No integer nor choice variable: a design is an array of numbers (real and log)."""
        return not self._discrete

    def dims(self, *kinds: str) -> tuple[int, ...]:
        """The indices of the variables of ``kinds``."""
        return tuple(i for i, v in enumerate(self.variables) if v.kind in kinds)

    def variable(self, name: str) -> Variable:
        return self.variables[self.names.index(name)]

    # -- coordinates ------------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return len(self.lower)

    @property
    def lower_array(self) -> np.ndarray:
        return np.asarray(self.lower, dtype=np.float64)

    @property
    def upper_array(self) -> np.ndarray:
        return np.asarray(self.upper, dtype=np.float64)

    @property
    def widths(self) -> np.ndarray:
        return self.upper_array - self.lower_array

    def from_unit(self, u: np.ndarray) -> np.ndarray:
        """Map points of [0, 1]^d, shape (..., d), to the box (discrete variables snapped: each
        level owns an equal share of the unit interval)."""
        x = self.lower_array + np.asarray(u, dtype=np.float64) * self.widths
        return self.snap(x) if self._discrete else x

    def to_unit(self, x: np.ndarray) -> np.ndarray:
        """Map points of the box, shape (..., d), to [0, 1]^d."""
        return (np.asarray(x, dtype=np.float64) - self.lower_array) / self.widths

    def clip(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(x, dtype=np.float64), self.lower_array, self.upper_array)

    def snap(self, x: np.ndarray) -> np.ndarray:
        """Points of the box, shape (..., d), made valid designs: clipped, each discrete coordinate
        rounded to its nearest level."""
        x = self.clip(x)
        if self._discrete:
            x = x.copy()
            for i in self._discrete:
                v = self.variables[i]
                x[..., i] = np.clip(np.round(x[..., i]), v.lower, v.upper)
        return x

    def contains(self, x: np.ndarray, tol: float = 0.0) -> bool:
        x = np.asarray(x, dtype=np.float64)
        return bool(np.all(x >= self.lower_array - tol) and np.all(x <= self.upper_array + tol))

    def unit_levels(self, i: int) -> np.ndarray:
        """The unit coordinates of discrete variable ``i``'s levels."""
        return (self.variables[i].levels - self.lower[i]) / (self.upper[i] - self.lower[i])

    # -- values -----------------------------------------------------------------------------------------
    def values(self, x: np.ndarray) -> list:
        """The design ``x`` (d,) by value, as the log records it: floats, ints and names."""
        if self.plain:
            return [float(v) for v in np.asarray(x, dtype=np.float64).reshape(-1)]
        return [v.value(float(z)) for v, z in zip(self.variables, np.asarray(x, dtype=np.float64).reshape(-1))]

    def encode(self, values: Sequence[Any]) -> np.ndarray:
        """The encoded design of ``values`` (a design by value, d entries), or a ValueError naming the
        variable and what it expected."""
        values = list(values)
        if len(values) != self.dim:
            raise ValueError(f"{len(values)} values, the problem has {self.dim} variables ({', '.join(self.names)})")
        return np.asarray([v.encoded(value) for v, value in zip(self.variables, values)], dtype=np.float64)

    def physical(self, X: np.ndarray) -> np.ndarray:
        """Designs (..., d) in their own numbers: a log variable's value instead of its logarithm, an
        integer as itself, a choice as its index (what a known constraint's function receives)."""
        X = np.asarray(X, dtype=np.float64)
        logs = self.dims("log")
        if not logs:
            return X
        X = X.copy()
        for i in logs:
            v = self.variables[i]
            X[..., i] = np.clip(np.exp(X[..., i]), v.lower, v.upper)
        return X

    def design(self, x: np.ndarray) -> np.ndarray | dict[str, Any]:
        """What the objective receives for ``x`` (d,): the array of :meth:`physical` numbers when every
        variable is a number, otherwise a mapping name -> value (an int for an integer, the name for
        a choice)."""
        if self.numeric:
            return self.physical(x)
        return dict(zip(self.names, self.values(x)))


def objective_signs(objectives: dict[str, str]) -> np.ndarray:
    """Multipliers turning each objective's values (name -> sense, in order) into minimised ones, (m,)."""
    return np.array([-1.0 if sense == "maximize" else 1.0 for sense in objectives.values()])
