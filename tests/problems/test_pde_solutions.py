"""The closed-form PDE problems: each true function satisfies its compiled PDE (the sign of a
maximised problem's minimised PDE included), each optimum is where it is said to be, and the
nonlinear one's exact solution satisfies its linearisation about itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from problems.pde_solutions import (HARMONIC_ARGMAX, HARMONIC_MAXIMUM, HELMHOLTZ_ARGMIN, HELMHOLTZ_MINIMUM, harmonic,
                                    helmholtz, liouville)


def helmholtz_torch(z):
    x, y = z[:, 0], z[:, 1]
    return torch.sin(3 * x) * torch.cos(2 * y) + 0.5 * torch.cos(2 * x) * torch.sin(3 * y)


def harmonic_torch(z):
    x, y, pi = z[:, 0], z[:, 1], math.pi
    return (torch.sin(pi * x) * torch.sinh(pi * y) / math.sinh(pi)
            + 0.25 * torch.sin(5 * pi * x) * torch.sinh(5 * pi * y) / math.sinh(5 * pi)
            + 0.9 * torch.sin(pi * y) * torch.sinh(pi * x) / math.sinh(pi))


def liouville_torch(z, width=6.0, center=(0.73, 0.31)):
    r2 = (z[:, 0] - center[0]) ** 2 + (z[:, 1] - center[1]) ** 2
    return math.log(8 * width**2) - 2 * torch.log1p(width**2 * r2)


@pytest.mark.parametrize("factory, fn", [(helmholtz, helmholtz_torch), (liouville, liouville_torch),
                                        (harmonic, harmonic_torch)])
def test_the_true_function_satisfies_the_compiled_pde(factory, fn):
    problem = factory()
    points = torch.as_tensor(problem.domain.from_unit(np.random.default_rng(0).random((200, 2))))
    assert torch.abs(problem.pde.compile()(fn, points)).max() < 1e-9
    # what the optimiser minimises, sign × u, satisfies the minimised PDE
    assert torch.abs(problem.minimised_pde.compile()(lambda z: problem.sign * fn(z), points)).max() < 1e-9
    assert np.isclose(problem.objective(points[0].numpy()), float(fn(points[:1])[0]), rtol=1e-14)


def test_helmholtz_minimum_is_the_smallest_value_on_a_fine_grid():
    problem = helmholtz()
    assert problem.objective(np.array(HELMHOLTZ_ARGMIN)) == pytest.approx(HELMHOLTZ_MINIMUM, abs=1e-15)
    assert problem.objective(np.array([math.pi - HELMHOLTZ_ARGMIN[0], math.pi / 2])) == pytest.approx(HELMHOLTZ_MINIMUM)
    xs, ys, values = problem.field_plot(801)
    assert values.min() >= HELMHOLTZ_MINIMUM - 1e-12 and values.min() < HELMHOLTZ_MINIMUM + 1e-4


def test_harmonic_takes_its_boundary_data_and_its_maximum_on_the_top_edge():
    problem = harmonic()
    assert problem.sense == "maximize" and problem.pde.minimum_on_boundary()
    t = np.linspace(0.0, 1.0, 101)

    def edge(xs, ys):
        return np.array([problem.objective(np.array([a, b])) for a, b in zip(xs, ys)])

    np.testing.assert_allclose(edge(t, np.ones_like(t)), np.sin(np.pi * t) + 0.25 * np.sin(5 * np.pi * t), atol=1e-12)
    np.testing.assert_allclose(edge(np.ones_like(t), t), 0.9 * np.sin(np.pi * t), atol=1e-12)
    np.testing.assert_allclose(edge(t, np.zeros_like(t)), 0.0, atol=1e-12)
    np.testing.assert_allclose(edge(np.zeros_like(t), t), 0.0, atol=1e-12)
    assert problem.objective(np.array(HARMONIC_ARGMAX)) == pytest.approx(HARMONIC_MAXIMUM, abs=1e-14)
    xs, ys, values = problem.field_plot(401)
    assert values.max() <= HARMONIC_MAXIMUM + 1e-12
    j, i = np.unravel_index(values.argmax(), values.shape)
    assert (xs[i], ys[j]) == (0.5, 1.0)


def test_liouville_maximum_is_at_its_centre():
    problem = liouville(width=4.0, center=[0.2, 0.6])
    assert problem.sense == "maximize" and problem.optimum == pytest.approx(math.log(128))
    xs, ys, values = problem.field_plot(201)
    j, i = np.unravel_index(values.argmax(), values.shape)
    assert (xs[i], ys[j]) == (pytest.approx(0.2, abs=0.005), pytest.approx(0.6, abs=0.005))


def test_the_liouville_solution_satisfies_the_pde_linearised_about_itself():
    """Gauss–Newton's fixed point: for R[u] = ∇²u + eᵘ linearised about u₀, Σ_α c_α ∂^α u₀ = g
    exactly when R[u₀] = 0; checked with the closed form's derivatives (sympy), and the linearised
    source at a u₀ that is not a solution differs by R[u₀]."""
    import sympy as sp

    problem = liouville()
    x, y = sp.symbols("x y")
    lam, (cx, cy) = 6.0, (0.73, 0.31)
    exact = sp.log(8 * lam**2) - 2 * sp.log(1 + lam**2 * ((x - cx) ** 2 + (y - cy) ** 2))
    points = torch.tensor(np.random.default_rng(0).random((50, 2)), dtype=torch.float64)
    px, py = points[:, 0].numpy(), points[:, 1].numpy()

    def values(expr):
        return torch.as_tensor(sp.lambdify((x, y), expr, "numpy")(px, py) * np.ones_like(px))

    derivatives = {(0, 0): values(exact), (2, 0): values(exact.diff(x, 2)), (0, 2): values(exact.diff(y, 2))}
    form = problem.pde.linearised_form()
    assert set(form.multi_indices) == {(0, 0)}
    evaluated = form.at(points, derivatives)
    ((terms),) = evaluated.terms(points)
    lhs = sum(c * derivatives[alpha] for alpha, c in terms)
    assert torch.allclose(lhs, evaluated.source(points)[:, 0], rtol=1e-12, atol=1e-9)
    shifted = {alpha: d + (0.3 if alpha == (0, 0) else 0.0) for alpha, d in derivatives.items()}
    off = form.at(points, shifted)
    ((terms),) = off.terms(points)
    residual = derivatives[(2, 0)] + derivatives[(0, 2)] + torch.exp(shifted[(0, 0)])   # R at u₀ = u + 0.3
    lhs = sum(c * shifted[alpha] for alpha, c in terms)
    assert torch.allclose(lhs - off.source(points)[:, 0], residual, rtol=1e-12, atol=1e-9)
