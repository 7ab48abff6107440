"""The cantilever-section case: its finite-difference deflection against the closed form, its mass
against its formula, and gp-cei searching its two choices and one real variable."""

from __future__ import annotations

import math

import numpy as np
import pytest
from typer.testing import CliRunner

from pinnbo import load_problem
from pinnbo.cli import app
from problems.beam_section import MATERIALS, SECTIONS, mass, tip_deflection
from tests.survival import records

runner = CliRunner()


@pytest.mark.parametrize("material, section", [("steel", "IPE100"), ("aluminium", "IPE220")])
def test_an_untapered_cantilever_deflects_q_l4_over_8_e_i(material, section):
    E, I = MATERIALS[material][0], SECTIONS[section][0]
    w = tip_deflection(material, section, 0.0, 3.0, 2000.0)
    assert w == pytest.approx(2000.0 * 3.0**4 / (8 * E * I), rel=1e-4)


def test_a_taper_saves_mass_and_costs_stiffness():
    # A stiffness that falls towards the free end lets the tip deflect more; the mass falls as 1 − τ/2.
    light = mass("steel", "IPE160", 0.6, 3.0)
    assert light == pytest.approx(7850.0 * 20.1e-4 * 3.0 * 0.7)
    deflections = [tip_deflection("steel", "IPE160", t, 3.0, 2000.0) for t in (0.0, 0.3, 0.6)]
    assert deflections[0] < deflections[1] < deflections[2]


def test_the_problem_returns_the_mass_and_the_normalised_deflection():
    problem = load_problem("beam_section")
    x = problem.domain.encode(["aluminium", "IPE220", 0.2])
    value, constraints = problem.objective(x)
    assert value == pytest.approx(mass("aluminium", "IPE220", 0.2, 3.0))
    w = tip_deflection("aluminium", "IPE220", 0.2, 3.0, 2000.0)
    assert constraints == {"deflection": pytest.approx(w / (3.0 / 250.0) - 1.0)}


def test_gp_cei_runs_the_case_with_its_choices(tmp_path):
    result = runner.invoke(app, ["run", "cases/beam_section.yaml", "--smoke", "--quiet", "--output",
                                 str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    assert len(logged) == 6
    for r in logged:
        material, section, taper = r["x"]
        assert material in MATERIALS and section in SECTIONS and 0.0 <= taper <= 0.7
        assert r["feasible"] == (r["constraints_true"]["deflection"] <= 0)
        assert math.isclose(r["y"], mass(material, section, taper, 3.0), rel_tol=1e-12)
    assert np.isfinite([r["y"] for r in logged]).all()
