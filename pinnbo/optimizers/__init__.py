"""The methods, one ask/tell optimiser per module, and the registry that maps names to them.

Each method composes models (:mod:`pinnbo.models`) and acquisition machinery
(:mod:`pinnbo.acquisition`); no method imports another.
"""

from __future__ import annotations

import numpy as np

from pinnbo.errors import MethodError, PDEError, shown
from pinnbo.optimizers.base import MethodSettings, Optimizer, check_device
from pinnbo.optimizers.choice import AUTO, Choice, auto_choice, choice_for, choose_method
from pinnbo.optimizers.gp_bo import GPEI, GPUCB, Exploit, ExploitPlus, GPUCBPlus
from pinnbo.optimizers.gp_cei import GPCEI
from pinnbo.optimizers.gp_ehvi import GPEHVI
from pinnbo.optimizers.neural_bo import NeuralBO
from pinnbo.optimizers.neural_cbo import NeuralCBO
from pinnbo.optimizers.neural_greedy import NeuralGreedy
from pinnbo.optimizers.pde_gp import PDEGPOptimizer
from pinnbo.optimizers.optuna_samplers import OptunaGP, OptunaTPE
from pinnbo.optimizers.pinn_bo import PINNBO
from pinnbo.optimizers.random_search import RandomSearch

METHODS: dict[str, type[Optimizer]] = {
    PINNBO.name: PINNBO,
    PDEGPOptimizer.name: PDEGPOptimizer,
    RandomSearch.name: RandomSearch,
    NeuralBO.name: NeuralBO,
    NeuralGreedy.name: NeuralGreedy,
    GPEI.name: GPEI,
    GPUCB.name: GPUCB,
    GPUCBPlus.name: GPUCBPlus,
    ExploitPlus.name: ExploitPlus,
    Exploit.name: Exploit,
    NeuralCBO.name: NeuralCBO,
    GPCEI.name: GPCEI,
    GPEHVI.name: GPEHVI,
    OptunaTPE.name: OptunaTPE,
    OptunaGP.name: OptunaGP,
}


def make_optimizer(method: str, domain, seed: int = 0, *, params: dict | None = None, pde=None,
                   collocation_filter=None, device: str = "cpu", constraints=(), sense: str = "minimize",
                   observation_noise: str | float | None = None, objectives: dict | None = None,
                   reference=None, boundary_continuous: bool | None = None) -> Optimizer:
    """Build a method by name with validated ``params`` (its documented defaults overridden);
    ``auto``: the method :func:`~pinnbo.optimizers.choice.choose_method` picks (from these
    arguments and the problem's ``boundary_continuous``, which the method also reads), recorded as
    the optimiser's ``choice``.
    ``constraints``: the problem's :class:`pinnbo.problem.Constraint` outputs, in order; ``sense``:
    that of the values ``tell`` will take; ``observation_noise``: None, "learned" or a known sd
    (:attr:`Optimizer.observation_noise`); ``objectives``: several objectives, name -> sense, with
    the hypervolume's ``reference`` in minimised values (None: inferred)."""
    choice = None
    if method == AUTO:
        if params:
            raise MethodError("method_params: method auto chooses the method, so it takes no settings; name the "
                              "method they are for")
        choice = choose_method(domain, pde, constraints, objectives, boundary_continuous)
        method = choice.method
    if method not in METHODS:
        raise MethodError(f"method: unknown method {shown(method)}; expected auto or one of {', '.join(sorted(METHODS))}")
    cls = METHODS[method]
    if constraints and not cls.handles_constraints:
        able = sorted(name for name, c in METHODS.items() if c.handles_constraints)
        raise MethodError(f"method: {shown(method)} ignores constraints and this problem has "
                          f"{', '.join(c.name for c in constraints)}; use one of {', '.join(able)}")
    objectives = dict(objectives or {})
    if len(objectives) > 1 and not cls.multi_objective:
        able = sorted(name for name, c in METHODS.items() if c.multi_objective)
        raise MethodError(f"method: {shown(method)} takes one objective and this problem has {len(objectives)} "
                          f"({', '.join(objectives)}); use one of {', '.join(able)}")
    if len(objectives) < 2 and cls.several_objectives_only:
        raise MethodError(f"method: {shown(method)} is for several objectives and this problem has one; use gp-ei")
    other = next((v for v in domain.variables if v.kind not in cls.variable_kinds), None)
    if other is not None:
        able = sorted(name for name, c in METHODS.items() if other.kind in c.variable_kinds)
        kinds = ", ".join(cls.variable_kinds[:-1]) + " and " + cls.variable_kinds[-1]
        raise MethodError(f"method: {shown(method)} takes {kinds} variables and "
                          f"{other.name} is {'an' if other.kind == 'integer' else 'a'} {other.kind}; use one of "
                          f"{', '.join(able)}")
    laws = pde.values() if isinstance(pde, dict) else [pde] if pde is not None else []
    if cls.residual_only and any(getattr(law, "boundary", ()) for law in laws):
        raise MethodError(f"method: {shown(method)} trains on the PDE's residual and does not take its boundary "
                          "conditions; pde-gp conditions on them")
    if pde is not None:
        try:  # inputs matched to the design variables by name (several objectives: a PDE per objective)
            pde = {name: p.for_variables(domain.names) for name, p in pde.items()} if isinstance(pde, dict) \
                else pde.for_variables(domain.names)
        except PDEError as exc:
            raise MethodError(f"pde: {exc}") from None
    settings = cls.Settings.from_params(params, method)
    check_device(device)
    if sense not in ("minimize", "maximize"):
        raise MethodError(f"sense: expected minimize or maximize, got {shown(sense)}")
    kwargs = {"constraints": tuple(constraints)} if constraints else {}
    optimizer = cls(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device,
                    **kwargs)
    optimizer.sense = sense
    optimizer.choice = choice
    optimizer.observation_noise = observation_noise
    optimizer.boundary_continuous = boundary_continuous
    if len(objectives) > 1:
        optimizer.objectives = objectives
        optimizer.reference = None if reference is None else np.asarray(reference, dtype=np.float64)
    return optimizer


__all__ = ["AUTO", "METHODS", "Choice", "MethodError", "MethodSettings", "Optimizer", "auto_choice", "choice_for",
           "choose_method", "make_optimizer"]
