"""How much PINN-BO's surrogate knows where the search is: held-out error, and the slope at the
incumbent, of the trained PINN, of the PINN with its residual GP's mean, and of EXPLOIT's GP, each
fitted to the same initial design.

For each seed the case's initial design (``--n`` scrambled Sobol points, the ones every method
starts from) is evaluated with the true function, and three surrogates are fitted to it:
- ``pinn``: PINN-BO's network h after its first fit (the case's ``method_params`` and ``--params``
  for ``pinn-bo``; the network's training does not depend on the residual GP),
- ``pinn + GP mean``: h plus the residual GP's posterior mean (``residual_gp: mean``),
- ``gp``: the noise-free Matérn-5/2 ARD GP of ``exploit`` (:func:`pinnbo.surrogates.gp.fit_gp`).
Reported per surrogate, mean ± standard error over seeds, in the minimisation convention and in
units of the design's standard deviation:
- rmse: root-mean-square error on ``--test-points`` uniform designs (1 = predicting the mean),
- corr: Pearson correlation with the true values on the same designs,
- cos: the cosine between the surrogate's gradient and the true gradient (autograd through the
  problem's ``torch_function``) at the best design of the initial set, in unit coordinates. A
  proposal near the incumbent improves when the surrogate's descent direction is the function's:
  cos > 0 is information, cos ≈ 0 none.

Needs a problem with a differentiable ``metadata["torch_function"]`` (the synthetic benchmarks).

    python benchmarks/surrogate_slope.py --case cases/styblinski_tang.yaml --seeds 8
    python benchmarks/surrogate_slope.py --case cases/dropwave.yaml --seeds 8
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("pinn", "pinn + GP mean", "gp")


def measure(case, problem, seed: int, n: int, n_test: int, params: dict) -> dict[str, tuple[float, float, float]]:
    """{surrogate: (rmse, corr, cos)} for one seed (module docstring)."""
    from pinnbo.optimizers import make_optimizer
    from pinnbo.optimizers.base import initial_design, numpy_rng
    from pinnbo.surrogates.gp import fit_gp

    domain, sign = problem.domain, problem.sign
    truth = problem.metadata["torch_function"]
    lower = torch.as_tensor(domain.lower_array, dtype=torch.float64)
    width = torch.as_tensor(domain.widths, dtype=torch.float64)

    def true_min(u: torch.Tensor) -> torch.Tensor:            # unit (N, d) -> (N,), minimisation convention
        return sign * truth(lower + width * u)

    X = initial_design(domain, n, seed)
    U = domain.to_unit(X)
    y = true_min(torch.as_tensor(U)).numpy()
    mean, std = float(y.mean()), float(y.std())

    settings = {**case.method_params, **params, "thompson": False, "residual_gp": "mean"}
    pinn = make_optimizer("pinn-bo", domain, seed, params=settings, pde=problem.pde,
                          collocation_filter=problem.collocation_filter)
    for x, v in zip(X, y):
        pinn.tell(x, float(v))
    with_gp = pinn.acquisition_sample(X, y)                   # trains h, fits the residual GP: h + m_r
    gp = fit_gp(U, y, noise_free=True)

    surrogates = {
        "pinn": lambda u: pinn.model(2.0 * u - 1.0),
        "pinn + GP mean": with_gp,
        "gp": lambda u: -(gp.posterior(u).mean[:, 0] - mean) / std,    # fit_gp models -y
    }
    test = torch.as_tensor(numpy_rng(seed, "surrogate-slope-test").random((n_test, domain.dim)))
    target = ((true_min(test) - mean) / std).numpy()
    incumbent = torch.as_tensor(U[np.argmin(y)][None, :])
    u = incumbent.clone().requires_grad_(True)
    true_grad = torch.autograd.grad(true_min(u).sum(), u)[0][0].numpy()
    out = {}
    for name, f in surrogates.items():
        with torch.no_grad():
            pred = f(test).double().numpy()
        u = incumbent.clone().requires_grad_(True)
        grad = torch.autograd.grad(f(u).sum(), u)[0][0].detach().double().numpy()
        cos = float(grad @ true_grad / (np.linalg.norm(grad) * np.linalg.norm(true_grad) + 1e-300))
        out[name] = (float(np.sqrt(np.mean((pred - target) ** 2))), float(np.corrcoef(pred, target)[0, 1]), cos)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", type=Path, default=ROOT / "cases" / "styblinski_tang.yaml")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--n", type=int, default=None, help="initial designs (default: the case's initial_points)")
    parser.add_argument("--test-points", type=int, default=2000)
    parser.add_argument("--params", type=json.loads, default={},
                        help='PINN-BO method_params as JSON, e.g. \'{"pde_weight": 0}\'')
    args = parser.parse_args()
    if args.seeds < 1 or args.test_points < 2 or (args.n is not None and args.n < 3):
        sys.exit("error: --seeds must be >= 1, --test-points >= 2 and --n >= 3")
    torch.set_num_threads(1)
    from pinnbo.bench import mean_se
    from pinnbo.case import CaseError, load_case
    from pinnbo.optimizers.base import MethodError
    from pinnbo.problem import ProblemError

    try:
        case = load_case(args.case)
        problem = case.build_problem()
    except (CaseError, ProblemError) as error:
        sys.exit(f"error: {error}")
    if "torch_function" not in problem.metadata:
        sys.exit(f"error: --case {args.case}: problem {problem.name!r} has no differentiable torch_function "
                 "(the synthetic benchmarks have one)")
    n = args.n or case.initial_points
    rows = {name: [] for name in NAMES}
    for seed in range(args.seeds):
        try:
            measured = measure(case, problem, seed, n, args.test_points, args.params)
        except MethodError as error:
            sys.exit(f"error: --params: {error}")
        for name, values in measured.items():
            rows[name].append(values)
    print(f"{case.name} (d = {problem.domain.dim}), {n} initial designs, seeds 0..{args.seeds - 1}, "
          f"{args.test_points} test designs; mean ± s.e. over seeds")
    print("| surrogate | rmse | corr | cos at the incumbent |")
    print("|---|---|---|---|")
    for name, values in rows.items():
        stats = [mean_se(column) for column in zip(*values)]
        cells = [f"{s['mean']:.2f} ± " + ("—" if s["se"] is None else f"{s['se']:.2f}") for s in stats]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
