"""The heated plate: the objective obeys Laplace's equation in the sensor's position for every
heater level (its optimum on the boundary, 52 at (½, 0) and level 8, as the closed form on the bottom
edge says), and pde-gp takes the level as an integer parameter of its PDE."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from pinnbo import load_problem
from pinnbo.cli import app
from tests.survival import records


@pytest.fixture(scope="module")
def plate():
    return load_problem("heated_plate", grid=64)


def test_the_bottom_edge_is_the_closed_form_and_the_optimum(plate):
    for x, level in [(0.5, 8), (0.25, 3), (0.9, 12)]:
        expected = 20 + 8 * level * np.sin(np.pi * x) - 0.5 * level**2
        assert plate.objective(plate.domain.encode([x, 0.0, level])) == pytest.approx(expected, abs=1e-9)
    assert plate.optimum == 52.0 and plate.pde.own_inputs == ("x", "y")


def test_inside_the_plate_each_level_is_harmonic(plate):
    # The five-point Laplacian of the sampled field vanishes (to the solve's accuracy) at any level.
    h = 0.05
    for level in (0, 6, 12):
        f = lambda x, y: plate.objective(plate.domain.encode([x, y, level]))  # noqa: E731
        for x, y in [(0.3, 0.4), (0.6, 0.7)]:
            laplacian = (f(x + h, y) + f(x - h, y) + f(x, y + h) + f(x, y - h) - 4 * f(x, y)) / h**2
            scale = abs(f(x, y)) / h**2
            assert abs(laplacian) < 2e-3 * scale


def test_pde_gp_searches_the_levels_of_its_parameter(tmp_path):
    result = CliRunner().invoke(app, ["run", "cases/heated_plate.yaml", "--smoke", "--quiet", "--output",
                                      str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    for r in records(tmp_path / "out"):
        x, y, level = r["x"]
        assert type(level) is int and 0 <= level <= 12 and 0 <= x <= 1 and 0 <= y <= 1
