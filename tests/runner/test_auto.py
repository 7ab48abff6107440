"""method: auto end to end: a case without a method runs the chosen method and says so in
summary.json, the live display and the report; settings for auto are one line, exit 2; a bench runs
auto beside the method it chooses with the same proposals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from pinnbo.bench import BenchSettings, run_bench
from pinnbo.cli import app

ROOT = Path(__file__).resolve().parents[2]
HARMONIC = "name: harmonic\nproblem: harmonic\nbudget: 40\ninitial_points: 10\nseed: 0\n"
runner = CliRunner()


def test_a_case_without_a_method_runs_auto_and_says_what_it_chose_and_why(tmp_path):
    case = tmp_path / "harmonic.yaml"
    case.write_text(HARMONIC)
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", str(case), "--smoke", "--output", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, timeout=300,
                            env={**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"})
    assert result.returncode == 0, result.stdout
    # the live display's last frame, written to a log off a terminal
    assert "auto → pde-gp" in result.stdout and "a linear PDE in x, y" in result.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == {"name": "pde-gp", "chosen_by": "auto",
                                 "reason": "a linear PDE in x, y: a GP conditioned on it"}
    assert summary["case"]["method"] == "auto"
    report = runner.invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    assert "auto → pde-gp (a linear PDE in x, y" in (out / "report.html").read_text()


def test_a_named_method_records_no_choice(tmp_path):
    case = tmp_path / "harmonic.yaml"
    case.write_text(HARMONIC + "method: gp-ei\n")
    result = runner.invoke(app, ["run", str(case), "--smoke", "--quiet", "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "method" not in json.loads((tmp_path / "out" / "summary.json").read_text())


def test_settings_for_auto_are_one_line_before_any_evaluation(tmp_path):
    case = tmp_path / "harmonic.yaml"
    case.write_text(HARMONIC + "method_params: {num_restarts: 2}\n")
    result = runner.invoke(app, ["run", str(case), "--quiet", "--output", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: method_params: method auto chooses the method, so it takes no settings; name the method they are for"]
    assert not (tmp_path / "out").exists()
    bench = runner.invoke(app, ["bench", str(case), "--methods", "auto,gp-ei", "--params", '{"auto": {"x": 1}}',
                                "--output", str(tmp_path / "bench")])
    assert bench.exit_code == 2 and "--params: auto chooses the method" in bench.output


def test_a_bench_runs_auto_with_the_proposals_of_the_method_it_chooses(tmp_path):
    case = tmp_path / "harmonic.yaml"
    case.write_text(HARMONIC)
    settings = BenchSettings.from_options([case], "auto,pde-gp", 1, jobs=1, output=tmp_path / "bench", smoke=True,
                                          reference="auto")
    result = run_bench(settings, quiet=True)
    assert result.ran == 2 and not result.failed
    runs = tmp_path / "bench" / "harmonic" / "runs"

    def proposals(method):
        return [json.loads(line)["x"] for line in (runs / method / "seed0" / "evaluations.jsonl").read_text().splitlines()]

    assert proposals("auto") == proposals("pde-gp") and len(proposals("auto")) == 6
    assert json.loads((runs / "auto" / "seed0" / "summary.json").read_text())["method"]["name"] == "pde-gp"
