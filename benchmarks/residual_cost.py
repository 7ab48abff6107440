"""Milliseconds per PINN training step (data term, PDE residual on a collocation batch, backward)
with the residual's derivatives by Taylor mode and the operator's coefficients evaluated once at the
collocation points, against nested autograd with the coefficients evaluated every step (the
previous way), side by side in one run on each case's PDE.

    python benchmarks/residual_cost.py --cases heat_bc1 beam helmholtz liouville dropwave --steps 200

The autograd column hands the compiled residual a plain callable (no ``axis_derivatives``) and no
precomputed coefficients; both columns train the same network from the same state, and the
residuals they compute agree to round-off (tests/models/test_mlp.py).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent


def step_seconds(surrogate, physical, use_coefficients: bool, steps: int) -> float:
    state = surrogate.state_dict()
    generator = torch.Generator().manual_seed(0)
    n_col = len(surrogate.collocation)
    start = time.perf_counter()
    for _ in range(steps):
        surrogate.adam.zero_grad(set_to_none=True)
        idx = torch.randperm(n_col, generator=generator)[:surrogate.collocation_batch]
        coefficients = tuple(c[idx] for c in surrogate.coefficients) if use_coefficients else None
        r = surrogate.residual(physical, surrogate.collocation[idx], coefficients)
        loss = r.pow(2).sum(dim=1).mean()
        loss.backward()
        surrogate.adam.step()
    seconds = (time.perf_counter() - start) / steps
    surrogate.load_state_dict(state)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["heat_bc1", "beam", "helmholtz", "liouville", "dropwave"])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from pinnbo.models.pinn import PINNSettings, PINNSurrogate
    from pinnbo.report.summary import versions
    from pinnbo.runner.build import build_problem
    from pinnbo.runner.case import load_case

    produced = versions()
    print(f"machine: {produced['cpu']}, torch {torch.__version__}, one thread; commit "
          f"{produced.get('pinnbo_commit')}; {args.steps} steps, batch 256, network (64, 64)")
    print("| case | PDE order | Taylor mode, ms/step | nested autograd, ms/step | ratio |")
    print("|---|---|---|---|---|")
    for name in args.cases:
        problem = build_problem(load_case(ROOT / "cases" / f"{name}.yaml"))
        pde = problem.pde.for_variables(problem.domain.names)
        surrogate = PINNSurrogate(problem.domain, 0, residual=pde.compile(), settings=PINNSettings(),
                                  collocation_filter=problem.collocation_filter)
        physical = surrogate.physical_model(0.0, 1.0)
        plain = lambda x, f=physical: f(x)  # noqa: E731  a plain callable: nested autograd
        step_seconds(surrogate, physical, True, 10)                      # warm-up
        taylor = step_seconds(surrogate, physical, True, args.steps)
        nested = step_seconds(surrogate, plain, False, args.steps)
        print(f"| {name} | {pde.max_order} | {1e3 * taylor:.2f} | {1e3 * nested:.2f} | {nested / taylor:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
