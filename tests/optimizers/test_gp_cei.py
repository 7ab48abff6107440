"""GP-cEI: a constrained optimum found, feasibility found from an all-infeasible start (probability
of feasibility first), known constraints never violated, unconstrained use, determinism and warm-started checkpoints.

The analytic problem: minimise x + y on [0, 1]² s.t. c = 0.5 − x·y <= 0, so x* = y* = √0.5 and
f* = √2.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pinnbo.optimizers import METHODS, MethodError, make_optimizer
from pinnbo.problem import Constraint
from pinnbo.streams import initial_design
from tests.optimizers.constrained import PRODUCT, UNIT, disc, product, repeats_nothing, run, until_feasible
from tests.optimizers.constrained import started as started_with

FAST = {"num_restarts": 4, "raw_samples": 128, "maxiter": 50}


def started(f=product, constraints=PRODUCT, params=FAST, seed=0, n_init=6, **kw):
    return started_with("gp-cei", f, constraints, params, seed, n_init, **kw)


def test_finds_the_constrained_optimum_without_repeats():
    opt = run(started(), product, 10)
    assert opt.last_mode == "cei"
    X, y, C = opt.observed_constrained()
    assert y[C[:, 0] <= 0].min() < math.sqrt(2) + 0.02, y[C[:, 0] <= 0].min()
    assert repeats_nothing(opt)


def test_finds_a_feasible_design_when_no_initial_point_is_feasible():
    opt = started(disc, (Constraint("disc"),), n_init=8)
    assert np.all(np.stack(opt.C)[:, 0] > 0), "the test needs an all-infeasible initial design"
    x, modes = until_feasible(opt, 15)
    assert disc(x)[1][0] <= 0, "no feasible design found"
    assert set(modes) == {"feasibility"}          # log probability of feasibility until one is found
    x = opt.ask()
    assert opt.last_mode == "cei"


def test_known_constraints_are_never_violated():
    known = Constraint("left", function=lambda X: X[:, 0] - 0.65)

    def f(p):
        value, c = product(p)
        return value, np.array([c[0], p[0] - 0.65])

    opt = run(started(f, (Constraint("product"), known)), f, 6)
    assert np.all(np.stack(opt.X[6:])[:, 0] <= 0.65)
    # only known constraints: a single-output GP and EI, still never violated
    g = lambda p: (float(p[0] + p[1]), np.array([p[0] - 0.65]))  # noqa: E731
    only = run(started(g, (known,)), g, 3)
    assert only.last_mode == "ei" and np.all(np.stack(only.X[6:])[:, 0] <= 0.65)


def test_works_without_constraints():
    opt = make_optimizer("gp-cei", UNIT, 0, params=FAST)
    f = lambda p: float((p[0] - 0.3) ** 2 + (p[1] - 0.6) ** 2)  # noqa: E731
    for x in initial_design(UNIT, 6, 0):
        opt.tell(x, f(x))
    first = min(opt.y)
    for _ in range(5):
        x = opt.ask()
        opt.tell(x, f(x))
    assert opt.last_mode == "ei" and min(opt.y) < 0.5 * first


def test_ask_is_deterministic_and_checkpoints_round_trip():
    a, b = run(started(), product, 1), run(started(), product, 1)   # a warm start exists from here on
    xa = a.ask()
    np.testing.assert_array_equal(xa, b.ask())
    np.testing.assert_array_equal(xa, a.ask())      # asking again starts from the same hyper-parameters
    a.tell(xa, *product(xa))
    restored = run(started(), product, 1)
    restored.load_state_dict(a.state_dict())
    restored.tell(xa, *product(xa))
    np.testing.assert_array_equal(a.ask(), restored.ask())
    before = torch.random.get_rng_state()
    started(seed=1).ask()
    assert torch.equal(before, torch.random.get_rng_state())


def test_registered_and_validated():
    assert METHODS["gp-cei"].handles_constraints
    with pytest.raises(MethodError, match=r"method_params\.raw_samples"):
        make_optimizer("gp-cei", UNIT, 0, params={"num_restarts": 8, "raw_samples": 4}, constraints=PRODUCT)
    with pytest.raises(MethodError, match=r"method_params\.kernel: unknown parameter"):   # gp-cei's GPs are ARD
        make_optimizer("gp-cei", UNIT, 0, params={"kernel": "isotropic"}, constraints=PRODUCT)
    opt = run(started(params=METHODS["gp-cei"].SMOKE_PARAMS), product, 1)
    assert len(opt.X) == 7
    opt = run(started(params={**METHODS["gp-cei"].SMOKE_PARAMS, "noise_free": True}), product, 1)
    assert len(opt.X) == 7


def test_a_resumed_run_replays_identically(tmp_path):
    from tests.optimizers.test_neural_cbo import resumed_run_is_identical

    resumed_run_is_identical(tmp_path, "gp-cei", FAST)
