"""What each start of PDE-GP's first fit finds on a case's initial design: the fitted
hyper-parameters, the log evidence of the data given the PDE (what the fit maximises), the
leave-one-out log predictive probability (what chooses the short start over the long ones), and the
posterior mean against the true objective on 2000 random designs (error over the objective's
spread, and where its minimum lies). docs/archive/benchmarks.md, "PDE-GP finds the beam".

    python benchmarks/pde_gp_starts.py --case cases/beam.yaml --seeds 0 1 2 3 --collocation 128 256 512
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=Path, default=ROOT / "cases" / "beam.yaml")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--collocation", nargs="+", type=int, default=[512], help="collocation_points")
    parser.add_argument("--initial-points", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from pinnbo import initial_design
    from pinnbo.models import pde_gp
    from pinnbo.runner.build import build_optimizer, build_problem
    from pinnbo.runner.case import load_case

    case = load_case(args.case)
    problem = build_problem(case)
    domain = problem.domain
    lower = torch.as_tensor(domain.lower_array)
    widths = torch.as_tensor(domain.widths)
    test = domain.from_unit(np.random.default_rng(0).random((2000, domain.dim)))
    truth = np.array([problem.sign * problem.objective(x) for x in test])
    print("| points | seed | start | lengthscale / width | output scale | noise | PDE noise | log evidence "
          "| leave-one-out | error / spread | mean's argmin |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for points in args.collocation:
        for seed in args.seeds:
            case.seed, case.method, case.method_params = seed, "pde-gp", {"collocation_points": points}
            optimizer = build_optimizer(case, problem)
            X = initial_design(domain, args.initial_points, seed)
            y = torch.as_tensor([problem.sign * problem.objective(x) for x in X])
            unit_X = torch.as_tensor(domain.to_unit(X))
            model = pde_gp.PDEGP(unit_X, y, optimizer.collocation, optimizer.linear_form, lower, widths,
                                 basis=optimizer._corners(lower, widths))
            starts = [(f"{f}", model._raw({"lengthscale": f * widths})) for f in pde_gp.FIRST_LENGTHSCALES]
            short = model._short_start()
            if short is not None:
                fraction = float(model._unpack(short)[0][0] / widths[0])
                starts.append((f"{fraction:.3g}, PDE exact", short))
            for name, raw in starts:
                fitted, value, _ = model._optimise(raw)
                lengthscale, outputscale, noise, pde_noise = model._unpack(fitted)
                model.raw = fitted
                model._factorise()
                with torch.no_grad():
                    mean, _ = model.mean_and_variance(torch.as_tensor(domain.to_unit(test)))
                mean = mean.numpy().ravel()
                error = np.sqrt(np.mean((mean - truth) ** 2)) / truth.std()
                print(f"| {points} | {seed} | {name} | {np.round((lengthscale / widths).detach().numpy(), 4)} "
                      f"| {float(outputscale):.3g} | {float(noise):.3g} | {float(pde_noise):.3g} | {-value:.3g} "
                      f"| {model._leave_one_out(fitted):.3g} | {error:.3f} | {np.round(test[np.argmin(mean)], 3)} |",
                      flush=True)


if __name__ == "__main__":
    main()
