"""Optuna's samplers as baselines (``optuna-tpe``, ``optuna-gp``): the peers an Optuna user would
pick, run by ``pinnbo bench`` side by side with pinnbo's methods, after the same initial design.

Each step builds an in-memory study of every told evaluation (a failed one as a failed trial,
constraint values where Optuna's samplers read them) and asks the sampler, seeded from the run's
seed and the step, for one trial: the run stays reproducible and resumable with nothing kept but
what the log holds. The sampler's own start-up phase counts the told evaluations, so after the
shared initial design it models at once.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import numpy as np

from pinnbo.errors import MethodError
from pinnbo.optimizers.base import MethodSettings, Optimizer
from pinnbo.streams import derived_seed


@dataclass
class OptunaSettings(MethodSettings):
    """Optuna's samplers run at their defaults."""


class OptunaBaseline(Optimizer):
    Settings = OptunaSettings
    handles_constraints = True
    variable_kinds = ("real", "log", "integer", "choice")
    multi_objective = True

    @classmethod
    def installed(cls) -> bool:
        return importlib.util.find_spec("optuna") is not None

    def __init__(self, *args, **kwargs) -> None:
        if not self.installed():
            raise MethodError(f"method: {self.name} needs optuna: pip install 'pinnbo[optuna]'")
        super().__init__(*args, **kwargs)

    #: The Optuna sampler (optuna.samplers), run at its defaults but for its seed.
    sampler_name = ""

    def propose(self) -> np.ndarray:
        import optuna
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
        from optuna.trial import TrialState, create_trial

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        distributions = {}
        for v in self.domain.variables:
            if v.kind == "choice":
                distributions[v.name] = CategoricalDistribution(v.choices)
            elif v.kind == "integer":
                distributions[v.name] = IntDistribution(int(v.lower), int(v.upper))
            else:
                distributions[v.name] = FloatDistribution(v.lower, v.upper, log=v.kind == "log")
        m = max(len(self.objectives), 1)
        seed = derived_seed(self.seed, self.name, self.ask_index) % (2**31)
        sampler = getattr(optuna.samplers, self.sampler_name)(seed=seed)
        study = optuna.create_study(directions=["minimize"] * m, sampler=sampler)
        told = list(zip(self.X, self.y, self.C)) + [(x, None, None) for x in self.pending]
        for k, (x, y, c) in enumerate(told):
            params = dict(zip(self.domain.names, self.domain.values(x)))
            # Optuna's per-name constraint keys (what trial.set_constraint writes; c ≤ 0 feasible).
            attrs = {} if c is None else {f"constraints:c{i}": float(v) for i, v in enumerate(c)}
            pending = k >= len(self.X)
            state = TrialState.RUNNING if pending else TrialState.FAIL if y is None else TrialState.COMPLETE
            values = None if y is None else list(np.atleast_1d(np.asarray(y, dtype=np.float64)))
            study.add_trial(create_trial(state=state, params=params, distributions=distributions,
                                         values=values, system_attrs=attrs))
        trial = study.ask(distributions)
        return self.domain.encode([trial.params[n] for n in self.domain.names])


class OptunaTPE(OptunaBaseline):
    name = "optuna-tpe"
    sampler_name = "TPESampler"


class OptunaGP(OptunaBaseline):
    name = "optuna-gp"
    sampler_name = "GPSampler"
