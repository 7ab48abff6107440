"""Ctrl-C (and SIGTERM) that waits for a critical section: a record and its checkpoint, a worker's cleanup."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, delivered like Ctrl-C so every path that stops cleanly on Ctrl-C (the run loop, the
    bench's pool, the timeout worker) stops cleanly on a scheduler's or a container's SIGTERM too."""


# Seconds after which a signal that arrived inside a finalizer is delivered again.
REDELIVERY_DELAY = 0.05


def _in_finalizer(frame) -> bool:
    """Whether ``frame`` (a signal handler's) runs inside an object's ``__del__``."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def _deferred(signum, frame) -> bool:
    """An exception raised by a handler inside a ``__del__`` (the garbage collector finalising, say,
    a closed pipe just as the signal lands) is printed as "Exception ignored" and lost, and the stop
    with it. There the signal is sent again a moment later instead; returns whether it was."""
    if not _in_finalizer(frame):
        return False
    threading.Timer(REDELIVERY_DELAY, os.kill, (os.getpid(), signum)).start()
    return True


def _raise_terminated(signum, frame) -> None:
    if _deferred(signum, frame):
        return
    raise Terminated


def _raise_interrupt(signum, frame) -> None:
    # Python's own SIGINT handler, but not lost inside a finalizer.
    if _deferred(signum, frame):
        return
    raise KeyboardInterrupt


def terminate_as_interrupt() -> None:
    """Make SIGTERM raise :class:`Terminated` and SIGINT KeyboardInterrupt in the main thread (a
    no-op elsewhere), either one sent again a moment later when it lands inside a finalizer."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _raise_interrupt)


_JOB = {"armed": False}


def _worker_signal(signum, frame) -> None:
    # A pool worker's SIGINT and SIGTERM: the first one inside a job stops it; any other (Ctrl-C
    # reaches a worker both from the terminal and from the parent, which forwards its own
    # interrupt; a signal between jobs) is ignored, so it cannot cut into the clean stop the first
    # one started. A Python handler, never SIG_IGN: switching a handler to SIG_IGN while a signal is
    # pending makes Python print "Signal ignored due to race condition".
    if not _JOB["armed"] or _deferred(signum, frame):
        return
    _JOB["armed"] = False
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def worker_interrupts() -> None:
    """A pool worker at its start: SIGINT and SIGTERM do nothing outside :func:`interruptible_job`
    (the parent stops the pool)."""
    _JOB["armed"] = False
    signal.signal(signal.SIGINT, _worker_signal)
    signal.signal(signal.SIGTERM, _worker_signal)


@contextlib.contextmanager
def interruptible_job() -> Iterator[None]:
    """A pool worker's job: the first SIGINT or SIGTERM raises (KeyboardInterrupt, Terminated) in
    it, later ones and those between jobs are ignored (needs :func:`worker_interrupts` first)."""
    _JOB["armed"] = True
    try:
        yield
    finally:
        _JOB["armed"] = False


@contextlib.contextmanager
def _handlers(handler) -> Iterator[bool]:
    """SIGINT and SIGTERM both handled by ``handler`` for the block, then the previous handlers
    again. Yields False (and changes nothing) outside the main thread, where handlers cannot be set."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield True
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Defer SIGINT and SIGTERM until the block is done, then deliver them (KeyboardInterrupt with
    Python's default SIGINT handler). Outside the main thread, where signal handlers cannot be set,
    a no-op."""
    received: list[int] = []
    with _handlers(lambda signum, frame: received.append(signum)) as active:
        yield
    if not active:
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in dict.fromkeys(received):
        handler = previous[sig]
        if callable(handler):
            handler(sig, None)
        elif handler == signal.SIG_DFL and sig == signal.SIGTERM:
            signal.raise_signal(sig)
