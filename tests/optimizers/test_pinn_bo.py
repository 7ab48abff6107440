"""PINN-BO as a method: determinism and checkpoints, TuRBO's trust region from five design variables
up, the residual GP in the Thompson sample, K draws, the PDE in the last-layer posterior, and the
defaults that change with the dimension."""

from __future__ import annotations

import io

import numpy as np
import pytest
import sympy as sp
import torch

from pinnbo.errors import MethodError
from pinnbo.models import residual_gp
from pinnbo.optimizers import make_optimizer
from pinnbo.pde import PDE
from pinnbo.problem import Box
from tests.models.test_pinn import bowl_problem

FAST = {"hidden": [32, 32], "initial_steps": 400, "steps_per_iteration": 10, "collocation_points": 256,
        "collocation_batch": 128, "n_pool": 256, "top_k": 4, "refine_iterations": 10}
x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACE = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
BOX = Box((1.0, -2.0), (3.0, 5.0), ("x", "y"))   # deliberately not symmetric about 0
NO_NETWORK_SPREAD = 1e-12                         # exploration_scale that leaves the residual GP's path alone


def harmonic(p: np.ndarray) -> np.ndarray:
    """Re (x + i y)³ / 10 = (x³ − 3 x y²)/10: ∇² = 0."""
    return (p[..., 0] ** 3 - 3 * p[..., 0] * p[..., 1] ** 2) / 10


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


# -- the maximum principle: the faces only, until the data say otherwise ---------------------------------
def test_with_laplaces_equation_the_proposals_are_on_the_faces():
    opt = make_optimizer("pinn-bo", BOX, 0, params=FAST, pde=LAPLACE)
    assert opt.boundary_minimum
    for xi in BOX.from_unit(np.random.default_rng(2).random((6, 2))):
        opt.tell(xi, -float(harmonic(xi)))
    for _ in range(2):
        u = BOX.to_unit(opt.ask()[None, :])[0]
        assert np.min(np.minimum(u, 1 - u)) < 1e-12
        opt.tell(BOX.from_unit(u[None, :])[0], -float(harmonic(BOX.from_unit(u[None, :])[0])))
    # Helmholtz's equation has no maximum principle: the whole box
    helmholtz = make_optimizer("pinn-bo", BOX, 0, params=FAST, pde=PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T))
    assert not helmholtz.boundary_minimum


def test_the_residual_gp_sits_out_while_the_search_is_on_the_faces():
    """On the faces the sample is the network's alone; once four face designs and a better interior
    one say the principle does not hold, the search and the residual GP take the whole box again."""
    opt = make_optimizer("pinn-bo", BOX, 0, params=FAST, pde=LAPLACE)
    for xi in BOX.from_unit(np.random.default_rng(2).random((6, 2))):
        opt.tell(xi, -float(harmonic(xi)))
    opt.tell(opt.ask(), 0.0)
    assert opt._residual_fit is None
    faces = BOX.from_unit(np.array([[0.0, 0.3], [1.0, 0.6], [0.4, 0.0], [0.7, 1.0]]))
    for xi in faces:
        opt.tell(xi, 5.0)
    opt.tell(BOX.from_unit(np.array([[0.5, 0.5]]))[0], -10.0)      # an interior design, the best
    opt.ask()
    assert opt._residual_fit is not None and opt._residual_fit[0] == opt.n_told
    # the default without a PDE's principle is unchanged: Helmholtz's sample has its residual GP
    helmholtz = make_optimizer("pinn-bo", BOX, 0, params=FAST, pde=PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T))
    for xi in BOX.from_unit(np.random.default_rng(2).random((6, 2))):
        helmholtz.tell(xi, -float(harmonic(xi)))
    helmholtz.ask()
    assert helmholtz._residual_fit is not None


# -- trust region (TuRBO's rule, from five design variables up) ----------------------------------------
def test_below_five_design_variables_the_whole_box_is_searched():
    opt = make_optimizer("pinn-bo", BOX, 2, params=FAST, pde=LAPLACE)
    for xi in BOX.from_unit(np.random.default_rng(3).random((6, 2))):
        opt.tell(xi, -float(harmonic(xi)))
    opt.ask()
    assert opt.trust is None


def test_the_trust_region_is_on_by_default_in_ten_dimensions():
    box = Box((-5.0,) * 10, (5.0,) * 10)
    opt = make_optimizer("pinn-bo", box, 0, params=FAST)
    X = box.from_unit(np.random.default_rng(0).random((12, 10)))
    for xi in X:
        opt.tell(xi, float(np.sum(xi ** 2)))
    centre = box.to_unit(X[np.argmin(np.sum(X ** 2, axis=1))][None, :])[0]
    for step in range(3):
        x = opt.ask()
        assert opt.trust is not None and opt.trust.length == 0.8
        assert np.all(np.abs(box.to_unit(x[None, :])[0] - centre) <= 0.4 + 1e-12)
        opt.tell(x, float(np.sum(X ** 2, axis=1).max()) + 1.0)    # a failure: the centre stays
    restored = make_optimizer("pinn-bo", box, 0, params=FAST)
    for xi, yi in zip(opt.X, opt.y):
        restored.tell(xi, yi)
    restored.load_state_dict(opt.state_dict())
    np.testing.assert_array_equal(opt.ask(), restored.ask())
    assert restored.trust.failures == 3


@pytest.mark.parametrize("keep_checkpoint", [True, False])
def test_a_resumed_run_replays_the_trust_region_exactly(tmp_path, keep_checkpoint):
    """5-D (the region is on): stop after 15 evaluations, resume to 22 from the checkpoint or by
    replaying the log alone; evaluations.jsonl equals the uninterrupted run's, byte for byte."""
    from pinnbo import Problem, optimize

    box = Box((-1.0,) * 5, (2.0,) * 5)
    problem = Problem("sphere5", box, lambda p: float(np.sum((np.asarray(p) - 0.4) ** 2)), "minimize")
    params = {**FAST, "initial_steps": 50}
    optimize(problem, "pinn-bo", budget=22, initial_points=8, seed=1, method_params=params, output=tmp_path / "whole")
    optimize(problem, "pinn-bo", budget=15, initial_points=8, seed=1, method_params=params, output=tmp_path / "cut")
    if not keep_checkpoint:
        (tmp_path / "cut" / "checkpoint.pt").unlink()
    optimize(problem, "pinn-bo", budget=22, initial_points=8, seed=1, method_params=params, output=tmp_path / "cut",
             resume=True)
    whole = (tmp_path / "whole" / "evaluations.jsonl").read_bytes()
    assert (tmp_path / "cut" / "evaluations.jsonl").read_bytes() == whole
    state = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=True)["state"]["trust_region"]
    assert state["seen"] == 21                               # counted every told value but the last


# -- the residual GP (``residual_gp``) ---------------------------------------------------------------------
LINE = Box((0.0,), (1.0,), ("x",))


def wiggly(p: np.ndarray) -> np.ndarray:
    """Five oscillations on [0, 1] over a slope: more than a 16-unit network learns in 30 steps."""
    return np.sin(10 * np.pi * p[..., 0]) + 2 * p[..., 0]


def told_on_the_line(residual: bool = True, seed: int = 0, n: int = 80, **params):
    params = {**FAST, "hidden": [16, 16], "initial_steps": 30, "residual_gp": residual, **params}
    opt = make_optimizer("pinn-bo", LINE, seed, params=params)
    X = LINE.from_unit(np.random.default_rng(3).random((n, 1)))
    for xi in X:
        opt.tell(xi, float(wiggly(xi)))
    return opt, X


def standardised(y: np.ndarray) -> np.ndarray:
    return (y - y.mean()) / y.std()


def test_the_residual_gp_makes_the_sample_honour_the_data():
    """Without it the PINN misses the observations (it cannot follow five oscillations in 30
    steps); the GP of the residuals closes the gap at the observed designs, its path alone and the
    whole Thompson sample with it, because the network's exploration term is scaled by ρ, which
    vanishes there."""
    misses = {}
    for residual, scale in ((False, NO_NETWORK_SPREAD), (True, NO_NETWORK_SPREAD), (True, "auto")):
        opt, X = told_on_the_line(residual, exploration_scale=scale)
        _, y = opt.observed()
        sample = opt.acquisition_sample(X, y)
        with torch.no_grad():
            values = sample(torch.as_tensor(LINE.to_unit(X))).numpy()
        misses[residual, scale] = np.abs(values - standardised(y)).mean()
    assert misses[False, NO_NETWORK_SPREAD] > 0.3, misses
    assert misses[True, NO_NETWORK_SPREAD] < 0.1 * misses[False, NO_NETWORK_SPREAD], misses
    assert misses[True, "auto"] < 0.1 * misses[False, NO_NETWORK_SPREAD], misses


def test_the_residual_sample_is_a_fresh_draw_far_from_data_and_differentiable():
    """Two seeds, the same data: the samples agree at the data, which the residual GP's paths
    interpolate, and differ between them by more than anywhere at the data; the sample has a
    gradient wherever it is evaluated (the refinement needs one)."""
    samples = []
    for seed in (0, 1):
        opt, X = told_on_the_line(seed=seed, exploration_scale=NO_NETWORK_SPREAD)   # the GP's path alone
        samples.append(opt.acquisition_sample(*opt.observed()))
    between = torch.linspace(0, 1, 401, dtype=torch.float64)[:, None]
    at_data = torch.as_tensor(LINE.to_unit(X))
    with torch.no_grad():
        gap = (samples[0](between) - samples[1](between)).abs()
        agreement = (samples[0](at_data) - samples[1](at_data)).abs()
    assert agreement.mean() < 0.01 and gap.max() > 2.0 * agreement.max()
    u = torch.tensor([[0.37], [0.81]], dtype=torch.float64, requires_grad=True)
    samples[0](u).sum().backward()
    assert torch.all(torch.isfinite(u.grad)) and torch.any(u.grad != 0)


def test_a_residual_gp_ask_is_deterministic_and_checkpointed():
    a, _ = told_on_the_line()
    b, _ = told_on_the_line()
    xa = a.ask()
    np.testing.assert_array_equal(xa, b.ask())
    a.tell(xa, float(wiggly(xa)))
    restored, _ = told_on_the_line()
    restored.load_state_dict(a.state_dict())
    restored.tell(xa, float(wiggly(xa)))
    assert len(restored._residual_fits) == 1
    np.testing.assert_array_equal(a.ask(), restored.ask())


def test_the_residual_gp_does_not_follow_a_one_point_spike():
    """The heat plate's failure in small: one observation 8 below its neighbours. The leave-one-out
    screen leaves it out of the residual GP (one outlier of 41), the sample stays near the function
    there (the data's standardised value, not the spike's −5.7), and asks go on."""
    spike_x = np.array([0.55])
    opt, X = told_on_the_line(n=40, exploration_scale=NO_NETWORK_SPREAD)
    opt.tell(spike_x, float(wiggly(spike_x)) - 8.0)
    Xo, yo = opt.observed()
    sample = opt.acquisition_sample(Xo, yo)
    assert opt.residual_outliers == 1
    with torch.no_grad():
        value = sample(torch.as_tensor(LINE.to_unit(spike_x[None]))).item()
    assert (yo[-1] - yo.mean()) / yo.std() < -5
    assert abs(value - (float(wiggly(spike_x)) - yo.mean()) / yo.std()) < 1.0, value
    assert np.all(np.isfinite(opt.ask()))


def test_pinn_bo_remembers_its_residual_outliers_through_a_checkpoint(monkeypatch):
    """A spike 12 below the wiggly line at one of 40 designs: the first ask's screen leaves it out
    and records its index with the fit; an optimiser restored from that checkpoint (saved and loaded
    as ``pinnbo run`` does) starts its screen from it, with one GP fit where the screen from scratch
    needs two, and proposes what the original proposes."""
    def spiked():
        opt = make_optimizer("pinn-bo", LINE, 0, params={**FAST, "hidden": [16, 16], "initial_steps": 30})
        X = LINE.from_unit(np.random.default_rng(3).random((40, 1)))
        for i, xi in enumerate(X):
            opt.tell(xi, float(wiggly(xi)) - (12.0 if i == 17 else 0.0))
        return opt

    fits = []
    original = residual_gp.fit_outputs
    monkeypatch.setattr(residual_gp, "fit_outputs", lambda *a, **k: fits.append(1) or original(*a, **k))
    a = spiked()
    xa = a.ask()
    assert a.residual_outliers == 1 and len(fits) == 2
    assert a._residual_fits[-1][1]["outlier_indices"].tolist() == [17]
    a.tell(xa, float(wiggly(xa)))
    buffer = io.BytesIO()
    torch.save(a.state_dict(), buffer)
    buffer.seek(0)
    restored = spiked()
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    restored.tell(xa, float(wiggly(xa)))
    fits.clear()
    x1 = a.ask()
    assert a.residual_outliers == 1 and len(fits) == 1
    np.testing.assert_array_equal(x1, restored.ask())


def test_k_thompson_draws_give_the_pointwise_most_optimistic_sample_and_still_honour_the_data():
    """``thompson_draws`` K = 4 on the line: four δ columns; the sample, the pointwise minimum of
    the four draws, lies well below a one-draw sample over a grid (the minimum of four draws is
    about one sd below their mean in the gaps), and at the observed designs, where ρ and the GP's
    sd vanish, it still equals the data, as one draw does."""
    opt, X = told_on_the_line(n=15)      # gaps wide enough for the draws to differ
    assert opt.exploration() == (10.0, 4)        # the default on the line (no trust region)
    _, y = opt.observed()
    sample = opt.acquisition_sample(X, y)
    grid = torch.linspace(0, 1, 401, dtype=torch.float64)[:, None]
    with torch.no_grad():
        many = sample(grid)
        at_data = sample(torch.as_tensor(LINE.to_unit(X))).numpy()
    one, _ = told_on_the_line(n=15, thompson_draws=1)
    one_sample = one.acquisition_sample(X, y)
    with torch.no_grad():
        single = one_sample(grid)
    assert np.abs(at_data - standardised(y)).mean() < 0.1      # the network alone misses by ~0.8 here
    assert many.mean() < single.mean() - 0.2, (many.mean(), single.mean())
    with pytest.raises(MethodError, match="thompson_draws"):
        make_optimizer("pinn-bo", LINE, 0, params={"thompson_draws": -1})


# -- what changes with the dimension -------------------------------------------------------------------
@pytest.mark.parametrize("dim, beta", [(2, 0.1), (4, 0.1), (5, 1.0), (10, 1.0)])
def test_the_bias_scale_is_one_from_five_design_variables_up(dim, beta):
    opt = make_optimizer("pinn-bo", Box.cube(-1.0, 1.0, dim), 0, params=FAST)
    assert all(layer.bias_scale == beta for layer in (*opt.surrogate.model.hidden, opt.surrogate.model.out))


@pytest.mark.parametrize("dim, params, steps", [(4, {}, 200), (5, {"initial_max_steps": 200}, 200), (5, {}, None)])
def test_the_first_fit_goes_on_from_five_design_variables_up_unless_capped(dim, params, steps):
    box, pde, X, y = bowl_problem(dim)
    opt = make_optimizer("pinn-bo", box, 0, params={**FAST, "initial_steps": 200, **params}, pde=pde)
    for xi, yi in zip(X, y):
        opt.tell(xi, float(yi))
    opt.ask()
    if steps is None:
        assert opt.surrogate.first_fit_steps > 200
    else:
        assert opt.surrogate.first_fit_steps == steps


@pytest.mark.parametrize("dim, shrinks", [(5, True), (4, False)])
def test_the_pde_shrinks_the_thompson_spread_from_five_design_variables_up(dim, shrinks):
    """64 draws of the last layer's weights with and without the PDE's part of U: it narrows them
    from five design variables up; below, the sample is the data's alone."""
    box, pde, X, y = bowl_problem(dim)
    opt = make_optimizer("pinn-bo", box, 0, params={**FAST, "initial_steps": 100, "initial_max_steps": 100,
                                                     "thompson_draws": 64, "exploration_scale": 1.0}, pde=pde)
    for xi, yi in zip(X, y):
        opt.tell(xi, float(yi))
    mean, std = opt.surrogate.fit(X, y, torch.Generator().manual_seed(0))
    Z = opt.surrogate.normalise(torch.as_tensor(X))
    test = torch.rand(500, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 2 - 1
    spreads = {}
    for name, high in (("setting", opt.high_dimension), ("data", False)):
        opt.high_dimension = high
        delta = opt._last_layer_sample(Z, mean, std)                                  # (m, 64)
        spreads[name] = float((opt.surrogate.model.features(test) @ delta).std().detach())
    if shrinks:
        assert spreads["setting"] < 0.8 * spreads["data"], spreads
    else:
        assert spreads["setting"] == spreads["data"], spreads


@pytest.mark.parametrize("dim, params, expected", [
    (4, {}, (10.0, 4)), (5, {}, (1.0, 1)), (10, {}, (1.0, 1)),
    (5, {"exploration_scale": 3.0}, (3.0, 1)), (5, {"thompson_draws": 2}, (1.0, 2)),
    (2, {"exploration_scale": 1.0, "thompson_draws": 1}, (1.0, 1)),
])
def test_where_the_trust_region_applies_the_sample_is_one_draw_at_nu_one_unless_given(dim, params, expected):
    """(ν, K) = (1, 1), TuRBO's plain Thompson sample, where the trust region applies (from 5
    design variables up); (10, 4) where it does not; a value > 0 given for either wins."""
    box, pde, X, y = bowl_problem(dim)

    def fitted(**p):
        opt = make_optimizer("pinn-bo", box, 0, params={**FAST, "initial_steps": 30, "initial_max_steps": 30, **p},
                             pde=pde)
        for xi, yi in zip(X, y):
            opt.tell(xi, float(yi))
        return opt, *opt.surrogate.fit(X, y, torch.Generator().manual_seed(0))

    opt, mean, std = fitted(**params)
    assert opt.exploration() == expected
    Z = opt.surrogate.normalise(torch.as_tensor(X))
    delta = opt._last_layer_sample(Z, mean, std)
    assert delta.shape == (opt.surrogate.model.features(Z).shape[1], expected[1])
    # the draws are ν times the ν = 1 draws from the same stream, whatever ν
    unit = fitted(**{**params, "exploration_scale": 1.0})[0]
    torch.testing.assert_close(delta, expected[0] * unit._last_layer_sample(Z, mean, std))
    # and the residual GP draws as many paths as there are draws
    residual = opt._residual_sample(X, (y - mean) / std, Z)
    with torch.no_grad():
        correction, _ = residual(torch.rand(7, dim, dtype=torch.float64))
    assert correction.shape == (7, expected[1])


def test_the_path_weights_are_standard_normal_and_stratified_over_the_draws():
    """Latin-hypercube normals: each weight's K values lie one in each K-quantile of N(0, 1), so
    the mean of the K draws varies far less than that of K independent normals (1/K); over many
    weights they are standard normal."""
    from pinnbo.optimizers.pinn_bo import _latin_hypercube_normals

    torch.manual_seed(0)
    w = _latin_hypercube_normals(torch.Size([4, 20000]))
    quantile = torch.floor(4.0 * torch.special.ndtr(w)).sort(dim=0).values
    assert torch.equal(quantile, torch.arange(4.0, dtype=torch.float64)[:, None].expand(4, 20000))
    assert abs(float(w.mean())) < 0.01 and abs(float(w.var()) - 1.0) < 0.03
    assert float(w.mean(dim=0).var()) < 0.25 / 4
