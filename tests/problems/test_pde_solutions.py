"""The closed-form PDE problems: each true function satisfies its compiled PDE (the sign of a
maximised problem's minimised PDE included), each optimum is where it is said to be, and the
PDE-conditioned GP refuses the nonlinear one."""

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


def test_the_pde_gp_refuses_the_nonlinear_pde_and_points_to_pinn_bo():
    from pinnbo import make_optimizer
    from pinnbo.errors import UserError

    problem = liouville()
    with pytest.raises(UserError, match="pinn-bo"):
        make_optimizer("pde-gp", problem.domain, 0, pde=problem.minimised_pde)
