"""The command line: every shipped case runs end to end in smoke mode (as BoTorch runs its
tutorials in CI), and user mistakes exit 2 with one line and no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from pinnbo.cli import app

ROOT = Path(__file__).resolve().parent.parent
ALL_CASES = sorted((ROOT / "cases").glob("*.yaml"))
# Cases measured outside pinnbo (problem: external, no oracle) are driven by ask / tell instead.
MEASURED_BY_HAND = [p for p in ALL_CASES if "\nproblem: external\n" in p.read_text() and "\noracle:" not in p.read_text()]
CASES = [p for p in ALL_CASES if p not in MEASURED_BY_HAND]
CALIBRATIONS = ("rossler", "lorenz63")
runner = CliRunner()


@pytest.mark.parametrize("case", MEASURED_BY_HAND, ids=lambda p: p.stem)
def test_every_case_measured_by_hand_runs_by_ask_and_tell_in_smoke_mode(case, tmp_path):
    """The shipped lab cases, as the ask/tell guide drives them: pinnbo run refuses, ask/tell complete them."""
    out = tmp_path / case.stem
    refused = pinnbo("run", str(case), "--smoke", "--quiet", "--output", str(out))
    assert refused.returncode == 2 and "measured outside pinnbo" in refused.stderr
    for k in range(6):                                   # --smoke: 4 initial points, budget 6
        asked = runner.invoke(app, ["ask", str(case), "--smoke", "--output", str(out)])
        assert asked.exit_code == 0, asked.output
        pending = json.loads(asked.stdout)
        assert pending["index"] == k and pending["phase"] == ("initial" if k < 4 else "optimizer")
        x = list(pending["x"].values())
        # a smooth stand-in for the measurement, and constraints that hold on part of the box
        args = ["--x", ",".join(repr(v) for v in x), "--y", repr(float(np.sum(np.square(x))))]
        for i, name in enumerate(pending.get("constraints", [])):
            args += ["--constraint", f"{name}={x[i] - 3.0!r}"]
        told = runner.invoke(app, ["tell", str(case), "--smoke", "--output", str(out), *args])
        assert told.exit_code == 0, told.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evaluations"] == 6 and summary["failed"] == 0
    assert len((out / "evaluations.jsonl").read_text().splitlines()) == 6


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_every_case_runs_in_smoke_mode(case, tmp_path):
    out = tmp_path / case.stem
    command = "calibrate" if case.stem in CALIBRATIONS else "run"   # a calibration's run, then its samples
    result = runner.invoke(app, [command, str(case), "--smoke", "--quiet", "--output", str(out)])
    assert result.exit_code == 0, result.output
    smoke = min(int(yaml.safe_load(case.read_text()).get("initial_points", 10)), 4) + 2
    lines = (out / "evaluations.jsonl").read_text().splitlines()
    assert len(lines) == smoke
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evaluations"] == smoke
    if command == "calibrate":
        posterior = json.loads((out / "calibration" / "posterior.json").read_text())
        assert posterior["design_points"] == smoke and posterior["samples"] == 2000
    if summary.get("objectives"):   # several objectives: a front and its hypervolume instead of a best
        assert summary["pareto_front"] and summary["hypervolume"] > 0
        assert (out / "pareto.png").stat().st_size > 1000
        return
    if "n_feasible" in summary and summary["n_feasible"] == 0:
        # A constrained case may find nothing feasible in 6 evaluations (speed reducer, welded beam):
        # then there is no best, and the design closest to feasible is reported instead.
        assert summary["best_value"] is None and summary["least_violation"]["violation"] > 0
    else:
        assert summary["best_value"] is not None
    assert (out / "convergence.png").stat().st_size > 1000
    if summary["optimum"] is not None and summary["best_value"] is not None:
        assert summary["simple_regret"] >= 0


def test_heat_run_leaves_a_field_map(tmp_path):
    result = runner.invoke(app, ["run", str(ROOT / "cases/heat_bc2.yaml"), "--smoke", "--quiet",
                                 "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "field.png").stat().st_size > 1000


def pinnbo(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-m", "pinnbo.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("content, needle", [
    ("name: x\nproblem: heat_plate\nbudget: 5\ninitial_points: 5\n", "budget"),
    ("name: x\nproblem: [oops\n", "YAML syntax error"),
    ("name: x\nproblem: dropwave\nmethod: bayes\n", "method"),
    ("name: x\nproblem: dropwave\nparams: {dim: -2}\n", "params.dim"),
])
def test_user_errors_exit_2_with_one_line(tmp_path, content, needle):
    case = tmp_path / "case.yaml"
    case.write_text(content)
    result = pinnbo("run", str(case), "--quiet", "--output", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert not (tmp_path / "out").exists()


def test_rerun_into_results_asks_for_overwrite(tmp_path):
    args = ["run", str(ROOT / "cases/dropwave.yaml"), "--smoke", "--quiet", "--output", str(tmp_path)]
    assert runner.invoke(app, args).exit_code == 0
    before = (tmp_path / "evaluations.jsonl").read_bytes()
    result = pinnbo(*args)
    assert result.returncode == 2 and "--overwrite" in result.stderr
    assert (tmp_path / "evaluations.jsonl").read_bytes() == before


def test_problems_lists_problems_and_cases():
    result = runner.invoke(app, ["problems"])
    assert result.exit_code == 0
    for name in ("heat_plate", "beam", "dropwave", "heat_bc1.yaml"):
        assert name in result.output


def test_version_names_pinnbo_and_its_libraries():
    from importlib import metadata

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    line = result.output.strip()
    assert "\n" not in line
    assert line.startswith(f"pinnbo {metadata.version('pinnbo')} (python ")
    assert f"torch {metadata.version('torch')}" in line and f"py-pde {metadata.version('py-pde')}" in line


def test_resuming_a_complete_run_says_there_is_nothing_to_run(tmp_path):
    args = ["run", str(ROOT / "cases/dropwave.yaml"), "--smoke", "--quiet", "--output", str(tmp_path)]
    assert runner.invoke(app, args).exit_code == 0
    before = (tmp_path / "evaluations.jsonl").read_bytes()
    result = runner.invoke(app, args + ["--resume"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"nothing to run: {len(before.splitlines())} evaluations already recorded" in result.output
    assert (tmp_path / "evaluations.jsonl").read_bytes() == before


def test_live_display_off_a_terminal_ends_its_line_before_the_summary(tmp_path):
    # A CI log (`2>&1`): rich's last frame on stderr has no final newline of its own.
    result = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", str(ROOT / "cases/dropwave.yaml"), "--smoke",
                             "--output", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "200"},
                            timeout=120)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert any(line.startswith("dropwave: best ") for line in lines), result.stdout
    assert lines[-1].startswith("6 evaluations")


def test_problems_outside_the_project_names_cases_as_run_takes_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["problems"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    names = [row.split("│")[1].strip() for row in result.output.splitlines()
             if row.startswith("│") and ".yaml" in row]
    assert "heat_bc1.yaml" in names and not any("/" in n for n in names)
    from pinnbo.runner.case import load_case
    assert load_case("heat_bc1.yaml").name == "heat_bc1"      # the bare name finds the shipped case


@pytest.mark.parametrize("name, rows", [
    ("heat_plate", ["boundary", "required", "bounds", "grid", "256", "max_gradient"]),
    ("beam", ["EI", "bending stiffness", "q", "bc", "two conditions per end", "flexibility", "sense"]),
    ("dropwave", ["dim", "int", "2"]),
    ("heat_box", ["boundary", "required", "bounds", "grid", "96", "x-: T(x0, y, z)"]),
])
def test_problems_name_prints_its_parameters_and_an_example_case(name, rows):
    result = runner.invoke(app, ["problems", name], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in rows:
        assert text in result.output
    example = result.output[result.output.index("example case:"):]
    assert f"problem: {name}" in example
    if name == "heat_box":                # no case in cases/: a written example, under the default
        assert "method: auto" in example


def test_problems_of_an_unknown_name_is_one_line():
    result = runner.invoke(app, ["problems", "dropwav"])
    assert result.exit_code == 2 and "unknown problem 'dropwav' (did you mean 'dropwave'?)" in result.stderr


def test_show_of_a_missing_folder_says_it_does_not_exist(tmp_path):
    result = runner.invoke(app, ["show", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and result.stderr.strip() == f"error: results: {tmp_path / 'nowhere'} does not exist"


def test_a_narrow_terminal_never_cuts_a_number_in_a_bench_table(tmp_path):
    """A bench's table in 50 columns: every number of it is printed whole."""
    from rich.console import Console

    from pinnbo.bench.tables import rich_table, table_rows
    from pinnbo.report.format import print_table

    args = ["bench", str(ROOT / "cases/dropwave.yaml"), "--methods", "random,gp-ei", "--reference", "random",
            "--seeds", "2", "--budget", "6", "--output", str(tmp_path), "--quiet", "--smoke"]
    assert runner.invoke(app, args).exit_code == 0
    summary = json.loads((tmp_path / "dropwave" / "summary.json").read_text())
    _, rows = table_rows(summary)
    console = Console(width=50, record=True, file=open(os.devnull, "w"))
    print_table(console, rich_table(summary))
    text = console.export_text()
    assert "…" not in text
    for row in rows:
        for cell in row:
            assert cell in text, cell


def test_the_field_map_legend_stays_off_the_plate(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pinnbo import load_problem, optimize
    from pinnbo.report.figures import plot_field

    problem = load_problem("heat_plate", grid=32, boundary={"left": "0", "right": "y", "bottom": "0", "top": "x"})
    history = optimize(problem, method="random", budget=8, initial_points=4, seed=0)
    captured = {}
    original = plt.Figure.savefig

    def keep(fig, *args, **kwargs):
        captured["fig"] = fig
        return original(fig, *args, **kwargs)

    plt.Figure.savefig = keep
    try:
        plot_field(history, problem, tmp_path / "field.png")
    finally:
        plt.Figure.savefig = original
    fig = captured["fig"]
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert not legend.overlaps(ax.get_window_extent())


def test_case_error_is_part_of_the_public_api():
    import pinnbo

    with pytest.raises(pinnbo.CaseError):
        pinnbo.load_problem("dropwave", dimension=3)


def test_the_readme_first_case_is_the_shipped_heat_bc1():
    """The README shows cases/heat_bc1.yaml as its first case: the block must say what the file says."""
    import re

    import yaml

    block = re.search(r"```yaml\n(name: heat_bc1\n.*?)```", (ROOT / "README.md").read_text(), re.S)[1]
    shipped = yaml.safe_load((ROOT / "cases" / "heat_bc1.yaml").read_text())
    shipped = {k: v for k, v in shipped.items() if v != {}}    # method_params: {} is the default
    assert yaml.safe_load(block) == shipped


def test_initial_points_overrides_the_case(tmp_path):
    case = tmp_path / "case.yaml"
    case.write_text("name: d\nproblem: dropwave\nmethod: random\nbudget: 40\ninitial_points: 30\n")
    result = CliRunner().invoke(app, ["run", str(case), "--initial-points", "3", "--budget", "5", "--quiet",
                                      "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    phases = [json.loads(line)["phase"] for line in (tmp_path / "out" / "evaluations.jsonl").read_text().splitlines()]
    assert phases == ["initial"] * 3 + ["optimizer"] * 2
    bad = CliRunner().invoke(app, ["run", str(case), "--initial-points", "0", "--quiet"])
    assert bad.exit_code == 2 and "--initial-points: expected an integer >= 1, got 0" in bad.output


def test_problem_parameters_are_printed_as_written():
    """A parameter's meaning with brackets ([lower, upper]) is text, not console markup."""
    result = runner.invoke(app, ["problems", "calibration"])
    assert result.exit_code == 0, result.output
    assert "{name: [lower, upper]}" in result.output
