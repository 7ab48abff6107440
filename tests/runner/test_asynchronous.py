"""Asynchronous runs on a real Dask cluster (127.0.0.1 only): a local cluster, an existing
scheduler, the runner killed with evaluations in flight, a worker killed mid-evaluation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from pinnbo.runner.asynchronous import read_asks
from pinnbo.runner.history import History
from tests.survival import ExternalDask, default_sigint

PROBLEM = Path(__file__).with_name("sleepy_problem.py")
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}


def write_case(folder: Path, *, seconds: float, budget: int, method: str = "random", initial: int = 4) -> Path:
    case = folder / "case.yaml"
    case.write_text(f"name: sleepy\nproblem: {PROBLEM}:sleepy\nparams: {{seconds: {seconds}, log: {folder / 'calls.log'}}}\n"
                    f"method: {method}\nbudget: {budget}\ninitial_points: {initial}\n")
    return case


def pinnbo(*args: str, **kwargs) -> subprocess.Popen:
    """``python -m pinnbo.cli ARGS --quiet``, SIGINT at its default in the child (a Ctrl-C test's
    signal must reach it however the suite was launched: :func:`tests.survival.default_sigint`)."""
    return subprocess.Popen([sys.executable, "-m", "pinnbo.cli", *args, "--quiet"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
                            **kwargs)


def finish(process: subprocess.Popen, timeout: float = 240) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, out + err
    return out + err


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "evaluations.jsonl").read_text().splitlines()]


def calls(folder: Path) -> list[tuple[int, tuple[float, float]]]:
    """(worker pid, design) of every oracle call started."""
    path = folder / "calls.log"
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines() if line.count(" ") == 4]
    return [(int(pid), (float(a), float(b))) for _, pid, a, b, _ in rows]


def check_complete(out: Path, budget: int) -> list[dict]:
    """Every evaluation recorded once, at its ask's design, with the analytic value."""
    logged = records(out)
    assert sorted(r["index"] for r in logged) == list(range(budget))
    asks = {a.index: a for a in read_asks(out)}
    assert sorted(asks) == list(range(budget))
    for r in logged:
        assert r["x"] == asks[r["index"]].x
        assert r["y"] == pytest.approx((r["x"][0] - 0.3) ** 2 + (r["x"][1] + 0.2) ** 2, abs=1e-12)
    return logged


def test_local_cluster_completes_a_run(tmp_path):
    case = write_case(tmp_path, seconds=0.5, budget=10, method="gp-ei")
    out = tmp_path / "out"
    finish(pinnbo("run", str(case), "--workers", "2", "--output", str(out)))
    check_complete(out, 10)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["parallel"]["workers"] == 2
    # Two calls ran at once: the oracle time exceeds the wall time it had (a sequential run's could not).
    assert summary["parallel"]["oracle_seconds"] > 10 * 0.5 * 0.9
    # ... on two different worker processes.
    assert len({pid for pid, _ in calls(tmp_path)}) == 2
    timings = [json.loads(line) for line in (out / "timings.jsonl").read_text().splitlines()]
    assert max(t["pending_at_ask"] for t in timings) == 1   # each proposal knew the other design in flight
    # The log reads back (completion order) and a resume of a finished run evaluates nothing.
    finish(pinnbo("run", str(case), "--workers", "2", "--output", str(out), "--resume"))
    assert len(records(out)) == 10 and len(calls(tmp_path)) == 10
    # pinnbo ask reads the asynchronous folder too: nothing is left to ask.
    ask = subprocess.run([sys.executable, "-m", "pinnbo.cli", "ask", str(case), "--output", str(out)], env=ENV,
                         capture_output=True, text=True)
    assert ask.returncode == 2 and "all 10 evaluations are recorded" in ask.stderr and "Traceback" not in ask.stderr


def test_timeout_and_failures_hold_inside_dask_workers(tmp_path):
    """The per-call timeout stops a call inside a Dask worker, and it is a failed evaluation."""
    case = write_case(tmp_path, seconds=30.0, budget=5, initial=4)
    case.write_text(case.read_text() + "timeout: 1\n")
    out = tmp_path / "out"
    start = time.monotonic()
    process = pinnbo("run", str(case), "--workers", "2", "--output", str(out))
    out_text, err = process.communicate(timeout=240)
    assert process.returncode == 1, out_text + err      # the whole initial design failed: the run stops
    assert "all 4 evaluations of the initial design failed" in err and "timeout" in err
    assert time.monotonic() - start < 60                # not 4 x 30 s: each call was stopped at 1 s
    logged = records(out)
    assert sorted(r["index"] for r in logged) == [0, 1, 2, 3]
    assert all(r["status"] == "failed" and r["error"].startswith("timeout") for r in logged)


def test_an_unreachable_scheduler_is_one_line_before_the_folder_is_written(tmp_path):
    case = write_case(tmp_path, seconds=0.0, budget=6)
    out = tmp_path / "out"
    process = pinnbo("run", str(case), "--scheduler", "tcp://127.0.0.1:9", "--output", str(out))
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 2, stdout + stderr
    assert stderr.startswith("error: --scheduler: cannot reach a Dask scheduler at 'tcp://127.0.0.1:9'")
    assert "Traceback" not in stderr and not out.exists() and not (tmp_path / "calls.log").exists()


def test_existing_scheduler(tmp_path):
    with ExternalDask(tmp_path, workers=2) as dask:
        assert dask.address.startswith("tcp://127.0.0.1:")
        case = write_case(tmp_path, seconds=0.2, budget=8)
        out = tmp_path / "out"
        finish(pinnbo("run", str(case), "--scheduler", dask.address, "--workers", "2", "--output", str(out)))
        check_complete(out, 8)
        # The calls ran in the separately started worker processes (children of `dask worker`).
        pids = {pid for pid, _ in calls(tmp_path)}
        assert pids and all(psutil.Process(pid).ppid() == dask.worker.pid for pid in pids)
        assert json.loads((out / "summary.json").read_text())["parallel"]["workers"] == 2


def wait_for(condition, timeout: float = 120, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_runner_killed_with_four_in_flight_then_resumed(tmp_path):
    budget = 14
    case = write_case(tmp_path, seconds=3.0, budget=budget)
    out = tmp_path / "out"
    runner = pinnbo("run", str(case), "--workers", "4", "--output", str(out), start_new_session=True)
    # Past the first round: some evaluations recorded, four asks in flight and their calls started
    # (an ask is on disk before its call starts: killed in between, it would be started once).

    def four_started() -> bool:
        if not (out / "evaluations.jsonl").exists():
            return False
        told = {r["index"] for r in records(out)}
        flying = [tuple(a.x) for a in read_asks(out) if a.index not in told]
        begun = {x for _, x in calls(tmp_path)}
        return len(told) >= 4 and len(flying) == 4 and all(x in begun for x in flying)

    wait_for(four_started, what="a round recorded and four calls in flight")
    os.killpg(runner.pid, signal.SIGKILL)
    runner.wait()
    recorded = {r["index"]: r for r in records(out)}
    in_flight = [a for a in read_asks(out) if a.index not in recorded]
    assert len(in_flight) == 4
    started_before = Counter(x for _, x in calls(tmp_path))

    finish(pinnbo("run", str(case), "--workers", "4", "--output", str(out), "--resume"))
    logged = check_complete(out, budget)
    started = Counter(x for _, x in calls(tmp_path))
    for r in logged:
        x = tuple(r["x"])
        if r["index"] in recorded:      # recorded before the kill: kept, never evaluated again
            assert r == recorded[r["index"]] and started[x] == started_before[x] == 1
    for ask in in_flight:               # dispatched again, unchanged, and recorded once
        assert started[tuple(ask.x)] == 2
    assert json.loads((out / "summary.json").read_text())["parallel"]["resubmitted"] == 4


def test_ctrl_c_to_the_process_group_stops_cleanly_then_resumes(tmp_path):
    """A terminal's Ctrl-C reaches the runner and every Dask worker: exit 130 with one line and no
    traceback (the workers ignore it, the runner stops them), nothing left running, and --resume
    completes the log with every evaluation recorded once."""
    budget = 12
    case = write_case(tmp_path, seconds=2.0, budget=budget)
    out = tmp_path / "out"
    runner = pinnbo("run", str(case), "--workers", "2", "--output", str(out), start_new_session=True)
    wait_for(lambda: (out / "evaluations.jsonl").exists() and len(records(out)) >= 2
             and len(read_asks(out)) > len(records(out)), what="evaluations recorded and in flight")
    below = [p.pid for p in psutil.Process(runner.pid).children(recursive=True)]
    os.killpg(runner.pid, signal.SIGINT)
    _, err = runner.communicate(timeout=60)
    assert runner.returncode == 130, err
    assert "Traceback" not in err and "interrupted after" in err and "--resume" in err, err
    wait_for(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                             for p in below), timeout=30, what="the workers to stop")
    recorded = {r["index"]: r for r in records(out)}
    finish(pinnbo("run", str(case), "--workers", "2", "--output", str(out), "--resume"))
    logged = check_complete(out, budget)
    assert all(r == recorded[r["index"]] for r in logged if r["index"] in recorded)


def test_worker_killed_mid_evaluation(tmp_path):
    case = write_case(tmp_path, seconds=2.0, budget=8)
    out = tmp_path / "out"
    runner = pinnbo("run", str(case), "--workers", "2", "--output", str(out))
    wait_for(lambda: len(calls(tmp_path)) >= 3, what="an evaluation under way")
    pid, victim = calls(tmp_path)[-1]
    os.kill(pid, signal.SIGKILL)        # the Dask worker process running that call
    finish(runner)
    check_complete(out, 8)
    started = Counter(x for _, x in calls(tmp_path))
    assert started[victim] == 2         # run again on another worker ...
    assert sum(r["x"] == list(victim) for r in records(out)) == 1   # ... and recorded once


def test_completion_order_log_reads_back(tmp_path):
    """A log in completion order (indices not in sequence) is valid only beside its ask log."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "case.json").write_text("{}")
    lines = [json.dumps({"index": i, "x": [0.0, 0.0], "y": 1.0, "true": 1.0}) for i in (1, 0, 2)]
    (folder / "evaluations.jsonl").write_text("\n".join(lines) + "\n")
    from pinnbo.errors import HistoryError
    with pytest.raises(HistoryError, match="index 1, expected 0"):
        History.read(folder, {}, "minimize", resume=True, overwrite=False)
    (folder / "asks.jsonl").write_text("".join(json.dumps({"index": i, "x": [0.0, 0.0], "phase": "initial"}) + "\n"
                                               for i in range(3)))
    history = History.read(folder, {}, "minimize", resume=True, overwrite=False)
    assert [r.index for r in history.evaluations] == [1, 0, 2]
    (folder / "evaluations.jsonl").write_text("\n".join(lines + [lines[0]]) + "\n")
    with pytest.raises(HistoryError, match="corrupted record"):
        History.read(folder, {}, "minimize", resume=True, overwrite=False)
