"""PINN-BO: the chain rule through input normalisation, a data term that trains, the PDE's
value on few data, determinism and checkpoints."""

from __future__ import annotations

import numpy as np
import sympy as sp
import torch

from pinnbo.optimizers import make_optimizer
from pinnbo.pde import PDE
from pinnbo.problem import Box

FAST = {"hidden": [32, 32], "initial_steps": 400, "steps_per_iteration": 10, "collocation_points": 256,
        "collocation_batch": 128, "n_pool": 256, "top_k": 4, "refine_iterations": 10}
x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACE = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
BOX = Box((1.0, -2.0), (3.0, 5.0), ("x", "y"))   # deliberately not symmetric about 0


def harmonic(p: np.ndarray) -> np.ndarray:
    """Re (x + i y)³ / 10 = (x³ − 3 x y²)/10: ∇² = 0."""
    return (p[..., 0] ** 3 - 3 * p[..., 0] * p[..., 1] ** 2) / 10


def test_residual_is_taken_in_physical_coordinates():
    opt = make_optimizer("pinn-bo", BOX, 0, params=FAST, pde=LAPLACE)
    mean, std = 2.0, 3.0
    physical = opt._physical_model(mean, std)
    pts = torch.tensor([[1.5, 0.0], [2.7, 4.1], [1.1, -1.9]], dtype=torch.float64)
    r = opt.residual(physical, pts)[:, 0]
    # Chain rule by hand: f(x) = μ + s h(z), z = 2(x − lo)/w − 1 ⇒ f_xx = s (2/w_x)² h_zz, etc.
    z = opt._normalise(pts).detach().requires_grad_(True)
    h = opt.model(z)
    (g,) = torch.autograd.grad(h.sum(), z, create_graph=True)
    h_z1z1 = torch.autograd.grad(g[:, 0].sum(), z, create_graph=True)[0][:, 0]
    h_z2z2 = torch.autograd.grad(g[:, 1].sum(), z, create_graph=True)[0][:, 1]
    width = torch.tensor(BOX.widths)
    expected = std * ((2 / width[0]) ** 2 * h_z1z1 + (2 / width[1]) ** 2 * h_z2z2)
    torch.testing.assert_close(r, expected, rtol=1e-10, atol=1e-12)


def fitted(pde, n=6, seed=0):
    opt = make_optimizer("pinn-bo", BOX, seed, params={**FAST, "initial_steps": 1500}, pde=pde)
    X = BOX.from_unit(np.random.default_rng(seed).random((n, 2)))
    for xi in X:
        opt.tell(xi, float(harmonic(xi)))
    mean, std = opt._fit(*opt.observed())
    return opt, X, mean, std


def predict(opt, X, mean, std):
    with torch.no_grad():
        return (mean + std * opt.model(opt._normalise(torch.as_tensor(X)))).numpy()


def test_data_term_really_trains():
    opt, X, mean, std = fitted(None)
    error = np.abs(predict(opt, X, mean, std) - harmonic(X))
    assert error.max() < 0.05 * np.std(harmonic(X))


def test_pde_improves_the_surrogate_away_from_data():
    test_points = BOX.from_unit(np.random.default_rng(99).random((500, 2)))
    errors = {}
    for name, pde in (("data only", None), ("physics", LAPLACE)):
        opt, X, mean, std = fitted(pde, n=8)
        errors[name] = np.sqrt(np.mean((predict(opt, test_points, mean, std) - harmonic(test_points)) ** 2))
    assert errors["physics"] < 0.5 * errors["data only"], errors


def test_ask_is_deterministic_and_checkpoints_round_trip():
    def started():
        opt = make_optimizer("pinn-bo", BOX, 5, params=FAST, pde=LAPLACE)
        for xi in BOX.from_unit(np.random.default_rng(1).random((5, 2))):
            opt.tell(xi, -float(harmonic(xi)))
        return opt

    a, b = started(), started()
    xa, xb = a.ask(), b.ask()
    np.testing.assert_array_equal(xa, xb)
    a.tell(xa, 0.0)
    restored = started()
    restored.load_state_dict(a.state_dict())
    restored.tell(xa, 0.0)
    np.testing.assert_array_equal(a.ask(), restored.ask())


def test_different_seeds_explore_differently():
    proposals = []
    for seed in (0, 1):
        opt = make_optimizer("pinn-bo", BOX, seed, params=FAST, pde=LAPLACE)
        for xi in BOX.from_unit(np.random.default_rng(1).random((5, 2))):
            opt.tell(xi, -float(harmonic(xi)))
        proposals.append(opt.ask())
    assert not np.allclose(proposals[0], proposals[1])


def test_collocation_filter_is_honoured():
    opt = make_optimizer("pinn-bo", BOX, 0, params=FAST, pde=LAPLACE,
                         collocation_filter=lambda p: p[:, 0] > 2.0)
    assert len(opt.collocation) == FAST["collocation_points"]
    assert bool((opt.collocation[:, 0] > 2.0).all())
