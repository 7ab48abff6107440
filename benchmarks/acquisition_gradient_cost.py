"""Milliseconds per evaluation of pde-gp's acquisition (UCB) with its gradient in the candidate
points, the PDE block's gradient in closed form (pinnbo.models.se_kernel.point_block) side by
side with autograd through the tensor code, in one process; whether the two values agree bit for
bit, and the largest relative difference between their gradients.

For each case and t the optimiser is told t designs (the case's scrambled Sobol sequence from its
seed) with their true values and asked once; the fitted model's acquisition is then evaluated at
``--batch`` random candidates, ``--repeats`` rounds of 50 evaluations per code, the codes
alternated, and the median round is reported.

    python benchmarks/acquisition_gradient_cost.py benchmarks/kinds/heat_box_graded_reaction.yaml \\
        benchmarks/dimensions/advection_diffusion_6d.yaml cases/beam.yaml --t 30
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import torch
from botorch.acquisition import UpperConfidenceBound

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evidence_cost import alternated, fitted_model  # noqa: E402

from pinnbo.models import pde_gp, se_kernel  # noqa: E402
from pinnbo.optimizers.pde_gp import UCB_BETA  # noqa: E402


@contextlib.contextmanager
def code(closed_form: bool):
    """The closed-form gradient, or autograd through the block's tensor code."""
    point_block = pde_gp.point_block
    if not closed_form:
        pde_gp.point_block = lambda P, Z, lengthscale, outputscale, right, products, gradients: \
            se_kernel.operator_block(P, Z, lengthscale, outputscale, None, right, products)
    try:
        yield
    finally:
        pde_gp.point_block = point_block


def evaluation(acquisition, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The acquisition at the candidates and its gradient in them."""
    value = acquisition(X).sum()
    (gradient,) = torch.autograd.grad(value, X)
    return value.detach(), gradient


def timed(acquisition, X: torch.Tensor, closed_form: bool, count: int = 50) -> float:
    with code(closed_form):
        began = time.perf_counter()
        for _ in range(count):
            evaluation(acquisition, X)
        return (time.perf_counter() - began) / count * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--t", type=int, nargs="+", default=[30])
    parser.add_argument("--batch", type=int, default=10, help="candidates per evaluation (pde-gp's restarts)")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| case | t | autograd, ms | closed form, ms | closed / autograd | value bit for bit | gradient, relative difference |")
    print("|---|---|---|---|---|---|---|")
    for path in args.cases:
        for t in args.t:
            model = fitted_model(path, t)
            acquisition = UpperConfidenceBound(model, beta=UCB_BETA, maximize=False)
            generator = torch.Generator().manual_seed(t)
            X = torch.rand(args.batch, 1, model.X.shape[1], generator=generator, dtype=torch.float64,
                           requires_grad=True)
            with code(True):
                closed = evaluation(acquisition, X)
            with code(False):
                autograd = evaluation(acquisition, X)
            same = torch.equal(closed[0], autograd[0])
            difference = float(((closed[1] - autograd[1]).abs() / autograd[1].abs().max()).max())
            slow, fast = alternated(lambda closed_form: timed(acquisition, X, closed_form), args.repeats)
            name = path.rsplit("/", 1)[-1].removesuffix(".yaml")
            print(f"| {name} | {t} | {slow:.2f} | {fast:.2f} | {fast / slow:.2f} | {'yes' if same else 'NO'} "
                  f"| {difference:.1e} |", flush=True)


if __name__ == "__main__":
    main()
