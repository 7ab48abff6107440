"""The closed-form PDE problems in 3 to 8 variables: each true function, written again here in torch,
satisfies its compiled PDE (the minimised one included) and equals the oracle; each optimum is no
worse than any point of a dense sample; the Laplace problem's boundary data are continuous, the
heat problem's maximum is on t = 0, the reaction–diffusion problem's forcing is the hand-derived
−∇²u + u³ and its PDE nonlinear, the Poisson problem's source the hand-derived −∇²u, the
advection–diffusion problem's the hand-derived −∇²u + v·∇u; and what auto runs on each."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch
from scipy.stats import qmc

from pinnbo.errors import ProblemError
from pinnbo.optimizers import choice_for
from problems.pde_dimensions import (HEAT_TIME, HELMHOLTZ_2D_MINIMUM, advection_diffusion_nd, damped_wave_nd,
                                     heat_diffusion, helmholtz_nd, laplace, poisson_nd, reaction_diffusion_nd, wave_nd)

#: The advection–diffusion problem's plumes written out: (height, centre in every variable, 2σ²)
#: for d variables, the slope 0.3 along x_1 and the flow (1.5, −1, ½, −½, ...)
def plumes(d):
    return ((1.6, [0.6, 0.4] + [0.45] * (d - 2), 0.06), (1.6, [0.3, 0.75] + [0.65] * (d - 2), 0.025))


def flow(d):
    return [1.5, -1.0] + [0.5 * (-1) ** i for i in range(d - 2)]


def laplace_torch(z):
    d, pi = z.shape[1], math.pi
    s, r = math.sqrt(d - 1), math.sqrt(d + 23)
    sines = torch.sin(pi * z)
    return (sines[:, :-1].prod(1) * torch.sinh(pi * s * z[:, -1]) / math.sinh(pi * s)
            + 0.9 * sines[:, 1:].prod(1) * torch.sinh(pi * s * z[:, 0]) / math.sinh(pi * s)
            + 0.25 * torch.sin(5 * pi * z[:, 0]) * sines[:, 1:-1].prod(1) * torch.sinh(pi * r * z[:, -1]) / math.sinh(pi * r))


def helmholtz_torch(z):
    centres = 1.0 + 0.3 * torch.arange(z.shape[1] - 2, dtype=z.dtype)
    planar = torch.sin(3 * z[:, 0]) * torch.cos(2 * z[:, 1]) + 0.5 * torch.cos(2 * z[:, 0]) * torch.sin(3 * z[:, 1])
    return planar * torch.cos(z[:, 2:] - centres).prod(1)


def heat_torch(z):
    x, t = z[:, :-1], z[:, -1]
    s = x.shape[1]
    sines = torch.sin(x)
    return (torch.exp(-s * t) * sines.prod(1)
            + torch.exp(-(s + 3) * t) * (0.5 * torch.sin(2 * x[:, 0]) * sines[:, 1:].prod(1)
                                         + 0.3 * sines[:, 0] * torch.sin(2 * x[:, 1]) * sines[:, 2:].prod(1)))


def reaction_torch(z):
    """The two Gaussian bumps, their centres written out: (0.65, 0.35) and (0.25, 0.7) in the first
    two variables, 0.55 and 0.3 in every other."""
    rest = z.shape[1] - 2
    a = torch.tensor([0.65, 0.35] + [0.55] * rest, dtype=z.dtype)
    b = torch.tensor([0.25, 0.7] + [0.3] * rest, dtype=z.dtype)
    return 1.5 * torch.exp(-((z - a) ** 2).sum(1) / 0.05) + 1.4 * torch.exp(-((z - b) ** 2).sum(1) / 0.02)


def poisson_torch(z):
    pi = math.pi
    x, y = z[:, 0], z[:, 1]
    planar = (1 + x) * torch.sin(pi * x) * torch.sin(pi * y) + 0.6 * torch.sin(3 * pi * x) * torch.sin(2 * pi * y)
    return planar * torch.sin(pi * z[:, 2:]).prod(1)


def advection_torch(z):
    return 0.3 * z[:, 0] + sum(h * torch.exp(-((z - torch.tensor(c, dtype=z.dtype)) ** 2).sum(1) / w)
                               for h, c, w in plumes(z.shape[1]))


def wave_torch(z):
    x, t = z[:, :-1], z[:, -1]
    s = x.shape[1]
    sines = torch.sin(x)
    return (sines.prod(1) * torch.cos(math.sqrt(s) * t - 1)
            + 0.5 * torch.sin(2 * x[:, 0]) * sines[:, 1:].prod(1) * torch.cos(math.sqrt(s + 3) * t - 0.3)
            + 0.3 * sines[:, 0] * torch.sin(2 * x[:, 1]) * sines[:, 2:].prod(1) * torch.sin(math.sqrt(s + 3) * t))


def damped_wave_torch(z):
    """Each mode e^{−t/2} cos(ωt − φ) with ω² = λ − ¼ for its eigenvalue λ (s, s + 3)."""
    x, t = z[:, :-1], z[:, -1]
    s = x.shape[1]
    sines = torch.sin(x)
    slow, fast = math.sqrt(s - 0.25), math.sqrt(s + 2.75)
    return torch.exp(-t / 2) * (sines.prod(1) * torch.cos(slow * t - 1)
                                + 0.5 * torch.sin(2 * x[:, 0]) * sines[:, 1:].prod(1) * torch.cos(fast * t - 0.3)
                                + 0.3 * sines[:, 0] * torch.sin(2 * x[:, 1]) * sines[:, 2:].prod(1) * torch.sin(fast * t))


CASES = [(laplace, laplace_torch), (helmholtz_nd, helmholtz_torch), (heat_diffusion, heat_torch),
         (reaction_diffusion_nd, reaction_torch), (poisson_nd, poisson_torch), (wave_nd, wave_torch),
         (damped_wave_nd, damped_wave_torch), (advection_diffusion_nd, advection_torch)]


@pytest.mark.parametrize("dim", [3, 4, 6])
@pytest.mark.parametrize("factory, fn", CASES)
def test_the_true_function_satisfies_the_compiled_pde(factory, fn, dim):
    problem = factory(dim)
    assert problem.domain.dim == dim
    points = torch.as_tensor(problem.domain.from_unit(np.random.default_rng(dim).random((64, dim))))
    assert torch.abs(problem.pde.compile()(fn, points)).max() < 1e-7
    assert torch.abs(problem.minimised_pde.compile()(lambda z: problem.sign * fn(z), points)).max() < 1e-7
    for p in points[:5]:
        assert problem.objective(p.numpy()) == pytest.approx(float(fn(p[None])[0]), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("dim", [3, 6])
@pytest.mark.parametrize("factory", [laplace, helmholtz_nd, heat_diffusion, reaction_diffusion_nd, poisson_nd, wave_nd,
                                     damped_wave_nd, advection_diffusion_nd])
def test_the_optimum_is_no_worse_than_a_dense_sample_and_is_attained(factory, dim):
    problem = factory(dim)
    lower, upper = np.asarray(problem.domain.lower), np.asarray(problem.domain.upper)
    sample = lower + qmc.Sobol(dim, seed=1).random(2**12) * (upper - lower)
    values = np.array([problem.objective(x) for x in sample])
    signed = problem.sign * values
    assert signed.min() >= problem.sign * problem.optimum - 1e-12
    assert problem.objective(np.asarray(problem.optimum_location)) == pytest.approx(problem.optimum, abs=1e-10)


def test_where_the_optima_are():
    # Helmholtz: the 2-D problem's minimum, where every extra factor cos(x_i − c_i) is 1
    assert helmholtz_nd(4).optimum == HELMHOLTZ_2D_MINIMUM
    # Laplace: the centre of the face x_d = 1, where the ripple adds its quarter
    for dim in (3, 6):
        problem = laplace(dim)
        assert problem.optimum == pytest.approx(1.25, abs=1e-9)
        np.testing.assert_allclose(problem.optimum_location, [0.5] * (dim - 1) + [1.0], atol=1e-6)
    # heat: at t = 0 (every mode decays), off the centre of the space box
    problem = heat_diffusion(4)
    assert problem.optimum_location[-1] == 0.0 and problem.domain.upper[-1] == HEAT_TIME
    assert abs(problem.optimum_location[0] - math.pi / 2) > 0.3
    # reaction–diffusion: the wide bump's centre, the narrow one's tail too far to move it
    for dim in (3, 6):
        problem = reaction_diffusion_nd(dim)
        assert problem.optimum == pytest.approx(1.5, abs=1e-7)
        np.testing.assert_allclose(problem.optimum_location, [0.65, 0.35] + [0.55] * (dim - 2), atol=1e-6)
    # Poisson: the 2-D problem's maximum, where every extra arch sin πx_i is 1
    for dim in (3, 6):
        problem = poisson_nd(dim)
        assert problem.optimum == pytest.approx(1.8289785, abs=1e-6)
        np.testing.assert_allclose(problem.optimum_location[2:], [0.5] * (dim - 2), atol=1e-6)
    # the wave: inside the box in space and time (no maximum principle), where no face holds it
    for dim in (3, 4):
        problem = wave_nd(dim)
        lower, upper, at = (np.asarray(v) for v in (problem.domain.lower, problem.domain.upper,
                                                     problem.optimum_location))
        assert np.all(at - lower > 0.3) and np.all(upper - at > 0.3) and problem.optimum > 1.2
    # the damped wave: inside, early, where its modes have faded least, below the undamped peak
    for dim in (3, 4):
        problem = damped_wave_nd(dim)
        at = np.asarray(problem.optimum_location)
        assert 0.1 < at[-1] < 0.5 and np.all(at[:-1] > 0.3) and np.all(math.pi - at[:-1] > 0.3)
        assert 0.9 < problem.optimum < wave_nd(dim).optimum
    # advection–diffusion: beside the wide plume's centre, pushed up the slope along x_1; the narrow
    # plume's peak 1.6 + 0.3 · 0.3 and the wide one's tail, 4 to 5 % lower
    for dim in (3, 6):
        problem = advection_diffusion_nd(dim)
        assert problem.optimum == pytest.approx(1.78, abs=0.002)
        at = np.asarray(problem.optimum_location)
        assert 0.6 < at[0] < 0.61
        np.testing.assert_allclose(at[1:], [0.4] + [0.45] * (dim - 2), atol=1e-4)
        assert 1.69 < problem.objective(np.array([0.3, 0.75] + [0.65] * (dim - 2))) < 0.965 * problem.optimum


def test_the_reaction_forcing_is_minus_the_laplacian_plus_the_cube():
    """The declared forcing, differentiated by sympy from the bumps, against −∇²u + u³ of the same
    bumps by hand: ∂²/∂x_i² e^{−r²/w} = (4(x_i − c_i)²/w² − 2/w) e^{−r²/w}."""
    problem = reaction_diffusion_nd(3)
    forcing = sp.lambdify(sp.symbols("x1 x2 x3"), problem.pde.rhs[0], "numpy")
    assert not problem.pde.is_linear() and not problem.pde.minimum_on_boundary()
    assert problem.pde.boundary == ()
    for p in np.random.default_rng(3).random((20, 3)):
        u, minus_laplacian = 0.0, 0.0
        for h, c, w in ((1.5, (0.65, 0.35, 0.55), 0.05), (1.4, (0.25, 0.7, 0.3), 0.02)):
            e = h * math.exp(-sum((p - c) ** 2) / w)
            u += e
            minus_laplacian -= sum(4 * (p - c) ** 2 / w**2 - 2 / w) * e
        assert forcing(*p) == pytest.approx(minus_laplacian + u**3, rel=1e-12, abs=1e-12)


def test_the_poisson_source_is_minus_the_laplacian():
    """The declared source, differentiated by sympy, against −∇²u by hand: with S = Π sin πx_i and
    T = sin 3πx_1 sin 2πx_2 Π_{i>2} sin πx_i, −∇²[(1 + x_1)S] = dπ²(1 + x_1)S − 2π cos πx_1 Π_{i>1}
    sin πx_i and −∇²T = (d + 11)π² T."""
    for dim in (3, 4):
        problem = poisson_nd(dim)
        source = sp.lambdify(sp.symbols(" ".join(f"x{i + 1}" for i in range(dim))), problem.pde.rhs[0], "numpy")
        assert problem.pde.is_linear() and problem.pde.boundary == ()
        for p in np.random.default_rng(dim).random((20, dim)):
            sines, pi = np.sin(math.pi * p), math.pi
            S = np.prod(sines)
            T = math.sin(3 * pi * p[0]) * math.sin(2 * pi * p[1]) * np.prod(sines[2:])
            expected = (dim * pi**2 * (1 + p[0]) * S - 2 * pi * math.cos(pi * p[0]) * np.prod(sines[1:])
                        + 0.6 * (dim + 11) * pi**2 * T)
            assert source(*p) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_the_advection_source_is_minus_the_laplacian_plus_the_flow():
    """The declared source, differentiated by sympy, against −∇²u + v·∇u by hand: for a plume
    e = h e^{−|p − c|²/w}, ∂_i e = −2(x_i − c_i)/w e and ∂²_i e = (4(x_i − c_i)²/w² − 2/w) e; the
    slope 0.3 x_1 adds 0.3 v_1. The operator keeps the maximum principle, the PDE with its source
    does not."""
    for dim in (3, 4):
        problem = advection_diffusion_nd(dim)
        source = sp.lambdify(sp.symbols(" ".join(f"x{i + 1}" for i in range(dim))), problem.pde.rhs[0], "numpy")
        bounds = dict(zip(problem.domain.names, zip(problem.domain.lower, problem.domain.upper)))
        assert problem.pde.is_linear() and problem.pde.boundary == ()
        assert problem.pde.minimum_on_boundary(bounds, with_source=False)
        assert not problem.pde.minimum_on_boundary(bounds) and not problem.pde.negated().minimum_on_boundary(bounds)
        v = np.array(flow(dim))
        for p in np.random.default_rng(dim).random((20, dim)):
            expected = 0.3 * v[0]
            for h, c, w in plumes(dim):
                off = p - np.array(c)
                e = h * math.exp(-np.sum(off**2) / w)
                expected += (-np.sum(4 * off**2 / w**2 - 2 / w) - np.sum(v * 2 * off / w)) * e
            assert source(*p) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("factory, planes", [(laplace, 3), (heat_diffusion, 4), (wave_nd, 4), (damped_wave_nd, 4),
                                             (helmholtz_nd, 0)])
def test_the_declared_boundary_conditions_are_the_oracles_values(factory, planes):
    """Laplace's lower faces and the heat and (damped) wave equations' space faces are at zero, as their PDEs
    declare: the oracle is 0 there (Helmholtz's declares none)."""
    problem = factory(3)
    assert len(problem.pde.boundary) == planes
    t = np.random.default_rng(0).random((50, 3))
    for condition in problem.pde.boundary:
        axis = problem.domain.names.index(condition.input)
        on_plane = problem.domain.from_unit(t)
        on_plane[:, axis] = condition.at
        assert condition.pde.lhs[0].func.__name__ == "u" and condition.pde.rhs[0] == 0
        assert np.abs([problem.objective(x) for x in on_plane]).max() < 1e-14


@pytest.mark.parametrize("factory", [laplace, helmholtz_nd, heat_diffusion, reaction_diffusion_nd, poisson_nd, wave_nd,
                                     damped_wave_nd, advection_diffusion_nd])
def test_what_auto_runs(factory):
    """The PDE-GP on each in 3 variables: Laplace's maximum principle alone would run the plain GP,
    but the PDE-GP conditions on its faces held at zero as well."""
    assert choice_for(factory(3)).method == "pde-gp"


@pytest.mark.parametrize("dim, helmholtz_method, heat_method", [(4, "gp-ei", "pde-gp"), (6, "gp-ei", "gp-ei")])
def test_what_auto_runs_as_the_dimension_grows(dim, helmholtz_method, heat_method):
    """In 4 variables the PDE alone (Helmholtz's) paid nothing against the plain GP, which auto runs
    there; the heat equation's declared zero edges did, and pde-gp conditions on them. In 6 neither
    paid. The nonlinear reaction–diffusion problem, with no condition declared, goes as
    Helmholtz's; the Poisson and advection–diffusion problems, whose sources shape the inside, run
    the PDE-GP in 4 to 6 variables; the wave equation, its fixed faces declared, whose modes do not
    fade as the heat equation's do, paid nothing in 4 either."""
    assert choice_for(helmholtz_nd(dim)).method == helmholtz_method
    assert choice_for(heat_diffusion(dim)).method == heat_method
    assert choice_for(reaction_diffusion_nd(dim)).method == helmholtz_method
    assert choice_for(poisson_nd(dim)).method == "pde-gp"                   # rule 7, up to 6 variables
    assert choice_for(poisson_nd(5)).method == "pde-gp"
    assert choice_for(advection_diffusion_nd(dim)).method == "pde-gp"
    assert choice_for(advection_diffusion_nd(5)).method == "pde-gp"
    assert choice_for(wave_nd(dim)).method == "gp-ei"
    assert choice_for(damped_wave_nd(dim)).method == "gp-ei"


@pytest.mark.parametrize("dim", [2, 9, 3.0, True])
def test_bad_dimensions_are_named(dim):
    with pytest.raises(ProblemError, match="params.dim: expected an integer from 3 to 8"):
        laplace(dim)
