"""Noisy measurements: the recommended design is the argmin of the posterior mean over the evaluated
designs, a known sd fixes the GP's noise, declared noise allows replicates, and a measurement's own
sd travels from tell and warm starts to the log."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
import torch
import yaml
from typer.testing import CliRunner

from pinnbo import Box, Problem, make_optimizer
from pinnbo.cli import app
from pinnbo.models.corners import corner_angles
from pinnbo.models.gp import fit_gp
from pinnbo.pde import PDE
from pinnbo.report.recommend import recommend
from pinnbo.runner.evaluation import observation
from pinnbo.runner.history import History
from pinnbo.streams import derived_seed
from tests.survival import records

runner = CliRunner()
BOX = Box((0.0,), (1.0,), ("x",))


def noisy_history(n: int = 25, sd: float = 0.3, seed: int = 0) -> tuple[History, Problem]:
    """Measurements of (x − 0.6)² with noise sd: a design far from 0.6 can be the luckiest."""
    problem = Problem("bowl", BOX, lambda x: float((x[0] - 0.6) ** 2), noise_std=sd)
    history = History("minimize")
    rng = np.random.default_rng(seed)
    for k, x in enumerate(rng.random(n)):
        history.append(observation(problem, np.array([x]), k, seed, "initial", (x - 0.6) ** 2, None))
    return history, problem


def test_the_recommended_design_is_the_argmin_of_the_posterior_mean():
    history, problem = noisy_history()
    chosen = recommend(history, problem, seed=3)
    X = np.array([[r.x[0]] for r in history.evaluations])
    y = np.array([r.y for r in history.evaluations])
    with torch.random.fork_rng():
        torch.manual_seed(derived_seed(3, "recommend") % (2**31))
        model = fit_gp(X, y, noise_free=False)
        mean = -model.posterior(torch.as_tensor(X)).mean.detach().numpy().reshape(-1)
    assert chosen["index"] == int(np.argmin(mean))
    assert chosen["predicted"] == pytest.approx(float(mean.min()))
    assert chosen["predicted_sd"] > 0 and chosen["true"] == history.evaluations[chosen["index"]].true
    # the posterior mean pools the noise away: the recommendation is closer to 0.6 than the luckiest draw
    luckiest = history.best(key="y")
    assert abs(chosen["x"][0] - 0.6) < abs(luckiest.x[0] - 0.6)


@pytest.mark.parametrize("a_y, a_xy", [(1.0, 0.0), (4.0, 0.0), (1.0, 0.5)])
def test_where_the_boundary_data_jump_the_recommendation_tells_a_corner_from_the_edge_beside_it(a_y, a_xy):
    """x² − y²/a_y plus a jump of 10 at the corner (1, 0) (0 on the bottom edge, 10 on the right one, 5
    at the corner), measured with noise, under u_xx + 2 a_xy u_xy + a_y u_yy = 0 (the jump's fan
    stretched where a_y ≠ 1, sheared where a_xy ≠ 0): the supremum, 11, is the limit along the right
    edge, and the GP with the corners' functions recommends the design 10⁻⁹ beside the corner there;
    a smooth kernel, which cannot tell the corner (6) from it, recommends a worse one."""
    x, y = sp.symbols("x y")
    u = sp.Function("u")(x, y)
    box = Box((0.0, 0.0), (1.0, 1.0), ("x", "y"))
    stretch, shear = math.sqrt(a_y - a_xy**2) / a_y, a_xy / a_y      # √det A / A_yy, A_xy / A_yy

    def plate(p):
        angles = corner_angles(torch.as_tensor(np.asarray(p, dtype=np.float64))[None], torch.zeros(2), torch.ones(2),
                               stretch, shear)
        return float(10 * angles[0, 2]) + float(p[0]) ** 2 - float(p[1]) ** 2 / a_y

    designs = [[1.0, 0.0], [1.0, 1e-9], [0.5, 0.0], [1.0, 0.5], [0.2, 0.3], [0.6, 0.7], [0.9, 0.1], [0.4, 0.9],
               [1.0, 0.9], [0.0, 0.4], [0.7, 0.2], [0.3, 0.6]]
    laplace = PDE(u.diff(x, 2) + 2 * a_xy * u.diff(x, y) + a_y * u.diff(y, 2), rhs=0)
    for continuous, chosen_index in ((False, 1), (None, None)):
        problem = Problem("plate", box, plate, "maximize", pde=laplace, noise_std=0.05,
                          boundary_continuous=continuous)
        history = History("maximize")
        for k, p in enumerate(designs):
            history.append(observation(problem, np.array(p), k, 0, "initial", plate(p), None))
        chosen = recommend(history, problem, seed=0)
        if chosen_index is not None:
            assert chosen["index"] == chosen_index and chosen["true"] == pytest.approx(11.0)
        else:       # the smooth kernel averages the corner with the design beside it, and looks elsewhere
            assert chosen["true"] < 10.9


def test_without_noise_the_recommendation_is_the_best_observed_design():
    history, problem = noisy_history(sd=0.0)
    chosen = recommend(history, problem)
    best = history.best(key="y")
    assert chosen["index"] == best.index and chosen["predicted"] == best.y and chosen["predicted_sd"] == 0.0


def test_a_known_sd_fixes_the_gp_noise_at_its_square():
    rng = np.random.default_rng(1)
    X = rng.random((12, 1))
    y = np.sin(6 * X[:, 0]) * 3.0
    sd = np.full(12, 0.2)
    model = fit_gp(X, y, noise_free=False, noise_sd=sd)
    std = float(model.outcome_transform.stdvs.reshape(-1)[0])
    noise = model.likelihood.noise.detach().numpy().reshape(-1)
    np.testing.assert_allclose(noise * std**2, sd**2, rtol=1e-10)   # Standardize rescales y's units


def test_declared_noise_allows_replicates_and_passes_each_measurements_sd():
    plain = make_optimizer("gp-ei", BOX, 0)
    noisy = make_optimizer("gp-ei", BOX, 0, observation_noise=0.1)
    assert plain.duplicate_tol == 1e-4 and noisy.duplicate_tol == 0.0
    for k, x in enumerate([0.1, 0.5, 0.9]):
        noisy.tell(np.array([x]), float(x), sd=None if k else 0.05)
    np.testing.assert_array_equal(noisy.known_noise(), [0.05, 0.1, 0.1])
    learned = make_optimizer("gp-ei", BOX, 0, observation_noise="learned")
    learned.tell(np.array([0.2]), 1.0)
    assert learned.known_noise() is None and learned.duplicate_tol == 0.0


def _lab(folder: Path, **fields) -> Path:
    data = {"name": "lab", "problem": "external", "params": {"variables": {"x": [0, 1]}}, "method": "random",
            "budget": 5, "initial_points": 3, "seed": 0, "output": str(folder / "out"), **fields}
    path = folder / "lab.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_told_sd_is_recorded_and_a_told_value_has_no_true_value(tmp_path):
    case = _lab(tmp_path, observation_noise="learned")
    pending = json.loads(runner.invoke(app, ["ask", str(case)]).stdout)
    x = repr(pending["x"]["x"])
    bad = runner.invoke(app, ["tell", str(case), "--x", x, "--y", "1.5", "--sd", "-1"])
    assert bad.exit_code == 2 and "--sd: expected a standard deviation > 0" in bad.stderr
    assert runner.invoke(app, ["tell", str(case), "--x", x, "--y", "1.5", "--sd", "0.25"]).exit_code == 0
    (record,) = records(tmp_path / "out")
    assert record["y"] == 1.5 and record["sd"] == 0.25 and record["true"] is None


def test_a_warm_start_sd_column_is_recorded(tmp_path):
    (tmp_path / "earlier.csv").write_text("x,y,sd\n0.25,1.0,0.1\n0.75,2.0,\n")
    case = _lab(tmp_path, warm_start={"file": "earlier.csv"}, observation_noise={"sd": 0.3})
    pending = runner.invoke(app, ["ask", str(case)])
    assert pending.exit_code == 0, pending.output
    logged = records(tmp_path / "out")
    assert [(r["x"], r["y"], r.get("sd"), r["true"]) for r in logged] == [([0.25], 1.0, 0.1, None),
                                                                          ([0.75], 2.0, None, None)]
    (tmp_path / "earlier.csv").write_text("x,y,sd\n0.25,1.0,0\n")
    bad = runner.invoke(app, ["ask", str(_lab(tmp_path / ".." / tmp_path.name, warm_start={"file": "earlier.csv"},
                                              output=str(tmp_path / "other")))])
    assert bad.exit_code == 2 and "sd must be a standard deviation > 0" in bad.stderr
