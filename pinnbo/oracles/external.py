"""Oracle calls isolated from the runner: a Python objective in a forked worker, and a simulator
that is a program (``oracle: {command: ...}`` in a case file).

Why a forked worker for every Python objective: an oracle that crashes (a segfault in a solver's C
code, ``os._exit``) must be a failed evaluation, not a dead run that crashes again on the same
design at every ``--resume``; and Python cannot stop a function running in a thread, so a
``timeout`` needs a process it can kill. ``fork`` (not ``spawn``) because objectives are closures
and lambdas that cannot be pickled. The price, documented in the README: each call runs in a copy
of the process, so side effects in memory (caches, counters) do not survive the call; files do.
The child runs torch on one thread, as PyTorch's DataLoader workers do, since OpenMP thread pools
do not survive a fork. Where ``fork`` does not exist (Windows) the objective runs in-process.

Every call, Python or command, runs in a process group of its own whose leader is a guard: a
``sh`` that waits for the runner to close a pipe, then kills the whole group. The runner closes it
when the call is over (so whatever the oracle left running dies too); if the runner is killed
(``kill -9``), the kernel closes it, and the simulation and everything it started die with the
runner instead of computing on while ``--resume`` starts the same design again. The group is not
the terminal's, so a Ctrl-C reaches the runner only, which then stops the group itself.
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

from pinnbo.errors import shown
from pinnbo.interrupts import held_interrupts


class OracleFailure(RuntimeError):
    """An oracle call that produced no value; the message is the reason recorded in the log."""


class OracleConfigError(ValueError):
    """A mistake in an external command's declaration (one-line message naming the field)."""


def call_oracle(objective: Callable[..., Any], x: np.ndarray, timeout: float | None = None) -> Any:
    """One oracle result at ``x`` (d,), as the objective returned it: a number, or ``(f, c)`` for a
    problem with black-box constraints (the runner checks its shape). Raises :class:`OracleFailure`
    on a timeout, a crash or anything the objective raises; KeyboardInterrupt when interrupted."""
    if isinstance(objective, CommandOracle):
        return objective(x, timeout=timeout)
    if not _CAN_FORK:
        return objective(x)
    return call_in_worker(objective, x, timeout)


_CAN_FORK = "fork" in multiprocessing.get_all_start_methods() and sys.platform != "win32"
# The guard of a call's process group (module docstring): it waits for its stdin to close, then
# kills its group, itself last. kill with pid 0 signals the caller's own process group.
_GUARD = ("/bin/sh", "-c", "cat >/dev/null; kill -KILL 0")


class ProcessGroup:
    """A process group for one oracle call that dies with the runner (module docstring). Its id
    is :attr:`id`; :meth:`close` kills every process in it."""

    def __init__(self) -> None:
        with held_interrupts():  # no Ctrl-C between the guard's start and its recording here
            self.guard = subprocess.Popen(_GUARD, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, process_group=0)
        self.id = self.guard.pid

    def close(self) -> None:
        with held_interrupts():
            try:
                self.guard.stdin.close()
            except OSError:
                pass
            self.guard.wait()


# -- a Python objective in a forked worker ---------------------------------------------------------
def call_in_worker(objective: Callable[[np.ndarray], Any], x: np.ndarray, timeout: float | None) -> Any:
    """``objective(x)`` in a forked child of its own process group; the group is killed after
    ``timeout`` seconds (None: no limit), and whatever the call started dies with it.

    Ctrl-C in the parent kills the child too and propagates as KeyboardInterrupt, so an interrupted
    evaluation is never mistaken for a failed one; an objective that raises KeyboardInterrupt
    itself is an interrupt too.
    """
    context = multiprocessing.get_context("fork")
    group = ProcessGroup()
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_worker, args=(objective, np.array(x, dtype=np.float64), send, os.getpid(),
                                                     group.id, group.guard.stdin.fileno()))
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
            if process.pid is not None and answered:
                process.join(1)  # a moment to flush its output and exit on its own
            group.close()  # a timeout, Ctrl-C, or anything the oracle left running
            if process.pid is not None:
                process.join()
    if status == "interrupt":
        raise KeyboardInterrupt
    if status == "error":
        raise OracleFailure(payload)
    return payload


def _worker(objective: Callable[[np.ndarray], Any], x: np.ndarray, send: Any, parent: int, group: int,
            guard_pipe: int) -> None:
    # The fork copied the runner's end of the guard's pipe: only the runner may hold it, or the guard
    # would not see it close.
    os.close(guard_pipe)
    try:
        os.setpgid(0, group)  # the call's group: a timeout or the runner's death kills what it started
    except OSError:
        pass
    _die_with_parent(parent)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    try:
        # The result as returned (a number, or (f, c) with constraints): the runner checks its shape.
        # A result that cannot be pickled fails in send, before any byte is written, and is reported.
        send.send(("ok", _plain(objective(x))))
    except KeyboardInterrupt:
        send.send(("interrupt", None))
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
        return f"oracle called sys.exit({shown(exc.code)})"
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
            raise OracleConfigError(f"oracle.parse: expected one of {', '.join(PARSERS)}, got {shown(self.parse)}")
        if self.constraints and self.parse != "json":
            raise OracleConfigError(
                f"oracle.parse: the problem has black-box constraints ({', '.join(self.constraints)}) that the "
                "command must report; use parse: json with {\"objective\": f, \"constraints\": {name: value}}")
        try:
            self._tokens = shlex.split(self.command)
        except ValueError as exc:
            raise OracleConfigError(f"oracle.command: cannot split {shown(self.command)} ({exc})") from None
        if not self._tokens:
            raise OracleConfigError("oracle.command: expected a program and its arguments, got an empty command")
        used: set[str] = set()
        for token in self._tokens:
            try:
                parsed = [(f, spec, conversion) for _, f, spec, conversion in string.Formatter().parse(token)
                          if f is not None]
            except ValueError as exc:
                raise OracleConfigError(f"oracle.command: bad placeholder in {shown(token)} ({exc}); "
                                        "write {{ and }} for literal braces") from None
            for name, spec, conversion in parsed:
                # {shown(x)} would send an object's repr, {x:{y}} fails on every call: both are refused here.
                if conversion is not None:
                    raise OracleConfigError(f"oracle.command: {{{name}!{conversion}}}: conversions are not supported; "
                                            f"write {{{name}}} (full precision) or a float format such as {{{name}:.6f}}")
                if spec and ("{" in spec or "}" in spec):
                    raise OracleConfigError(f"oracle.command: {{{name}:{spec}}}: a placeholder inside a format is not "
                                            f"supported; write a float format such as {{{name}:.6f}}")
            fields = [f for f, _, _ in parsed]
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
            raise OracleConfigError(f"oracle.command: bad format in {shown(self.command)} ({exc})") from None
        program = self._tokens[0]
        if "{" not in program:
            where = Path(program) if os.sep in program else None
            if where is not None and not where.is_absolute() and self.cwd is not None:
                where = self.cwd / where
            found = (where is not None and where.is_file() and os.access(where, os.X_OK)) or \
                    (where is None and shutil.which(program) is not None)
            if not found:
                raise OracleConfigError(f"oracle.command: program {shown(program)} not found or not executable"
                                        + (f" (relative to {self.cwd})" if where is not None and self.cwd else ""))

    def argv(self, x: Sequence[float]) -> list[str]:
        """The command line for design ``x`` (d,)."""
        values = {name: _Value(v) for name, v in zip(self.names, x)}
        return [token.format(**values) for token in self._tokens]

    def __call__(self, x: Sequence[float], timeout: float | None = None) -> float | tuple[float, dict]:
        argv = self.argv(x)
        # A process group of its own that dies with the runner (module docstring): a timeout, Ctrl-C
        # or kill -9 of the runner stops the simulation's whole process tree.
        group = ProcessGroup()
        try:
            try:
                with held_interrupts():
                    process = subprocess.Popen(argv, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True, errors="replace",
                                               process_group=group.id)
            except OSError as exc:
                raise OracleFailure(f"command {shown(argv[0])} could not start: {exc.strerror or exc}") from None
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                with held_interrupts():
                    group.close()
                    process.communicate()
                raise OracleFailure(f"timeout: no value after {timeout:g} s (the command was stopped)") from None
            except BaseException:  # Ctrl-C: stop the simulation, then let the runner stop cleanly
                with held_interrupts():
                    group.close()
                    process.communicate()
                raise
        finally:
            group.close()
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
                                    f"got {shown(_clip(lines[-1]))}") from None
        expected = ("{\"objective\": ..., \"constraints\": {...}}" if self.constraints
                    else "a number or {\"value\": ...}")
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError:
            try:  # chatter before the result: the last line is the JSON
                data = json.loads(lines[-1])
            except json.JSONDecodeError:
                raise OracleFailure(f"unparsable output: expected JSON ({expected}) as stdout "
                                    f"or its last line, got {shown(_clip(lines[-1]))}") from None
        if self.constraints and not isinstance(data, dict):
            raise OracleFailure(f"unparsable output: expected JSON {expected} (the problem has constraints "
                                f"{', '.join(self.constraints)}), got {shown(_clip(json.dumps(data)))}")
        reported = None
        if isinstance(data, dict):
            key = next((k for k in ("value", "objective") if k in data), None)
            if key is None:
                raise OracleFailure(f"unparsable output: JSON without a \"value\" (or \"objective\") key: "
                                    f"{shown(_clip(stdout.strip()))}")
            reported = data.get("constraints")
            data = data[key]
        if data is None:
            raise OracleFailure("command reported no value (\"value\": null)")
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise OracleFailure(f"unparsable output: \"value\" must be a number, got {shown(_clip(json.dumps(data)))}")
        if not self.constraints:
            return float(data)
        return float(data), self._constraint_values(reported)

    def _constraint_values(self, reported: Any) -> dict[str, float]:
        """``{"constraints": {name: value}}`` of the JSON output, checked against the declared names."""
        if not isinstance(reported, dict):
            shape = ", ".join(f'"{n}": ...' for n in self.constraints)
            raise OracleFailure(f"unparsable output: expected \"constraints\": {{{shape}}} in the JSON, got "
                                f"{shown(_clip(json.dumps(reported)))}")
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
                                    f"{shown(_clip(json.dumps(v)))}")
            values[name] = float(v)
        return values


def _clip(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _tail(stderr: str, n: int = 300) -> str:
    """The end of stderr on one line: where a simulator says why it failed."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " | ".join(lines[-5:])
    return text if len(text) <= n else "..." + text[-(n - 3):]

