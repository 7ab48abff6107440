"""Oracle calls isolated from the runner: a Python objective in a forked worker, a program
(:class:`~pinnbo.oracles.command.CommandOracle`) in a process group of its own.

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

import multiprocessing
import os
import signal
import subprocess
import sys
from typing import Any, Callable

import numpy as np

from pinnbo.errors import shown
from pinnbo.interrupts import held_interrupts


class OracleFailure(RuntimeError):
    """An oracle call that produced no value; the message is the reason recorded in the log."""


def call_oracle(objective: Callable[..., Any], x: np.ndarray, timeout: float | None = None) -> Any:
    """One oracle result at ``x`` (d,), as the objective returned it: a number, or ``(f, c)`` for a
    problem with black-box constraints (the runner checks its shape). Raises :class:`OracleFailure`
    on a timeout, a crash or anything the objective raises; KeyboardInterrupt when interrupted."""
    if getattr(objective, "runs_a_program", False):   # a CommandOracle: its own process, its own timeout
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
            raise OracleFailure(f"oracle process died before returning a value ({exit_reason(process.exitcode)})") from None
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
    die_with_parent(parent)
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


def die_with_parent(parent: int, signum: int = signal.SIGKILL) -> None:
    """Linux: ``signum`` to this process when its parent, ``parent``, dies (kill -9 of a run must
    not leave a simulation running forever). Elsewhere a no-op; the runner kills its worker on
    every exit it survives."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signum))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def exit_reason(code: int | None) -> str:
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
