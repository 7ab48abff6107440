"""PINN-BO's residual-GP path weights: BoTorch's scrambled Sobol normals against the Latin-hypercube
normals PINN-BO draws (pinnbo.optimizers.pinn_bo._latin_hypercube_normals) and independent
normals, side by side: the seconds to draw them, and what the Thompson sample sees of K paths of
one GP (the mean over seeds of their pointwise minimum, the spread of the K paths at a point, and
the standard deviation of their mean).

    python benchmarks/path_weights.py                       # K = 4 in one variable, K = 1 in ten
    python benchmarks/path_weights.py --seeds 600
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from botorch.models import SingleTaskGP
from botorch.sampling.pathwise import draw_kernel_feature_paths, draw_matheron_paths
from botorch.utils.sampling import draw_sobol_normal_samples

from pinnbo.optimizers.pinn_bo import _latin_hypercube_normals

GENERATORS = {
    "scrambled Sobol (BoTorch)": lambda shape: draw_sobol_normal_samples(
        n=shape[0], d=shape[-1], dtype=torch.float64).reshape(shape),
    "Latin hypercube (PINN-BO)": _latin_hypercube_normals,
    "independent": lambda shape: torch.randn(shape, dtype=torch.float64),
}


def statistics(gp: SingleTaskGP, points: torch.Tensor, draws: int, generator, seeds: int) -> tuple[float, ...]:
    minima, spreads, means, seconds = [], [], [], []
    for seed in range(seeds):
        torch.manual_seed(seed)
        start = time.perf_counter()
        generator(torch.Size([draws, 1024]))
        seconds.append(time.perf_counter() - start)
        torch.manual_seed(seed)
        paths = draw_matheron_paths(gp, torch.Size([draws]), prior_sampler=lambda model, sample_shape: (
            draw_kernel_feature_paths(model, sample_shape=sample_shape, weight_generator=generator)))
        with torch.no_grad():
            values = paths(points)                                  # (K, N)
        minima.append(float(values.min(dim=0).values.mean()))
        spreads.append(float(values.std(dim=0).mean()) if draws > 1 else 0.0)
        means.append(values.mean(dim=0))
    return (float(np.median(seconds)) * 1e3, float(np.mean(minima)), float(np.mean(spreads)),
            float(torch.stack(means).std(dim=0).mean()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=400)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for dim, n, draws in ((1, 8, 4), (10, 30, 1)):
        data = torch.Generator().manual_seed(0)
        X = torch.rand(n, dim, dtype=torch.float64, generator=data)
        Y = torch.sin(6.0 * X).sum(dim=-1, keepdim=True)
        gp = SingleTaskGP(X, Y).eval()
        points = torch.rand(201, dim, dtype=torch.float64, generator=data)
        print(f"\n{dim} variable(s), {n} observations, K = {draws}, {args.seeds} seeds")
        print("| weights | ms to draw | mean of the minimum of K paths | spread of the K paths | sd of their mean |")
        print("|---|---|---|---|---|")
        for name, generator in GENERATORS.items():
            ms, minimum, spread, sd = statistics(gp, points, draws, generator, args.seeds)
            print(f"| {name} | {ms:.2f} | {minimum:.4f} | {spread:.4f} | {sd:.4f} |", flush=True)


if __name__ == "__main__":
    main()
