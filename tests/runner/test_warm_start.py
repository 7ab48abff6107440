"""Evaluations made elsewhere imported into a run, and the stopping rules --target and --max-time."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from pinnbo.cli import app
from pinnbo.streams import initial_design
from pinnbo.problem import Box
from tests.survival import records

runner = CliRunner()
BOX = Box((-5.12, -5.12), (5.12, 5.12), ("x1", "x2"))
ROWS = [(1.0, -2.0), (0.5, 0.25), (-3.0, 4.0)]


def _case(tmp_path: Path, **fields) -> Path:
    data = {"name": "w", "problem": "dropwave", "params": {"dim": 2}, "method": "random", "budget": 8,
            "initial_points": 5, "seed": 1, "output": str(tmp_path / "out"), **fields}
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _csv(tmp_path: Path, rows=ROWS, header="x1,x2,y,operator") -> Path:
    path = tmp_path / "earlier.csv"
    path.write_text(header + "\n" + "".join(f"{a},{b},{a * a + b},me\n" for a, b in rows))
    return path


@pytest.mark.parametrize("counted, total", [(False, 11), (True, 8)])
def test_imported_evaluations_come_first_and_take_initial_points_places(tmp_path, counted, total):
    _csv(tmp_path)
    case = _case(tmp_path, warm_start={"file": "earlier.csv", "counted": counted})
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    assert len(logged) == total
    assert [r["phase"] for r in logged[:5]] == ["imported"] * 3 + ["initial"] * 2
    assert [r["x"] for r in logged[:3]] == [list(p) for p in ROWS]
    assert [r["y"] for r in logged[:3]] == [a * a + b for a, b in ROWS]
    np.testing.assert_array_equal([r["x"] for r in logged[3:5]], initial_design(BOX, 5, 1)[:2])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["imported"] == 3


def test_a_previous_runs_log_imports_with_its_failures(tmp_path):
    first = _case(tmp_path, output=str(tmp_path / "first"))
    assert runner.invoke(app, ["run", str(first), "--quiet"]).exit_code == 0
    lines = (tmp_path / "first" / "evaluations.jsonl").read_text().splitlines()
    failed = json.loads(lines[1])
    failed.update(y=None, true=None, status="failed", error="the furnace tripped")
    lines[1] = json.dumps(failed)
    (tmp_path / "earlier.jsonl").write_text("\n".join(lines) + "\n")
    case = _case(tmp_path, warm_start="earlier.jsonl")
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    logged = records(tmp_path / "out")
    assert len(logged) == 16 and logged[1]["status"] == "failed" and logged[1]["error"] == "the furnace tripped"
    assert all(r["phase"] == "imported" for r in logged[:8]) and logged[8]["phase"] == "optimizer"


def test_an_interrupted_warm_started_run_resumes_without_importing_twice(tmp_path):
    _csv(tmp_path)
    straight = _case(tmp_path, warm_start="earlier.csv", output=str(tmp_path / "straight"))
    assert runner.invoke(app, ["run", str(straight), "--quiet"]).exit_code == 0
    case = _case(tmp_path, warm_start="earlier.csv")
    assert runner.invoke(app, ["run", str(case), "--quiet", "--budget", "6"]).exit_code == 0   # 9 of 11
    assert runner.invoke(app, ["run", str(case), "--quiet", "--resume"]).exit_code == 0
    assert (tmp_path / "out" / "evaluations.jsonl").read_bytes() == \
        (tmp_path / "straight" / "evaluations.jsonl").read_bytes()
    _csv(tmp_path, rows=ROWS[:2])
    changed = runner.invoke(app, ["run", str(case), "--quiet", "--resume", "--budget", "9"])
    assert changed.exit_code == 2 and "warm_start: " in changed.stderr and "different warm_start" in changed.stderr


def test_ask_imports_before_the_first_design_it_hands_out(tmp_path):
    (tmp_path / "earlier.jsonl").write_text(
        json.dumps({"x": {"temperature": 40.0, "pressure": 2.0}, "y": 17.5, "constraints": {"stress": -3.0}}) + "\n")
    case = _case(tmp_path, problem="external", method="random", warm_start="earlier.jsonl", initial_points=3,
                 params={"bounds": {"temperature": [20, 60], "pressure": [1, 3]}, "constraints": ["stress"]})
    asked = runner.invoke(app, ["ask", str(case)])
    assert asked.exit_code == 0, asked.output
    pending = json.loads(asked.stdout)
    assert pending["index"] == 1 and pending["phase"] == "initial"
    logged = records(tmp_path / "out")
    assert len(logged) == 1 and logged[0]["phase"] == "imported" and logged[0]["constraints"] == {"stress": -3.0}


@pytest.mark.parametrize("content, name, needle", [
    ("x1,x2,y\n1,2,3\n9,0,1\n", "e.csv", "warm_start: e.csv:3: x1 = 9.0 is outside the box [-5.12, 5.12]"),
    ("x1,y\n1,3\n", "e.csv", "warm_start: e.csv:2: no value for the design variable x2"),
    ("x1,x2,y\n1,2,hot\n", "e.csv", "warm_start: e.csv:2: y must be a finite number, got 'hot'"),
    ('{"x": [1, 2], "y": 1}\n{"x": [1], "y": 2}\n', "e.jsonl", "warm_start: e.jsonl:2: \"x\" must give the 2 design"),
    ("{not json\n", "e.jsonl", "warm_start: e.jsonl:1: not valid JSON"),
    ("x1,x2,y\n", "e.csv", "warm_start: e.csv holds no evaluation"),
    ("1 2 3\n", "e.txt", "warm_start.file: 'e.txt': expected a .csv or .jsonl file"),
])
def test_a_bad_warm_start_file_is_one_line_before_any_evaluation(tmp_path, content, name, needle):
    (tmp_path / name).write_text(content)
    case = _case(tmp_path, warm_start=name)
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {needle}"), result.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_warm_start_file_is_named_on_the_command_line(tmp_path):
    case = _case(tmp_path)
    result = runner.invoke(app, ["run", str(case), "--quiet", "--warm-start", str(tmp_path / "nowhere.csv")])
    assert result.exit_code == 2 and "--warm-start: no such file" in result.stderr


# -- stopping rules ----------------------------------------------------------------------------------------
def test_a_target_stops_the_run_once_reached_and_is_recorded(tmp_path):
    case = _case(tmp_path, budget=30)
    full = runner.invoke(app, ["run", str(case), "--quiet", "--output", str(tmp_path / "full")])
    assert full.exit_code == 0
    values = [r["y"] for r in records(tmp_path / "full")]
    target = sorted(values)[3]            # reached at some evaluation before the budget
    reached = next(i for i, v in enumerate(values) if v <= target)
    result = runner.invoke(app, ["run", str(case), "--quiet", "--target", repr(target)])
    assert result.exit_code == 0, result.output
    assert f"stopped: the target {target:.6g}"[:20] in result.stdout
    assert len(records(tmp_path / "out")) == reached + 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped"] == {"rule": "target", "target": target, "evaluation": reached, "value": values[reached]}
    log = (tmp_path / "out" / "evaluations.jsonl").read_bytes()
    again = runner.invoke(app, ["run", str(case), "--quiet", "--resume", "--target", repr(target)])
    assert again.exit_code == 0 and (tmp_path / "out" / "evaluations.jsonl").read_bytes() == log


def test_max_time_stops_after_the_evaluation_under_way(tmp_path):
    (tmp_path / "slow.py").write_text("import time\nfrom pinnbo import Box, Problem\n\n"
                                      "def slow():\n"
                                      "    def f(p):\n"
                                      "        time.sleep(0.3)\n"
                                      "        return float(p[0] ** 2)\n"
                                      "    return Problem('slow', Box((-1,), (1,)), f)\n")
    case = _case(tmp_path, problem="slow.py:slow", params=None, budget=50, initial_points=3)
    result = runner.invoke(app, ["run", str(case), "--quiet", "--max-time", "1"])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    assert 2 <= len(logged) <= 6
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped"]["rule"] == "max_time" and summary["stopped"]["seconds"] >= 1.0
    assert "--max-time 1 s passed" in result.stdout
