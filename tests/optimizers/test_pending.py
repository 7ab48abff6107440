"""Asking with designs still being evaluated (asynchronous runs): every method proposes a design
that repeats neither a told nor a pending one, its draws come from the ask index, the "+" methods
keep alternating, and the exact variance updates against their closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pinnbo.models.gp import GPPredictor, conditioned_on_pending, fit_outputs
from pinnbo.optimizers import make_optimizer
from pinnbo.optimizers.base import NOT_PROPOSED
from pinnbo.problem import Box
from pinnbo.streams import initial_design

BOX = Box((-2.0, -1.0), (3.0, 4.0), ("x", "y"))
CHEAP = {
    "gp-ei": {"num_restarts": 2, "raw_samples": 32, "maxiter": 20},
    "gp-ucb": {"num_restarts": 2, "raw_samples": 32, "maxiter": 20},
    "exploit": {"num_restarts": 2, "raw_samples": 32, "maxiter": 20},
    "neural-bo": {"hidden": [16], "initial_steps": 50, "steps_per_iteration": 5, "n_candidates": 256},
    "pinn-bo": {"initial_steps": 50, "steps_per_iteration": 5, "n_pool": 128, "top_k": 2, "refine_iterations": 5},
    "neural-greedy": {"hidden": [16], "initial_steps": 50, "steps_per_iteration": 5, "n_pool": 128, "top_k": 2,
                      "refine_iterations": 5},
    "pde-gp": {"num_restarts": 2, "raw_samples": 32, "maxiter": 20},
    "random": {},
}


def quadratic(p: np.ndarray) -> float:
    return float((p[0] - 1.3) ** 2 + 2.0 * (p[1] - 0.7) ** 2)


def started(method: str, seed: int = 0, n_init: int = 6):
    opt = make_optimizer(method, BOX, seed, params=CHEAP[method])
    for x in initial_design(BOX, n_init, seed):
        opt.tell(x, quadratic(x))
    return opt


@pytest.mark.parametrize("method", sorted(CHEAP))
def test_a_proposal_repeats_no_pending_design(method):
    opt = started(method)
    first = opt.ask()
    pending = [(first, "optimizer")]
    second = opt.ask(pending=pending)
    third = opt.ask(pending=pending + [(second, "optimizer")])
    unit = BOX.to_unit(np.stack([first, second, third]))
    gaps = np.max(np.abs(unit[:, None] - unit[None]), axis=2)[~np.eye(3, dtype=bool)]
    assert gaps.min() > 1e-4
    # The pending designs are the ask's only: the told data are as they were.
    assert opt.n_told == 6 and opt.pending == []


def test_draws_follow_the_ask_index():
    """Random search with k designs pending proposes the point a sequential run proposes k asks
    later: each ask's stream is keyed by told + pending."""
    sequential = started("random")
    expected = []
    for _ in range(3):
        x = sequential.ask()
        expected.append(x)
        sequential.tell(x, quadratic(x))
    asynchronous = started("random")
    pending = []
    for x in expected:
        got = asynchronous.ask(pending=pending)
        assert np.array_equal(got, x)
        pending.append((got, "optimizer"))


def test_plus_methods_alternate_with_pending_asks():
    opt = make_optimizer("gp-ucb+", BOX, 0, params=CHEAP["gp-ucb"])
    for x in initial_design(BOX, 6, 0):
        opt.tell(x, quadratic(x), proposed=False)
    phases, pending = [], []
    for _ in range(4):
        x = opt.ask(pending=pending)
        phases.append(opt.phase)
        pending.append((x, opt.phase))
    assert phases == ["optimizer", "exploration", "optimizer", "exploration"]
    # Initial-design designs pending do not count as asked.
    assert opt.ask(pending=[(pending[0][0], "initial")]) is not None and opt.phase == "optimizer"
    # Told in any order: two asked designs told, the next ask is an acquisition point again.
    for x, phase in reversed(pending[2:]):
        opt.tell(x, quadratic(x), proposed=phase not in NOT_PROPOSED)
    opt.ask(pending=pending[:2])
    assert opt.phase == "optimizer"


def test_gp_conditioned_on_pending_is_the_rank_one_update():
    """One pending design p: the mean is unchanged and σ²_new(x) = σ²(x) − k(x, p)² / (σ²(p) + σ_n²),
    the posterior covariance k(x, p) computed by hand from the kernel and the data."""
    rng = np.random.default_rng(3)
    X = rng.random((10, 2))
    y = np.sin(5 * X[:, 0]) + X[:, 1]
    model = fit_outputs(X, y[:, None], noise_free=False, noise_floor=0.0, start=None)
    p = np.array([[0.4, 0.6]])
    x = torch.as_tensor(rng.random((6, 2)))
    before, after = GPPredictor(model), GPPredictor(conditioned_on_pending(model, p))
    mean0, std0, _ = before(x)
    mean1, std1, _ = after(x)
    assert np.allclose(mean1, mean0, atol=1e-10)
    with torch.no_grad():
        T = torch.as_tensor(X)
        P = torch.as_tensor(p)
        kern = model.covar_module
        K = kern(T).to_dense() + model.likelihood.noise * torch.eye(10, dtype=T.dtype)
        kxp = kern(x, P).to_dense()[:, 0] - kern(x, T).to_dense() @ torch.linalg.solve(K, kern(T, P).to_dense())[:, 0]
        vp = kern(P, P).to_dense()[0, 0] - (kern(P, T).to_dense() @ torch.linalg.solve(K, kern(T, P).to_dense()))[0, 0]
        scale = float(model.outcome_transform.stdvs.reshape(-1)[0])
        expected = std0[:, 0] ** 2 - scale ** 2 * (kxp ** 2 / (vp + model.likelihood.noise[0])).numpy()
    assert np.allclose(std1[:, 0] ** 2, expected, rtol=1e-8, atol=1e-12)


def test_ntk_variance_given_pending_is_the_sherman_morrison_update():
    opt = started("neural-bo")
    opt.ask()   # trains the network and brings U up to date
    net = opt.net
    z = torch.as_tensor(np.random.default_rng(0).uniform(-5, 5, (5, 2)))
    zp = torch.as_tensor([[0.5, -1.0]], dtype=torch.float64)
    _, var0 = net.mean_and_variance(z)
    _, var1 = net.mean_and_variance(z, zp)
    g, gp = net.features(z), net.features(zp)[0]
    inverse = net.precision.inverse
    # U' = U + g_p g_pᵀ: σ'² = σ² − λ (gᵀU⁻¹g_p)² / (1 + g_pᵀU⁻¹g_p)
    expected = var0 - net.regularization * (g @ inverse @ gp) ** 2 / (1 + gp @ inverse @ gp)
    assert torch.allclose(var1, expected.clamp_min(0), rtol=1e-6, atol=1e-12)
    _, var_at = net.mean_and_variance(zp, zp)
    assert float(var_at[0]) < float(net.mean_and_variance(zp)[1][0])
