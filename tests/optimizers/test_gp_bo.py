"""GP baselines: improvement without repeats, determinism, checkpoints, the alternating phases of
GP-UCB+ / EXPLOIT+, EXPLOIT's proposal against a dense grid, the repeat guard, validation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pinnbo.acquisition.search import is_duplicate
from pinnbo.optimizers import METHODS, MethodError, make_optimizer
from pinnbo.streams import derived_seed, initial_design
from pinnbo.problem import Box

BOX = Box((-2.0, -1.0), (3.0, 4.0), ("x", "y"))
FAST = {"num_restarts": 4, "raw_samples": 64, "maxiter": 30}
GP_METHODS = ["gp-ei", "gp-ucb", "gp-ucb+", "exploit+", "exploit"]


def quadratic(p: np.ndarray) -> float:
    return float((p[0] - 1.3) ** 2 + 2.0 * (p[1] - 0.7) ** 2)


def started(method, seed=0, n_init=8, f=quadratic, params=FAST):
    opt = make_optimizer(method, BOX, seed, params=params)
    for x in initial_design(BOX, n_init, seed):
        opt.tell(x, f(x))
    return opt


def test_every_method_is_registered():
    assert {"neural-bo", "neural-greedy", *GP_METHODS} <= set(METHODS)


@pytest.mark.parametrize("method", GP_METHODS)
def test_improves_on_the_initial_design_and_never_repeats(method):
    opt = started(method)
    for _ in range(10):
        x = opt.ask()
        opt.tell(x, quadratic(x))
    y = np.array(opt.y)
    assert y[8:].min() < 0.1 * y[:8].min(), (y[:8].min(), y[8:].min())
    unit = opt.evaluated_unit()
    gaps = np.max(np.abs(unit[:, None, :] - unit[None, :, :]), axis=2)
    assert gaps[~np.eye(len(unit), dtype=bool)].min() >= opt.settings.duplicate_tol


@pytest.mark.parametrize("method", ["gp-ei", "gp-ucb"])
def test_asks_are_deterministic_and_leave_the_global_rng_alone(method):
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    x = started(method, seed=4).ask()
    np.testing.assert_array_equal(x, started(method, seed=4).ask())
    torch.manual_seed(123)
    started(method, seed=4).ask()
    torch.testing.assert_close(torch.rand(3), before, rtol=0, atol=0)


@pytest.mark.parametrize("method", ["gp-ucb+", "exploit+"])
def test_plus_methods_alternate_phases_and_checkpoint_the_alternation(method):
    opt = started(method)
    phases, asks = [], []
    for _ in range(4):
        x = opt.ask()
        phases.append(opt.phase)
        asks.append(x)
        opt.tell(x, quadratic(x))
    assert phases == ["optimizer", "exploration", "optimizer", "exploration"]
    # The exploration point is the step's uniform draw, independent of the GP.
    u = opt.domain.to_unit(asks[1])
    expected = np.random.default_rng(derived_seed(0, method, 9, "exploration")).random(2)
    np.testing.assert_allclose(u, expected, rtol=0, atol=1e-12)
    # Resuming after 3 asked points (state + told data) continues with an exploration point.
    restored = started(method)
    replay = started(method)
    for x in asks[:3]:
        replay.ask()
        replay.tell(x, quadratic(x))
    state = replay.state_dict()
    restored.load_state_dict(state)
    for x in asks[:3]:
        restored.tell(x, quadratic(x))
    x_replay, x_restored = replay.ask(), restored.ask()
    assert replay.phase == restored.phase == "exploration"
    np.testing.assert_array_equal(x_replay, x_restored)
    np.testing.assert_array_equal(x_restored, asks[3])
    # Without the state, told designs are initial-design points: the alternation restarts.
    fresh = started(method)
    for x in asks[:3]:
        fresh.tell(x, quadratic(x))
    fresh.ask()
    assert fresh.phase == "optimizer"


def test_asking_twice_without_a_tell_does_not_advance_the_alternation():
    opt = started("gp-ucb+")
    first = opt.ask()
    assert opt.phase == "optimizer"
    np.testing.assert_array_equal(opt.ask(), first)
    assert opt.phase == "optimizer"


def test_exploit_proposes_the_posterior_mean_argmin():
    opt = started("exploit", params={"num_restarts": 8, "raw_samples": 256})
    x = opt.ask()
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 201), np.linspace(0, 1, 201)), -1).reshape(-1, 2)
    with torch.no_grad():
        # (N, 1, d): N one-point posteriors, never an N × N covariance.
        mean = opt.model.posterior(torch.as_tensor(grid).unsqueeze(1)).mean.reshape(-1).numpy()   # of −y
        at_x = float(opt.model.posterior(torch.as_tensor(opt.domain.to_unit(x))[None]).mean)
    best = int(np.argmax(mean))
    assert at_x >= mean[best] - 1e-6 * max(1.0, abs(mean[best]))
    np.testing.assert_allclose(opt.domain.to_unit(x), grid[best], atol=0.01)
    np.testing.assert_allclose(x, [1.3, 0.7], atol=0.3)      # and the GP has found the bowl


def test_an_evaluated_optimum_is_not_proposed_again():
    # The bowl's minimum is an evaluated design, ringed by four more: the noise-free posterior
    # mean peaks within duplicate_tol of it, so the plain argmax would repeat it.
    tol = 0.02
    centre = np.array([0.9, 0.3])
    ring = centre + 0.15 * np.array([[1, 0], [-1, 0], [0, 1], [0, -1]])

    def bowl(p):
        return float(((p - centre) ** 2 * [1.0, 2.0]).sum())

    opt = started("exploit", f=bowl, params={**FAST, "duplicate_tol": tol})
    for p in (centre, *ring):
        opt.tell(p, bowl(p))
    x = opt.ask()
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 201), np.linspace(0, 1, 201)), -1).reshape(-1, 2)
    with torch.no_grad():
        mean = opt.model.posterior(torch.as_tensor(grid).unsqueeze(1)).mean.reshape(-1).numpy()
    c = opt.domain.to_unit(centre)
    assert np.max(np.abs(grid[np.argmax(mean)] - c)) < tol          # the unguarded argmax repeats
    u = opt.domain.to_unit(x)
    assert not is_duplicate(u, opt.evaluated_unit(), tol)
    assert np.max(np.abs(u - c)) < 3 * tol                            # the new design is beside it


@pytest.mark.parametrize("method, params, field", [
    ("gp-ucb", {"beta": -1.0}, "beta"), ("gp-ei", {"beta": 4.0}, "beta"),
    ("gp-ei", {"num_restarts": 0}, "num_restarts"), ("exploit", {"raw_samples": 2, "num_restarts": 4}, "raw_samples"),
    ("gp-ucb+", {"noise_floor": 0.0}, "noise_floor"), ("exploit+", {"noise_free": "yes"}, "noise_free"),
    ("gp-ucb", {"kernel": "rbf"}, "kernel"),
])
def test_bad_parameters_name_the_field(method, params, field):
    with pytest.raises(MethodError, match=rf"method_params\.{field}\b"):
        make_optimizer(method, BOX, 0, params=params)


@pytest.mark.parametrize("method", ["gp-ucb", "exploit"])
def test_the_isotropic_kernel_improves_on_the_initial_design(method):
    opt = started(method, params={**FAST, "kernel": "isotropic"})
    for _ in range(8):
        x = opt.ask()
        assert BOX.contains(x)
        opt.tell(x, quadratic(x))
    assert opt.model.covar_module.lengthscale.numel() == 1
    y = np.array(opt.y)
    assert y[8:].min() < 0.2 * y[:8].min(), (y[:8].min(), y[8:].min())
