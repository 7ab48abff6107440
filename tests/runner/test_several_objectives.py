"""Several objectives: gp-ehvi's run leaves a Pareto front that nothing evaluated dominates and the
hypervolume of its evaluations; a program reports its objectives as JSON, a wrong set of them is a
failed evaluation with its reason; a lab tells them; a bench compares hypervolumes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from pinnbo import load_problem
from pinnbo.cli import app
from pinnbo.pareto import hypervolume
from tests.survival import records

runner = CliRunner()
SMOKE = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}


def write(folder: Path, **fields) -> Path:
    data = {"name": "mo", "problem": "zdt1", "params": {"dim": 3}, "method": "gp-ehvi", "method_params": SMOKE,
            "budget": 12, "initial_points": 6, "seed": 1, "output": str(folder / "out"), **fields}
    path = folder / "case.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_gp_ehvi_leaves_a_front_nothing_dominates_and_its_hypervolume(tmp_path):
    result = runner.invoke(app, ["run", str(write(tmp_path)), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    logged = records(tmp_path / "out")
    values = np.array([[r["objectives"]["f1"], r["objectives"]["f2"]] for r in logged])
    front = np.array([[e["values"]["f1"], e["values"]["f2"]] for e in summary["pareto_front"]])
    for point in front:   # no evaluation dominates a front point
        assert not np.any(np.all(values <= point, axis=1) & np.any(values < point, axis=1))
    for k, point in enumerate(values):   # and every evaluation off the front is dominated by it (or equal)
        if not any(np.array_equal(point, f) for f in front):
            assert np.any(np.all(front <= point, axis=1))
    assert summary["hypervolume"] == pytest.approx(hypervolume(values, [11.0, 11.0]))
    assert summary["reference"] == {"f1": 11.0, "f2": 11.0} and not summary["reference_inferred"]
    assert (tmp_path / "out" / "pareto.png").stat().st_size > 0
    assert all(r["y"] is None and r["true"] is None and set(r["objectives"]) == {"f1", "f2"} for r in logged)
    # the proposals beat the initial design's hypervolume
    assert hypervolume(values, [11, 11]) > hypervolume(values[:6], [11, 11])


PROGRAM = """import json, sys
x, y = map(float, sys.argv[1:3])
if x > 0.9:
    print(json.dumps({"objectives": {"cost": x}}))      # one objective missing
else:
    print(json.dumps({"objectives": {"cost": x, "life": (1 - x) * (1 + y)}}))
"""


def test_a_program_reports_its_objectives_and_a_missing_one_fails_the_evaluation(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    case = write(tmp_path, problem="external", method="random", method_params={}, params={
        "variables": {"x": [0, 1], "y": [0, 1]}, "objectives": {"cost": "minimize", "life": "maximize"}},
        oracle={"command": f"{sys.executable} prog.py {{x}} {{y}}", "parse": "json"}, budget=16)
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    for r in logged:
        x, y = r["x"]
        if x > 0.9:
            assert r["status"] == "failed" and "missing ['life']" in r["error"]
        else:
            assert r["objectives"] == {"cost": x, "life": pytest.approx((1 - x) * (1 + y))}
            assert "objectives_true" not in r       # a program's values are measurements
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["reference_inferred"] and summary["hypervolume"] > 0


def test_a_lab_tells_several_objectives_as_json(tmp_path):
    case = write(tmp_path, problem="external", method="random", method_params={}, params={
        "variables": {"x": [0, 1]}, "objectives": {"cost": "minimize", "life": "maximize"}}, budget=4, initial_points=2)
    pending = json.loads(runner.invoke(app, ["ask", str(case)]).stdout)
    x = pending["x"]["x"]
    bad = runner.invoke(app, ["tell", str(case), "--x", repr(x), "--y", "1"])
    assert bad.exit_code == 2 and "several objectives (cost, life): give them with --json" in bad.stderr
    told = runner.invoke(app, ["tell", str(case), "--json", json.dumps({"x": [x], "objectives": {"cost": 2, "life": 3}})])
    assert told.exit_code == 0, told.output
    (record,) = records(tmp_path / "out")
    assert record["objectives"] == {"cost": 2.0, "life": 3.0} and record["y"] is None


@pytest.mark.parametrize("fields, needle", [
    ({"method": "gp-ei", "method_params": {}}, "method: 'gp-ei' takes one objective and this problem has 2 (f1, f2); "
                                               "use one of gp-ehvi, optuna-gp, optuna-tpe, pde-gp, random"),
    ({"problem": "dropwave", "params": {"dim": 2}}, "method: 'gp-ehvi' is for several objectives and this problem has one"),
    ({"target": 1.0}, "target: a target value is for one objective"),
    ({"problem": "external", "params": {"variables": {"x": [0, 1]}, "objectives": {"cost": "minimize"}}},
     "params.objectives: expected two or more outputs"),
    ({"problem": "external", "params": {"variables": {"x": [0, 1]}, "objectives": {"a": "minimize", "b": "lower"}}},
     "params.objectives.b: expected minimize or maximize, got 'lower'"),
    ({"problem": "external", "params": {"variables": {"x": [0, 1]}, "objectives": {"a": "minimize", "b": "minimize"},
                                        "reference": {"a": 1.0}}},
     "params.reference: expected a value for each objective (a, b)"),
])
def test_several_objectives_refuse_what_they_cannot_take(tmp_path, fields, needle):
    result = runner.invoke(app, ["run", str(write(tmp_path, **fields)), "--quiet"])
    assert result.exit_code == 2 and needle in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_a_reference_point_no_design_dominates_is_named_in_the_summary(tmp_path):
    (tmp_path / "prog.py").write_text("import json, sys\nx = float(sys.argv[1])\nprint(json.dumps({'a': x, 'b': 1 - x}))\n")
    case = write(tmp_path, method="random", method_params={}, problem="external", budget=5, initial_points=3,
                 params={"variables": {"x": [0, 1]}, "objectives": {"a": "minimize", "b": "minimize"},
                         "reference": {"a": -1.0, "b": -1.0}},
                 oracle={"command": f"{sys.executable} prog.py {{x}}", "parse": "json"})
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["hypervolume"] == 0.0 and "no evaluated design dominates the reference point" in \
        summary["hypervolume_note"]
    shown = runner.invoke(app, ["show", str(tmp_path / "out")])
    assert "no evaluated design dominates" in shown.stdout


def test_the_beam_pareto_problem_trades_mass_for_deflection():
    problem = load_problem("beam_pareto")
    light = problem.objective(problem.domain.encode(["aluminium", "IPE100", 0.7]))
    stiff = problem.objective(problem.domain.encode(["steel", "IPE220", 0.0]))
    assert light["mass"] < stiff["mass"] and light["deflection"] > stiff["deflection"]


def test_a_bench_compares_hypervolumes(tmp_path):
    case = write(tmp_path)
    result = runner.invoke(app, ["bench", str(case), "--methods", "gp-ehvi,random", "--seeds", "2", "--budget", "9",
                                 "--initial-points", "6", "--quiet", "--output", str(tmp_path / "bench")])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "bench" / "mo" / "summary.json").read_text())
    assert summary["sense"] == "maximize" and summary["optimum"] == pytest.approx(120 + 2 / 3)
    for method in ("gp-ehvi", "random"):
        finals = summary["results"][method]["final_best"]["values"]
        assert all(0 < v <= 120 + 2 / 3 for v in finals)
    assert "hypervolume" in (tmp_path / "bench" / "mo" / "table.md").read_text()


def test_pde_gp_takes_a_pde_per_objective(tmp_path):
    """Two harmonic objectives, each with Laplace's equation (a case's pde mapping): pde-gp conditions
    a GP per objective on its PDE and proposes by hypervolume improvement."""
    (tmp_path / "prog.py").write_text("import json, math, sys\nx, y = map(float, sys.argv[1:])\n"
                                      "print(json.dumps({'a': math.exp(x) * math.sin(y), 'b': x * x - y * y}))\n")
    laplace = "diff(u, x, 2) + diff(u, y, 2) = 0"
    case = write(tmp_path, problem="external", method="pde-gp", method_params={"collocation_points": 32},
                 params={"variables": {"x": [0, 1], "y": [0, 2]}, "objectives": {"a": "minimize", "b": "maximize"},
                         "pde": {"a": laplace, "b": laplace}, "reference": {"a": 3.0, "b": -4.0}},
                 oracle={"command": f"{sys.executable} prog.py {{x}} {{y}}", "parse": "json"}, budget=9, initial_points=6)
    result = runner.invoke(app, ["run", str(case), "--quiet", "--smoke"])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    assert len(logged) == 6 and len({tuple(r["x"]) for r in logged}) == 6
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["hypervolume"] > 0 and summary["pareto_front"]
    wrong = write(tmp_path, problem="external", method="pde-gp", method_params={},
                  params={"variables": {"x": [0, 1], "y": [0, 2]}, "objectives": {"a": "minimize", "b": "maximize"},
                          "pde": {"c": laplace}})
    bad = runner.invoke(app, ["run", str(wrong), "--quiet"])
    assert bad.exit_code == 2 and "params.pde.c: not an objective; expected names among a, b" in bad.stderr
