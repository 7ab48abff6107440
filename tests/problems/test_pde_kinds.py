"""The PDE problems of other kinds: each true function, written again here in torch, satisfies its
compiled PDE (the minimised one included) and equals the oracle; the Poisson source is the
hand-derived −∇²u; each optimum is no worse than a dense sample and is attained; the oscillator
starts at rest; the benchmark cases of these kinds and of the new beams load, and auto runs the
PDE-GP on each."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch
from scipy.stats import qmc

from pinnbo.optimizers import choice_for
from pinnbo.runner.build import build_problem
from pinnbo.runner.case import load_case
from problems.pde_kinds import BUMPS, DAMPING, forced_oscillator, poisson, reaction_diffusion, wave

KINDS = Path(__file__).resolve().parents[2] / "benchmarks" / "kinds"
PI = math.pi


def poisson_torch(z):
    x, y = z[:, 0], z[:, 1]
    return (1 + x) * torch.sin(PI * x) * torch.sin(PI * y) + 0.6 * torch.sin(3 * PI * x) * torch.sin(2 * PI * y)


def reaction_diffusion_torch(z):
    return sum(h * torch.exp(-((z - torch.tensor(c, dtype=z.dtype)) ** 2).sum(1) / w) for h, c, w in BUMPS)


def wave_torch(z):
    x, t = z[:, 0], z[:, 1]
    return (torch.sin(x) * torch.cos(t - 1) + 0.5 * torch.sin(2 * x) * torch.cos(2 * t - 0.3)
            + 0.3 * torch.sin(3 * x) * torch.sin(3 * t))


def oscillator_torch(z):
    """The steady response plus the transient, each a solution: the sum solves the forced equation."""
    t, w = z[:, 0], z[:, 1]
    zeta, wd = DAMPING, math.sqrt(1 - DAMPING**2)
    D = (1 - w**2) ** 2 + (2 * zeta * w) ** 2
    A, B = (1 - w**2) / D, 2 * zeta * w / D
    C, E = -A, (-zeta * A - B * w) / wd
    return A * torch.cos(w * t) + B * torch.sin(w * t) + torch.exp(-zeta * t) * (C * torch.cos(wd * t) + E * torch.sin(wd * t))


CASES = [(poisson, poisson_torch), (reaction_diffusion, reaction_diffusion_torch), (wave, wave_torch),
         (forced_oscillator, oscillator_torch)]


@pytest.mark.parametrize("factory, fn", CASES, ids=lambda f: getattr(f, "__name__", ""))
def test_the_true_function_satisfies_the_compiled_pde(factory, fn):
    problem = factory()
    points = torch.as_tensor(problem.domain.from_unit(np.random.default_rng(0).random((64, 2))))
    assert torch.abs(problem.pde.compile()(fn, points)).max() < 1e-9
    assert torch.abs(problem.minimised_pde.compile()(lambda z: problem.sign * fn(z), points)).max() < 1e-9
    for p in points[:5]:
        assert problem.objective(p.numpy()) == pytest.approx(float(fn(p[None])[0]), rel=1e-12, abs=1e-14)


def test_the_poisson_source_is_minus_the_laplacian():
    x, y = sp.symbols("x y")
    u = (1 + x) * sp.sin(sp.pi * x) * sp.sin(sp.pi * y) + sp.Rational(3, 5) * sp.sin(3 * sp.pi * x) * sp.sin(2 * sp.pi * y)
    problem = poisson()
    assert sp.simplify(problem.pde.rhs[0] + u.diff(x, 2) + u.diff(y, 2)) == 0
    assert np.abs([problem.objective(np.array(p)) for p in [(0, 0.3), (1, 0.7), (0.4, 0), (0.6, 1)]]).max() < 1e-15


def test_the_oscillator_starts_at_rest():
    problem = forced_oscillator()
    for w in (0.5, 0.85, 1.0, 1.5):
        z = torch.tensor([[0.0, w]], dtype=torch.float64, requires_grad=True)
        u = oscillator_torch(z)
        (du,) = torch.autograd.grad(u.sum(), z)
        assert abs(float(u.detach())) < 1e-12 and abs(float(du[0, 0])) < 1e-12
        assert problem.objective(np.array([0.0, w])) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("factory", [poisson, reaction_diffusion, wave, forced_oscillator])
def test_the_optimum_is_no_worse_than_a_dense_sample_and_is_attained(factory):
    problem = factory()
    lower, upper = np.asarray(problem.domain.lower), np.asarray(problem.domain.upper)
    sample = lower + qmc.Sobol(2, seed=1).random(2**12) * (upper - lower)
    assert max(problem.objective(x) for x in sample) <= problem.optimum + 1e-12
    assert problem.objective(np.asarray(problem.optimum_location)) == pytest.approx(problem.optimum, abs=1e-10)


def test_the_kinds_of_pde():
    """Poisson and the wave are linear, reaction–diffusion is not; none puts its optimum on the
    boundary by a maximum principle (a source, a hyperbolic operator, an ODE with a forcing)."""
    for factory, linear in [(poisson, True), (reaction_diffusion, False), (wave, True), (forced_oscillator, True)]:
        pde = factory().pde
        assert pde.is_linear() is linear
        assert not pde.minimum_on_boundary()


@pytest.mark.parametrize("path", sorted(KINDS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_case_of_these_kinds_loads_and_auto_runs_the_pde_gp(path):
    case = load_case(path)
    assert case.method == "auto" and case.budget == 40 and case.initial_points == 10
    problem = build_problem(case)
    assert choice_for(problem).method == "pde-gp"
    assert problem.objective(np.asarray(problem.optimum_location)) == pytest.approx(problem.optimum, abs=1e-9)
