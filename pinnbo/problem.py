"""What a design problem is: a box of design variables, an expensive oracle, a sense, and
optionally the PDE the objective obeys and its known optimum.

Optimisers never see a Problem's oracle; they see a :class:`Box` and, for PINN-BO, the
compiled PDE. The runner converts between the problem's sense and the minimisation that every
optimiser performs internally (docs/algorithms.md, "Conventions").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from pinnbo.errors import ProblemError, shown
from pinnbo.space import MAX_DIMENSION, Box, Variable, objective_signs

__all__ = ["MAX_DIMENSION", "Box", "Variable", "Constraint", "Problem", "ProblemError", "check_dimension",
           "point_oracle", "read_outcome", "register_problem", "PROBLEM_FACTORIES"]


def plane_outside(conditions, domain: Box) -> tuple[int, str] | None:
    """(index, why) of the first boundary condition whose plane is outside the box, or None."""
    lower, upper = domain.lower_array, domain.upper_array
    for i, condition in enumerate(conditions):
        k = domain.names.index(condition.input)
        slack = 1e-12 * (upper[k] - lower[k])     # a plane at π on a box that ends at π, to rounding
        if not lower[k] - slack <= condition.at <= upper[k] + slack:
            return i, (f"the plane {condition.input} = {condition.at:g} is outside the box's {condition.input} range "
                       f"[{lower[k]:g}, {upper[k]:g}]")
    return None


def check_dimension(dim: object, minimum: int = 1, why: str = "") -> int:
    """A problem factory's ``dim`` parameter as an int in [minimum, MAX_DIMENSION], or a one-line
    ProblemError naming ``params.dim`` (``why`` says where a larger minimum comes from)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise ProblemError(f"params.dim: expected an integer number of variables, got {shown(dim)}")
    if dim < minimum:
        raise ProblemError(f"params.dim: expected an integer >= {minimum}{why}, got {dim}")
    if dim > MAX_DIMENSION:
        raise ProblemError(f"params.dim: expected an integer <= {MAX_DIMENSION}, got {shown(dim)}")
    return int(dim)


@dataclass(frozen=True)
class Constraint:
    """One constraint output c(x) <= 0 (feasible), whatever the objective's sense.

    ``function`` None: a black-box output returned by the same oracle call as the objective
    (coupled evaluation). ``function`` given: a cheap known constraint, ``function(X) -> c`` over
    an (n, d) array of designs returning shape (n,) (a case's sympy expression), evaluated by the
    runner and known exactly to the optimisers. ``noise_std``: absolute standard deviation of the
    Gaussian noise on its observations (black-box outputs only).
    """

    name: str
    function: Callable[[np.ndarray], np.ndarray] | None = None
    noise_std: float = 0.0

    @property
    def known(self) -> bool:
        return self.function is not None


class ByValue:
    """A problem's function called with designs by value instead of the encoded coordinates the
    optimisers search (:mod:`pinnbo.space`): the objective gets :meth:`Box.design` of one design,
    a known constraint (``batch``) :meth:`Box.physical` of an (n, d) array. Picklable, so a
    parallel run's workers can call it."""

    def __init__(self, domain: Box, function: Callable, batch: bool = False) -> None:
        self.domain, self.function, self.batch = domain, function, batch

    def __call__(self, x: np.ndarray):
        if self.batch:
            return self.function(self.domain.physical(x))
        return self.function(self.domain.design(np.asarray(x, dtype=np.float64).reshape(-1)))


@dataclass
class Problem:
    """A design problem.

    Attributes
    ----------
    name: identifier shown to the user.
    domain: the box of design variables.
    objective: the expensive oracle, ``objective(x) -> float`` for one design ``x`` of shape (d,)
        in physical coordinates (a mapping name -> value when the domain has an integer or a
        choice variable: :meth:`pinnbo.space.Box.design`); returns the true (noise-free) value in
        the problem's own sense.
        None: the problem is measured outside pinnbo (``pinnbo ask`` / ``pinnbo tell``).
    sense: ``"maximize"`` or ``"minimize"``.
    pde: optional :class:`pinnbo.pde.PDE` the objective satisfies (several objectives: a mapping
        objective name -> PDE, for those that have one), written in the symbols named by
        ``domain.names`` (in that order).
    optimum: f*, the best attainable value in the problem's sense, when known.
    optimum_location: a design attaining (or approaching) f*, shape (d,), when known.
    noise_std: standard deviation of Gaussian observation noise added to the true value
        (absolute units of the objective); 0 means noise-free observations.
    collocation_filter: optional ``filter(points) -> bool mask`` over an (N, d) array, keeping
        collocation points away from where the PDE is singular.
    constraints: constraint outputs (:class:`Constraint`); a design is feasible iff every
        c_i(x) <= 0. With black-box constraints the oracle returns ``(f, c)`` instead of ``f``:
        ``c`` a sequence in the order of the black-box constraints, or a mapping name -> value
        (:meth:`split_outcome`). ``optimum`` is then the best *feasible* value.
    objectives: several objectives, name -> sense (``"minimize"`` or ``"maximize"``), in the
        order the optimisers see them; the oracle then returns a mapping name -> value (with
        black-box constraints: ``(values, c)``), ``sense`` is unused and ``optimum`` is the largest
        hypervolume the problem can dominate (its Pareto front's) where known.
    reference: the hypervolume's reference point, name -> value in each objective's own sense
        (None: inferred from the observed values, :func:`pinnbo.pareto.inferred_reference`).
    measured: the objective returns measurements (a program's output), not a known noise-free
        value: evaluations record them as observed, with no true value.
    boundary_continuous: whether the objective's values on the box's faces (its boundary data,
        for a PDE solved with them) join continuously where faces meet: False where they jump (a
        heat plate whose edges disagree at a corner), None where the problem does not know.
        ``method: auto`` reads it, and pde-gp, whose prior then carries the corners' angle
        functions where they solve the PDE (docs/guide/methods.md).
    field_plot: optional ``field_plot(n) -> (xs, ys, values)`` for 2-D problems: the true field on
        an n×n grid, ``values[j, i] = f(xs[i], ys[j])`` (rows are the second variable), for the
        report's map (cheap for cached fields).
    """

    name: str
    domain: Box
    objective: Callable[[np.ndarray], float] | None
    sense: str = "minimize"
    pde: Any = None
    optimum: float | None = None
    optimum_location: Sequence[float] | None = None
    noise_std: float = 0.0
    collocation_filter: Callable[[np.ndarray], np.ndarray] | None = None
    field_plot: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    constraints: tuple[Constraint, ...] = ()
    measured: bool = False
    objectives: dict[str, str] = field(default_factory=dict)
    reference: dict[str, float] | None = None
    description: str = ""
    metadata: dict = field(default_factory=dict)
    boundary_continuous: bool | None = None

    def __post_init__(self) -> None:
        if not self.domain.plain:   # the functions are written for designs by value (pinnbo.space)
            if self.objective is not None and not isinstance(self.objective, ByValue):
                self.objective = ByValue(self.domain, self.objective)
            self.constraints = tuple(
                c if c.function is None or isinstance(c.function, ByValue)
                else Constraint(c.name, ByValue(self.domain, c.function, batch=True), c.noise_std)
                for c in self.constraints)
        if isinstance(self.pde, dict):   # several objectives: a PDE per objective that has one
            self.pde = {name: self._matched(pde, f"pde.{name}") for name, pde in self.pde.items()}
        elif self.pde is not None:
            self.pde = self._matched(self.pde, "pde")
        if self.sense not in ("maximize", "minimize"):
            raise ProblemError(f"sense: expected 'maximize' or 'minimize', got {shown(self.sense)}")
        if not (math.isfinite(self.noise_std) and self.noise_std >= 0):
            raise ProblemError(f"noise: expected a finite standard deviation >= 0, got {self.noise_std}")
        self.constraints = tuple(self.constraints)
        self._check_objectives()
        names = [c.name for c in self.constraints]
        if len(set(names)) != len(names):
            raise ProblemError(f"constraints: names must be unique, got {names}")
        for c in self.constraints:
            if not (math.isfinite(c.noise_std) and c.noise_std >= 0):
                raise ProblemError(f"constraints.{c.name}.noise: expected a finite standard deviation >= 0, "
                                   f"got {c.noise_std}")

    def _matched(self, pde: Any, field: str) -> Any:
        """``pde`` with its inputs matched to the design variables by name (its own variables real,
        the others its parameters), or a ProblemError naming ``field``."""
        own = getattr(pde, "own_inputs", self.domain.names)
        other = next((v for v in self.domain.variables if v.kind != "real" and v.name in own), None)
        if other is not None:
            kind = "on a log scale" if other.kind == "log" else f"{'an' if other.kind == 'integer' else 'a'} {other.kind}"
            raise ProblemError(f"{field}: the PDE's variables are real; {other.name} is {kind}")
        if not hasattr(pde, "for_variables"):
            return pde
        from pinnbo.pde import PDEError

        try:  # inputs matched to the design variables by name, when the problem is built
            matched = pde.for_variables(self.domain.names)
        except PDEError as exc:
            raise ProblemError(f"{field}: {exc}") from None
        outside = plane_outside(getattr(matched, "boundary", ()), self.domain)
        if outside is not None:
            raise ProblemError(f"{field}: boundary[{outside[0]}]: {outside[1]}")
        return matched

    def _check_objectives(self) -> None:
        if not self.objectives:
            if self.reference is not None:
                raise ProblemError("reference: a hypervolume reference point is for several objectives")
            return
        self.objectives = dict(self.objectives)
        if len(self.objectives) < 2:
            raise ProblemError(f"objectives: expected two or more, got {list(self.objectives)}; one objective is "
                               "sense: minimize or maximize")
        for name, sense in self.objectives.items():
            if sense not in ("minimize", "maximize"):
                raise ProblemError(f"objectives.{name}: expected minimize or maximize, got {shown(sense)}")
            if name in self.domain.names or name in self.constraint_names:
                raise ProblemError(f"objectives.{name}: {shown(name)} is a design variable or a constraint's name")
        if self.noise_std:
            raise ProblemError("noise: synthetic noise is for one objective")
        if self.pde is not None and not (isinstance(self.pde, dict) and set(self.pde) <= set(self.objectives)):
            raise ProblemError(f"pde: with several objectives, give a PDE per objective that has one, "
                               f"{{name: PDE}} with names among {', '.join(self.objectives)}")
        if self.reference is not None:
            reference = dict(self.reference)
            if sorted(reference) != sorted(self.objectives):
                raise ProblemError(f"reference: expected a value for each objective ({', '.join(self.objectives)}), "
                                   f"got {shown(sorted(reference))}")
            for name, value in reference.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise ProblemError(f"reference.{name}: expected a finite number, got {shown(value)}")
            self.reference = {name: float(reference[name]) for name in self.objectives}

    @property
    def signs(self) -> np.ndarray:
        """Multipliers turning each objective's values into minimised ones, shape (m,)."""
        return objective_signs(self.objectives)

    @property
    def minimised_reference(self) -> np.ndarray | None:
        """The reference point in minimised values, (m,), or None (inferred from the data)."""
        if self.reference is None:
            return None
        return self.signs * np.array([self.reference[n] for n in self.objectives], dtype=np.float64)

    @property
    def constraint_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.constraints)

    @property
    def oracle_constraints(self) -> tuple[Constraint, ...]:
        """The black-box constraints, in the order the oracle returns them."""
        return tuple(c for c in self.constraints if not c.known)

    def split_outcome(self, raw: Any) -> tuple[float | dict[str, float], dict[str, float]]:
        """The objective value (several objectives: {name: value}) and the black-box constraint values
        (name -> value) of one oracle result. Raises ValueError (a failed evaluation) when the result
        does not have that shape."""
        blackbox = self.oracle_constraints
        if self.objectives:
            given = raw
            if blackbox:
                if not (isinstance(raw, (tuple, list)) and len(raw) == 2):
                    raise ValueError(f"oracle returned {type(raw).__name__}, expected ({{objective: value}}, "
                                     f"constraints) for constraints {', '.join(c.name for c in blackbox)}")
                given = raw[0]
            values = self._objective_values(given)
            return values, (self._constraint_values(raw[1], blackbox) if blackbox else {})
        if not blackbox:
            if isinstance(raw, (tuple, list, dict, np.ndarray)):
                raise ValueError(f"oracle returned {type(raw).__name__}, expected one number (the problem has "
                                 "no black-box constraints)")
            return float(raw), {}
        if not (isinstance(raw, (tuple, list)) and len(raw) == 2):
            raise ValueError(f"oracle returned {type(raw).__name__}, expected (objective, constraints) for "
                             f"constraints {', '.join(c.name for c in blackbox)}")
        value, given = raw
        return float(value), self._constraint_values(given, blackbox)

    def _objective_values(self, given: Any) -> dict[str, float]:
        """The objectives' values of an oracle result that is a mapping name -> value."""
        names = list(self.objectives)
        if not isinstance(given, dict):
            raise ValueError(f"oracle returned {type(given).__name__}, expected a mapping of the objectives "
                             f"{', '.join(names)} to their values")
        missing = [n for n in names if n not in given]
        extra = [str(k) for k in given if k not in names]
        if missing or extra:
            raise ValueError(f"oracle objectives: missing {missing}, unexpected {extra}; expected {names}")
        return {n: float(given[n]) for n in names}

    @staticmethod
    def _constraint_values(given: Any, blackbox: Sequence[Constraint]) -> dict[str, float]:
        names = [c.name for c in blackbox]
        if isinstance(given, dict):
            missing = [n for n in names if n not in given]
            extra = [str(k) for k in given if k not in names]
            if missing or extra:
                raise ValueError(f"oracle constraints: missing {missing}, unexpected {extra}; expected {names}")
            values = {n: float(given[n]) for n in names}
        else:
            given = list(np.asarray(given, dtype=np.float64).reshape(-1))
            if len(given) != len(names):
                raise ValueError(f"oracle returned {len(given)} constraint values, expected {len(names)} ({names})")
            values = dict(zip(names, (float(v) for v in given)))
        return values

    @property
    def sign(self) -> float:
        """Multiplier turning the problem's values into minimisation values."""
        return -1.0 if self.sense == "maximize" else 1.0

    @property
    def minimised_pde(self) -> Any:
        """The PDE of the values an optimiser minimises (``sign`` × the objective): the problem's own
        when it is minimised, the one −f obeys when it is maximised."""
        if isinstance(self.pde, dict):
            return {name: pde.negated() if self.objectives[name] == "maximize" else pde for name, pde in self.pde.items()}
        if self.pde is None or self.sense == "minimize":
            return self.pde
        return self.pde.negated()

    def better(self, a: float, b: float) -> bool:
        """Whether value ``a`` is strictly better than ``b`` in the problem's sense."""
        return a > b if self.sense == "maximize" else a < b

    def simple_regret(self, best_true: float) -> float | None:
        if self.optimum is None or best_true is None:
            return None
        return abs(self.optimum - best_true)


def point_oracle(values: Callable[[np.ndarray], np.ndarray], dim: int, name: str) -> Callable[[np.ndarray], float]:
    """The objective ``x (d,) -> float`` of a batched function ``values(X (n, d)) -> (n,)``."""

    def objective(x: np.ndarray) -> float:
        arr = np.asarray(x, dtype=np.float64)
        if arr.size != dim:
            raise ProblemError(f"{name}: expected a design with {dim} values, got shape {arr.shape}")
        return float(values(arr.reshape(1, dim))[0])

    objective.__doc__ = f"{name}: true (noise-free) value at one design x of shape ({dim},)."
    return objective


def read_outcome(problem: Problem, outcome) -> tuple[float, dict[str, float], str | None]:
    """(objective, black-box constraint values, None) of one oracle result, or (nan, {}, reason)
    when it does not have the problem's shape (a failed evaluation, not a crash)."""
    if isinstance(outcome, np.ndarray) and outcome.ndim == 0:
        outcome = outcome.item()   # a 0-d array is one number, as float() always accepted
    try:
        value, blackbox = problem.split_outcome(outcome)
    except (TypeError, ValueError) as exc:
        return float("nan"), {}, f"malformed oracle result: {exc}"
    return value, blackbox, None


# Problem factories by name: `problem: heat_plate` in a case file resolves here. Each module of the
# `problems` package registers its factories with @register_problem when imported.
PROBLEM_FACTORIES: dict[str, Callable[..., Problem]] = {}


def register_problem(factory: Callable[..., Problem]) -> Callable[..., Problem]:
    """Decorator: make ``factory(**params) -> Problem`` available to case files by its name."""
    PROBLEM_FACTORIES[factory.__name__] = factory
    return factory
