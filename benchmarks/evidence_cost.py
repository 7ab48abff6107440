"""Milliseconds per evaluation of pde-gp's −log evidence and its gradient, the fused CPU kernels
(pinnbo/models/se_fused.py) side by side with the tensor code they stand in for, in one process;
whether the two evidences agree bit for bit, and the largest difference between their gradients in
the raw hyper-parameters, in nats per unit (the loops sum its corrections in another order; at the
fitted hyper-parameters the gradient itself is near zero, so only the absolute difference says how
far apart they are).

For each case and t the optimiser is told t designs (the case's scrambled Sobol sequence from its
seed) with their true values and asked once; the evidence is then evaluated at the fitted
hyper-parameters, ``--repeats`` rounds of 30 evaluations per code, the codes alternated, and the
median round is reported.

    python benchmarks/evidence_cost.py cases/beam.yaml benchmarks/dimensions/laplace_3d.yaml --t 30 1000
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

import torch

from pinnbo.models import se_fused
from pinnbo.runner.build import build_optimizer, build_problem
from pinnbo.runner.case import load_case
from pinnbo.streams import initial_design


def fitted_model(path: str, t: int):
    case = load_case(path)
    problem = build_problem(case)
    optimizer = build_optimizer(case.model_copy(update={"method": "pde-gp", "method_params": {}}), problem)
    for x in initial_design(problem.domain, t, case.seed):
        optimizer.tell(x, problem.sign * problem.objective(x))
    optimizer.ask()
    return optimizer.model


def evaluation(model):
    """One evaluation and its gradient at the model's fitted hyper-parameters: (value, gradient)."""
    raw = model.raw.clone().requires_grad_(True)
    value = model._negative_log_likelihood(raw)
    value.backward()
    return value.detach(), raw.grad


@contextlib.contextmanager
def code(fused: bool):
    """The fused kernels where they apply, or the tensor code everywhere."""
    usable = se_fused.usable
    if not fused:
        se_fused.usable = lambda *tensors: False
    try:
        yield
    finally:
        se_fused.usable = usable


def timed(model, fused: bool, count: int = 30) -> float:
    with code(fused):
        began = time.perf_counter()
        for _ in range(count):
            evaluation(model)
        return (time.perf_counter() - began) / count * 1e3


def alternated(timed_code, repeats: int) -> tuple[float, float]:
    """The median of ``repeats`` rounds of ``timed_code(False)`` and ``timed_code(True)``, alternated so
    that a machine that slows down mid-run slows both alike: (without, with)."""
    rounds = {True: [], False: []}
    for _ in range(repeats):
        for which in (False, True):
            rounds[which].append(timed_code(which))
    return statistics.median(rounds[False]), statistics.median(rounds[True])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--t", type=int, nargs="+", default=[30])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| case | t | rows | tensor code, ms | fused, ms | fused / tensor | evidence bit for bit | gradient, difference |")
    print("|---|---|---|---|---|---|---|---|")
    for path in args.cases:
        for t in args.t:
            model = fitted_model(path, t)
            with code(True):
                fused = evaluation(model)
            with code(False):
                tensor = evaluation(model)
            same = torch.equal(fused[0], tensor[0])
            difference = float((fused[1] - tensor[1]).abs().max())
            slow, fast = alternated(lambda fused: timed(model, fused), args.repeats)
            rows = len(model.target) - len(model.targets[0])
            name = path.rsplit("/", 1)[-1].removesuffix(".yaml")
            print(f"| {name} | {t} | {rows} | {slow:.2f} | {fast:.2f} | {fast / slow:.2f} | {'yes' if same else 'NO'} "
                  f"| {difference:.1e} |", flush=True)


if __name__ == "__main__":
    main()
