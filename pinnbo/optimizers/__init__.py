"""Optimisation methods, all behind the ask/tell interface of :class:`Optimizer`."""

from __future__ import annotations

from pinnbo.optimizers.base import MethodError, MethodSettings, Optimizer, check_device, initial_design
from pinnbo.optimizers.gp_bo import GPEI, GPUCB, Exploit, ExploitPlus, GPUCBPlus
from pinnbo.optimizers.gp_cbo import GPCEI
from pinnbo.optimizers.neural_bo import NeuralBO
from pinnbo.optimizers.neural_cbo import NeuralCBO
from pinnbo.optimizers.neural_greedy import NeuralGreedy
from pinnbo.optimizers.pinn_bo import PINNBO, PINNBOSettings
from pinnbo.optimizers.random_search import RandomSearch

METHODS: dict[str, type[Optimizer]] = {
    PINNBO.name: PINNBO,
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
}


def make_optimizer(method: str, domain, seed: int = 0, *, params: dict | None = None, pde=None,
                   collocation_filter=None, device: str = "cpu", constraints=()) -> Optimizer:
    """Build a method by name with validated ``params`` (its documented defaults overridden).
    ``constraints``: the problem's :class:`pinnbo.problem.Constraint` outputs, in order."""
    if method not in METHODS:
        raise MethodError(f"method: unknown method {method!r}; expected one of {', '.join(sorted(METHODS))}")
    cls = METHODS[method]
    if constraints and not cls.handles_constraints:
        able = sorted(name for name, c in METHODS.items() if c.handles_constraints)
        raise MethodError(f"method: {method!r} ignores constraints and this problem has "
                          f"{', '.join(c.name for c in constraints)}; use one of {', '.join(able)}")
    settings = cls.Settings.from_params(params, method)
    check_device(device)
    kwargs = {"constraints": tuple(constraints)} if constraints else {}
    return cls(domain, seed, settings=settings, pde=pde, collocation_filter=collocation_filter, device=device,
               **kwargs)


__all__ = ["METHODS", "MethodError", "MethodSettings", "Optimizer", "PINNBO", "PINNBOSettings",
           "RandomSearch", "initial_design", "make_optimizer"]
