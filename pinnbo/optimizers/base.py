"""The one ask/tell interface every method implements.

Optimisers minimise. They see the design box in physical coordinates and values in the
minimisation convention (the runner multiplies a maximisation problem's values by −1; the Python
API sets :attr:`Optimizer.sense` and ``tell`` converts).

Reproducibility contract: every random draw an optimiser makes at step t comes from a generator
derived from (seed, purpose, t), where t is the number of evaluations told so far. ``ask`` is
therefore a deterministic function of the seed, the told data and the checkpointed state, which is
what lets an interrupted run resume to the identical history.

Asynchronous runs (several evaluations in flight) ask with the designs still being evaluated,
``ask(pending=...)``: they count as taken for the duplicate rule, a method whose surrogate has an
exact variance update conditions on them (no value is needed for it), and the step index t of the
streams becomes the ask index, told + pending, so each proposal draws fresh randomness. Without
pending designs the two indices coincide and a sequential run is what it always was.
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np
import torch

from pinnbo.errors import MethodError, shown
from pinnbo.problem import Box, Constraint
from pinnbo.settings import Settings
from pinnbo.space import objective_signs
from pinnbo.streams import numpy_rng, torch_generator

#: Phases of designs the optimiser did not propose (the initial design, evaluations made elsewhere).
NOT_PROPOSED = ("initial", "imported")

# Floating-point types a network method can train in (``dtype`` in method_params).
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def check_device(device: str) -> str:
    """``device`` as torch names it, or a MethodError naming what was expected.

    Apple's MPS is refused: the GP methods and the residual GPs compute in float64, which MPS lacks.
    """
    if device == "mps":
        raise MethodError("device: 'mps' is not supported (pinnbo's GPs compute in float64, which Apple's MPS "
                          "lacks); expected cpu, cuda or cuda:N")
    if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise MethodError(f"device: expected cpu, cuda or cuda:N, got {shown(device)}")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise MethodError(f"device: {shown(device)} requested but CUDA is not available on this machine")
        index = int(device.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise MethodError(f"device: {shown(device)} requested but this machine has {torch.cuda.device_count()} "
                              f"CUDA device(s), cuda:0..cuda:{torch.cuda.device_count() - 1}")
    return device


@dataclass
class MethodSettings(Settings):
    """Base of a method's documented defaults (``method_params`` in a case)."""


class Optimizer(abc.ABC):
    """Ask/tell base: keeps the told data and the duplicate guard.

    Subclasses implement :meth:`propose` (return one design, shape (d,), physical coordinates).
    """

    name = "base"
    Settings = MethodSettings
    # The sense of the values ``tell`` takes; every method minimises internally. The runner tells
    # minimisation values; the Python API sets the problem's sense (pinnbo.make_optimizer).
    sense = "minimize"
    # The phase of the last ask's design, recorded with its evaluation: "optimizer", or a method's
    # own (GP-UCB+'s random points are "exploration"); the report shows the best without each
    # phase other than the initial design and the optimiser's.
    phase = "optimizer"
    # Whether the method uses constraint observations. make_optimizer refuses a constrained
    # problem for a method that would silently ignore its constraints.
    handles_constraints: ClassVar[bool] = False
    # The kinds of design variables the method takes (pinnbo.space); make_optimizer refuses the
    # others by name. A log variable is searched in its logarithm, so every method takes it.
    variable_kinds: ClassVar[tuple[str, ...]] = ("real", "log")
    # Whether the method takes several objectives (make_optimizer refuses the others by name).
    multi_objective: ClassVar[bool] = False
    several_objectives_only: ClassVar[bool] = False
    # Whether the method trains on the PDE's residual alone: make_optimizer refuses a PDE with
    # boundary conditions for it rather than drop them (pde-gp conditions on them).
    residual_only: ClassVar[bool] = False
    # Built for constrained problems (they run unconstrained ones too, as plain EI): left out of
    # pinnbo bench's default method list for an unconstrained case.
    constrained_method: ClassVar[bool] = False

    @classmethod
    def installed(cls) -> bool:
        """Whether the method's optional dependencies are installed (pinnbo bench's defaults leave
        out a method that is not)."""
        return True

    def __init__(self, domain: Box, seed: int = 0, *, settings: MethodSettings | None = None,
                 pde: Any = None, collocation_filter: Any = None, device: str = "cpu",
                 constraints: tuple[Constraint, ...] = ()) -> None:
        self.domain = domain
        self.constraints = tuple(constraints)
        self.seed = int(seed)
        self.settings = settings if settings is not None else self.Settings()
        self.pde = pde
        self.collocation_filter = collocation_filter
        self.device = torch.device(device)
        self.X: list[np.ndarray] = []      # every told design, failed ones included
        self.y: list[float | None] = []    # minimisation values; None for a failed evaluation
        self.C: list[np.ndarray | None] = []  # observed constraint values (K,), c <= 0 feasible; None if failed
        # Indices of the black-box constraints (modelled from observations) and of the known ones
        # (computed exactly at any design).
        self.blackbox = [i for i, c in enumerate(self.constraints) if not c.known]
        self.known = [i for i, c in enumerate(self.constraints) if c.known]
        self.S: list[float | None] = []    # each measurement's own noise sd, where it was given
        # The case's observation noise: None (each method's own noise model), "learned" or a known
        # sd (make_optimizer sets it); declared noise lets a design be measured again (a replicate)
        # and the GPs use it.
        self.observation_noise: str | float | None = None
        # ``method: auto``'s choice (:class:`pinnbo.optimizers.choice.Choice`; None: the method was named).
        self.choice = None
        # Whether the problem's boundary data join continuously where faces meet
        # (:attr:`pinnbo.problem.Problem.boundary_continuous`; make_optimizer sets it; None: not declared).
        self.boundary_continuous: bool | None = None
        # Several objectives (make_optimizer sets them): name -> sense, in order; y is then a vector
        # (m,) of minimised values, and ``reference`` the hypervolume's reference point in them
        # (None: inferred from the data).
        self.objectives: dict[str, str] = {}
        self.reference: np.ndarray | None = None
        # Designs asked and still being evaluated, with their phases, during an ask (module docstring).
        self.pending: list[np.ndarray] = []
        self.pending_phases: list[str] = []

    # -- data ---------------------------------------------------------------------------------
    @property
    def n_told(self) -> int:
        return len(self.X)

    @property
    def ask_index(self) -> int:
        """The index of the evaluation being asked for: told + pending (module docstring)."""
        return len(self.X) + len(self.pending)

    @property
    def n_pending_proposed(self) -> int:
        """How many of the pending designs this optimiser proposed (not initial nor imported)."""
        return sum(p not in NOT_PROPOSED for p in self.pending_phases)

    def tell(self, x: np.ndarray, y: float | None, c: np.ndarray | None = None, *,
             proposed: bool | None = None, sd: float | None = None) -> None:
        """Record one evaluation: ``x`` shape (d,), ``y`` the value in the optimiser's :attr:`sense`
        (minimisation unless it was built for a maximised problem) or None if failed, ``c`` the
        observed constraint values, shape (K,) in the order of ``self.constraints`` (required when
        the optimiser has constraints and the evaluation succeeded). ``proposed``: whether this
        optimiser proposed ``x``; asynchronous runs say so, since their asks and tells do not
        alternate (None: the design of the last ask if one awaits its tell). ``sd``: the
        measurement's own noise standard deviation, where it is known."""
        del proposed
        x = self._checked_design(x)
        if self.objectives:
            y = self._minimised_objectives(y)
        elif y is not None and not np.isfinite(y):
            y = None
        elif y is not None and self.sense == "maximize":
            y = -float(y)
        k = len(self.constraints)
        if y is not None and k:
            c = None if c is None else np.asarray(c, dtype=np.float64).reshape(-1)
            if c is None or c.shape != (k,) or not np.all(np.isfinite(c)):
                y, c = None, None   # an evaluation without every constraint value cannot be used
        self.X.append(x)
        self.y.append(None if y is None else (y if self.objectives else float(y)))
        self.C.append(None if (y is None or not k) else c)
        self.S.append(None if sd is None else float(sd))

    def _minimised_objectives(self, y: Any) -> np.ndarray | None:
        """Several objectives: ``y`` a mapping name -> value in each objective's own sense, or an array
        (m,) of minimised values; returned minimised, None when one is missing or not finite."""
        if y is None:
            return None
        if isinstance(y, dict):
            if sorted(y) != sorted(self.objectives):
                raise MethodError(f"tell: y: expected a value for each objective ({', '.join(self.objectives)}), "
                                  f"got {shown(sorted(y))}")
            y = objective_signs(self.objectives) * np.array([float(y[name]) for name in self.objectives])
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape != (len(self.objectives),):
            raise MethodError(f"tell: y: expected {len(self.objectives)} objective values, got {y.size}")
        return y if np.all(np.isfinite(y)) else None

    def _checked_design(self, x: Any) -> np.ndarray:
        """``x`` as shape (d,), or a MethodError: the surrogates work in unit coordinates, where a
        design outside the box (beyond rounding) or of another length would be silently wrong."""
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise MethodError(f"tell: x: expected {self.domain.dim} numbers, got {shown(x)}") from None
        names = ", ".join(self.domain.names)
        if x.size != self.domain.dim:
            raise MethodError(f"tell: x has {x.size} values; expected {self.domain.dim} ({names})")
        x = x.reshape(self.domain.dim)
        tol = 1e-9 * self.domain.widths
        for i, (v, lo, hi) in enumerate(zip(x, self.domain.lower_array, self.domain.upper_array)):
            if not np.isfinite(v):
                raise MethodError(f"tell: x[{i}] ({self.domain.names[i]}) = {shown(float(v))}; expected a finite number")
            if v < lo - tol[i] or v > hi + tol[i]:
                raise MethodError(f"tell: x[{i}] ({self.domain.names[i]}) = {shown(float(v))} is outside the box "
                                  f"[{lo:g}, {hi:g}]")
        return x

    def observed(self) -> tuple[np.ndarray, np.ndarray]:
        """The successful evaluations: X shape (n, d), y shape (n,) (several objectives: (n, m))."""
        pairs = [(x, y) for x, y in zip(self.X, self.y) if y is not None]
        if not pairs:
            return np.zeros((0, self.domain.dim)), np.zeros(0)
        return np.stack([p[0] for p in pairs]), np.array([p[1] for p in pairs])

    @property
    def duplicate_tol(self) -> float:
        """The duplicate rule's distance (docs/algorithms.md); 0 under declared observation noise,
        where measuring a design again (a replicate) is information."""
        return 0.0 if self.observation_noise is not None else float(getattr(self.settings, "duplicate_tol", 1e-4))

    def known_violation(self, unit: np.ndarray) -> np.ndarray:
        """Σ_i max(c_i(x), 0) over the known constraints at unit points (N, d) → (N,), exact."""
        X = self.domain.from_unit(unit)
        total = np.zeros(len(X))
        for i in self.known:
            total += np.maximum(np.asarray(self.constraints[i].function(X), dtype=np.float64).reshape(len(X)), 0.0)
        return total

    def known_noise(self) -> np.ndarray | None:
        """The noise sd of each successful evaluation, in the order of :meth:`observed`: its own sd,
        else the case's known sd; None unless every one is known."""
        default = self.observation_noise if isinstance(self.observation_noise, float) else None
        sds = [default if s is None else s for s, y in zip(self.S, self.y) if y is not None]
        if not sds or any(s is None for s in sds):
            return None
        return np.asarray(sds, dtype=np.float64)

    def observed_constrained(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The successful evaluations with their constraint values: X (n, d), y (n,), C (n, K)."""
        rows = [(x, y, c) for x, y, c in zip(self.X, self.y, self.C) if y is not None]
        k = len(self.constraints)
        if not rows:
            return np.zeros((0, self.domain.dim)), np.zeros(0), np.zeros((0, k))
        C = np.stack([r[2] for r in rows]) if k else np.zeros((len(rows), 0))
        return np.stack([r[0] for r in rows]), np.array([r[1] for r in rows]), C

    def evaluated_unit(self) -> np.ndarray:
        """Every design taken, in unit coordinates, shape (n, d): told (failed included) and
        pending; what a proposal must not repeat."""
        taken = self.X + self.pending
        if not taken:
            return np.zeros((0, self.domain.dim))
        return self.domain.to_unit(np.stack(taken))

    def pending_unit(self) -> np.ndarray:
        """The pending designs in unit coordinates, shape (p, d)."""
        if not self.pending:
            return np.zeros((0, self.domain.dim))
        return self.domain.to_unit(np.stack(self.pending))

    # -- proposals ------------------------------------------------------------------------------
    def ask(self, pending: Sequence[tuple[np.ndarray, str]] = ()) -> np.ndarray:
        """The next design, shape (d,). ``pending``: (design, phase) of each evaluation asked and
        not yet told (asynchronous runs; module docstring)."""
        self.pending = [self._checked_design(x) for x, _ in pending]
        self.pending_phases = [str(phase) for _, phase in pending]
        try:
            x = np.asarray(self.propose(), dtype=np.float64).reshape(self.domain.dim)
        finally:
            self.pending, self.pending_phases = [], []
        return self.domain.snap(x)

    @abc.abstractmethod
    def propose(self) -> np.ndarray:
        """The next design to evaluate, shape (d,), physical coordinates."""

    def random_design(self) -> np.ndarray:
        """A step's design with nothing told to learn from: uniform in the box, from the step's own
        stream, shape (d,)."""
        return self.domain.from_unit(self.rng("empty").random(self.domain.dim))

    def rng(self, *keys: Any) -> np.random.Generator:
        """Numpy generator for this step's draws named by ``keys``."""
        return numpy_rng(self.seed, self.name, self.ask_index, *keys)

    def generator(self, *keys: Any) -> torch.Generator:
        return torch_generator(self.seed, self.name, self.ask_index, *keys)

    # -- checkpoints ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """State that cannot be rebuilt from the told data (network weights, optimiser moments)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        del state
