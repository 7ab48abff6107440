"""Failing oracles: exceptions, NaN, timeouts and crashes are failed evaluations with their
reason; the budget is spent exactly; the summary counts them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from pinnbo.cli import app
from pinnbo.oracles.isolation import OracleFailure, call_in_worker
from pinnbo.problem import Box, Problem
from pinnbo.runner.evaluation import evaluate
from tests.survival import calls, pid_alive, records, write_case

runner = CliRunner()


def test_a_run_with_20_percent_failing_calls_spends_its_budget(tmp_path):
    """Every fifth call fails, in turn by raising, hanging past the timeout, returning NaN and
    killing its process: the run completes its 20 evaluations, 4 of them failed with the reason."""
    case = write_case(tmp_path, budget=20, initial_points=4, timeout=1, params={"log": str(tmp_path / "calls.log"),
                                                                               "fail_every": 5})
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    lines = records(out)
    assert len(lines) == 20 and calls(tmp_path / "calls.log")["start"] == 20  # a failed call counts
    failed = [r for r in lines if r["status"] == "failed"]
    assert [r["index"] for r in failed] == [4, 9, 14, 19]
    reasons = [r["error"] for r in failed]
    assert "RuntimeError: solver diverged at call 4" in reasons[0]
    assert reasons[1].startswith("timeout: no value after 1 s")
    assert reasons[2] == "oracle returned nan"
    assert reasons[3].startswith("oracle process died") and "exit code 3" in reasons[3]
    assert all(r["y"] is None for r in failed) and all(r["y"] is not None for r in lines if r["status"] == "ok")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evaluations"] == 20 and summary["failed"] == 4
    assert [f["index"] for f in summary["failures"]] == [4, 9, 14, 19]
    assert "4 failed evaluation(s)" in result.stdout
    # Failed designs are told too: none is proposed again.
    unit = (np.array([r["x"] for r in lines]) + 1) / 2
    gaps = np.max(np.abs(unit[:, None] - unit[None]), axis=2) + np.eye(len(unit))
    assert gaps.min() >= 1e-4


def _sleeper(seconds):
    def objective(x):
        time.sleep(seconds)
        return 1.0
    return objective


def test_the_worker_returns_values_and_reports_what_went_wrong():
    x = np.array([0.5, 2.0])
    assert call_in_worker(lambda p: float(p[0] * p[1]), x, timeout=30) == 1.0
    with pytest.raises(OracleFailure, match=r"ZeroDivisionError: float division by zero"):
        call_in_worker(lambda p: float(p[0]) / 0.0, x, timeout=30)
    with pytest.raises(OracleFailure, match=r"oracle called sys.exit\(4\)"):
        call_in_worker(lambda p: exit(4), x, timeout=30)
    with pytest.raises(OracleFailure, match=r"died before returning a value \(killed by SIGKILL\)"):
        call_in_worker(lambda p: os.kill(os.getpid(), signal.SIGKILL), x, timeout=30)
    start = time.monotonic()
    with pytest.raises(OracleFailure, match=r"^timeout: no value after 0.3 s"):
        call_in_worker(_sleeper(60), x, timeout=0.3)
    assert time.monotonic() - start < 5


def test_a_timeout_stops_everything_the_oracle_started(tmp_path):
    pid_file = tmp_path / "child.pid"

    def objective(x):
        child = subprocess.Popen(["sleep", "600"])
        pid_file.write_text(str(child.pid))
        child.wait()
        return 0.0

    with pytest.raises(OracleFailure, match="timeout"):
        call_in_worker(objective, np.zeros(1), timeout=0.5)
    deadline = time.monotonic() + 5
    while pid_alive(int(pid_file.read_text())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(int(pid_file.read_text()))


def test_evaluate_records_timeouts_and_exits_as_failures():
    problem = Problem("p", Box((0,), (1,)), _sleeper(60))
    record, seconds = evaluate(problem, np.array([0.5]), 3, seed=0, phase="optimizer", timeout=0.2)
    assert record.status == "failed" and record.error.startswith("timeout") and record.y is None
    assert 0.2 <= seconds < 5
    # Without a timeout, an oracle that calls sys.exit must not end the run either.
    problem = Problem("p", Box((0,), (1,)), lambda p: exit(1))
    record, _ = evaluate(problem, np.array([0.5]), 0, seed=0, phase="initial")
    assert record.status == "failed" and record.error == "oracle called sys.exit(1)"
    # Every call runs in a forked worker: side effects in memory do not survive it.
    seen = []
    problem = Problem("p", Box((0,), (1,)), lambda p: seen.append(p) or 2.0)
    record, _ = evaluate(problem, np.array([0.5]), 0, seed=0, phase="initial")
    assert record.y == 2.0 and seen == []


SEGFAULT = """import ctypes
from pinnbo import Box, Problem

def crashing():
    def f(p):
        if p[0] > 0.5:
            ctypes.string_at(0)   # a segfault, as in a solver's C code
        return float(p[0])
    return Problem("crashing", Box((0,), (1,), ("x",)), f)
"""


def test_an_oracle_that_segfaults_without_a_timeout_is_a_failed_evaluation(tmp_path):
    (tmp_path / "crashing.py").write_text(SEGFAULT)
    (tmp_path / "case.yaml").write_text("name: c\nproblem: crashing.py:crashing\nmethod: random\nbudget: 8\n"
                                        f"initial_points: 4\noutput: {tmp_path / 'out'}\n")
    done = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", str(tmp_path / "case.yaml"), "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    logged = records(tmp_path / "out")
    crashed = [r for r in logged if r["x"][0] > 0.5]
    assert len(logged) == 8 and crashed
    assert all(r["status"] == "failed" and r["error"].endswith("(killed by SIGSEGV)") for r in crashed)
    assert all(r["status"] == "ok" for r in logged if r["x"][0] <= 0.5)


def test_an_error_text_that_looks_like_markup_does_not_break_the_live_display(tmp_path):
    (tmp_path / "brackets.py").write_text(
        "from pinnbo import Box, Problem\n\n"
        "def brackets():\n"
        "    def f(p):\n"
        "        raise ValueError('mesh [/x] failed [bold]')\n"
        "    return Problem('brackets', Box((-1,), (1,), ('x',)), f)\n")
    (tmp_path / "case.yaml").write_text("name: b\nproblem: brackets.py:brackets\nmethod: random\nbudget: 6\n"
                                        f"initial_points: 3\noutput: {tmp_path / 'out'}\n")
    result = runner.invoke(app, ["run", str(tmp_path / "case.yaml")])  # with the live display
    # Every call fails: the run stops after its initial design, quoting the reason as written.
    assert result.exit_code == 1, result.output
    assert "evaluation 0) with: ValueError: mesh [/x] failed [bold]; every completed" in result.stderr
    assert [r["error"] for r in records(tmp_path / "out")] == ["ValueError: mesh [/x] failed [bold]"] * 3


def test_an_oracle_that_keeps_failing_stops_the_run_and_a_fixed_one_resumes_it(tmp_path):
    """Ten failures in a row end the run (exit 1, the first failure's reason); once the oracle is
    fixed, --resume goes on: the streak counts the failures of one command only."""
    (tmp_path / "flaky.py").write_text(
        "from pathlib import Path\nfrom pinnbo import Box, Problem\n\n"
        "def flaky(flag: str):\n"
        "    def f(p):\n"
        "        if Path(flag).exists():\n"
        "            raise RuntimeError('licence server unreachable')\n"
        "        return float(p[0] ** 2)\n"
        "    return Problem('flaky', Box((-5,), (5,), ('x',)), f)\n")
    flag = tmp_path / "broken"
    (tmp_path / "case.yaml").write_text(f"name: f\nproblem: flaky.py:flaky\nparams: {{flag: {flag}}}\nmethod: random\n"
                                        f"budget: 30\ninitial_points: 3\noutput: {tmp_path / 'out'}\n")
    assert runner.invoke(app, ["run", str(tmp_path / "case.yaml"), "--quiet", "--budget", "5"]).exit_code == 0
    flag.write_text("")
    result = runner.invoke(app, ["run", str(tmp_path / "case.yaml"), "--resume", "--quiet"])
    assert result.exit_code == 1
    assert "error: oracle: 10 evaluations in a row failed, the first (evaluation " in result.stderr
    assert "with: RuntimeError: licence server unreachable" in result.stderr and "--resume" in result.stderr
    logged = records(tmp_path / "out")
    assert [r["status"] for r in logged[-10:]] == ["failed"] * 10 and len(logged) < 30
    flag.unlink()
    resumed = runner.invoke(app, ["run", str(tmp_path / "case.yaml"), "--resume", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert len(records(tmp_path / "out")) == 30
