"""The heat-plate problem and its three benchmark cases (REFERENCES §6.1)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from pinnbo.problem import PROBLEM_FACTORIES, ProblemError
from pinnbo.oracles.laplace import HeatPlate
from problems.heat_plate import heat_plate

CASES = Path(__file__).resolve().parents[1] / "cases"
L = 2 * math.pi


def case_boundary(name: str) -> dict:
    case = yaml.safe_load((CASES / f"{name}.yaml").read_text())
    assert case["problem"] == "heat_plate" and case["name"] == name
    return case["params"]["boundary"]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.getbasetemp() / "pinnbo-cache"
    monkeypatch.setenv("PINNBO_CACHE", str(path))
    return path


# f* is the supremum of the boundary data (maximum principle), independent of the grid: a coarse
# solve is enough. Values: limits along the edge that rises into the corner.
@pytest.mark.parametrize(
    ("name", "f_star", "corner", "edge"),
    [
        ("heat_bc1", 3374.5932759, (L, 0.0), "bottom"),
        ("heat_bc2", 880.3151090, (L, L), "right"),
        ("heat_bc3", 885.5782970, (0.0, L), "left"),
    ],
)
def test_case_optimum(name, f_star, corner, edge):
    plate = HeatPlate(case_boundary(name), grid=32)
    value, location = plate.supremum()
    assert value == pytest.approx(f_star, rel=1e-8)
    np.testing.assert_allclose(location, corner, atol=1e-7)
    assert plate(location) == value
    # the supremum is approached along `edge`; the corner itself returns the mean of both edges
    along = corner[0] if edge in ("bottom", "top") else corner[1]
    limit = plate.edge_data(edge, along)
    assert limit == pytest.approx(f_star, rel=1e-8)
    assert plate(np.array(corner)) < 0.6 * value
    assert plate.cells.max() < value


def test_problem(cache_dir):
    assert PROBLEM_FACTORIES["heat_plate"] is heat_plate
    problem = heat_plate(case_boundary("heat_bc1"), grid=16)
    assert problem.sense == "maximize" and problem.name == "heat_plate"
    assert problem.domain.names == ("x", "y")
    np.testing.assert_allclose(problem.domain.upper, (L, L))
    assert problem.optimum == pytest.approx(3374.5932759, rel=1e-8)
    assert problem.objective(np.asarray(problem.optimum_location)) == problem.optimum
    assert problem.noise_std == 0.0
    assert problem.pde is not None
    xs, ys, values = problem.field_plot(5)
    assert values.shape == (5, 5)
    assert Path(problem.metadata["cache"]).parent == cache_dir


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"grid": 8}, "params.grid"),
        ({"grid": 32.0}, "params.grid"),
        ({"grid": True}, "params.grid"),
        ({"bounds": [[0, 1]]}, "params.bounds"),
        ({"bounds": [[1, 0], [0, 1]]}, "params.bounds"),
        ({"bounds": [[0, float("nan")], [0, 1]]}, "params.bounds"),
        ({"bounds": "0 1 0 1"}, "params.bounds"),
        ({"boundary": {"left": "1", "right": "2", "bottom": "3"}}, "params.boundary.top"),
    ],
)
def test_bad_params(params, field):
    params = {"boundary": {"left": "1", "right": "2", "bottom": "3", "top": "4"}, "grid": 16, **params}
    with pytest.raises(ProblemError, match=field.replace(".", r"\.")):
        heat_plate(**params)
