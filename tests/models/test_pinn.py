"""The PINN: the chain rule through the input normalisation, a data term that trains, the PDE's
value on few data, the collocation filter, systems of equations, the first fit's extension and the
PDE's part of the last-layer precision."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from pinnbo.models.pinn import PINNSettings, PINNSurrogate
from pinnbo.pde import PDE
from pinnbo.problem import Box
from pinnbo.streams import torch_generator

FAST = PINNSettings(hidden=(32, 32), initial_steps=400, steps_per_iteration=10, collocation_points=256,
                    collocation_batch=128)
x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACE = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
BOX = Box((1.0, -2.0), (3.0, 5.0), ("x", "y"))   # deliberately not symmetric about 0


def harmonic(p: np.ndarray) -> np.ndarray:
    """Re (x + i y)³ / 10 = (x³ − 3 x y²)/10: ∇² = 0."""
    return (p[..., 0] ** 3 - 3 * p[..., 0] * p[..., 1] ** 2) / 10


def pinn(pde=LAPLACE, settings=FAST, box=BOX, **kwargs) -> PINNSurrogate:
    return PINNSurrogate(box, 0, residual=None if pde is None else pde.compile(), settings=settings, **kwargs)


@pytest.mark.parametrize("bias_scale", [0.1, 1.0])
def test_the_residual_is_taken_in_physical_coordinates(bias_scale):
    surrogate = pinn(bias_scale=bias_scale)
    assert all(layer.bias_scale == bias_scale for layer in (*surrogate.model.hidden, surrogate.model.out))
    mean, std = 2.0, 3.0
    pts = torch.tensor([[1.5, 0.0], [2.7, 4.1], [1.1, -1.9]], dtype=torch.float64)
    r = surrogate.residual(surrogate.physical_model(mean, std), pts)[:, 0]
    # Chain rule by hand: f(x) = μ + σ h(z), z = 2(x − lo)/w − 1 ⇒ f_xx = σ (2/w_x)² h_zz, etc.
    lo, width = torch.tensor(BOX.lower_array), torch.tensor(BOX.widths)
    z = (2 * (pts - lo) / width - 1).requires_grad_(True)
    h = surrogate.model(z)
    (g,) = torch.autograd.grad(h.sum(), z, create_graph=True)
    h_z1z1 = torch.autograd.grad(g[:, 0].sum(), z, create_graph=True)[0][:, 0]
    h_z2z2 = torch.autograd.grad(g[:, 1].sum(), z, create_graph=True)[0][:, 1]
    expected = std * ((2 / width[0]) ** 2 * h_z1z1 + (2 / width[1]) ** 2 * h_z2z2)
    torch.testing.assert_close(r, expected, rtol=1e-10, atol=1e-12)


def fitted(pde, n=6, seed=0, settings=None):
    surrogate = pinn(pde, settings or PINNSettings(**{**vars(FAST), "initial_steps": 1500}))
    X = BOX.from_unit(np.random.default_rng(seed).random((n, 2)))
    mean, std = surrogate.fit(X, harmonic(X), torch_generator(0, "batches"))
    return surrogate, X, mean, std


def predict(surrogate, X, mean, std):
    with torch.no_grad():
        return (mean + std * surrogate.model(surrogate.normalise(torch.as_tensor(X)))).numpy()


def test_the_data_term_really_trains():
    surrogate, X, mean, std = fitted(None)
    error = np.abs(predict(surrogate, X, mean, std) - harmonic(X))
    assert error.max() < 0.05 * np.std(harmonic(X))


def test_the_pde_improves_the_surrogate_away_from_the_data():
    test_points = BOX.from_unit(np.random.default_rng(99).random((500, 2)))
    errors = {}
    for name, pde in (("data only", None), ("physics", LAPLACE)):
        surrogate, X, mean, std = fitted(pde, n=8)
        errors[name] = np.sqrt(np.mean((predict(surrogate, test_points, mean, std) - harmonic(test_points)) ** 2))
    assert errors["physics"] < 0.5 * errors["data only"], errors


def test_the_collocation_filter_is_honoured():
    surrogate = pinn(collocation_filter=lambda p: p[:, 0] > 2.0)
    assert len(surrogate.collocation) == FAST.collocation_points
    assert bool((surrogate.collocation[:, 0] > 2.0).all())


def test_a_system_of_k_copies_of_an_equation_trains_the_same_network_as_the_equation():
    # s_r is the prior rms of ‖r‖ over the K equations and the loss sums them, so K copies of the
    # Laplace equation weigh what one does; averaging over the equations would divide w_pde by K.
    copies = PDE([T.diff(x, 2) + T.diff(y, 2)] * 3, rhs=[0, 0, 0])
    weights = {}
    for name, pde in (("one", LAPLACE), ("three", copies)):
        surrogate, *_ = fitted(pde, settings=FAST)
        weights[name] = [p.detach().clone() for p in surrogate.model.parameters()]
    for a, b in zip(weights["one"], weights["three"]):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-9)


def test_the_pde_weight_backs_off_while_the_data_do_not_fit_and_recovers():
    """A PDE the data contradict (∇²T = 50 on a harmonic function): the PDE weight is halved after
    every fit whose median misfit exceeds the tolerance; with the data alone it stays at its ceiling."""
    contradicted = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=50)
    surrogate = pinn(contradicted, PINNSettings(**{**vars(FAST), "initial_steps": 300, "misfit_tolerance": 0.01}))
    X = BOX.from_unit(np.random.default_rng(0).random((10, 2)))
    surrogate.fit(X, harmonic(X), torch_generator(0, "a"))
    assert surrogate.pde_weight == 0.5
    surrogate.fit(X, harmonic(X), torch_generator(0, "b"))
    assert surrogate.pde_weight in (0.25, 0.5, 1.0)
    assert pinn(None).pde_weight == 1.0


# -- the first fit ---------------------------------------------------------------------------------
def bowl_problem(dim: int):
    """f = Σ x_i² on [−1, 1]^d with the PDE ∂f/∂x_i = 2 x_i for each i (the whole gradient, as
    Cosine Mixture's), and 12 designs with their values."""
    xs = sp.symbols(f"x1:{dim + 1}")
    f = sp.Function("f")(*xs)
    pde = PDE([f.diff(xi) for xi in xs], rhs=[2 * xi for xi in xs])
    box = Box.cube(-1.0, 1.0, dim)
    X = box.from_unit(np.random.default_rng(0).random((12, dim)))
    return box, pde, X, (X ** 2).sum(axis=1)


def first_fit(dim: int, max_steps: int, pde: bool = True):
    box, equations, X, y = bowl_problem(dim)
    surrogate = pinn(equations if pde else None, PINNSettings(**{**vars(FAST), "initial_steps": 200}), box=box,
                     first_fit_max_steps=max_steps)
    mean, std = surrogate.fit(X, y, torch_generator(0, "batches"))
    if not pde:
        return surrogate.first_fit_steps, None
    r = surrogate.residual(surrogate.physical_model(mean, std), surrogate.collocation) / \
        (std * surrogate.residual_scale[:, None])
    return surrogate.first_fit_steps, float(r.detach().pow(2).sum(dim=1).mean())


def test_the_first_fit_goes_on_while_its_loss_falls_up_to_its_ceiling():
    steps, residual = first_fit(5, 1400)
    assert 200 < steps <= 1400 and (steps - 200) % 200 == 0
    # the extra steps are worth it: the PDE is learned better than by initial_steps alone
    short_steps, short_residual = first_fit(5, 200)
    assert short_steps == 200 and residual < 0.5 * short_residual, (residual, short_residual)


def test_without_a_pde_the_first_fit_is_initial_steps():
    assert first_fit(5, 1400, pde=False)[0] is None   # no extension was tried


# -- the PDE's part of the last-layer precision -------------------------------------------------------
def test_the_pde_precision_is_the_sum_of_the_hand_derived_residual_jacobians():
    # For ∂f/∂x_i = 2 x_i and f = μ + s_y (h + φᵀδ): ∂r̂_ji/∂δ_k = ∂φ_k/∂x_i (z_j) / s_r(z_j).
    box, pde, X, y = bowl_problem(5)
    surrogate = pinn(pde, PINNSettings(**{**vars(FAST), "initial_steps": 50}), box=box)
    mean, std = surrogate.fit(X, y, torch_generator(0, "batches"))
    precision = surrogate.pde_precision(mean, std, torch.Generator().manual_seed(3))
    idx = torch.randperm(len(surrogate.collocation), generator=torch.Generator().manual_seed(3))[:FAST.collocation_batch]
    points = surrogate.collocation[idx].clone().requires_grad_(True)
    features = surrogate.model.features(surrogate.normalise(points))                       # (B, m)
    omega = torch.stack([torch.autograd.grad(features[:, k].sum(), points, retain_graph=True)[0]
                         for k in range(features.shape[1])], dim=2)
    omega = omega / surrogate.residual_scale[idx, None, None]                              # (B, K = d, m)
    expected = torch.einsum("jik,jil->kl", omega, omega).detach() * len(surrogate.collocation) / (len(idx) * 0.01)
    torch.testing.assert_close(precision, surrogate.pde_weight * expected, rtol=1e-6, atol=1e-8)
    # the current (backed-off) w_pde scales it, and no PDE term means no PDE precision
    surrogate.pde_weight = 0.25
    torch.testing.assert_close(surrogate.pde_precision(mean, std, torch.Generator().manual_seed(3)),
                               0.25 * expected, rtol=1e-6, atol=1e-8)
    surrogate.pde_weight = 0.0
    assert surrogate.pde_precision(mean, std, torch.Generator().manual_seed(3)) is None


def test_the_shifted_networks_pde_residual_is_the_one_autograd_takes():
    # pde_precision's f = μ + s (h + φᵀδ_n), one δ per row: its Taylor-mode residual of Laplace's
    # equation against nested autograd of the same function.
    surrogate = pinn()
    pts = surrogate.collocation[:24]
    shifts = torch.randn(24, FAST.hidden[-1], generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    f = surrogate.physical_model(2.0, 3.0, shifts=shifts)
    taylor = surrogate.residual(f, pts)
    reference = surrogate.residual(lambda p: f(p), pts)      # a plain callable: autograd
    torch.testing.assert_close(taylor, reference, rtol=1e-10, atol=1e-10)
    assert float(reference.abs().max()) > 1e-2


def test_the_last_layer_posterior_is_the_hand_written_bayesian_linear_model():
    """mean_and_variance: h(z) of the network and σ² = φᵀ U⁻¹ φ with U = λI + ΦᵀΦ/σ_n² (Φ the
    features at the given designs), computed here with an explicit inverse; a design's variance
    falls once it is among the given ones."""
    from pinnbo.models.last_layer import PRIOR_PRECISION

    surrogate = pinn(None)
    rng = np.random.default_rng(0)
    X = torch.as_tensor(BOX.from_unit(rng.random((5, 2))), dtype=torch.float64)
    given = torch.as_tensor(BOX.from_unit(rng.random((7, 2))), dtype=torch.float64)
    mu, var = surrogate.mean_and_variance(X, given)
    with torch.no_grad():
        z, phi_given = surrogate.normalise(X), surrogate.model.features(surrogate.normalise(given))
        phi = surrogate.model.features(z)
        U = PRIOR_PRECISION * torch.eye(phi.shape[1], dtype=torch.float64) + phi_given.T @ phi_given / FAST.noise_variance
        expected = ((phi @ torch.linalg.inv(U)) * phi).sum(dim=1)
        torch.testing.assert_close(mu, surrogate.model(z))
    torch.testing.assert_close(var, expected, rtol=1e-8, atol=1e-12)
    _, after = surrogate.mean_and_variance(X, torch.cat([given, X]))
    assert bool((after < var).all())
