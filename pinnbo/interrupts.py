"""Ctrl-C that waits for a critical section: a record and its checkpoint, a worker's cleanup."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


@contextlib.contextmanager
def held_interrupts() -> Iterator[None]:
    """Defer SIGINT until the block is done, then deliver it (KeyboardInterrupt with Python's
    default handler). Outside the main thread, where signal handlers cannot be set, a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received and callable(previous):
        previous(signal.SIGINT, None)
