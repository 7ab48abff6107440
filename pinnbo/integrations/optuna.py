"""pinnbo's methods as an Optuna sampler (docs/guide/optuna.md)::

    import optuna
    from pinnbo.integrations.optuna import PinnboSampler
    sampler = PinnboSampler(method="pde-gp", pde=PDE(T.diff(x, 2) + T.diff(y, 2)), seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)

The sampler samples relatively: each trial, it rebuilds the pinnbo method from the study's finished
trials (Optuna's intersection search space, matched to the PDE's variables by name) and asks it for
the next design. Nothing is kept between trials but the seed, so ``n_jobs`` and a storage shared by
several processes work as with Optuna's own samplers: a trial under way elsewhere is the method's
pending design, which it does not propose again. A failed or pruned trial is a failed evaluation.
Until ``initial_points`` trials are complete, and for a parameter outside the relative search
space, an independent sampler (Optuna's RandomSampler, seeded from ``seed``) samples.

Parameters map to pinnbo's variables (:mod:`pinnbo.space`): a float is ``real`` (``log``: log
scale), an int ``integer``, a categorical a ``choice``; a float or int with a ``step`` is the
integer index of its grid. A PDE's variables must be plain floats, since the physics holds in their
own units.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any, Callable, Sequence

import numpy as np

try:
    import optuna  # noqa: F401  (the import that says whether the extra is installed)
    from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
    from optuna.samplers import BaseSampler, RandomSampler
    from optuna.search_space import IntersectionSearchSpace
    from optuna.study import Study, StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ImportError as exc:  # pragma: no cover - the optuna extra
    raise ImportError("pinnbo.integrations.optuna needs optuna: pip install 'pinnbo[optuna]'") from exc

from pinnbo.errors import MethodError
from pinnbo.problem import Constraint
from pinnbo.space import Box, Variable
from pinnbo.streams import derived_seed

#: The constraint values an Optuna sampler keeps in a trial's system attributes (constraints_func).
_CONSTRAINTS_KEY = "constraints"
#: The design proposed for a trial, kept in its system attributes until its parameters are all set,
#: so another thread or process sees it as pending.
_PROPOSED_KEY = "pinnbo:proposed"


class _Parameter:
    """One Optuna distribution as a pinnbo variable, and the way back."""

    def __init__(self, name: str, distribution: BaseDistribution) -> None:
        self.name, self.distribution = name, distribution
        self.steps: float | None = None
        if isinstance(distribution, CategoricalDistribution):
            choices = distribution.choices
            names = [str(c) for c in choices]
            if len(set(names)) != len(names):
                names = [f"choice {i}" for i in range(len(choices))]
            self.names = names
            self.variable = Variable(name, "choice", choices=tuple(names))
        elif distribution.step is not None and (isinstance(distribution, FloatDistribution)
                                                or distribution.step != 1):
            count = int(round((distribution.high - distribution.low) / distribution.step))
            self.steps = float(distribution.step)
            self.variable = Variable(name, "integer", 0, count)
        elif isinstance(distribution, IntDistribution):
            self.variable = Variable(name, "integer", distribution.low, distribution.high)
        else:
            self.variable = Variable(name, "log" if distribution.log else "real", distribution.low, distribution.high)

    def to_pinnbo(self, value: Any) -> Any:
        if isinstance(self.distribution, CategoricalDistribution):
            return self.names[self.distribution.to_internal_repr(value)]
        if self.steps is not None:
            return int(round((value - self.distribution.low) / self.steps))
        return int(value) if self.variable.kind == "integer" else float(value)

    def to_optuna(self, value: Any) -> Any:
        if isinstance(self.distribution, CategoricalDistribution):
            return self.distribution.choices[self.names.index(value)]
        if self.steps is not None:
            out = self.distribution.low + int(value) * self.steps
            return int(out) if isinstance(self.distribution, IntDistribution) else float(min(out, self.distribution.high))
        return value


class PinnboSampler(BaseSampler):
    """An Optuna sampler that runs a pinnbo method (module docstring).

    Args:
        method: the pinnbo method (``pde-gp``, ``pinn-bo``, ``gp-ei``, ``gp-cei`` with constraints,
            ``gp-ehvi`` with several objectives, ...).
        pde: the PDE the objective obeys (:class:`pinnbo.PDE`), in the study's own sense; its
            unknown's arguments are parameter names. With several objectives, a mapping from
            ``objective_<i>`` to the PDE of the objectives that have one.
        seed: the one seed of every random stream (None: 0; never the clock).
        initial_points: complete trials sampled independently before the method takes over.
        params: the method's settings (as a case's ``method_params``).
        constraints_func: as Optuna's samplers take it, a trial's constraint values (≤ 0 feasible);
            constraints a trial sets itself (``trial.set_constraint``) are read too.
        device: ``cpu`` or ``cuda``.
    """

    def __init__(self, method: str = "pde-gp", pde=None, seed: int | None = None, initial_points: int = 10,
                 params: dict | None = None, constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
                 device: str = "cpu") -> None:
        from pinnbo.optimizers import METHODS

        if method not in METHODS:
            raise MethodError(f"method: unknown method {method!r}; expected one of {', '.join(sorted(METHODS))}")
        if not isinstance(initial_points, int) or isinstance(initial_points, bool) or initial_points < 1:
            raise MethodError(f"initial_points: expected an integer >= 1, got {initial_points!r}")
        self.method, self.pde, self.params, self.device = method, pde, dict(params or {}), device
        self.seed = 0 if seed is None else int(seed)
        self.initial_points = initial_points
        self.constraints_func = constraints_func
        self._reseeds = 0
        self._independent = RandomSampler(seed=derived_seed(self.seed, "optuna-independent") % (2**32))
        self._search_space = IntersectionSearchSpace(include_pruned=True)
        # One proposal at a time per process: a thread proposes after the last one's design is
        # recorded as pending (n_jobs), never beside it.
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def reseed_rng(self) -> None:
        # Optuna reseeds a sampler copied into another process; the pending trials keep the copies
        # from proposing the same design, and a derived seed keeps the run reproducible.
        self._reseeds += 1
        self._independent = RandomSampler(seed=derived_seed(self.seed, "optuna-independent", self._reseeds) % (2**32))

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return {name: d for name, d in self._search_space.calculate(study).items() if not d.single()}

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._independent.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._independent.before_trial(study, trial)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        if self.constraints_func is not None and state in (TrialState.COMPLETE, TrialState.PRUNED):
            constraints = tuple(float(v) for v in self.constraints_func(trial))
            if any(math.isnan(v) for v in constraints):
                raise ValueError("constraints_func: constraint values cannot be NaN")
            study._storage.set_trial_system_attr(trial._trial_id, _CONSTRAINTS_KEY, constraints)
        self._independent.after_trial(study, trial, state, values)

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        if not search_space:
            return {}
        with self._lock:
            params = self._propose(study, trial, search_space)
            if params:
                study._storage.set_trial_system_attr(trial._trial_id, _PROPOSED_KEY, json.dumps(params))
        return params

    def _propose(self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        names = sorted(search_space)
        trials = study._get_trials(deepcopy=False, use_cache=False)
        finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
                    and set(names) <= t.params.keys()]
        if sum(t.state == TrialState.COMPLETE for t in finished) < self.initial_points:
            return {}
        parameters = [_Parameter(n, search_space[n]) for n in names]
        box = Box.of([p.variable for p in parameters])
        optimizer = self._optimizer(study, box, finished)

        def encoded(t: FrozenTrial) -> np.ndarray:
            return box.encode([p.to_pinnbo(t.params[p.name]) for p in parameters])

        signs = np.array([1.0 if d == StudyDirection.MINIMIZE else -1.0 for d in study.directions])
        for t in finished:
            values = None
            if t.state == TrialState.COMPLETE and t.values is not None and all(math.isfinite(v) for v in t.values):
                values = signs * np.asarray(t.values, dtype=np.float64)
            constraints = _constraints(t)
            if values is not None and optimizer.constraints:
                if constraints is None or len(constraints) != len(optimizer.constraints):
                    values = None    # a complete trial without its constraint values cannot be used
            y = None if values is None else (values if len(signs) > 1 else float(values[0]))
            optimizer.tell(encoded(t), y, None if constraints is None or values is None else np.asarray(constraints))
        pending = []
        for t in trials:
            if t.state == TrialState.RUNNING and t.number != trial.number:
                params = {**json.loads(t.system_attrs.get(_PROPOSED_KEY, "{}")), **t.params}
                if set(names) <= params.keys():
                    pending.append(box.encode([p.to_pinnbo(params[p.name]) for p in parameters]))
        x = optimizer.ask([(design, "optimizer") for design in pending])
        return {p.name: p.to_optuna(v) for p, v in zip(parameters, box.values(x))}

    def _optimizer(self, study: Study, box: Box, finished: list[FrozenTrial]):
        from pinnbo.optimizers import make_optimizer

        k = max((len(c) for t in finished if (c := _constraints(t)) is not None), default=0)
        constraints = tuple(Constraint(f"c{i}") for i in range(k))
        directions = study.directions
        objectives = {f"objective_{i}": "minimize" for i in range(len(directions))} if len(directions) > 1 else None
        pde = self.pde
        if pde is not None:   # the method minimises: a maximised objective's PDE is that of −f
            flip = {f"objective_{i}": d == StudyDirection.MAXIMIZE for i, d in enumerate(directions)}
            if isinstance(pde, dict):
                pde = {n: p.negated() if flip.get(n) else p for n, p in pde.items()}
            elif directions[0] == StudyDirection.MAXIMIZE:
                pde = pde.negated()
            inputs = set(getattr(pde, "own_inputs", ()) if not isinstance(pde, dict) else
                         (n for p in pde.values() for n in getattr(p, "own_inputs", ())))
            other = next((v for v in box.variables if v.name in inputs and v.kind != "real"), None)
            if other is not None:
                raise MethodError(f"pde: {other.name} is a variable of the PDE and must be a plain float "
                                  "parameter (no log scale, no step): the physics holds in its own units")
        seed = self.seed if not self._reseeds else derived_seed(self.seed, "reseed", self._reseeds) % (2**31)
        return make_optimizer(self.method, box, seed, params=self.params, pde=pde, device=self.device,
                              constraints=constraints, objectives=objectives)


def _constraints(trial: FrozenTrial) -> tuple[float, ...] | None:
    """A trial's constraint values: those of ``constraints_func``, else those it set itself."""
    stored = trial.system_attrs.get(_CONSTRAINTS_KEY)
    if stored is not None:
        return tuple(float(v) for v in stored)
    own = trial.constraints if hasattr(trial, "constraints") else {}
    return tuple(float(own[k]) for k in sorted(own)) if own else None


__all__ = ["PinnboSampler"]
