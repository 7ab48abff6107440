"""Integer, log and choice variables through a whole run: the oracle gets each value as its kind,
the log keeps designs by value, GP-EI searches the mixed box without repeating a design, a run
resumes to the uninterrupted history, and ask/tell and warm starts take designs back by value."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import yaml
from typer.testing import CliRunner

from pinnbo.cli import app
from tests.survival import records

runner = CliRunner()
OFFSET = {"copper": 0.0, "aluminium": 0.3, "steel": 1.0}
VARIABLES = {"x": [0, 1], "rate": {"log": [1.0e-4, 1.0e-1]}, "fins": {"integer": [2, 12]},
             "material": {"choices": ["copper", "aluminium", "steel"]}}
GP_SMOKE = {"num_restarts": 2, "raw_samples": 64, "maxiter": 20}

SIMULATOR = f"""import json, math, sys
x, rate, fins, material = sys.argv[1:]
with open("calls.jsonl", "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
offset = {OFFSET!r}[material]
print((float(x) - 0.3) ** 2 + (math.log10(float(rate)) + 2) ** 2 + 0.1 * (int(fins) - 7) ** 2 + offset)
"""

PROBLEM_FILE = f"""from pinnbo import Box, Problem, Variable

OFFSET = {OFFSET!r}


def fins(continuous: bool = True):
    variables = [Variable("fins", "integer", 2, 12),
                 Variable("material", "choice", choices=("copper", "aluminium", "steel"))]
    if continuous:
        variables = [Variable("x", "real", 0.0, 1.0)] + variables

    def objective(design):
        x = design.get("x", 0.3)
        return (x - 0.3) ** 2 + 0.1 * (design["fins"] - 7) ** 2 + OFFSET[design["material"]]

    return Problem("fins", Box.of(variables), objective, optimum=0.0)
"""


def value(design: dict) -> float:
    return ((design["x"] - 0.3) ** 2 + (math.log10(design["rate"]) + 2) ** 2 + 0.1 * (design["fins"] - 7) ** 2
            + OFFSET[design["material"]])


def write_case(folder: Path, **fields) -> Path:
    data = {"name": "mixed", "problem": "external", "params": {"variables": VARIABLES}, "method": "random",
            "budget": 6, "initial_points": 4, "seed": 3, "output": str(folder / "out"), **fields}
    path = folder / "case.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def python_case(folder: Path, **fields) -> Path:
    (folder / "fins.py").write_text(PROBLEM_FILE)
    data = {"name": "fins", "problem": "fins.py:fins", "method": "gp-ei", "method_params": GP_SMOKE,
            "budget": 10, "initial_points": 5, "seed": 2, "output": str(folder / "out"), **fields}
    path = folder / "case.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def check_design(x: list) -> None:
    assert isinstance(x[0], float) and 0.0 <= x[0] <= 1.0
    assert isinstance(x[1], float) and 1e-4 <= x[1] <= 1e-1
    assert type(x[2]) is int and 2 <= x[2] <= 12
    assert x[3] in OFFSET


def test_a_program_gets_integers_as_integers_and_choices_by_name(tmp_path):
    (tmp_path / "sim.py").write_text(SIMULATOR)
    case = write_case(tmp_path, oracle={"command": f"{sys.executable} sim.py {{x:.4f}} {{rate}} {{fins}} {{material}}"})
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert len(logged) == len(calls) == 6
    for record, argv in zip(logged, calls):
        check_design(record["x"])
        x, rate, fins, material = record["x"]
        assert argv == [f"{x:.4f}", repr(rate), str(fins), material]
        design = {"x": float(argv[0]), "rate": rate, "fins": fins, "material": material}
        assert math.isclose(record["y"], value(design), rel_tol=1e-12)


def test_gp_ei_searches_a_mixed_box_and_resumes_to_the_uninterrupted_history(tmp_path):
    whole, part = tmp_path / "whole", tmp_path / "part"
    whole.mkdir(), part.mkdir()
    assert runner.invoke(app, ["run", str(python_case(whole)), "--quiet"]).exit_code == 0
    case = python_case(part)
    assert runner.invoke(app, ["run", str(case), "--quiet", "--budget", "7"]).exit_code == 0
    result = runner.invoke(app, ["run", str(case), "--quiet", "--resume", "--budget", "10"])
    assert result.exit_code == 0, result.output
    assert (part / "out" / "evaluations.jsonl").read_bytes() == (whole / "out" / "evaluations.jsonl").read_bytes()
    logged = records(whole / "out")
    designs = [tuple(r["x"]) for r in logged]
    assert len(set(designs)) == len(designs)               # the duplicate rule holds on a mixed box
    for x, fins, material in designs:
        assert isinstance(x, float) and type(fins) is int and material in OFFSET
    assert {r["phase"] for r in logged[5:]} == {"optimizer"}


def test_gp_ei_finds_the_best_of_an_all_discrete_box(tmp_path):
    # 11 integers x 3 choices = 33 designs, each scored by the acquisition: the optimum (7, copper) is
    # reached well before they are all evaluated.
    case = python_case(tmp_path, params={"continuous": False}, budget=14)
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    logged = records(tmp_path / "out")
    assert [7, "copper"] in [r["x"] for r in logged]
    assert len({tuple(r["x"]) for r in logged}) == 14


def test_ask_and_tell_take_designs_by_value(tmp_path):
    case = write_case(tmp_path, name="lab")
    out = tmp_path / "out"
    for k in range(5):
        result = runner.invoke(app, ["ask", str(case)])
        assert result.exit_code == 0, result.output
        pending = json.loads(result.stdout)
        check_design(list(pending["x"].values()))
        text = ",".join(f"{name}={v}" for name, v in pending["x"].items())
        told = runner.invoke(app, ["tell", str(case), "--x", text, "--y", repr(value(pending["x"]))])
        assert told.exit_code == 0, told.output
    logged = records(out)
    assert len(logged) == 5 and all(r["status"] == "ok" for r in logged)
    for record in logged:
        check_design(record["x"])


def test_a_warm_start_table_names_its_choices(tmp_path):
    rows = [(0.5, 0.01, 7, "steel"), (0.1, 0.001, 3, "copper")]
    (tmp_path / "earlier.csv").write_text("x,rate,fins,material,y\n" + "".join(
        f"{x},{r},{n},{m},{value(dict(x=x, rate=r, fins=n, material=m))}\n" for x, r, n, m in rows))
    case = write_case(tmp_path, warm_start={"file": "earlier.csv"})
    (tmp_path / "sim.py").write_text(SIMULATOR)
    data = yaml.safe_load(case.read_text())
    data["oracle"] = {"command": f"{sys.executable} sim.py {{x}} {{rate}} {{fins}} {{material}}"}
    case.write_text(yaml.safe_dump(data, sort_keys=False))
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    assert [r["x"] for r in logged[:2]] == [list(row) for row in rows]
    assert [r["phase"] for r in logged[:2]] == ["imported", "imported"]
    (tmp_path / "earlier.csv").write_text("x,rate,fins,material,y\n0.5,0.01,7,brass,1.0\n")
    result = runner.invoke(app, ["run", str(case), "--quiet", "--overwrite"])
    assert result.exit_code == 2 and "material: expected one of copper, aluminium, steel, got 'brass'" in result.stderr


def test_the_log_refuses_a_design_the_variables_cannot_take(tmp_path):
    case = write_case(tmp_path)
    (tmp_path / "sim.py").write_text(SIMULATOR)
    data = yaml.safe_load(case.read_text())
    data["oracle"] = {"command": f"{sys.executable} sim.py {{x}} {{rate}} {{fins}} {{material}}"}
    case.write_text(yaml.safe_dump(data, sort_keys=False))
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    log = tmp_path / "out" / "evaluations.jsonl"
    lines = log.read_text().splitlines()
    record = json.loads(lines[1])
    record["x"][3] = "brass"
    lines[1] = json.dumps(record)
    log.write_text("\n".join(lines) + "\n")
    result = runner.invoke(app, ["run", str(case), "--quiet", "--resume", "--budget", "8"])
    assert result.exit_code == 2
    assert "corrupted record 1: 'x': material: expected one of copper, aluminium, steel, got 'brass'" in result.stderr
    assert np.isfinite(len(lines))
