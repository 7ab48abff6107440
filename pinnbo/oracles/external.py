"""Oracles that run outside the runner's process: a Python objective under a timeout, and a
simulator that is a program (``oracle: {command: ...}`` in a case file).

Why a forked worker for a Python objective with a ``timeout``: Python cannot stop a function
running in a thread (there is no safe thread kill, and a thread stuck in C code never sees an
exception), so a "thread whose result is abandoned" keeps burning a core for the rest of an
hours-long simulation and may still mutate the objective's state afterwards. A child process can be
killed outright, takes whatever it started with it (it leads its own process group) and, as a bonus,
a segfaulting oracle becomes a failed evaluation instead of a dead run. ``fork`` (not ``spawn``)
because objectives are closures and lambdas that cannot be pickled. The price, documented in the
README: with a ``timeout`` each call runs in a copy of the process, so side effects in memory
(caches, counters) do not survive the call; files do. The child also runs torch on one thread, as
PyTorch's DataLoader workers do, since OpenMP thread pools do not survive a fork.

An external command has a natural timeout (the subprocess), so it needs no worker.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import shutil
import signal
import string
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from pinnbo.interrupts import held_interrupts


class OracleFailure(RuntimeError):
    """An oracle call that produced no value; the message is the reason recorded in the log."""


class OracleConfigError(ValueError):
    """A mistake in an external command's declaration (one-line message naming the field)."""


def call_oracle(objective: Callable[..., Any], x: np.ndarray, timeout: float | None = None) -> Any:
    """One oracle result at ``x`` (d,), as the objective returned it: a number, or ``(f, c)`` for a
    problem with black-box constraints (the runner checks its shape). Raises :class:`OracleFailure`
    on a timeout or a dead worker; anything the objective itself raises propagates (in-process) or
    becomes an OracleFailure (worker)."""
    if isinstance(objective, CommandOracle):
        return objective(x, timeout=timeout)
    if timeout is None:
        return objective(x)
    return call_in_worker(objective, x, timeout)


# -- a Python objective in a forked worker ---------------------------------------------------------
def call_in_worker(objective: Callable[[np.ndarray], Any], x: np.ndarray, timeout: float) -> Any:
    """``objective(x)`` in a forked child; killed (with its process group) after ``timeout`` seconds.

    Ctrl-C in the parent kills the child too and propagates as KeyboardInterrupt, so an interrupted
    evaluation is never mistaken for a failed one.
    """
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(objective, np.array(x, dtype=np.float64), send, os.getpid()))
    answered = False
    try:
        # Not a daemon: an oracle may use multiprocessing itself; we always reap it. Ctrl-C is held
        # while it starts and while it is stopped, so no path leaves it running (a live non-daemon
        # child would also keep the interpreter from exiting).
        with held_interrupts():
            process.start()
            send.close()  # only the child holds the write end: its death reads as EOF
        if not receive.poll(timeout):
            raise OracleFailure(f"timeout: no value after {timeout:g} s (the oracle was stopped)")
        try:
            status, payload = receive.recv()
            answered = True
        except EOFError:
            process.join(5)
            raise OracleFailure(f"oracle process died before returning a value ({_exit_reason(process.exitcode)})") from None
    finally:
        with held_interrupts():
            send.close()
            receive.close()
            if process.pid is not None:
                if answered:
                    process.join(1)  # a moment to flush its output and exit on its own
                _kill_group(process.pid)  # a timeout, Ctrl-C, or anything the oracle left running
                process.join()
    if status == "error":
        raise OracleFailure(payload)
    return payload


def _worker(objective: Callable[[np.ndarray], Any], x: np.ndarray, send: Any, parent: int) -> None:
    try:
        os.setpgid(0, 0)  # own group: a timeout kills whatever the oracle started, too
    except OSError:
        pass
    _die_with_parent(parent)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    try:
        # The result as returned (a number, or (f, c) with constraints): the runner checks its shape.
        # A result that cannot be pickled fails in send, before any byte is written, and is reported.
        send.send(("ok", _plain(objective(x))))
    except BaseException as exc:  # noqa: BLE001 -- everything the oracle does is reported, nothing printed
        send.send(("error", _describe(exc)))
    finally:
        send.close()


def _plain(value: Any) -> Any:
    """Numbers, arrays and tensors as Python floats and lists (picklable without torch), containers
    kept; anything else as it is."""
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.item() if value.ndim == 0 else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if "torch" in sys.modules and isinstance(value, sys.modules["torch"].Tensor):
        return _plain(value.detach().cpu().numpy())
    return value


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this worker when the runner dies (kill -9 of a run must not leave a simulation
    running forever). Elsewhere a no-op; the runner kills its worker on every exit it survives."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _kill_group(pid: int | None) -> None:
    if pid is None:
        return
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
            return
        except (ProcessLookupError, PermissionError, OSError):
            continue


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"oracle called sys.exit({exc.code!r})"
    if isinstance(exc, KeyboardInterrupt):
        return "KeyboardInterrupt"
    return f"{type(exc).__name__}: {exc}".strip()


# -- an external command ---------------------------------------------------------------------------
PARSERS = ("float", "json")


class _Value:
    """A design coordinate in a command template: ``{x}`` is repr(float) (round-trips exactly),
    ``{x:.3f}`` any float format."""

    def __init__(self, value: float) -> None:
        self.value = float(value)

    def __format__(self, spec: str) -> str:
        return repr(self.value) if not spec else format(self.value, spec)


@dataclass
class CommandOracle:
    """``objective(x)`` = run ``command`` with the design substituted, parse its stdout.

    Attributes:
        command: template such as ``./simulate {x} {y}``; split like a shell line (no shell runs:
            write ``sh -c '...'`` for pipes), each placeholder is a design variable's name.
        names: the design variables, in the order of ``x``'s (d,) coordinates.
        parse: ``float`` (the last non-empty line of stdout is the value) or ``json`` (stdout, or
            its last line, is a number, ``{"value": number}`` or ``{"objective": number}``).
        cwd: working directory of the command (the case file's folder).
        constraints: names of the black-box constraints the program reports (``parse: json``, as
            ``{"objective": f, "constraints": {name: c, ...}}``); the call then returns
            ``(f, {name: c})``, the shape :meth:`pinnbo.problem.Problem.split_outcome` reads.
    """

    command: str
    names: tuple[str, ...]
    parse: str = "float"
    cwd: Path | None = None
    constraints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.names = tuple(self.names)
        self.constraints = tuple(self.constraints)
        if self.parse not in PARSERS:
            raise OracleConfigError(f"oracle.parse: expected one of {', '.join(PARSERS)}, got {self.parse!r}")
        if self.constraints and self.parse != "json":
            raise OracleConfigError(
                f"oracle.parse: the problem has black-box constraints ({', '.join(self.constraints)}) that the "
                "command must report; use parse: json with {\"objective\": f, \"constraints\": {name: value}}")
        try:
            self._tokens = shlex.split(self.command)
        except ValueError as exc:
            raise OracleConfigError(f"oracle.command: cannot split {self.command!r} ({exc})") from None
        if not self._tokens:
            raise OracleConfigError("oracle.command: expected a program and its arguments, got an empty command")
        used: set[str] = set()
        for token in self._tokens:
            try:
                fields = [f for _, f, _, _ in string.Formatter().parse(token) if f is not None]
            except ValueError as exc:
                raise OracleConfigError(f"oracle.command: bad placeholder in {token!r} ({exc}); "
                                        "write {{ and }} for literal braces") from None
            for name in fields:
                if name not in self.names:
                    raise OracleConfigError(f"oracle.command: unknown placeholder {{{name}}}; expected "
                                            f"{', '.join('{' + n + '}' for n in self.names)}")
                used.add(name)
        missing = [n for n in self.names if n not in used]
        if missing:
            raise OracleConfigError(f"oracle.command: placeholder {{{missing[0]}}} is missing; every design "
                                    f"variable ({', '.join(self.names)}) must reach the command")
        try:
            self.argv(np.zeros(len(self.names)))
        except (ValueError, TypeError) as exc:
            raise OracleConfigError(f"oracle.command: bad format in {self.command!r} ({exc})") from None
        program = self._tokens[0]
        if "{" not in program:
            where = Path(program) if os.sep in program else None
            if where is not None and not where.is_absolute() and self.cwd is not None:
                where = self.cwd / where
            found = (where is not None and where.is_file() and os.access(where, os.X_OK)) or \
                    (where is None and shutil.which(program) is not None)
            if not found:
                raise OracleConfigError(f"oracle.command: program {program!r} not found or not executable"
                                        + (f" (relative to {self.cwd})" if where is not None and self.cwd else ""))

    def argv(self, x: Sequence[float]) -> list[str]:
        """The command line for design ``x`` (d,)."""
        values = {name: _Value(v) for name, v in zip(self.names, x)}
        return [token.format(**values) for token in self._tokens]

    def __call__(self, x: Sequence[float], timeout: float | None = None) -> float | tuple[float, dict]:
        argv = self.argv(x)
        try:
            # A session of its own: a timeout (or Ctrl-C) kills the simulation's whole process tree;
            # and since the terminal's Ctrl-C no longer reaches it, it is held until `try` can stop it.
            with held_interrupts():
                process = subprocess.Popen(argv, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE, text=True, errors="replace",
                                           start_new_session=True)
        except OSError as exc:
            raise OracleFailure(f"command {argv[0]!r} could not start: {exc.strerror or exc}") from None
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with held_interrupts():
                _kill_group(process.pid)
                process.communicate()
            raise OracleFailure(f"timeout: no value after {timeout:g} s (the command was stopped)") from None
        except BaseException:  # Ctrl-C: stop the simulation, then let the runner stop cleanly
            with held_interrupts():
                _kill_group(process.pid)
                process.communicate()
            raise
        if process.returncode == -signal.SIGINT:
            raise KeyboardInterrupt
        if process.returncode != 0:
            reason = ("exited with code " + str(process.returncode) if process.returncode > 0
                      else _exit_reason(process.returncode))
            raise OracleFailure(f"command {reason}" + (f": {_tail(stderr)}" if stderr.strip() else ""))
        return self._parse(stdout)

    def _parse(self, stdout: str) -> float | tuple[float, dict[str, float]]:
        lines = [line.strip() for line in stdout.splitlines() if line.strip()]
        if not lines:
            raise OracleFailure("command printed nothing on stdout; expected the value")
        if self.parse == "float":
            try:
                return float(lines[-1])
            except ValueError:
                raise OracleFailure(f"unparsable output: expected a number on the last line of stdout, "
                                    f"got {_clip(lines[-1])!r}") from None
        expected = ("{\"objective\": ..., \"constraints\": {...}}" if self.constraints
                    else "a number or {\"value\": ...}")
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError:
            try:  # chatter before the result: the last line is the JSON
                data = json.loads(lines[-1])
            except json.JSONDecodeError:
                raise OracleFailure(f"unparsable output: expected JSON ({expected}) as stdout "
                                    f"or its last line, got {_clip(lines[-1])!r}") from None
        if self.constraints and not isinstance(data, dict):
            raise OracleFailure(f"unparsable output: expected JSON {expected} (the problem has constraints "
                                f"{', '.join(self.constraints)}), got {_clip(json.dumps(data))!r}")
        reported = None
        if isinstance(data, dict):
            key = next((k for k in ("value", "objective") if k in data), None)
            if key is None:
                raise OracleFailure(f"unparsable output: JSON without a \"value\" (or \"objective\") key: "
                                    f"{_clip(stdout.strip())!r}")
            reported = data.get("constraints")
            data = data[key]
        if data is None:
            raise OracleFailure("command reported no value (\"value\": null)")
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise OracleFailure(f"unparsable output: \"value\" must be a number, got {_clip(json.dumps(data))!r}")
        if not self.constraints:
            return float(data)
        return float(data), self._constraint_values(reported)

    def _constraint_values(self, reported: Any) -> dict[str, float]:
        """``{"constraints": {name: value}}`` of the JSON output, checked against the declared names."""
        if not isinstance(reported, dict):
            shape = ", ".join(f'"{n}": ...' for n in self.constraints)
            raise OracleFailure(f"unparsable output: expected \"constraints\": {{{shape}}} in the JSON, got "
                                f"{_clip(json.dumps(reported))!r}")
        missing = [n for n in self.constraints if n not in reported]
        unexpected = [str(k) for k in reported if k not in self.constraints]
        if missing or unexpected:
            problems = ([f"misses {', '.join(missing)}"] if missing else []) + \
                       ([f"has unknown {', '.join(unexpected)}"] if unexpected else [])
            raise OracleFailure(f"unparsable output: \"constraints\" {'; '.join(problems)}; "
                                f"expected {', '.join(self.constraints)}")
        values = {}
        for name in self.constraints:
            v = reported[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise OracleFailure(f"unparsable output: constraint {name} must be a number, got "
                                    f"{_clip(json.dumps(v))!r}")
            values[name] = float(v)
        return values


def _clip(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _tail(stderr: str, n: int = 300) -> str:
    """The end of stderr on one line: where a simulator says why it failed."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " | ".join(lines[-5:])
    return text if len(text) <= n else "..." + text[-(n - 3):]

