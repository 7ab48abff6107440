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


def _stop_once(signum, frame) -> None:
    # The first SIGINT or SIGTERM stops the job; any later one (Ctrl-C reaches a pool worker both
    # from the terminal and from the parent, which forwards its own interrupt) is ignored, so it
    # cannot cut into the clean stop the first one started.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if signum == signal.SIGTERM:
        raise Terminated
    raise KeyboardInterrupt


def ignore_interrupts() -> None:
    """A pool worker between jobs: SIGINT and SIGTERM do nothing (the parent stops the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextlib.contextmanager
def interruptible_job() -> Iterator[None]:
    """A pool worker's job: the first SIGINT or SIGTERM raises (KeyboardInterrupt, Terminated) in
    it, later ones are ignored; between jobs both are ignored again."""
    signal.signal(signal.SIGINT, _stop_once)
    signal.signal(signal.SIGTERM, _stop_once)
    try:
        yield
    finally:
        ignore_interrupts()


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
