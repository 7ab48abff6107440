"""The pde-gp method: it finds the minimum of a harmonic function knowing Laplace's equation, never
repeats a design, asks deterministically, checkpoints, works without a PDE, and finds a nonlinear
PDE's solution through its linearisation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

from pinnbo.acquisition.optimize import search_acquisition
from pinnbo.acquisition.search import STALL_RADIUS, is_duplicate, stalled
from pinnbo.optimizers import METHODS, MethodError, make_optimizer, pde_gp
from pinnbo.pde import PDE
from pinnbo.problem import Box
from pinnbo.optimizers.pde_gp import CONCENTRATED_SOURCE, SOURCE_POOL, covered_share
from pinnbo.streams import initial_design, sobol_unit
from tests.optimizers.constrained import repeats_nothing

x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACE = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
BOX = Box((0.0, 0.0), (2.0, 5.0), ("x", "y"))
FAST = {"collocation_points": 64, "num_restarts": 4, "raw_samples": 128, "maxiter": 50}


def harmonic(p: np.ndarray) -> float:
    """e^x sin y: harmonic, its minimum on the box −e² at (2, 3π/2)."""
    return float(np.exp(p[0]) * np.sin(p[1]))


def started(params=FAST, seed=0, n_init=6, pde=LAPLACE):
    opt = make_optimizer("pde-gp", BOX, seed, params=params, pde=pde)
    for p in initial_design(BOX, n_init, seed):
        opt.tell(p, harmonic(p))
    return opt


def run(opt, steps):
    for _ in range(steps):
        p = opt.ask()
        opt.tell(p, harmonic(p))
    return opt


def test_finds_the_minimum_of_a_harmonic_function_without_repeats():
    opt = run(started(), 6)
    assert min(opt.y) < -np.exp(2) + 0.05, min(opt.y)
    assert repeats_nothing(opt)


def test_with_laplaces_equation_the_proposals_are_on_the_faces():
    # e^x sin y is harmonic: its minimum is on the boundary, and so is every proposal
    opt = run(started(), 3)
    assert opt.boundary_minimum
    proposed = BOX.to_unit(np.stack(opt.X[6:]))
    assert np.all(np.min(np.minimum(proposed, 1 - proposed), axis=1) < 1e-12)
    helmholtz = make_optimizer("pde-gp", BOX, 0, params=FAST, pde=PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T))
    assert not helmholtz.boundary_minimum


def test_a_stalled_search_does_not_repeat_itself_once_more(monkeypatch):
    # UCB finds the minimum in five proposals, then re-measures beside it until the stall rule
    # takes over: from then on no proposal lies within the stall radius of an evaluated design,
    # the escape chosen from each ask's one search
    searches = []

    def counted(*args, **kwargs):
        searches.append(1)
        return search_acquisition(*args, **kwargs)

    monkeypatch.setattr(pde_gp, "search_acquisition", counted)
    opt, stalls = started(), 0
    for _ in range(10):
        evaluated = BOX.to_unit(np.stack(opt.X))
        stall = stalled(evaluated, np.array(opt.y))
        p = opt.ask()
        assert not (stall and is_duplicate(BOX.to_unit(p), evaluated, STALL_RADIUS))
        stalls += stall
        opt.tell(p, harmonic(p))
    assert stalls >= 2 and len(searches) == 10
    assert min(opt.y) < -np.exp(2) + 1e-4


def test_ask_is_deterministic_and_checkpoints_round_trip():
    a, b = started(), started()
    xa = a.ask()
    np.testing.assert_array_equal(xa, b.ask())
    np.testing.assert_array_equal(xa, a.ask())          # asking again starts from the same fit
    a.tell(xa, harmonic(xa))
    restored = started()
    restored.load_state_dict(a.state_dict())
    restored.tell(xa, harmonic(xa))
    np.testing.assert_array_equal(a.ask(), restored.ask())
    assert not np.allclose(started(seed=1).ask(), xa)


def test_without_a_pde_it_is_a_plain_gp():
    opt = run(started(pde=None), 4)
    assert opt.model.terms is None and len(opt.X) == 10


def test_a_nonlinear_pdes_solution_is_found_through_its_linearisation():
    """Liouville's ∇²u + eᵘ = 0 with its radial solution u = ln 8λ² − 2 ln(1 + λ²|p − c|²), ten
    measurements: conditioned on the PDE linearised about its own mean, the GP's first proposal is
    at the peak c (the GP of the data alone proposes elsewhere)."""
    from problems.pde_solutions import liouville

    problem = liouville()
    center = np.array([0.73, 0.31])
    params = {"num_restarts": 4, "raw_samples": 128, "maxiter": 50}
    proposals = {}
    for name, pde in (("linearised", problem.minimised_pde), ("data alone", None)):
        opt = make_optimizer("pde-gp", problem.domain, 0, params=params, pde=pde)
        for p in initial_design(problem.domain, 10, 0):
            opt.tell(p, -problem.objective(p))
        proposals[name] = opt.ask()
    assert np.abs(proposals["linearised"] - center).max() < 0.02
    assert np.abs(proposals["data alone"] - center).max() > 0.02


def test_a_nonlinear_pdes_fits_checkpoint_and_resume_as_if_uninterrupted():
    """Past the every-step refits (13 observations) both GPs of a Gauss–Newton step start from
    their previous fits: a restored optimiser asks what the uninterrupted one asks, and starting its
    GP of the data alone afresh instead does not."""
    from problems.pde_solutions import liouville

    problem = liouville()
    params = {"collocation_points": 64, "num_restarts": 4, "raw_samples": 128, "maxiter": 50}

    def told(points):
        opt = make_optimizer("pde-gp", problem.domain, 0, params=params, pde=problem.minimised_pde)
        for p in points:
            opt.tell(p, -problem.objective(p))
        return opt

    a = told(initial_design(problem.domain, 10, 0))
    for _ in range(3):
        p = a.ask()
        a.tell(p, -problem.objective(p))
    state = a.state_dict()
    assert [step for step, _ in state["data_fits"]] == [11, 12]
    restored, afresh = told(a.X), told(a.X)
    restored.load_state_dict(state)
    afresh.load_state_dict({"fits": state["fits"]})
    proposal = a.ask()
    np.testing.assert_array_equal(proposal, restored.ask())
    assert not np.array_equal(proposal, afresh.ask())


def test_a_settled_gauss_newton_step_fits_once_and_proposes_what_refitting_would(monkeypatch):
    """From 120 observations on, a new one barely moves the hyper-parameters (a warm fit gains less
    than ``SETTLED_GAIN``): the GP of the data alone keeps its values until the refit grid and the
    later linearisations are conditioned under the first's, so a step runs one fit, and its
    proposals are those of a step that refits all three, within 10⁻⁵ of the box."""
    import pinnbo.models.pde_gp as model
    import pinnbo.optimizers.pde_gp as method
    from problems.pde_solutions import liouville

    problem = liouville()
    params = {"collocation_points": 64, "num_restarts": 4, "raw_samples": 128, "maxiter": 50}
    points = initial_design(problem.domain, 124, 0)
    fit = model.PDEGP._fit

    def asked(settled_gain):
        """Proposals and fits per ask, telling the same Sobol designs whatever was proposed."""
        monkeypatch.setattr(method, "SETTLED_GAIN", settled_gain)
        opt = make_optimizer("pde-gp", problem.domain, 0, params=params, pde=problem.minimised_pde)
        for p in points[:120]:
            opt.tell(p, -problem.objective(p))
        fits, proposals, counts = [], [], []
        monkeypatch.setattr(model.PDEGP, "_fit", lambda self, *a, **k: fits.append(1) or fit(self, *a, **k))
        for p in points[120:]:
            fits.clear()
            proposals.append(problem.domain.to_unit(np.asarray(opt.ask())[None])[0])
            counts.append(len(fits))
            opt.tell(p, -problem.objective(p))
        monkeypatch.setattr(model.PDEGP, "_fit", fit)
        return np.array(proposals), counts

    settled, settled_fits = asked(method.SETTLED_GAIN)
    refitted, refitted_fits = asked(0.0)
    assert settled_fits[2:] == [1, 1] and min(refitted_fits) == 3
    assert np.abs(settled - refitted).max() < 1e-5


def test_collocation_stays_within_the_row_budget_and_the_problems_filter():
    xs = sp.symbols("x1:41")
    f = sp.Function("f")(*xs)
    system = PDE([f.diff(v) - 2 * v for v in xs], rhs=0)           # 40 equations: 12 points each
    box = Box.cube(-1.0, 1.0, 40)
    opt = make_optimizer("pde-gp", box, 0, params=FAST, pde=system)
    assert opt.collocation.shape == (512 // 40, 40)
    kept = make_optimizer("pde-gp", BOX, 0, params=FAST, pde=LAPLACE, collocation_filter=lambda P: P[:, 0] > 1.0)
    assert len(kept.collocation) == 64 and bool((BOX.from_unit(kept.collocation.numpy())[:, 0] > 1.0).all())
    # by default: 256 points on one axis, 128 from two axes up
    x1 = sp.Symbol("x1")
    line = make_optimizer("pde-gp", Box.cube(0.0, 1.0, 1), 0, pde=PDE(sp.Function("f")(x1).diff(x1, 2), rhs=0))
    assert line.collocation.shape == (256, 1)
    assert make_optimizer("pde-gp", BOX, 0, pde=LAPLACE).collocation.shape == (128, 2)


def _poisson_pde(d: int, source, nonlinear: bool = False) -> tuple[PDE, Box]:
    """−∇²u (+ u³) = source(x1, ..., xd) on [0, 1]^d (source 0: the source-free equation)."""
    xs = sp.symbols(f"x1:{d + 1}")
    u = sp.Function("u")(*xs)
    lhs = -sum(u.diff(v, 2) for v in xs) + (u**3 if nonlinear else 0)
    return PDE(lhs, rhs=source(xs) if callable(source) else source), Box.cube(0.0, 1.0, d)


def _plume_pde(d: int, nonlinear: bool = False) -> tuple[PDE, Box]:
    """−∇²u (+ u³) = a narrow Gaussian source centred at 0.7 in every variable of [0, 1]^d."""
    return _poisson_pde(d, lambda xs: sp.exp(-sum((v - sp.Rational(7, 10)) ** 2 for v in xs) / sp.Rational(1, 50)),
                        nonlinear)


@pytest.mark.parametrize("d", [4, 5])
def test_from_four_variables_the_collocation_goes_where_a_concentrated_source_is(d):
    """A plume (σ = 0.1 at 0.7 in every variable) covers a few per cent of the box: the first
    quarter of the 128 interior points is the uniform draw a source-free PDE gets, the other three
    quarters come from a pool of 4096 drawn with probability ∝ |g|, without repeats, so they crowd
    the source's peak where the uniform points hardly reach it; the same draw on every build of a
    seed."""
    pde, box = _plume_pde(d)
    free = PDE(pde.lhs[0], rhs=0)
    points = make_optimizer("pde-gp", box, 3, pde=pde).collocation.numpy()
    uniform = make_optimizer("pde-gp", box, 3, pde=free).collocation.numpy()
    assert points.shape == uniform.shape == (128, d)
    np.testing.assert_array_equal(points[:32], uniform[:32])
    assert not (points[32:, None, :] == uniform[None, 32:, :]).all(-1).any()
    near = lambda P: int((np.linalg.norm(P - 0.7, axis=1) < 0.25).sum())      # noqa: E731
    assert near(uniform[32:]) <= 4 and near(points[32:]) >= 15      # in 5: every pool point there
    np.testing.assert_array_equal(points, make_optimizer("pde-gp", box, 3, pde=pde).collocation.numpy())
    assert not np.array_equal(points, make_optimizer("pde-gp", box, 4, pde=pde).collocation.numpy())


def test_a_source_spread_over_the_box_keeps_half_the_collocation_uniform():
    """A product of sines covers about a third of the box by its weights' effective sample size
    (Kish's (Σw)²/Σw², over ``CONCENTRATED_SOURCE``): half the points stay the uniform draw, whose
    hold on the rest of the box such a source needs, and half go where it is; a plume's weights
    cover a few per cent."""
    d = 4
    spread, box = _poisson_pde(d, lambda xs: sp.Mul(*(sp.sin(sp.pi * v) for v in xs)))
    points = make_optimizer("pde-gp", box, 3, pde=spread).collocation.numpy()
    uniform = make_optimizer("pde-gp", box, 3, pde=_poisson_pde(d, 0)[0]).collocation.numpy()
    np.testing.assert_array_equal(points[:64], uniform[:64])
    assert not (points[64:, None, :] == uniform[None, 64:, :]).all(-1).any()

    def covered(values):
        return covered_share(np.abs(values) / np.abs(values).sum())

    grid = np.random.default_rng(0).random((4096, d))
    # Π sin(πx_i) in 4 variables: (E sin)^2d / (E sin²)^d = (8/π²)^4 = 0.43
    assert covered(np.prod(np.sin(np.pi * grid), 1)) == pytest.approx((8 / np.pi ** 2) ** 4, abs=0.03)
    assert covered(np.prod(np.sin(np.pi * grid), 1)) > CONCENTRATED_SOURCE
    assert covered(np.exp(-((grid - 0.7) ** 2).sum(1) / 0.02)) < CONCENTRATED_SOURCE


def test_from_six_variables_a_spread_source_gets_twice_the_collocation():
    """In 6 variables 128 points lie 0.45 of the box apart: a source spread over the box (a product
    of sines) gets 256 by default, half where it is; a concentrated one (a plume) and the
    source-free equation keep 128, as does a spread source in 5 variables, and a
    ``collocation_points`` the user gives wins."""
    sines = lambda xs: sp.Mul(*(sp.sin(sp.pi * v) for v in xs))     # noqa: E731
    spread, box = _poisson_pde(6, sines)
    points = make_optimizer("pde-gp", box, 3, pde=spread).collocation.numpy()
    assert points.shape == (256, 6)
    uniform = make_optimizer("pde-gp", box, 3, pde=_poisson_pde(6, 0)[0],
                             params={"collocation_points": 256}).collocation.numpy()
    np.testing.assert_array_equal(points[:128], uniform[:128])
    assert make_optimizer("pde-gp", box, 3, pde=_poisson_pde(6, 0)[0]).collocation.shape == (128, 6)
    assert make_optimizer("pde-gp", box, 3, pde=_plume_pde(6)[0]).collocation.shape == (128, 6)
    five, box5 = _poisson_pde(5, sines)
    assert make_optimizer("pde-gp", box5, 3, pde=five).collocation.shape == (128, 5)
    given = make_optimizer("pde-gp", box, 3, pde=spread, params={"collocation_points": 128}).collocation.numpy()
    assert given.shape == (128, 6)


def test_a_source_that_vanishes_on_most_of_the_box_gives_the_points_it_has():
    """A source nonzero on a corner of the box alone has fewer pool points than three quarters of
    the collocation: those it has, each once, and the uniform draw for the rest."""
    d = 4
    corner, box = _poisson_pde(d, lambda xs: sp.Mul(*(sp.Max(0, v - sp.Rational(13, 20)) for v in xs)))
    points = make_optimizer("pde-gp", box, 3, pde=corner).collocation.numpy()
    uniform = make_optimizer("pde-gp", box, 3, pde=_poisson_pde(d, 0)[0]).collocation.numpy()
    inside = int(((sobol_unit(SOURCE_POOL, d, 3, "pde-gp", "collocation-source") > 0.65).all(1)).sum())
    assert 0 < inside < 96
    assert len(points) == 128
    np.testing.assert_array_equal(points[:128 - inside], uniform[:128 - inside])
    assert ((points[128 - inside:] > 0.65).all(1)).all()
    assert len(np.unique(points[128 - inside:], axis=0)) == inside


def test_in_three_variables_and_for_a_linearised_pde_the_collocation_stays_uniform():
    """Three variables' 128 points resolve a source on their own; a nonlinear PDE's linearisation
    moves its source with each step, so its points stay as drawn."""
    pde, box = _plume_pde(3)
    uniform = make_optimizer("pde-gp", box, 3, pde=PDE(pde.lhs[0], rhs=0)).collocation.numpy()
    np.testing.assert_array_equal(make_optimizer("pde-gp", box, 3, pde=pde).collocation.numpy(), uniform)
    nonlinear, box4 = _plume_pde(4, nonlinear=True)
    uniform4 = make_optimizer("pde-gp", box4, 3, pde=PDE(nonlinear.lhs[0], rhs=0)).collocation.numpy()
    np.testing.assert_array_equal(make_optimizer("pde-gp", box4, 3, pde=nonlinear).collocation.numpy(), uniform4)


def test_registered_with_smoke_settings_and_validated():
    opt = run(started(params=METHODS["pde-gp"].SMOKE_PARAMS), 2)
    assert len(opt.X) == 8
    with pytest.raises(MethodError, match=r"method_params\.collocation_points"):
        make_optimizer("pde-gp", BOX, 0, params={"collocation_points": -1}, pde=LAPLACE)


def test_the_papers_beam_is_found_from_its_initial_design():
    """(EI w'')'' = eˣ with the paper's singular, sign-changing EI: ten measurements of the
    manufactured deflection and the ODE at 256 points (the default on one axis) pin the deflection
    down, and the first proposal is its minimiser x* = 0.8825 (to the 1e-3 the closed form gives)."""
    from problems.beam import PAPER_DEFLECTION, beam

    problem = beam()
    s = sp.Symbol("x")
    exact = sp.lambdify(s, sp.sympify(PAPER_DEFLECTION.replace("^", "**"), locals={"x": s}), "numpy")
    grid = np.linspace(0.0, 1.0, 100001)
    x_star = grid[np.argmin(exact(grid))]
    opt = make_optimizer("pde-gp", problem.domain, 0, params={"num_restarts": 2, "raw_samples": 64, "maxiter": 30},
                         pde=problem.pde, collocation_filter=problem.collocation_filter)
    for p in initial_design(problem.domain, 10, 0):
        opt.tell(p, float(exact(p[0])))
    assert abs(opt.ask()[0] - x_star) < 2e-3


def test_a_pde_with_nothing_to_linearise_by_is_refused_pointing_to_pinn_bo():
    """sign(∂ₓT) has no derivative to linearise by (a Dirac delta): one line naming the method and
    the construct, before any evaluation; |∂ₓT| linearises to sign(∂ₓT) and is taken."""
    with pytest.raises(MethodError, match=r"pde-gp cannot linearise this PDE \(.*DiracDelta.*\); pinn-bo takes it"):
        make_optimizer("pde-gp", BOX, 0, params=FAST, pde=PDE(sp.sign(T.diff(x)) + T.diff(y, 2), rhs=1))
    assert make_optimizer("pde-gp", BOX, 0, params=FAST, pde=PDE(sp.Abs(T.diff(x)) + T.diff(y, 2), rhs=1)).linearised


def test_long_starts_run_on_the_refit_grid_unless_they_trail_by_more_than_the_new_data_could_close():
    """A due refit runs the long starts unless they last ended D nats behind at n₀ observations and
    D > DEFICIT_PER_OBSERVATION · (n − n₀); a fit without long starts carries the last deficit on."""
    from pinnbo.optimizers.pde_gp import DEFICIT_PER_OBSERVATION, long_starts_due, restart_due, with_long_starts

    assert long_starts_due(11, None) and not long_starts_due(13, None)     # the grid: 11, 12, 14, ...
    behind = with_long_starts({"noise": 1e-4}, 20, 3.5 * DEFICIT_PER_OBSERVATION, None)
    carried = with_long_starts({"noise": 2e-4}, 21, None, behind)
    assert (carried["noise"], carried["long_starts_at"], carried["long_starts_deficit"]) == \
        (2e-4, 20, 3.5 * DEFICIT_PER_OBSERVATION)
    due = [n for n in range(21, 40) if restart_due(n)]
    assert [n for n in due if long_starts_due(n, carried)] == [n for n in due if n - 20 >= 3.5] != due
    # ahead of the chosen fit (a first fit whose short start leave-one-out chose): every grid point
    won = with_long_starts({}, 20, -0.5, None)
    assert [n for n in due if long_starts_due(n, won)] == due
    assert "long_starts_at" not in with_long_starts({"noise": 1e-4}, 21, None, None)


def test_the_first_refits_run_every_long_start_and_later_ones_the_shorter():
    """Refits while the observations are under EARLY_REFITS times the first fit's run the first fit's
    long starts, later ones REFIT_LENGTHSCALES; off the grid, or trailing, none. A fit recorded
    without the first fit's observations (an older checkpoint) counts as late."""
    from pinnbo.models.pde_gp import FIRST_LENGTHSCALES
    from pinnbo.optimizers.pde_gp import (DEFICIT_PER_OBSERVATION, EARLY_REFITS, REFIT_LENGTHSCALES, refit_starts,
                                          with_long_starts)

    first = with_long_starts({}, 10, 0.0, None)
    assert first["first_fit_at"] == 10 and EARLY_REFITS * 10 < 14
    assert refit_starts(11, first) == refit_starts(12, first) == FIRST_LENGTHSCALES == (0.2, 0.6)
    later = with_long_starts({}, 12, 0.0, with_long_starts({}, 11, None, first))
    assert later["first_fit_at"] == 10
    assert refit_starts(14, later) == REFIT_LENGTHSCALES == (0.2,)
    assert refit_starts(13, later) == ()
    assert refit_starts(14, {"noise": 1e-4}) == REFIT_LENGTHSCALES
    assert refit_starts(14, with_long_starts({}, 12, 5 * DEFICIT_PER_OBSERVATION, later)) == ()


def test_the_long_starts_deficit_is_checkpointed_with_the_fit():
    """The first fit records where its long starts ended; a step off the refit grid carries that on,
    and a restored optimiser asks what the uninterrupted one asks."""
    opt = started(n_init=12)
    first = opt.ask()
    recorded = opt.state_dict()["fits"][-1][1]
    assert recorded["long_starts_at"] == recorded["first_fit_at"] == 12
    assert math.isfinite(recorded["long_starts_deficit"])
    opt.tell(first, harmonic(first))                            # 13 observations: off the grid
    restored = started(n_init=12)
    restored.load_state_dict(opt.state_dict())
    restored.tell(first, harmonic(first))
    np.testing.assert_array_equal(opt.ask(), restored.ask())
    carried = opt.state_dict()["fits"][-1][1]
    assert (carried["long_starts_at"], carried["long_starts_deficit"], carried["first_fit_at"]) == \
        (12, recorded["long_starts_deficit"], 12)


def test_a_warm_fits_curvature_goes_through_a_state_file_and_the_resumed_run_asks_the_same(tmp_path):
    """A warm fit records its L-BFGS curvature pairs with its hyper-parameters; they pass through a
    state file (tensors, loaded without pickle) and the restored optimiser asks what the
    uninterrupted one asks."""
    from pinnbo.runner.state import load_state, save_state

    opt = run(started(), 10)
    recorded = opt.state_dict()["fits"][-1][1]
    pairs = recorded["curvature"]
    assert pairs.dtype == torch.float64 and pairs.shape[0] == 2 and pairs.shape[2] == 5
    identity = {"case": "harmonic", "seed": 0}
    save_state(tmp_path / "state.pt", opt.state_dict(), len(opt.y), identity)
    loaded = load_state(tmp_path / "state.pt", identity)
    assert torch.equal(loaded["state"]["fits"][-1][1]["curvature"], pairs)
    restored = started()
    for p, value in zip(opt.X[6:], opt.y[6:]):
        restored.tell(p, value)
    restored.load_state_dict(loaded["state"])
    np.testing.assert_array_equal(opt.ask(), restored.ask())


def jump_plate(p: np.ndarray, a_y: float = 1.0) -> float:
    """−(e^x sin(y/√a_y)/10 + 8 θ/(π/2)) with θ the angle seen from the corner (2, 0) in the
    coordinates (x, y/√a_y): it solves f_xx + a_y f_yy = 0, is 0 along y = 0 and −8 − e² sin(y/√a_y)/10
    along x = 2, so its infimum, −8 − e²/10 at (2, √a_y π/2), sits on the edge that the jump at (2, 0)
    lifts by 8 (the corner itself is the mean of its two edges)."""
    across, along = 2.0 - p[0], p[1] / math.sqrt(a_y)
    angle = 0.5 if across == 0 and along == 0 else math.atan2(along, across) / (math.pi / 2)
    return float(-(np.exp(p[0]) * np.sin(p[1] / math.sqrt(a_y)) / 10 + 8 * angle))


def helmholtz_plate(p: np.ndarray) -> float:
    """−(cos 2x cos 3y/10 + 8 θ/(π/2) J₀(√13 ρ)), θ and ρ the angle and distance seen from the corner
    (2, 0): it solves f_xx + f_yy + 13 f = 0 (4 + 9 = 13; θ J₀(kρ) solves Δv + k²v = 0), is −cos(2x)/10
    along y = 0 and −cos(4) cos(3y)/10 − 8 J₀(√13 y) along x = 2, whose limit at the corner, −8 −
    cos(4)/10, is the infimum (both cosines and J₀ fall away from it quadratically, J₀ faster)."""
    from scipy.special import j0

    across, along = 2.0 - p[0], p[1]
    angle = 0.5 if across == 0 and along == 0 else math.atan2(along, across) / (math.pi / 2)
    return float(-(np.cos(2 * p[0]) * np.cos(3 * p[1]) / 10 + 8 * angle * j0(math.sqrt(13) * math.hypot(across, along))))


def helmholtz_field(p: np.ndarray) -> float:
    """cos 2x cos 3y: f_xx + f_yy + 13 f = 0 (4 + 9 = 13), continuous, with minima −1 inside the box
    at (π/2, 2π/3) and (π/2, 4π/3) and on its edges x = 0 and y = 0."""
    return float(np.cos(2 * p[0]) * np.cos(3 * p[1]))


def test_the_bound_narrows_where_the_operator_oscillates_and_nothing_jumps():
    """β is OSCILLATING_BETA under a Helmholtz operator whose model carries no jump functions, and
    the proposal is then the minimiser of μ − σ/2 (no design of a Sobol pool has a lower one); β stays
    UCB_BETA where the same operator's boundary data jump, under Laplace's operator, and under a
    reaction that a flow's decay outweighs (μ = 3 − 16/4 < 0)."""
    helmholtz = PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T, rhs=0)
    decaying = PDE(T.diff(x, 2) + T.diff(y, 2) - 4 * T.diff(x) + 3 * T, rhs=0)
    for pde, continuous, beta in ((helmholtz, None, pde_gp.OSCILLATING_BETA), (helmholtz, False, pde_gp.UCB_BETA),
                                  (LAPLACE, None, pde_gp.UCB_BETA), (decaying, None, pde_gp.UCB_BETA)):
        opt = make_optimizer("pde-gp", BOX, 0, params=FAST, pde=pde, boundary_continuous=continuous)
        assert opt.beta == beta, (pde, continuous)
    opt = make_optimizer("pde-gp", BOX, 0, params=FAST, pde=helmholtz)
    for p in initial_design(BOX, 8, 0):
        opt.tell(p, helmholtz_field(p))
    proposal = BOX.to_unit(opt.ask())
    pool = sobol_unit(512, 2, 1, "test")
    with torch.no_grad():
        posterior = opt.model.posterior(torch.as_tensor(np.vstack([proposal, pool])).unsqueeze(1))
        bound = (posterior.mean - math.sqrt(pde_gp.OSCILLATING_BETA) * posterior.variance.sqrt()).reshape(-1)
    assert bound[0] <= bound[1:].min() + 1e-9


def tensor_plate(p: np.ndarray) -> float:
    """−((x² − y²)/10 + 8 θ/ω) with θ the angle seen from the corner (2, 0) in the coordinates where
    f_xx + f_xy + f_yy is the Laplacian, from the edge y = 0, and ω the corner's opening there
    (docs/algorithms.md, "Boundary data that jump at a corner": A = [[1, ½], [½, 1]], √det A / A_yy
    = √3/2, A_xy / A_yy = ½, s = −1 at (2, 0)): it solves f_xx + f_xy + f_yy = 0, is −x²/10 along
    y = 0 and −8 − (4 − y²)/10 along x = 2, so its infimum, −8.4, is the limit at (2, 0) along x = 2."""
    across, along = 2.0 - p[0], p[1]
    if across == 0 and along == 0:
        angle = 0.5
    else:
        angle = math.atan2(math.sqrt(3) / 2 * along, across + along / 2) / math.atan2(math.sqrt(3) / 2, 0.5)
    return float(-((p[0] ** 2 - p[1] ** 2) / 10 + 8 * angle))


def test_boundary_data_that_jump_add_the_corners_angle_functions_where_they_solve_the_pde():
    """Declared jumps and a constant-coefficient operator in the plane: the model carries the four
    corner functions (the angles stretched where f_xx + a f_yy, a ≠ 1, sheared under a mixed
    derivative) and reaches the infimum beside the jump within 10⁻³ in three proposals; a
    coefficient that varies, the frozen operator's functions with the operator's values on them; a
    Helmholtz operator, θ J₀(kρ); data declared continuous, or not declared, leave the kernel
    alone."""
    anisotropic = PDE(T.diff(x, 2) + 2 * T.diff(y, 2), rhs=0)
    tensor = PDE(T.diff(x, 2) + T.diff(x, y) + T.diff(y, 2), rhs=0)
    varying = PDE(T.diff(x, 2) + T.diff(y, 2) + x * T.diff(x), rhs=0)
    helmholtz = PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T, rhs=0)
    laplace, stretched = jump_plate, (lambda p: jump_plate(p, 2.0))
    for pde, plate, infimum, continuous, carries in (
            (LAPLACE, laplace, -8 - math.exp(2) / 10, False, True), (LAPLACE, laplace, None, True, False),
            (LAPLACE, laplace, None, None, False), (anisotropic, stretched, -8 - math.exp(2) / 10, False, True),
            (tensor, tensor_plate, -8.4, False, True), (varying, laplace, None, False, True),
            (helmholtz, helmholtz_plate, -8 - math.cos(4) / 10, False, True)):
        opt = make_optimizer("pde-gp", BOX, 0, params=FAST, pde=pde, boundary_continuous=continuous)
        for p in initial_design(BOX, 8, 0):
            opt.tell(p, plate(p))
        proposals = [opt.ask()]
        assert (opt.model.basis is not None) is carries
        assert (opt.model.basis_operator is not None) is (pde is varying)
        if infimum is not None:
            opt.tell(proposals[0], plate(proposals[0]))
            for _ in range(2):
                proposals.append(opt.ask())
                opt.tell(proposals[-1], plate(proposals[-1]))
            assert min(plate(p) for p in proposals) < infimum + 1e-3, pde


def test_a_search_stalled_on_a_jumping_plate_escapes_to_the_corners_it_has_not_measured():
    """Where the model carries the corner functions, the stall rule's escape is a corner not yet
    evaluated: its value, the mean of its two edges' limits, fixes its jump functions' amplitude,
    which no design away from it measures (docs/algorithms.md, "The stall rule"). The run finds
    the infimum beside the jump, stalls there, and then visits the other corners one by one."""
    opt = make_optimizer("pde-gp", BOX, 0, params=FAST, pde=LAPLACE, boundary_continuous=False)
    for p in initial_design(BOX, 8, 0):
        opt.tell(p, jump_plate(p))
    escapes = []
    for _ in range(13):
        evaluated = BOX.to_unit(np.stack(opt.X))
        p = opt.ask()
        unit = BOX.to_unit(p)
        if np.all((unit == 0.0) | (unit == 1.0)):
            assert stalled(evaluated, np.array(opt.y)) and not np.any(np.all(evaluated == unit, axis=1))
            escapes.append(tuple(unit))
        opt.tell(p, jump_plate(p))
    assert len(escapes) >= 3 and len(set(escapes)) == len(escapes)
    assert min(opt.y) < -8 - math.exp(2) / 10 + 1e-3


@pytest.mark.parametrize("pde, plate, centred", [
    (LAPLACE, jump_plate, False),
    (PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T, rhs=0), helmholtz_plate, True),
])
def test_the_corner_functions_are_centred_where_the_search_covers_the_whole_plate(pde, plate, centred):
    """Laplace's equation keeps the maximum principle, the bound is searched on the edges and the
    model carries the angles themselves, ½ at a corner; a gain has none, the search covers the whole
    plate, and the model carries them centred, 0 at a corner and −½, ½ beside it on its two edges
    (pinnbo.models.corners: the two sides of a jump equally uncertain)."""
    opt = make_optimizer("pde-gp", BOX, 0, params=FAST, pde=pde, boundary_continuous=False)
    for p in initial_design(BOX, 8, 0):
        opt.tell(p, plate(p))
    opt.ask()
    corner = torch.tensor([[2.0, 0.0], [2.0 - 1e-9, 0.0], [2.0, 1e-9]], dtype=torch.float64)    # column 2: (x₁, y₀)
    values = opt.model.basis(corner)[:, 2].tolist()
    assert values == pytest.approx([0.0, -0.5, 0.5] if centred else [0.5, 0.0, 1.0], abs=1e-8)
