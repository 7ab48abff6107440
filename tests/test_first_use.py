"""What a new user stumbled on, each tried as that user would: the command line's options and
messages, `pinnbo show` and `pinnbo problems` as a terminal shows them, case files read as YAML 1.2,
and `optimize()` with the command line's options as keyword arguments."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import pinnbo
from pinnbo.cli import app
from pinnbo.errors import HistoryError
from pinnbo.expressions import numpy_function, parse_expression
from pinnbo.runner.case import case_from_dict, load_case
from tests.survival import ROOT, environment, records

runner = CliRunner()


def _case(tmp_path: Path, **fields) -> Path:
    data = {"name": "t", "problem": "dropwave", "params": {"dim": 2}, "method": "neural-greedy",
            "method_params": {"hidden": [8], "initial_steps": 5, "steps_per_iteration": 2, "n_pool": 64},
            "budget": 6, "initial_points": 3, "seed": 0, **fields}
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


# -- pinnbo run ----------------------------------------------------------------------------------
def test_run_method_drops_the_cases_method_params_and_writes_beside_the_case(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", str(_case(tmp_path)), "--method", "random", "--quiet"])
    assert result.exit_code == 0, result.output
    stored = json.loads((tmp_path / "results" / "t-random" / "case.json").read_text())
    assert stored["method"] == "random" and stored["method_params"] == {}
    assert not (tmp_path / "results" / "t").exists()


def test_smoke_never_lands_in_the_real_runs_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    case = _case(tmp_path, method="random", method_params={}, budget=8)
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    smoke = runner.invoke(app, ["run", str(case), "--smoke", "--quiet"])
    assert smoke.exit_code == 0, smoke.output
    assert len(records(tmp_path / "results" / "t")) == 8 and len(records(tmp_path / "results" / "t-smoke")) == 5


def test_the_target_message_counts_evaluations_as_the_total_does(tmp_path):
    case = _case(tmp_path, method="random", method_params={}, budget=40, output=str(tmp_path / "out"))
    result = runner.invoke(app, ["run", str(case), "--target", "0", "--quiet"])   # DropWave <= 0 everywhere
    assert result.exit_code == 0, result.output
    assert "was reached by evaluation 1 (index 0 in evaluations.jsonl)" in result.stdout
    assert "\n1 evaluations," in result.stdout


def test_an_output_path_with_markup_is_printed_as_it_is(tmp_path):
    out = tmp_path / "a[/]b[red]"
    case = _case(tmp_path, method="random", method_params={}, output=str(out))
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    assert f"results in {out}/" in result.stdout


def test_a_read_only_parent_is_a_write_failure(tmp_path):
    if os.geteuid() == 0:   # root writes through permission bits: a read-only mount stands in
        parent = Path("/proc/self")
    else:
        parent = tmp_path / "locked"
        parent.mkdir()
        parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    case = _case(tmp_path, method="random", method_params={}, output=str(parent / "run"))
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot create {parent / 'run'} ("), result.stderr


def test_help_says_flags_take_no_value_and_answers_at_once():
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", "--help"], capture_output=True, text=True,
                          cwd=ROOT, env=environment(COLUMNS="100"), timeout=60)
    seconds = time.perf_counter() - start
    assert done.returncode == 0
    assert "--resume " in done.stdout and "<bool>" not in done.stdout and "--method" in done.stdout
    assert seconds < 3, seconds      # no torch or sympy for --help (about 0.3 s here, 1.6 s with them)
    imported = subprocess.run([sys.executable, "-c", "import sys, pinnbo.cli; print('torch' in sys.modules, "
                               "'sympy' in sys.modules)"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert imported.stdout.split() == ["False", "False"]


# -- pinnbo show -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("show")
    case = _case(tmp, method="random", method_params={}, output=str(tmp / "out"))
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    return tmp / "out"


def test_show_rounds_and_names_the_variables(finished):
    result = runner.invoke(app, ["show", str(finished)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    summary = json.loads((finished / "summary.json").read_text())
    best = summary["best"]["x"]
    assert f"x1 = {best[0]:.6g}, x2 = {best[1]:.6g}" in result.stdout
    assert repr(summary["best_value"]) not in result.stdout     # 6 significant digits, not 17
    assert "best value" in result.stdout and "best_value" not in result.stdout


def test_show_json_is_the_summary(finished):
    result = runner.invoke(app, ["show", str(finished), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == json.loads((finished / "summary.json").read_text())


@pytest.mark.parametrize("text, exit_code", [
    ("[1, 2]", 2), ('"a summary"', 2), ("{", 2), ("{}", 0),
    ('{"best": "x", "evaluations": "many", "best_value": [1], "case": {"name": "a[/]b"}, "n_feasible": "?"}', 0),
])
def test_show_never_crashes_on_a_malformed_summary(finished, tmp_path, text, exit_code):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "summary.json").write_text(text)
    result = runner.invoke(app, ["show", str(folder)])
    assert isinstance(result.exception, SystemExit) or result.exception is None, result.exception
    assert result.exit_code == exit_code, result.output
    if exit_code == 2:
        assert result.stderr.startswith(f"error: results: {folder / 'summary.json'} is not a pinnbo summary")
    else:
        assert "—" in result.stdout and ("a[/]b" in result.stdout or text == "{}")


# -- pinnbo problems ------------------------------------------------------------------------------
def test_problems_fit_an_80_column_terminal_with_whole_sentences():
    listing = runner.invoke(app, ["problems"], env={"COLUMNS": "80"})
    one = runner.invoke(app, ["problems", "heat_plate"], env={"COLUMNS": "80"})
    assert listing.exit_code == 0 and one.exit_code == 0
    table = [line for line in (listing.stdout + one.stdout).splitlines() if line.startswith(("│", "┃", "┏", "└"))]
    assert table and max(len(line) for line in table) <= 80
    text = " ".join(line.strip("│ ") for line in one.stdout.splitlines())
    assert "``" not in listing.stdout + one.stdout
    assert "(≥ 16; 256 gives" in text and "once, then cached)." in " ".join(text.split())
    assert "s.t. c1 = 1" in " ".join(listing.stdout.split()).replace("│", "").replace("  ", " ")


# -- case files, YAML 1.2 ------------------------------------------------------------------------------
@pytest.mark.parametrize("text, value", [("014", 14), ("0o14", 12), ("0x1F", 31), ("1e-3", 0.001), ("+3", 3)])
def test_numbers_read_as_yaml_1_2_reads_them(tmp_path, text, value):
    path = tmp_path / "case.yaml"
    path.write_text(f"name: t\nproblem: dropwave\nparams: {{dim: 2}}\nbudget: 40\ninitial_points: 3\nnoise: {text}\n"
                    if isinstance(value, float) else
                    f"name: t\nproblem: dropwave\nparams: {{dim: 2}}\nbudget: {text}\ninitial_points: 2\n")
    case = load_case(path)
    assert (case.noise if isinstance(value, float) else case.budget) == value


def test_a_fifo_as_case_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "case.yaml"
    os.mkfifo(fifo)
    done = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", str(fifo)], capture_output=True, text=True,
                          cwd=ROOT, env=environment(), timeout=60)
    assert done.returncode == 2 and done.stderr.strip() == f"error: case: '{fifo}' is not a regular file"


def test_a_variable_named_like_a_numpy_function_keeps_its_meaning():
    """lambdify's code calls numpy's select() for Piecewise: a variable named select must not
    shadow it."""
    expr = parse_expression("Piecewise((select, select < 0.5), (1 - select, True)) + where", ["select", "where"], "f")
    values = numpy_function(expr, ["select", "where"])(np.array([0.2, 0.8]), np.array([1.0, 2.0]))
    np.testing.assert_allclose(values, [1.2, 2.2])


def test_a_case_naming_another_method_is_checked_against_that_method():
    case = case_from_dict({"name": "t", "problem": "dropwave", "method": "pinn-bo", "method_params": {"hidden": [8]}},
                          overrides={"method": "gp-ei"})
    assert case.method == "gp-ei" and case.method_params == {} and case.output == str(Path("results") / "t-gp-ei")


# -- optimize() -----------------------------------------------------------------------------------------
def test_optimize_takes_the_command_lines_options(tmp_path):
    problem = pinnbo.load_problem("dropwave", dim=2)
    table = tmp_path / "earlier.csv"
    table.write_text("x1,x2,y\n0.5,-0.5,-0.2\n")
    history = pinnbo.optimize(problem, method="random", budget=30, initial_points=4, seed=1, warm_start=table,
                              target=-0.3, timeout=30, progress=False, output=tmp_path / "out")
    assert history.evaluations[0].phase == "imported" and history.evaluations[0].y == -0.2
    assert history.stopped is not None and history.stopped["rule"] == "target"
    assert history.best().y <= -0.3 and len(history) < 31


def test_optimize_names_its_keyword_arguments_in_messages(tmp_path):
    problem = pinnbo.load_problem("dropwave", dim=2)
    pinnbo.optimize(problem, method="random", budget=5, initial_points=3, output=tmp_path / "out", progress=False)
    with pytest.raises(HistoryError) as refused:
        pinnbo.optimize(problem, method="random", budget=5, initial_points=3, output=tmp_path / "out")
    assert "resume=True" in str(refused.value) and "overwrite=True" in str(refused.value)
    assert "--" not in str(refused.value)
