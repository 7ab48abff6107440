"""Neural-CBO: a constrained optimum found, feasibility found from an all-infeasible start, known
constraints never violated, the refinement under the LCB mask, the residual GP's interpolation,
determinism and checkpoints, the physics (PINN) objective, and the refusal of constraint-blind
methods.

The analytic problem: minimise x + y on [0, 1]² s.t. c = 0.5 − x·y <= 0, so x* = y* = √0.5 and
f* = √2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from pinnbo.models.pinn import PINNSurrogate
from pinnbo.optimizers import METHODS, MethodError, make_optimizer
from pinnbo.pde import PDE
from pinnbo.problem import Box, Constraint
from pinnbo.streams import initial_design
from tests.optimizers.constrained import PRODUCT, UNIT, disc, product, repeats_nothing, run, until_feasible
from tests.optimizers.constrained import started as started_with
from tests.survival import CallLog

FAST = {"hidden": [32], "initial_steps": 200, "steps_per_iteration": 30, "n_candidates": 512}


def started(f=product, constraints=PRODUCT, params=FAST, seed=0, n_init=6, **kw):
    return started_with("neural-cbo", f, constraints, params, seed, n_init, **kw)


# -- the optimiser -------------------------------------------------------------------------------------
def test_finds_the_constrained_optimum_without_repeats():
    opt = run(started(), product, 16)
    X, y, C = opt.observed_constrained()
    feasible = C[:, 0] <= 0
    assert y[feasible].min() < math.sqrt(2) + 0.03, y[feasible].min()
    assert repeats_nothing(opt)


def test_finds_a_feasible_design_when_no_initial_point_is_feasible():
    opt = started(disc, (Constraint("disc"),), n_init=8)
    assert np.all(np.stack(opt.C)[:, 0] > 0), "the test needs an all-infeasible initial design"
    x, modes = until_feasible(opt, 20)
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


@pytest.mark.parametrize("residual_gp", [False, True])
def test_ask_is_deterministic_and_checkpoints_round_trip(residual_gp):
    params = {**FAST, "residual_gp": residual_gp}

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
PHYSICS = {**FAST, "physics": True, "pinn": {"hidden": [16, 16], "initial_steps": 150, "steps_per_iteration": 10,
                                             "collocation_points": 128, "collocation_batch": 64}}


def harmonic(p: np.ndarray) -> tuple[float, np.ndarray]:
    """Re (x + i y)³ / 10 (∇² = 0), inside an ellipse."""
    return (float((p[0] ** 3 - 3 * p[0] * p[1] ** 2) / 10),
            np.array([(p[0] - 2.0) ** 2 + (p[1] - 1.5) ** 2 / 9.0 - 1.0]))


@pytest.mark.parametrize("residual_gp", [False, True])
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
        return float((r / std).pow(2).mean().detach())

    before = pde_residual()
    x = opt.ask()
    assert pde_residual() < 0.2 * before
    assert opt.objective.fitted and opt.objective.residual_scale is not None
    if residual_gp:    # the PINN's mean + the residual GP's interpolates the observations
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
    ({"constraint_beta": -1.0}, "constraint_beta"), ({"residual_gp": "full"}, "residual_gp"),
    ({"pinn": {"hidden": []}}, r"pinn\.hidden"), ({"pinn": {"hiden": [8]}}, r"pinn\.hiden"),
    ({"pinn": [8]}, "pinn"), ({"physics": 1}, "physics"), ({"betta": 1}, "betta"),
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
    from pinnbo.runner.loop import run as run_case
    from pinnbo.runner.steps import RunSettings

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


@pytest.mark.parametrize("residual_gp", [False, True])
def test_a_resumed_run_replays_identically(tmp_path, residual_gp):
    resumed_run_is_identical(tmp_path, "neural-cbo", {**FAST, "residual_gp": residual_gp})


def test_the_refinement_keeps_the_lcb_mask_and_snaps_to_a_bound():
    """An objective falling towards y = 0 and a constraint feasible for x <= 0.55: from the pool's
    winner (0.5, 0.6) the refinement reaches the bound y = 0 by a snap in its first round (Gaussian
    steps of 0.02 cannot) and never leaves the mask."""
    opt = started()
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(opt, "_objective_moments", lambda u, X: (10.0 * u[:, 1], np.full(len(u), 1e-3)))
    monkeypatch.setattr(opt, "_constraint_moments",
                        lambda u, scalings: ((u[:, :1] - 0.55), np.zeros((len(u), 1))))
    X, _, _ = opt.observed_constrained()
    start = np.array([0.5, 0.6])
    refined = opt._refine(start, -np.inf, {"constraints": None}, X, 5.0, opt.evaluated_unit(), np.ones(1))
    monkeypatch.undo()
    assert refined[1] == 0.0 and refined[0] <= 0.55


@pytest.mark.parametrize("physics", [False, True])
def test_the_residual_gp_makes_every_mean_interpolate_the_observations(physics):
    """With ``residual_gp`` the networks' means plus the GP of their residuals reproduce the
    observed objective (in the units it is trained in: Yeo-Johnson warped for the NTK network) and
    constraint values (noise-free data: the GP's noise is fitted small), and σ shrinks there;
    without it the networks alone miss them by more."""
    from pinnbo.models.transforms import power_warp

    errors, sigmas = {}, {}
    for residual_gp in (False, True):
        if physics:
            opt = make_optimizer("neural-cbo", BOX, 0, params={**PHYSICS, "residual_gp": residual_gp}, pde=LAPLACE,
                                 constraints=(Constraint("ellipse"),))
            for x in initial_design(BOX, 10, 0):
                opt.tell(x, *harmonic(x))
        else:
            opt = started(params={**FAST, "residual_gp": residual_gp}, n_init=10)
        opt.ask()
        X, y, C = opt.observed_constrained()
        unit = opt.domain.to_unit(X)
        scalings = opt._fit(X, y, C)
        mean, std = scalings["objective"]
        mu_f, sigma_f = opt._objective_moments(unit, X)
        mu_c, sigma_c = opt._constraint_moments(unit, scalings["constraints"])
        target = y if physics else power_warp(y)
        errors[residual_gp] = (np.abs(mean + std * mu_f - target).max() / np.std(target),
                               np.abs(mu_c[:, 0] - C[:, 0]).max() / np.std(C[:, 0]))
        sigmas[residual_gp] = (sigma_f.max(), sigma_c[:, 0].max() / np.std(C[:, 0]))
    assert max(errors[True]) < 2e-2, errors     # the GP's fitted noise, not exact interpolation
    assert errors[True][0] < 0.2 * errors[False][0] and errors[True][1] < 0.2 * errors[False][1], errors
    assert sigmas[True][1] < 0.2 * sigmas[False][1], sigmas
    # the PINN's residuals are fitted with some noise: its σ shrinks at the data without vanishing
    assert sigmas[True][0] < (0.9 if physics else 0.1) * sigmas[False][0], sigmas
