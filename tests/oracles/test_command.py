"""A simulator that is a program: `oracle: {command: ..., parse: ...}` in a case, and the
`external` problem declared entirely in YAML (box, sense, PDE)."""

from __future__ import annotations

import json
import re
import shlex
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from pinnbo.cli import app
from pinnbo.oracles.command import CommandOracle, OracleConfigError
from pinnbo.oracles.isolation import OracleFailure
from pinnbo.problem import Box, Problem
from pinnbo.runner.evaluation import evaluate
from tests.survival import pid_alive

runner = CliRunner()
PYTHON = shlex.quote(sys.executable)

# A simulator: the value of a bowl at its arguments; its behaviour is picked by the first argument.
SIMULATOR = textwrap.dedent('''
    import json, subprocess, sys, time
    mode, x, y = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    value = (x - 0.25) ** 2 + 3 * (y - 0.5) ** 2
    print("mesh converged")                       # chatter before the value
    if mode == "float":
        print(repr(value))
    elif mode == "json":
        print(json.dumps({"value": value, "iterations": 12}))
    elif mode == "bare":
        print(json.dumps(value))
    elif mode == "fail":
        print("diverged at step 40", file=sys.stderr)
        sys.exit(3)
    elif mode == "garbage":
        print("value: ???")
    elif mode == "hang":
        child = subprocess.Popen(["sleep", "600"])
        open(sys.argv[4], "w").write(str(child.pid))
        time.sleep(600)
''')


@pytest.fixture
def simulator(tmp_path) -> Path:
    path = tmp_path / "simulate.py"
    path.write_text(SIMULATOR)
    return path


def oracle(simulator: Path, mode: str, parse: str = "float", extra: str = "") -> CommandOracle:
    return CommandOracle(f"{PYTHON} {simulator.name} {mode} {{x}} {{y}} {extra}", ("x", "y"), parse, cwd=simulator.parent)


def test_values_are_parsed_and_arguments_keep_full_precision(simulator):
    x = np.array([0.1 + 0.2, 1 / 3])  # repr needs 17 digits for both
    expected = (x[0] - 0.25) ** 2 + 3 * (x[1] - 0.5) ** 2
    assert oracle(simulator, "float")(x) == expected          # bitwise: {x} is repr(float)
    assert oracle(simulator, "json", "json")(x) == pytest.approx(expected, rel=1e-15)
    assert oracle(simulator, "float").argv(x)[-3:] == ["float", "0.30000000000000004", "0.3333333333333333"]
    formatted = CommandOracle(f"{PYTHON} -c pass {{x:.3f}} {{y}}", ("x", "y"))
    assert formatted.argv(x)[-2:] == ["0.300", "0.3333333333333333"]


def test_json_parse_accepts_a_bare_number(simulator, tmp_path):
    script = tmp_path / "bare.py"
    script.write_text("import sys; print(float(sys.argv[1]) * 2)")
    assert CommandOracle(f"{PYTHON} bare.py {{x}} {{y}}", ("x", "y"), "json", cwd=tmp_path)([1.5, 0.0]) == 3.0


@pytest.mark.parametrize("mode, parse, reason", [
    ("fail", "float", r"^command exited with code 3: diverged at step 40$"),
    ("garbage", "float", r"^unparsable output: expected a number on the last line of stdout, got 'value: \?\?\?'"),
    ("garbage", "json", r"^unparsable output: expected JSON .* got .value: \?\?\?.$"),
])
def test_failures_are_recorded_with_their_reason(simulator, mode, parse, reason):
    problem = Problem("sim", Box((0, 0), (1, 1), ("x", "y")), oracle(simulator, mode, parse))
    record, _ = evaluate(problem, np.array([0.5, 0.5]), 0, seed=0, phase="initial")
    assert record.status == "failed" and record.y is None
    assert record.error is not None and re.search(reason, record.error), record.error


def test_a_timeout_stops_the_command_and_what_it_started(simulator, tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    command = oracle(simulator, "hang", extra=str(pid_file))
    start = time.monotonic()
    with pytest.raises(OracleFailure, match=r"^timeout: no value after 1 s \(the command was stopped\)"):
        command([0.5, 0.5], timeout=1)
    assert time.monotonic() - start < 10
    deadline = time.monotonic() + 5
    while pid_file.exists() and pid_alive(int(pid_file.read_text())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists() and not pid_alive(int(pid_file.read_text()))


def _case(tmp_path: Path, **fields) -> Path:
    data = {"name": "sim", "problem": "external",
            "params": {"bounds": {"x": [0, 1], "y": [0, 1]}, "sense": "minimize",
                       "pde": "diff(u, x, 2) + diff(u, y, 2) = 8"},
            "oracle": {"command": f"{sys.executable} simulate.py float {{x}} {{y}}"},
            "method": "pinn-bo", "method_params": {"hidden": [16], "initial_steps": 30, "steps_per_iteration": 10,
                                                   "collocation_points": 64, "collocation_batch": 32,
                                                   "n_pool": 128, "top_k": 2, "refine_iterations": 5},
            "budget": 6, "initial_points": 4, "seed": 1, "timeout": 30, "output": str(tmp_path / "out")}
    data.update(fields)
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False))
    return path


def test_an_external_problem_runs_end_to_end_with_its_yaml_pde(simulator, tmp_path):
    result = runner.invoke(app, ["run", str(_case(tmp_path)), "--quiet"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in (tmp_path / "out" / "evaluations.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and all(r["status"] == "ok" for r in lines)
    for r in lines:  # the logged design reached the program exactly
        assert r["y"] == (r["x"][0] - 0.25) ** 2 + 3 * (r["x"][1] - 0.5) ** 2
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["problem"] == "external" and summary["optimum"] is None


def test_an_oracle_replaces_a_registered_problems_objective(simulator, tmp_path):
    """The domain, sense and PDE stay dropwave's; f* went with its objective."""
    case = _case(tmp_path, problem="dropwave", params={"dim": 2}, method="random", method_params=None,
                 oracle={"command": f"{sys.executable} simulate.py json {{x1}} {{x2}}", "parse": "json"})
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["problem"] == "dropwave" and summary["optimum"] is None and summary["failed"] == 0
    lines = [json.loads(line) for line in (tmp_path / "out" / "evaluations.jsonl").read_text().splitlines()]
    assert all(abs(r["y"] - ((r["x"][0] - 0.25) ** 2 + 3 * (r["x"][1] - 0.5) ** 2)) < 1e-12 for r in lines)
    assert max(abs(v) for r in lines for v in r["x"]) > 1  # dropwave's box, [-5.12, 5.12]²


# An oracle that starts a grandchild and hangs; both write their pids so the test can watch them.
SPAWNING = textwrap.dedent('''
    import os, subprocess, sys, time
    from pathlib import Path
    from pinnbo import Box, Problem

    def spawning(folder: str):
        def f(p):
            child = subprocess.Popen(["sleep", "600"])
            Path(folder, "oracle.pid").write_text(str(os.getpid()))
            Path(folder, "grandchild.pid").write_text(str(child.pid))
            time.sleep(600)
        return Problem("spawning", Box((0, 0), (1, 1), ("x", "y")), f)
''')


@pytest.mark.parametrize("kind", ["command", "python"])
@pytest.mark.parametrize("timeout", [None, 300])
def test_a_killed_runner_takes_its_oracle_and_what_it_started_with_it(simulator, tmp_path, kind, timeout):
    """kill -9 of `pinnbo run` in the middle of an oracle call: the oracle and its grandchild die
    too, with or without a timeout, so a --resume never races a simulation still computing."""
    from tests.survival import kill_started, start_cli, wait_for

    if kind == "command":
        (tmp_path / "hang.sh").write_text(f'echo $$ > {tmp_path}/oracle.pid\n'
                                          f'{PYTHON} simulate.py hang $1 $2 {tmp_path}/grandchild.pid\n')
        case = _case(tmp_path, oracle={"command": "sh hang.sh {x} {y}"}, timeout=timeout, method="random",
                     method_params=None)
    else:
        (tmp_path / "spawning.py").write_text(SPAWNING)
        case = _case(tmp_path, problem="spawning.py:spawning", params={"folder": str(tmp_path)}, oracle=None,
                     timeout=timeout, method="random", method_params=None)
    process = start_cli("run", str(case), "--quiet")
    try:
        wait_for(lambda: (tmp_path / "grandchild.pid").exists() and (tmp_path / "oracle.pid").exists()
                 and (tmp_path / "grandchild.pid").read_text().strip() != "", process=process)
        oracle, grandchild = (int((tmp_path / f"{n}.pid").read_text()) for n in ("oracle", "grandchild"))
        assert pid_alive(oracle) and pid_alive(grandchild)
        process.kill()
        process.communicate()
        wait_for(lambda: not pid_alive(oracle) and not pid_alive(grandchild), timeout=10)
    finally:
        kill_started()


@pytest.mark.parametrize("template,needle", [
    ("echo {x!r} {y}", "oracle.command: {x!r}: conversions are not supported"),
    ("echo {x!s} {y}", "oracle.command: {x!s}: conversions are not supported"),
    ("echo {x:{y}} {y}", "oracle.command: {x:{y}}: a placeholder inside a format is not supported"),
])
def test_a_command_template_with_a_conversion_or_a_nested_format_is_refused(template, needle):
    with pytest.raises(OracleConfigError, match=re.escape(needle)):
        CommandOracle(template, ("x", "y"))


def test_a_problem_file_is_found_next_to_the_case_only(tmp_path, monkeypatch):
    """A relative problem file is resolved against the case file's folder, never the current one."""
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "bowl.py").write_text("from pinnbo import Box, Problem\n\ndef bowl():\n"
                                       "    return Problem('bowl', Box((0,), (1,)), lambda p: float(p[0]))\n")
    (tmp_path / "cases").mkdir()
    case = tmp_path / "cases" / "c.yaml"
    case.write_text(f"name: c\nproblem: bowl.py:bowl\nmethod: random\nbudget: 4\ninitial_points: 2\n"
                    f"output: {tmp_path / 'out'}\n")
    monkeypatch.chdir(elsewhere)
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 2 and "problem: no such file 'bowl.py' (relative to" in result.stderr
    assert not (tmp_path / "out").exists()
