"""Ctrl-C (and SIGTERM) that waits for a critical section: a record and its checkpoint, a worker's cleanup."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C so every path that stops cleanly on Ctrl-C (the run loop, the
    bench's pool, the timeout worker) stops cleanly on a scheduler's or a container's SIGTERM too."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated


def terminate_as_interrupt() -> None:
    """Make SIGTERM raise :class:`Terminated` in the main thread (a no-op elsewhere)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


_JOB = {"armed": False}


def _worker_signal(signum, frame) -> None:
    # A pool worker's SIGINT and SIGTERM: the first one inside a job stops it; any other (Ctrl-C
    # reaches a worker both from the terminal and from the parent, which forwards its own
    # interrupt; a signal between jobs) is ignored, so it cannot cut into the clean stop the first
    # one started. A Python handler, never SIG_IGN: switching a handler to SIG_IGN while a signal is
    # pending makes Python print "Signal ignored due to race condition".
    if not _JOB["armed"]:
        return
    _JOB["armed"] = False
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def ignore_interrupts() -> None:
    """A pool worker at its start: SIGINT and SIGTERM do nothing outside :func:`interruptible_job`
    (the parent stops the pool)."""
    _JOB["armed"] = False
    signal.signal(signal.SIGINT, _worker_signal)
    signal.signal(signal.SIGTERM, _worker_signal)


@contextlib.contextmanager
def interruptible_job() -> Iterator[None]:
    """A pool worker's job: the first SIGINT or SIGTERM raises (KeyboardInterrupt, Terminated) in
    it, later ones and those between jobs are ignored (needs :func:`ignore_interrupts` first)."""
    _JOB["armed"] = True
    try:
        yield
    finally:
        _JOB["armed"] = False


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Defer SIGINT and SIGTERM until the block is done, then deliver them (KeyboardInterrupt with
    Python's default SIGINT handler). Outside the main thread, where signal handlers cannot be set,
    a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    for sig in dict.fromkeys(received):
        handler = previous[sig]
        if callable(handler):
            handler(sig, None)
        elif handler == signal.SIG_DFL and sig == signal.SIGTERM:
            signal.raise_signal(sig)
