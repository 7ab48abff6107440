"""Runs that survive: kill -9 and Ctrl-C at any point, then --resume to the history an
uninterrupted run with the same seed gives, without repeating or losing an oracle call."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from pinnbo.cli import app
from pinnbo.interrupts import held_interrupts
from pinnbo.runner.folder import locked
from pinnbo.runner.history import History
from tests.survival import (
    SMALL_PINN,
    calls,
    folder_digest,
    kill_started,
    line_count,
    pid_alive,
    records,
    start_cli,
    wait_for,
    write_case,
)

runner = CliRunner()
BUDGET = 10


def cli(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> bytes:
    """evaluations.jsonl of the uninterrupted run (same seed, method and settings)."""
    folder = tmp_path_factory.mktemp("reference")
    result = cli("run", str(write_case(folder)), "--quiet")
    assert result.exit_code == 0, result.output
    assert calls(folder / "calls.log") == {"start": BUDGET, "done": BUDGET}
    return (folder / "out" / "evaluations.jsonl").read_bytes()


@pytest.fixture(autouse=True)
def no_hang(monkeypatch):
    monkeypatch.delenv("PINNBO_TEST_HANG_AT", raising=False)
    monkeypatch.delenv("PINNBO_TEST_INTERRUPT_AT", raising=False)
    yield
    kill_started()


def test_sigkill_in_an_oracle_call_then_resume_gives_the_uninterrupted_history(tmp_path, reference):
    """kill -9 of `pinnbo run` while oracle call 6 runs (6 evaluations on disk), then --resume."""
    case = write_case(tmp_path)
    log, out = tmp_path / "calls.log", tmp_path / "out"
    process = start_cli("run", str(case), "--quiet", PINNBO_TEST_HANG_AT="6")
    wait_for(lambda: Path(str(log) + ".hang").exists(), process=process)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    assert line_count(out / "evaluations.jsonl") == 6
    assert calls(log) == {"start": 7, "done": 6}

    result = cli("run", str(case), "--resume", "--quiet")
    assert result.exit_code == 0, result.output
    assert (out / "evaluations.jsonl").read_bytes() == reference
    # No oracle call repeated and none lost: the budget exactly, plus the one the kill cut off.
    assert calls(log) == {"start": BUDGET + 1, "done": BUDGET}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evaluations"] == BUDGET and summary["failed"] == 0


def test_ctrl_c_in_an_oracle_under_timeout_exits_130_and_resumes(tmp_path, reference):
    """SIGINT while the oracle runs in its timeout worker: the worker is stopped, the folder holds
    the evaluations before it, exit 130 with the resume command, and the resume completes exactly."""
    case = write_case(tmp_path, timeout=60)
    log, out = tmp_path / "calls.log", tmp_path / "out"
    process = start_cli("run", str(case), "--quiet", "--seed", "3", PINNBO_TEST_HANG_AT="5")
    hang = Path(str(log) + ".hang")
    # the worker creates the file, then writes its pid: wait for the pid, not just the file
    wait_for(lambda: hang.exists() and hang.read_text().strip().isdigit(), process=process)
    worker = int(hang.read_text())
    assert worker != process.pid  # the oracle runs in a worker process
    os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert f"pinnbo run {case} --resume --seed 3" in " ".join(stderr.split())
    deadline = time.monotonic() + 5
    while pid_alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(worker), "the hung oracle worker outlived the interrupted run"
    assert line_count(out / "evaluations.jsonl") == 5
    assert all(r["status"] == "ok" for r in records(out))  # the interrupted call is not a failure

    result = cli("run", str(case), "--resume", "--quiet")
    assert result.exit_code == 0, result.output
    assert (out / "evaluations.jsonl").read_bytes() == reference
    assert calls(log) == {"start": BUDGET + 1, "done": BUDGET}


def test_sigterm_in_an_oracle_under_timeout_exits_143_and_resumes(tmp_path, reference):
    """SIGTERM (a scheduler's or container's stop) is a clean stop like Ctrl-C: the oracle worker is
    stopped, the evaluations before it are on disk, exit 143, and the resume completes exactly."""
    case = write_case(tmp_path, timeout=60)
    log, out = tmp_path / "calls.log", tmp_path / "out"
    process = start_cli("run", str(case), "--quiet", PINNBO_TEST_HANG_AT="5")
    hang = Path(str(log) + ".hang")
    wait_for(lambda: hang.exists() and hang.read_text().strip().isdigit(), process=process)
    worker = int(hang.read_text())
    os.kill(process.pid, signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert "terminated after 5 evaluations" in stderr and "--resume" in stderr
    deadline = time.monotonic() + 5
    while pid_alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pid_alive(worker), "the hung oracle worker outlived the terminated run"
    assert line_count(out / "evaluations.jsonl") == 5
    result = cli("run", str(case), "--resume", "--quiet")
    assert result.exit_code == 0, result.output
    assert (out / "evaluations.jsonl").read_bytes() == reference
    assert calls(log) == {"start": BUDGET + 1, "done": BUDGET}


def test_sigterm_while_a_record_is_written_waits_for_it():
    """SIGTERM inside the record/tell/checkpoint section is delivered once the section is done."""
    from pinnbo.interrupts import Terminated, terminate_as_interrupt

    previous = signal.getsignal(signal.SIGTERM)
    terminate_as_interrupt()
    done = []
    try:
        with pytest.raises(Terminated):
            with held_interrupts():
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                done.append(True)
        assert done == [True]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_in_an_in_process_oracle_is_not_a_failed_evaluation(tmp_path, reference, monkeypatch):
    """Without a timeout the oracle runs in the runner's process and receives the KeyboardInterrupt
    itself: the call is not recorded (failed or otherwise), exit 130, and the resume redoes it."""
    case = write_case(tmp_path)
    monkeypatch.setenv("PINNBO_TEST_INTERRUPT_AT", "5")
    result = cli("run", str(case), "--quiet")
    assert result.exit_code == 130
    assert "interrupted after 5 evaluations" in result.stderr and "--resume" in result.stderr
    assert line_count(tmp_path / "out" / "evaluations.jsonl") == 5
    monkeypatch.delenv("PINNBO_TEST_INTERRUPT_AT")
    assert cli("run", str(case), "--resume", "--quiet").exit_code == 0
    assert (tmp_path / "out" / "evaluations.jsonl").read_bytes() == reference


def test_ctrl_c_while_a_record_is_written_waits_for_it():
    """SIGINT inside the record/tell/checkpoint section is delivered once the section is done."""
    done = []
    # Python's own handler, as in an interactive run (a suite started in the background by a
    # non-interactive shell inherits SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with held_interrupts():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # a handler that raised would interrupt this
                done.append(True)
        assert done == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_ask_leaves_a_consistent_folder(tmp_path):
    """SIGINT while PINN-BO trains for its first proposal (long initial fit)."""
    case = write_case(tmp_path, method_params={**SMALL_PINN, "initial_steps": 20000})
    log, out = tmp_path / "calls.log", tmp_path / "out"
    process = start_cli("run", str(case), "--quiet")
    wait_for(lambda: line_count(out / "evaluations.jsonl") >= 4 and (out / "checkpoint.pt").exists(), process=process)
    time.sleep(0.3)
    os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stderr
    assert calls(log) == {"start": 4, "done": 4}  # interrupted in the ask, before oracle call 5
    history = History("minimize", out)
    history.load()
    assert len(history) == 4 and len(history.timings) == 4
    assert torch.load(out / "checkpoint.pt", weights_only=True)["n_told"] == 4
    assert not list(out.glob("*.tmp"))


def test_resume_repairs_what_a_crash_leaves(tmp_path, reference):
    """The states a kill -9 can leave between the writes of one evaluation: a half-written record,
    a missing timings line, a half-written checkpoint (.tmp). A checkpoint that cannot be read is no
    such state (it is replaced atomically): it is refused, naming the file, until it is deleted."""
    case = write_case(tmp_path)
    out = tmp_path / "out"
    assert cli("run", str(case), "--quiet", "--budget", "7").exit_code == 0
    with open(out / "evaluations.jsonl", "a") as fh:
        fh.write('{"index": 7, "x": [0.1, ')
    timings = (out / "timings.jsonl").read_text().splitlines()
    (out / "timings.jsonl").write_text("\n".join(timings[:5]) + "\n" + timings[6] + "\n")
    (out / "checkpoint.pt.tmp").write_bytes(b"half a checkpoint")
    (out / "checkpoint.pt").write_bytes(b"not a checkpoint")
    before = folder_digest(out)
    result = cli("run", str(case), "--resume", "--quiet")
    assert result.exit_code == 2 and "checkpoint.pt: corrupted state file" in result.stderr
    assert folder_digest(out) == before
    (out / "checkpoint.pt").unlink()
    result = cli("run", str(case), "--resume", "--quiet")
    assert result.exit_code == 0, result.output
    assert (out / "evaluations.jsonl").read_bytes() == reference
    indices = [json.loads(line)["index"] for line in (out / "timings.jsonl").read_text().splitlines()]
    assert indices == list(range(BUDGET))
    assert calls(tmp_path / "calls.log")["done"] == BUDGET


def test_a_record_missing_only_its_newline_is_kept(tmp_path):
    """Killed between writing a record and its newline: the evaluation happened, it is not redone."""
    straight = write_case(tmp_path, name="straight", method="random", method_params=None, budget=6,
                          output=str(tmp_path / "straight"), log=tmp_path / "straight.log")
    assert cli("run", str(straight), "--quiet").exit_code == 0
    case = write_case(tmp_path, method="random", method_params=None, budget=6)
    assert cli("run", str(case), "--quiet", "--budget", "5").exit_code == 0
    path = tmp_path / "out" / "evaluations.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert cli("run", str(case), "--resume", "--quiet").exit_code == 0
    assert path.read_bytes() == (tmp_path / "straight" / "evaluations.jsonl").read_bytes()
    assert calls(tmp_path / "calls.log") == {"start": 6, "done": 6}


def test_a_folder_in_use_is_refused(tmp_path):
    case = write_case(tmp_path)
    with locked(tmp_path / "out"):
        result = cli("run", str(case), "--quiet")
    assert result.exit_code == 2 and "in use by another pinnbo process" in result.stderr
    assert not (tmp_path / "calls.log").exists()


def test_resume_of_another_case_or_seed_is_refused(tmp_path):
    case = write_case(tmp_path, budget=5, method="random", method_params=None)
    assert cli("run", str(case), "--quiet").exit_code == 0
    before = (tmp_path / "out" / "evaluations.jsonl").read_bytes()
    for args, needle in ((["--seed", "4"], "different seed"), ([], None)):
        other = write_case(tmp_path, name="bowl2", method="random", method_params=None, budget=5) if not args else case
        result = cli("run", str(other), "--resume", "--quiet", "--output", str(tmp_path / "out"), *args)
        assert result.exit_code == 2
        assert (needle or "different name") in result.stderr
    assert (tmp_path / "out" / "evaluations.jsonl").read_bytes() == before


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, grandchildren, ...), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


@pytest.mark.parametrize("signum, code, word, group", [(signal.SIGTERM, 143, "terminated", False),
                                                      (signal.SIGINT, 130, "interrupted", False),
                                                      (signal.SIGINT, 130, "interrupted", True)])
def test_bench_with_jobs_stops_cleanly_on_a_signal(tmp_path, signum, code, word, group):
    """SIGTERM (or SIGINT) sent to the bench process alone, as a scheduler or `kill` does, or
    SIGINT to its whole process group, as a terminal's Ctrl-C does, while one pool worker's oracle
    hangs: every worker stops the way `pinnbo run` stops, the bench exits with 143 (130) and no
    traceback, leaves no process behind, and the same command completes the grid to what an
    uninterrupted bench records, without repeating a recorded oracle call."""
    case = write_case(tmp_path, timeout=60, method="random", method_params={})
    log, out = tmp_path / "calls.log", tmp_path / "bench"
    args = ("bench", str(case), "--methods", "random", "--seeds", "2", "--quiet", "--output", str(out))
    process = start_cli(*args, "--jobs", "2", PINNBO_TEST_HANG_AT="6")
    hang = Path(str(log) + ".hang")
    wait_for(lambda: hang.exists() and hang.read_text().strip().isdigit(), process=process)
    below = _descendants(process.pid)
    assert int(hang.read_text()) in below and len(below) >= 3   # two pool workers and the hung oracle's
    started_at = time.monotonic()
    (os.killpg if group else os.kill)(process.pid, signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and f"bench {word}" in stderr, stderr
    assert time.monotonic() - started_at < 20, "the workers did not stop on the signal (killed after the grace)"
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in below) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in below if pid_alive(p)], "a worker outlived the stopped bench"
    trail = calls(log)
    # Unfinished: the hung call, and perhaps the other worker's call in flight when it stopped.
    assert trail["start"] - 2 <= trail["done"] <= trail["start"] - 1, trail

    result = cli(*args)                                        # the same grid, in this process
    assert result.exit_code == 0, result.output
    # What an uninterrupted bench records, run by run (its own trail of calls).
    (tmp_path / "ref").mkdir()
    fresh = write_case(tmp_path / "ref", timeout=60, method="random", method_params={})
    assert cli("bench", str(fresh), *args[2:-1], str(tmp_path / "ref" / "bench")).exit_code == 0
    for seed in (0, 1):
        resumed = out / case.stem / "runs" / "random" / f"seed{seed}" / "evaluations.jsonl"
        uninterrupted = tmp_path / "ref" / "bench" / fresh.stem / "runs" / "random" / f"seed{seed}" / "evaluations.jsonl"
        assert resumed.read_bytes() == uninterrupted.read_bytes()
    # Recorded calls are never repeated: beyond the 2 x BUDGET that count, only the calls in flight
    # when the signal came ran again: the hung one, and at most one of the other worker's (which
    # may or may not have finished before its worker stopped it).
    trail = calls(log)
    assert 2 * BUDGET + 1 <= trail["start"] <= 2 * BUDGET + 2 and 2 * BUDGET <= trail["done"] < trail["start"], trail


def test_a_run_folder_holding_only_an_interrupted_case_write_is_started_afresh(tmp_path):
    """A bench worker stopped while writing its first case.json leaves only its temporary
    (.case.json.<random>.tmp); the bench (and `run --resume`) must treat that folder as a run not
    yet started, not refuse it, and clear the leftover."""
    case = write_case(tmp_path, method="random", method_params={})
    out = tmp_path / "bench"
    seed1 = out / case.stem / "runs" / "random" / "seed1"
    seed1.mkdir(parents=True)
    (seed1 / ".case.json.k2j4_x9q.tmp").write_text('{"half": ')
    result = cli("bench", str(case), "--methods", "random", "--seeds", "2", "--quiet", "--output", str(out))
    assert result.exit_code == 0, result.output
    assert line_count(seed1 / "evaluations.jsonl") == BUDGET and not list(seed1.glob("*.tmp"))
    # a folder with anything else in it is still protected
    other = tmp_path / "foreign"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    result = cli("run", str(case), "--output", str(other), "--resume")
    assert result.exit_code != 0 and "no case.json" in result.output
    single = tmp_path / "single"
    single.mkdir()
    (single / ".case.json.v0c3lm2e.tmp").write_text("")
    assert cli("run", str(case), "--output", str(single), "--resume", "--quiet").exit_code == 0
    assert line_count(single / "evaluations.jsonl") == BUDGET


def test_an_interrupted_atomic_write_leaves_no_tmp(tmp_path, monkeypatch):
    from pinnbo import files

    def interrupted(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_json(tmp_path / "case.json", {"a": 1})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("handler_name, armed", [("_worker_signal", True), ("_raise_terminated", None),
                                                 ("_raise_interrupt", None)])
def test_a_signal_landing_in_a_finalizer_is_delivered_again(monkeypatch, handler_name, armed):
    """A handler's exception raised inside a __del__ is swallowed ("Exception ignored") and the stop
    lost with it (seen once in CI: a bench worker's forwarded SIGTERM landed in a pipe's __del__);
    there the handler sends the signal again a moment later instead of raising."""
    import threading

    from pinnbo import interrupts

    sent, done = [], threading.Event()
    monkeypatch.setattr(interrupts.os, "kill", lambda pid, sig: (sent.append((pid, sig)), done.set()))
    if armed is not None:
        monkeypatch.setitem(interrupts._JOB, "armed", armed)
    handler = getattr(interrupts, handler_name)

    class Finalised:
        def __del__(self):
            handler(signal.SIGTERM, sys._getframe())   # as if the signal arrived right here

    Finalised()                                        # collected at once: __del__ runs, nothing raised
    assert done.wait(5) and sent == [(os.getpid(), signal.SIGTERM)]
    if armed is not None:
        assert interrupts._JOB["armed"]                # the job still stops on the redelivered signal
    with pytest.raises(KeyboardInterrupt if handler_name == "_raise_interrupt" else interrupts.Terminated):
        handler(signal.SIGTERM, sys._getframe())       # outside a finalizer it raises, as before
