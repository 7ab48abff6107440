"""A cheap problem whose oracle leaves a trail on disk, for the tests of runs that survive crashes,
interrupts and failing oracles; and helpers to write cases and drive the real CLI.

``counted_bowl`` appends ``start n`` before and ``done n`` after each oracle call to ``log`` (a file,
so calls in a forked timeout worker or a killed process are counted too). With the environment
variable PINNBO_TEST_HANG_AT=n, call n writes ``<log>.hang`` (its pid) and hangs, so a test can
kill or interrupt the run in the middle of an oracle call, deterministically; with
PINNBO_TEST_INTERRUPT_AT=n, call n raises KeyboardInterrupt as Ctrl-C would.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import sympy as sp
import yaml

from pinnbo import PDE, Box, Problem

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
SMALL_PINN = {"hidden": [16], "initial_steps": 30, "steps_per_iteration": 10, "collocation_points": 64,
              "collocation_batch": 32, "n_pool": 128, "top_k": 2, "refine_iterations": 5}
FAILURES = ("raise", "timeout", "nan", "crash")


def counted_bowl(log: str, fail_every: int = 0) -> Problem:
    """(x − 0.3)² + (y + 0.2)² on [−1, 1]², ∇²u = 4. With ``fail_every`` = m, calls m−1, 2m−1, ...
    fail in turn by raising, hanging past any timeout, returning NaN, and killing their process."""
    x, y = sp.symbols("x y")
    u = sp.Function("u")(x, y)
    hang_at = int(os.environ.get("PINNBO_TEST_HANG_AT", "-1"))
    interrupt_at = int(os.environ.get("PINNBO_TEST_INTERRUPT_AT", "-1"))

    def objective(p):
        # Counting and appending under one lock: two bench workers reading the same count would both
        # log call n and no call would be n + 1, so a hang set there would never come.
        with open(log + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            n = calls(log)["start"]
            _append(log, f"start {n}")
        if n == hang_at:
            Path(log + ".hang").write_text(str(os.getpid()))
            time.sleep(600)
        if n == interrupt_at:  # what Ctrl-C does to an in-process oracle
            raise KeyboardInterrupt
        if fail_every and (n + 1) % fail_every == 0:
            kind = FAILURES[((n + 1) // fail_every - 1) % len(FAILURES)]
            if kind == "raise":
                raise RuntimeError(f"solver diverged at call {n}")
            if kind == "timeout":
                time.sleep(600)
            if kind == "nan":
                return float("nan")
            os._exit(3)
        value = float((p[0] - 0.3) ** 2 + (p[1] + 0.2) ** 2)
        _append(log, f"done {n}")
        return value

    return Problem("counted_bowl", Box((-1, -1), (1, 1), ("x", "y")), objective, "minimize",
                   pde=PDE(u.diff(x, 2) + u.diff(y, 2), rhs=4), optimum=0.0)


def _append(path: str, line: str) -> None:
    with open(path, "a") as fh:
        fh.write(line + "\n")


def calls(log: str | Path) -> dict[str, int]:
    """How many oracle calls started and finished, from the trail."""
    path = Path(log)
    lines = path.read_text().splitlines() if path.exists() else []
    return {"start": sum(line.startswith("start") for line in lines),
            "done": sum(line.startswith("done") for line in lines)}


def write_case(folder: Path, name: str = "bowl", log: Path | None = None, **fields) -> Path:
    """A case file running ``counted_bowl`` with small PINN-BO settings; ``fields`` override."""
    data = {"name": name, "problem": f"{HERE}:counted_bowl", "params": {"log": str(log or folder / "calls.log")},
            "method": "pinn-bo", "method_params": SMALL_PINN, "budget": 10, "initial_points": 4, "seed": 3,
            "output": str(folder / "out")}
    data.update(fields)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False))
    return path


def environment(**extra: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore", **extra}
    env.pop("PINNBO_TEST_HANG_AT", None)
    env.pop("PINNBO_TEST_INTERRUPT_AT", None)
    env.update(extra)
    return env


STARTED: list[subprocess.Popen] = []


def default_sigint() -> None:
    """A child's SIGINT back to its default (``preexec_fn``): a test suite started in the background
    by a non-interactive shell inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt, which the Ctrl-C tests send."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_cli(*args: str, **env: str) -> subprocess.Popen:
    """``python -m pinnbo.cli ARGS`` in its own session (so a test can kill it and all it started).

    SIGINT is reset to its default in the child (:func:`default_sigint`)."""
    process = subprocess.Popen([sys.executable, "-m", "pinnbo.cli", *args], cwd=ROOT, env=environment(**env),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=default_sigint)
    STARTED.append(process)
    return process


def kill_started() -> None:
    """Kill what a failed test left running (its session: the run and any oracle worker)."""
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.communicate()


def wait_for(condition, timeout: float = 90.0, process: subprocess.Popen | None = None, poll: float = 0.002) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the run ended early (rc {process.returncode}): {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the run")
        time.sleep(poll)


def line_count(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def folder_digest(folder: Path) -> str:
    """Every file's path and bytes under ``folder`` ('absent' if there is none)."""
    if not folder.exists():
        return "absent"
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "evaluations.jsonl").read_text().splitlines()]


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it has stopped running though.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


class CallLog:
    """Oracle calls recorded in a file, one JSON line each: every call runs in a forked worker,
    where an ``append`` to a list in memory would be lost. Used like that list."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def append(self, item) -> None:
        with open(self.path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            fh.write(json.dumps(item) + "\n")

    def entries(self) -> list:
        return [json.loads(line) for line in self.path.read_text().splitlines()] if self.path.exists() else []

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)

    def __len__(self) -> int:
        return len(self.entries())

    def __iter__(self):
        return iter(self.entries())


def _scheduler_address(scheduler_file: Path, deadline: float) -> str:
    """The address in a ``dask scheduler --scheduler-file``, once the scheduler has written it
    whole: the file appears before its contents do, so an empty or partial file is read again."""
    while True:
        try:
            return json.loads(scheduler_file.read_text())["address"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class ExternalDask:
    """A ``dask scheduler`` and a ``dask worker --nworkers N`` started as subprocesses on 127.0.0.1,
    as a user starts them beside pinnbo; ``address`` is the scheduler's, ``worker`` the worker
    command's process (the parent of its worker processes). Stopped on leaving the block."""

    def __init__(self, folder: Path, workers: int = 2, **env: str) -> None:
        self.folder, self.workers, self.env = Path(folder), workers, environment(**env)
        self.scheduler = self.worker = None
        self.address = ""

    def __enter__(self) -> "ExternalDask":
        scheduler_file = self.folder / "scheduler.json"
        self.scheduler = subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port",
                                           "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                                          env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.address = _scheduler_address(scheduler_file, time.monotonic() + 60)
            self.worker = subprocess.Popen([sys.executable, "-m", "dask", "worker", self.address, "--nthreads", "1",
                                            "--host", "127.0.0.1", "--no-dashboard", "--nworkers", str(self.workers)],
                                           env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for process in (self.worker, self.scheduler):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in (self.worker, self.scheduler):
            if process is not None:
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
