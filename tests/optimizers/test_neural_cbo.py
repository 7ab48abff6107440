"""Neural-CBO: EI by hand and its σ = 0 guard, a constrained optimum found, feasibility found from an
all-infeasible start, known constraints never violated, determinism and checkpoints, the physics
(PINN) objective, and the refusal of constraint-blind methods.

The analytic problem: minimise x + y on [0, 1]² s.t. c = 0.5 − x·y <= 0, so x* = y* = √0.5 and
f* = √2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from pinnbo.acquisition import is_duplicate
from pinnbo.optimizers import METHODS, MethodError, make_optimizer
from pinnbo.optimizers.base import initial_design
from pinnbo.optimizers.neural_cbo import expected_improvement, log_expected_improvement, log_probability_of_feasibility
from pinnbo.optimizers.pinn_bo import PINNSurrogate
from pinnbo.pde import PDE
from pinnbo.problem import Box, Constraint
from tests.optimizers.constrained import PRODUCT, UNIT, disc, product, run
from tests.optimizers.constrained import started as started_with
from tests.survival import CallLog

FAST = {"hidden": [32], "initial_steps": 200, "steps_per_iteration": 30, "n_candidates": 512,
        "local_candidates": 64}


def started(f=product, constraints=PRODUCT, params=FAST, seed=0, n_init=6, **kw):
    return started_with("neural-cbo", f, constraints, params, seed, n_init, **kw)


# -- the acquisition -----------------------------------------------------------------------------------
def test_expected_improvement_matches_a_hand_computation():
    mu, sigma, best = 0.2, 0.5, 0.5
    z = (best - mu) / sigma                                        # 0.6
    Phi = 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    phi = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    hand = sigma * (z * Phi + phi)             # Φ(0.6) = 0.72575, φ(0.6) = 0.33322 (tables)
    assert expected_improvement(np.array([mu]), np.array([sigma]), best)[0] == pytest.approx(hand, rel=1e-12)
    assert hand == pytest.approx(0.5 * (0.6 * 0.72575 + 0.33322), abs=1e-5)
    # below the incumbent EI is small but positive, and its log stays finite where EI underflows
    z = np.array([-1.5, 0.0, 2.0, -3.0])
    ei = expected_improvement(-z, np.ones(4), 0.0)
    np.testing.assert_allclose(np.log(ei), log_expected_improvement(-z, np.ones(4), 0.0), rtol=1e-10)
    far = log_expected_improvement(np.array([40.0]), np.array([1.0]), 0.0)[0]
    assert expected_improvement(np.array([40.0]), np.array([1.0]), 0.0)[0] == 0.0
    # h(z) ≈ φ(z)/z² (1 − 3/z²) for z → −∞
    assert far == pytest.approx(-0.5 * 1600 - 0.5 * math.log(2 * math.pi) - 2 * math.log(40) + math.log(1 - 3 / 1600),
                                abs=1e-4)


def test_zero_sigma_guard():
    mu = np.array([0.3, 0.7, 0.5])
    np.testing.assert_array_equal(expected_improvement(mu, np.zeros(3), 0.5), [0.2, 0.0, 0.0])
    np.testing.assert_allclose(log_expected_improvement(mu, np.zeros(3), 0.5), [math.log(0.2), -np.inf, -np.inf])
    # exact constraints: probability of feasibility 1 or 0
    np.testing.assert_array_equal(log_probability_of_feasibility(np.array([[-1.0], [0.0], [0.1]]), np.zeros((3, 1))),
                                  [0.0, 0.0, -np.inf])


# -- the optimiser -------------------------------------------------------------------------------------
def test_finds_the_constrained_optimum_without_repeats():
    opt = run(started(), product, 16)
    X, y, C = opt.observed_constrained()
    feasible = C[:, 0] <= 0
    assert y[feasible].min() < math.sqrt(2) + 0.03, y[feasible].min()
    unit = opt.evaluated_unit()
    assert not any(is_duplicate(u, np.delete(unit, i, axis=0), opt.settings.duplicate_tol) for i, u in enumerate(unit))


def test_the_lbfgs_polish_lowers_the_training_loss():
    """Adam at a fixed learning rate stalls; the polish converges further on the same loss."""
    import torch

    from pinnbo.optimizers.base import torch_generator
    from pinnbo.optimizers.neural_bo import NTKNetwork
    from pinnbo.optimizers.neural_cbo import NeuralCBOSettings

    Z = torch.as_tensor(np.random.default_rng(0).uniform(-1, 1, (40, 2)))
    y = torch.sin(3 * Z[:, 0]) * Z[:, 1] + Z[:, 0] ** 2
    losses = []
    for polish in (0, 50):
        s = NeuralCBOSettings(hidden=(32,), initial_steps=200, polish_iterations=polish)
        net = NTKNetwork(2, s, torch_generator(0, "polish-test"))
        net.fit(Z, y)
        with torch.no_grad():
            prior = sum((p - net.theta0[n]).pow(2).sum() for n, p in net.model.named_parameters())
            losses.append(float(0.5 * (net.model(Z) - y).pow(2).sum() + 0.5 * s.regularization * prior))
    assert losses[1] < 0.5 * losses[0], losses


def test_the_power_warp_is_monotone_and_compresses_a_heavy_tail():
    from pinnbo.optimizers.neural_cbo import _power_warp

    y = np.exp(np.random.default_rng(1).normal(0.0, 1.5, 60))      # log-normal: heavy right tail
    w = _power_warp(y)
    order = np.argsort(y)
    assert np.all(np.diff(w[order]) > 0)                              # minimising w minimises y
    z = (y - y.mean()) / y.std()
    skew = lambda v: float(np.mean(((v - v.mean()) / v.std()) ** 3))   # noqa: E731
    assert abs(skew(w)) < 0.5 * skew(z)
    # the low end is spread out: the gap between the two smallest values grows relative to the range
    lo = np.sort(w)
    zz = np.sort(z)
    assert (lo[1] - lo[0]) / np.ptp(w) > (zz[1] - zz[0]) / np.ptp(z)
    opt = started(params={**FAST, "objective_warp": "power"})
    assert opt.ask().shape == (2,)


def test_the_refinement_keeps_the_lcb_mask_and_never_lowers_ei():
    opt = started(params={**FAST, "refine_rounds": 6, "refine_candidates": 32})
    refined = 0
    for _ in range(6):
        x = opt.ask()
        if opt.last_mode == "ei" and opt.last_refinement is not None:
            r = opt.last_refinement
            assert r["log_ei"] >= r["pool_log_ei"]
            refined += r["log_ei"] > r["pool_log_ei"]
            mu, sigma = opt._constraint_moments(opt.domain.to_unit(x[None]), r["scalings"]["constraints"])
            assert np.all(mu - opt.settings.constraint_beta * sigma <= 0)
        opt.tell(x, *product(x))
    assert refined >= 1, "the refinement never improved on the pool's winner"


def test_finds_a_feasible_design_when_no_initial_point_is_feasible():
    opt = started(disc, (Constraint("disc"),), n_init=8)
    assert np.all(np.stack(opt.C)[:, 0] > 0), "the test needs an all-infeasible initial design"
    modes = []
    for _ in range(20):
        x = opt.ask()
        modes.append(opt.last_mode)
        opt.tell(x, *disc(x))
        if disc(x)[1][0] <= 0:
            break
    assert disc(x)[1][0] <= 0, "no feasible design found"
    assert modes[0] == "feasibility"


def test_known_constraints_are_never_violated():
    # the black-box product constraint plus a known one, x <= 0.65 (the unconstrained optimum of the
    # black-box problem, x = 0.707, violates it)
    known = Constraint("left", function=lambda X: X[:, 0] - 0.65)
    constraints = (Constraint("product"), known)

    def f(p):
        value, c = product(p)
        return value, np.array([c[0], p[0] - 0.65])

    opt = run(started(f, constraints), f, 10)
    asked = np.stack(opt.X[6:])
    assert np.all(asked[:, 0] <= 0.65), asked[:, 0].max()
    # only known constraints: no network for them, still never violated
    only = run(started(f=lambda p: (float(p[0] + p[1]), np.array([p[0] - 0.65])), constraints=(known,)),
               lambda p: (float(p[0] + p[1]), np.array([p[0] - 0.65])), 4)
    assert len(only.constraint_nets) == 0
    assert np.all(np.stack(only.X[6:])[:, 0] <= 0.65)


def test_works_without_constraints():
    def f(p):
        return float((p[0] - 0.3) ** 2 + (p[1] - 0.6) ** 2), None
    opt = make_optimizer("neural-cbo", UNIT, 0, params=FAST)
    for x in initial_design(UNIT, 6, 0):
        opt.tell(x, f(x)[0])
    first_best = min(opt.y)
    for _ in range(8):
        x = opt.ask()
        opt.tell(x, f(x)[0])
    assert opt.last_mode == "ei"
    assert min(opt.y) < 0.5 * first_best


@pytest.mark.parametrize("features, residual_gp", [("current", "none"), ("initial", "none"), ("current", "mean"),
                                                        ("current", "full")])
def test_ask_is_deterministic_and_checkpoints_round_trip(features, residual_gp):
    params = {**FAST, "features": features, "residual_gp": residual_gp}

    def started(seed=0):
        opt = make_optimizer("neural-cbo", UNIT, seed, params=params, constraints=PRODUCT)
        for x in initial_design(UNIT, 6, seed):
            opt.tell(x, *product(x))
        return opt

    a, b = started(), started()
    xa = a.ask()
    np.testing.assert_array_equal(xa, b.ask())
    np.testing.assert_array_equal(xa, a.ask())      # asking again without a tell: the same design
    a.tell(xa, *product(xa))
    restored = started()
    restored.load_state_dict(a.state_dict())
    restored.tell(xa, *product(xa))
    xa2 = a.ask()
    np.testing.assert_array_equal(xa2, restored.ask())
    # a checkpoint taken right after an ask replays that ask
    again = started()
    again.tell(xa, *product(xa))
    again.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(xa2, again.ask())
    assert not np.allclose(started(seed=1).ask(), xa)


def test_failed_evaluations_are_skipped():
    opt = started()
    x = opt.ask()
    opt.tell(x, None)
    x2 = opt.ask()
    assert not np.allclose(x, x2)
    opt.tell(x2, 1.0, None)     # no constraint values: unusable, recorded as failed
    assert opt.y[-1] is None
    opt.ask()


# -- physics -------------------------------------------------------------------------------------------
xs, ys = sp.symbols("x y")
T = sp.Function("T")(xs, ys)
LAPLACE = PDE(T.diff(xs, 2) + T.diff(ys, 2), rhs=0)
BOX = Box((1.0, -2.0), (3.0, 5.0), ("x", "y"))
PHYSICS = {**FAST, "physics": True, "pinn_hidden": [16, 16], "pinn_initial_steps": 150,
           "pinn_steps_per_iteration": 10, "collocation_points": 128, "collocation_batch": 64}


def harmonic(p: np.ndarray) -> tuple[float, np.ndarray]:
    """Re (x + i y)³ / 10 (∇² = 0), inside an ellipse."""
    return (float((p[0] ** 3 - 3 * p[0] * p[1] ** 2) / 10),
            np.array([(p[0] - 2.0) ** 2 + (p[1] - 1.5) ** 2 / 9.0 - 1.0]))


@pytest.mark.parametrize("residual_gp", ["none", "full"])
def test_physics_trains_the_pinn_objective_on_the_pde(residual_gp):
    params = {**PHYSICS, "residual_gp": residual_gp}
    opt = make_optimizer("neural-cbo", BOX, 0, params=params, pde=LAPLACE, constraints=(Constraint("ellipse"),))
    assert isinstance(opt.objective, PINNSurrogate) and len(opt.constraint_nets) == 1
    for x in initial_design(BOX, 6, 0):
        opt.tell(x, *harmonic(x))
    X, y, _ = opt.observed_constrained()
    mean, std = float(np.mean(y)), float(np.std(y))

    def pde_residual():
        r = opt.objective.residual(opt.objective.physical_model(mean, std), opt.objective.collocation)
        return float((r / std).pow(2).mean())

    before = pde_residual()
    x = opt.ask()
    assert pde_residual() < 0.2 * before
    assert opt.objective.fitted and opt.objective.residual_scale is not None
    if residual_gp == "full":    # the PINN's mean + the residual GP's interpolates the observations
        mu, _ = opt._objective_moments(opt.domain.to_unit(X), X)
        assert np.abs(mean + std * mu - y).max() < 1e-2 * std
    # deterministic and checkpointed like the NTK networks
    other = make_optimizer("neural-cbo", BOX, 0, params=params, pde=LAPLACE, constraints=(Constraint("ellipse"),))
    for xi in initial_design(BOX, 6, 0):
        other.tell(xi, *harmonic(xi))
    np.testing.assert_array_equal(x, other.ask())
    opt.tell(x, *harmonic(x))
    other.tell(x, *harmonic(x))
    restored = make_optimizer("neural-cbo", BOX, 0, params=params, pde=LAPLACE, constraints=(Constraint("ellipse"),))
    for xi in [*initial_design(BOX, 6, 0), x]:
        restored.tell(xi, *harmonic(xi))
    restored.load_state_dict(opt.state_dict())
    np.testing.assert_array_equal(opt.ask(), restored.ask())


def test_physics_needs_a_pde():
    with pytest.raises(MethodError, match=r"method_params\.physics: the problem declares no PDE"):
        make_optimizer("neural-cbo", BOX, 0, params={"physics": True}, constraints=PRODUCT)


# -- registration and validation ---------------------------------------------------------------------
def test_registered_and_constraint_blind_methods_refused():
    assert METHODS["neural-cbo"].handles_constraints and METHODS["gp-cei"].handles_constraints
    for method in ("neural-bo", "pinn-bo", "gp-ei"):
        with pytest.raises(MethodError, match=r"ignores constraints.*gp-cei.*neural-cbo"):
            make_optimizer(method, UNIT, 0, constraints=PRODUCT)


@pytest.mark.parametrize("params, field", [
    ({"constraint_beta": -1.0}, "constraint_beta"), ({"features": "final"}, "features"),
    ({"pinn_hidden": []}, "pinn_hidden"), ({"physics": 1}, "physics"), ({"betta": 1}, "betta"),
])
def test_bad_parameters_name_the_field(params, field):
    with pytest.raises(MethodError, match=rf"method_params\.{field}\b"):
        make_optimizer("neural-cbo", UNIT, 0, params=params, constraints=PRODUCT)


def test_smoke_parameters_are_valid():
    opt = run(started(params=METHODS["neural-cbo"].SMOKE_PARAMS), product, 2)
    assert len(opt.X) == 8


def resumed_run_is_identical(tmp_path, method, params):
    """A run stopped after 7 evaluations and resumed writes the log of an uninterrupted run, byte for
    byte, without repeating an oracle call (checkpoint + deterministic re-asks, pinnbo.run)."""
    from pinnbo.problem import Problem
    from pinnbo.run import RunSettings
    from pinnbo.run import run as run_case

    calls = CallLog(tmp_path / "calls.log")

    def objective(p):
        calls.append(list(p))
        return product(p)[0], [product(p)[1][0]]

    def problem():
        return Problem("product", UNIT, objective, "minimize", optimum=math.sqrt(2), constraints=PRODUCT)

    def settings(folder, budget=11, resume=False):
        return RunSettings(budget=budget, initial_points=4, seed=3, output=folder, resume=resume,
                           case={"seed": 3, "method": method})

    def optimizer():
        return make_optimizer(method, UNIT, 3, params=params, constraints=PRODUCT)

    run_case(problem(), optimizer(), settings(tmp_path / "a"))
    calls.clear()
    run_case(problem(), optimizer(), settings(tmp_path / "b", budget=7))
    run_case(problem(), optimizer(), settings(tmp_path / "b", resume=True))
    assert len(calls) == 11
    assert (tmp_path / "a" / "evaluations.jsonl").read_bytes() == (tmp_path / "b" / "evaluations.jsonl").read_bytes()


@pytest.mark.parametrize("residual_gp", ["none", "full"])
def test_a_resumed_run_replays_identically(tmp_path, residual_gp):
    resumed_run_is_identical(tmp_path, "neural-cbo", {**FAST, "residual_gp": residual_gp})


def test_bound_snaps_move_coordinates_to_their_bounds():
    from pinnbo.optimizers.neural_cbo import _bound_snaps

    u = np.array([0.03, 0.5, 0.9, 1.0])
    snaps = _bound_snaps(u, step=0.05)
    expected = [[0.0, 0.5, 0.9, 1.0], [0.03, 0.0, 0.9, 1.0], [0.03, 0.5, 0.0, 1.0], [0.03, 0.5, 0.9, 0.0],
                [1.0, 0.5, 0.9, 1.0], [0.03, 1.0, 0.9, 1.0], [0.03, 0.5, 1.0, 1.0],     # one at a time
                [0.0, 0.5, 0.9, 1.0]]                                                  # all within 0.05
    np.testing.assert_array_equal(snaps, expected)   # the coordinate already on its bound adds no repeat
    np.testing.assert_array_equal(_bound_snaps(np.array([0.0, 1.0]), 0.1), [[0.0, 0.0], [1.0, 1.0]])



@pytest.mark.parametrize("snap", [True, False])
def test_the_refinement_scores_bound_snaps(snap, monkeypatch):
    """With an objective that falls towards y = 0 and every candidate feasible, a snap reaches the
    bound from y = 0.6 in one round; Gaussian steps of the first round's size (0.02) cannot."""
    opt = started(params={**FAST, "refine_rounds": 1, "refine_candidates": 8, "refine_snap": snap})
    monkeypatch.setattr(opt, "_objective_moments", lambda u, X: (10.0 * u[:, 1], np.full(len(u), 1e-3)))
    monkeypatch.setattr(opt, "_constraint_moments", lambda u, scalings: (-np.ones((len(u), 1)), np.zeros((len(u), 1))))
    X, _, _ = opt.observed_constrained()
    refined, _ = opt._refine(np.array([0.5, 0.6]), -np.inf, {"constraints": None}, X, 5.0, opt.evaluated_unit(),
                             np.ones(1))
    if snap:
        np.testing.assert_array_equal(refined, [0.5, 0.0])
    else:
        assert refined[1] > 0.5


@pytest.mark.parametrize("warp", ["none", "power"])
def test_the_residual_gp_makes_every_mean_interpolate_the_observations(warp):
    """With ``residual_gp`` the networks' means plus the GP of their residuals reproduce the
    observed objective (in the units it is trained in: warped with ``objective_warp: power``) and
    constraint values (noise-free data: the GP's noise is fitted near zero); without it the
    networks alone miss them by more. ``mean`` keeps the networks' σ; ``full`` takes the GP's,
    which nearly vanishes at the observations."""
    from pinnbo.optimizers.neural_cbo import _power_warp

    errors, sigmas = {}, {}
    for mode in ("none", "mean", "full"):
        opt = started(params={**FAST, "residual_gp": mode, "objective_warp": warp}, n_init=10)
        opt.ask()
        X, y, C = opt.observed_constrained()
        unit = opt.domain.to_unit(X)
        scalings = opt._fit(X, y, C)
        mean, std = scalings["objective"]
        mu_f, sigma_f = opt._objective_moments(unit, X)
        mu_c, sigma_c = opt._constraint_moments(unit, scalings["constraints"])
        target = _power_warp(y) if warp == "power" else y
        errors[mode] = (np.abs(mean + std * mu_f - target).max(), np.abs(mu_c[:, 0] - C[:, 0]).max())
        sigmas[mode] = (sigma_f.max(), sigma_c[:, 0].max() / np.std(C[:, 0]))
    for mode in ("mean", "full"):
        assert errors[mode][0] < 1e-2 * np.std(target) and errors[mode][1] < 1e-2 * np.std(C[:, 0]), errors
        assert errors[mode][0] < 0.2 * errors["none"][0] and errors[mode][1] < 0.2 * errors["none"][1], errors
    assert sigmas["mean"] == pytest.approx(sigmas["none"], rel=1e-6)   # the same networks, the same σ
    assert max(sigmas["full"]) < 0.1 * min(sigmas["none"]), sigmas


@pytest.mark.parametrize("outputs", [1, 3])
def test_the_residual_predictor_equals_the_botorch_posterior(outputs):
    import torch

    from pinnbo.optimizers.gp_cbo import fit_outputs
    from pinnbo.optimizers.neural_cbo import GPPredictor

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 2))
    Y = np.column_stack([np.sin(3 * X[:, 0]), 5 * X[:, 1] ** 2, X.sum(axis=1) + 1.0])[:, :outputs]
    model = fit_outputs(X, Y, noise_free=False, noise_floor=0.0, start=None)
    q = torch.as_tensor(rng.uniform(size=(50, 2)))
    mean, std, remaining = GPPredictor(model)(q)
    post = model.posterior(q)
    assert mean.shape == std.shape == remaining.shape == (50, outputs)
    np.testing.assert_allclose(mean, post.mean.detach().numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(std, post.variance.detach().sqrt().numpy(), rtol=0, atol=1e-10)
    # the prior variance: the Standardize scale² times the kernel's k(x, x) (Matérn: 1)
    prior = model.outcome_transform.stdvs.reshape(-1).detach().numpy() ** 2
    np.testing.assert_allclose(remaining, std ** 2 / prior, rtol=1e-10)
    assert np.all((remaining >= 0) & (remaining <= 1))


def test_the_lengthscale_floor_binds_where_maximum_likelihood_would_go_below_it():
    """White-noise outputs: the unbounded fit explains them with lengthscales near BoTorch's 0.025
    (a spike at each observation); with a floor every lengthscale stays at or above it, and a warm
    start from the collapsed fit starts at the floor (the bound is not a suggestion)."""
    from pinnbo.optimizers.gp_cbo import fit_outputs

    rng = np.random.default_rng(0)
    X, Y = rng.uniform(size=(30, 3)), rng.standard_normal((30, 2))
    free = fit_outputs(X, Y, noise_free=False, noise_floor=0.0, start=None)
    assert free.covar_module.lengthscale.min().item() < 0.1
    floored = fit_outputs(X, Y, noise_free=False, noise_floor=0.0, start=None, lengthscale_floor=0.3)
    assert floored.covar_module.lengthscale.min().item() >= 0.3 - 1e-12
    start = {name: p.detach().clone() for name, p in free.named_parameters()}
    warm = fit_outputs(X, Y, noise_free=False, noise_floor=0.0, start=start, lengthscale_floor=0.3)
    assert warm.covar_module.lengthscale.min().item() >= 0.3 - 1e-12
    # below BoTorch's own bound the floor changes nothing
    same = fit_outputs(X, Y, noise_free=False, noise_floor=0.0, start=None, lengthscale_floor=0.01)
    np.testing.assert_array_equal(same.covar_module.lengthscale.detach().numpy(),
                                  free.covar_module.lengthscale.detach().numpy())


@pytest.mark.parametrize("c", [0.0, 2.0])
def test_the_residual_gp_lengthscales_respect_c_n_to_the_minus_one_over_d(c):
    opt = started(params={**FAST, "residual_lengthscale_floor": c}, n_init=12)
    opt.ask()
    n, d = len(opt.X), opt.domain.dim
    assert opt._residual_lengthscale_floor(n) == pytest.approx(c * n ** (-1 / d))
    lengthscales = opt._residual.kernel.lengthscale.detach().numpy()
    assert lengthscales.min() >= max(0.025, c * n ** (-1 / d)) * (1 - 1e-6)   # the bound is stored in float32
    bound = opt._residual.kernel.raw_lengthscale_constraint.lower_bound.item()
    assert bound == pytest.approx(max(0.025, c * n ** (-1 / d)))
    if c:
        assert np.isclose(lengthscales, bound).any()   # 0.58: it binds on this problem
