"""Oracle calls on a Dask cluster: the engine of an asynchronous run (:mod:`pinnbo.runner.asynchronous`).

A local run starts a ``LocalCluster`` of ``workers`` processes with one thread each, listening on
127.0.0.1 only; ``scheduler`` connects to an existing cluster instead (``dask scheduler`` and
``dask worker`` processes, or dask-jobqueue's SLURM/PBS clusters), whose workers must have pinnbo
installed and, for a problem file or an external program, see the same files at the same paths.

What travels to a worker is plain data, never a pickled objective: the case's problem, its
parameters, its oracle command and the folder its relative paths are resolved in
(:class:`pinnbo.runner.build.CaseObjective`). Each worker process builds the problem once and keeps it. The call itself
is the runner's own isolated call (:func:`pinnbo.runner.evaluation.oracle_outcome`): a forked child in a
process group of its own, killed at the case's ``timeout`` and with everything it started; its
failures are values, so a task only fails when its worker dies. Dask then runs it again on another
worker (up to ``distributed.scheduler.allowed-failures`` times, 3 by default) and the evaluation is
recorded once, by the runner, from the first result that comes back.

A local cluster's worker processes are forked from a server process that has imported what a
worker needs once (multiprocessing's ``forkserver`` with a preload): eight workers that each import
torch and the problem anew cost seconds of start-up on a small machine, which is the whole gain of
running eight at once when each call takes seconds. Ctrl-C from a terminal reaches every process
of the group; the workers ignore it (:func:`dask_setup`), the runner stops them.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from pinnbo.errors import CaseError, shown
from pinnbo.runner.build import CaseObjective
from pinnbo.runner.evaluation import oracle_outcome


# The objectives a worker process has built, by the key of what it built them from
# (pinnbo.runner.build.CaseObjective; module docstring).
_BUILT: dict[str, Any] = {}


def allow_children() -> None:
    """In a task: a Dask worker process is a daemon, and multiprocessing refuses children to
    daemons; the caller forks its own and reaps them (or they die with the worker)."""
    multiprocessing.current_process()._config["daemon"] = False


def evaluate_on_worker(objective: Any, x: list[float], timeout: float | None) -> tuple[Any, str | None, float]:
    """The task a Dask worker runs: one isolated oracle call at ``x``; (result, error, seconds).
    ``objective`` a :class:`~pinnbo.runner.build.CaseObjective` (built once per worker), or the
    objective itself (the Python API)."""

    allow_children()     # the isolated call forks one per evaluation and always reaps it
    start = time.perf_counter()
    if isinstance(objective, CaseObjective):
        if objective.key not in _BUILT:
            try:
                _BUILT[objective.key] = objective.build()
            except Exception as exc:   # the runner built it: a worker that cannot is its own failure
                return None, f"the worker could not build the problem: {type(exc).__name__}: {exc}", 0.0
        objective = _BUILT[objective.key]
    outcome, error = oracle_outcome(objective, np.asarray(x, dtype=np.float64), timeout)
    return outcome, error, time.perf_counter() - start


@dataclass
class Completed:
    """An evaluation that came back: its ask index, the oracle's result or the reason there is
    none, the seconds the call took on its worker, and the time it came back (engine clock)."""

    index: int
    outcome: Any
    error: str | None
    seconds: float
    finished: float


class Cluster:
    """A Dask client on a local cluster of ``workers`` processes with one thread each, started here
    (127.0.0.1 only), or on the existing scheduler at ``scheduler``; what both asynchronous runs and
    ``pinnbo bench --jobs`` run on. An unreachable scheduler is a :class:`CaseError` naming the
    field ``scheduler``."""

    def __init__(self, workers: int, scheduler: str | None = None, preload: list[str] | None = None) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - a dependency; checked for a clear line
            raise CaseError("workers: parallel runs need dask.distributed (pip install 'distributed')") from None
        self.workers = int(workers)
        self.client = self.cluster = self._config = None
        self._counted = (-math.inf, self.workers)    # (when, workers): worker_count's last answer
        if scheduler is None:
            self._config = preloaded_workers(preload or [])
            try:
                self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1, processes=True,
                                            host="127.0.0.1", dashboard_address=None, silence_logs=logging.CRITICAL,
                                            worker_dashboard_address=None, preload=[__name__])
                self.client = Client(self.cluster)
            except BaseException:
                self.close()
                raise
        else:
            try:
                self.client = Client(scheduler, timeout=CONNECT_SECONDS)
            except (OSError, TimeoutError, ValueError) as exc:
                raise CaseError(f"scheduler: cannot reach a Dask scheduler at {shown(scheduler)} "
                                f"({type(exc).__name__}: {exc})") from None

    def worker_count(self) -> int:
        """The workers the scheduler knows, asked at most once per :data:`COUNT_SECONDS`: the
        display asks after every proposal and every result, and each question is a round trip."""
        when, count = self._counted
        now = time.monotonic()
        if now - when >= COUNT_SECONDS:
            try:
                count = len(self.client.scheduler_info().get("workers", {}))
            except Exception:   # a scheduler that is going away: the last count stands
                pass
            self._counted = (now, count)
        return count

    def close(self) -> None:
        """Disconnect; a local cluster is stopped with its workers (and with them every process
        group an oracle call or a bench run started)."""
        try:
            if self.client is not None:
                self.client.close()
        finally:
            try:
                if self.cluster is not None:
                    self.cluster.close()
            finally:
                if self._config is not None:
                    self._config.__exit__(None, None, None)
                    self._config = None


class DaskEngine:
    """Up to ``slots`` oracle calls in flight on a Dask cluster (module docstring)."""

    def __init__(self, objective: Any, *, workers: int, scheduler: str | None = None,
                 timeout: float | None = None, name: str = "pinnbo") -> None:
        self.objective = objective
        self.timeout = timeout
        self.slots = int(workers)
        self.name = name
        self.cluster = Cluster(workers, scheduler)
        self.client = self.cluster.client
        self.futures: dict[Any, int] = {}
        self.started = time.monotonic()

    def submit(self, index: int, x: np.ndarray) -> None:
        future = self.client.submit(evaluate_on_worker, self.objective, [float(v) for v in x], self.timeout,
                                    key=f"{self.name}-{index}-{time.monotonic_ns()}", pure=False)
        self.futures[future] = index

    @property
    def in_flight(self) -> int:
        return len(self.futures)

    def worker_count(self) -> int:
        return self.cluster.worker_count()

    def wait(self) -> list[Completed]:
        """Block until at least one call has come back; those that have, in submission order."""
        from distributed import wait

        done, _ = wait(list(self.futures), return_when="FIRST_COMPLETED")
        now = time.monotonic() - self.started
        completed = []
        for future in sorted(done, key=lambda f: self.futures[f]):
            index = self.futures.pop(future)
            try:
                outcome, error, seconds = future.result()
            except Exception as exc:   # the task itself failed: its worker died too often (KilledWorker)
                outcome, error, seconds = None, f"the evaluation's worker died ({type(exc).__name__}: {exc})", 0.0
            completed.append(Completed(index, outcome, error, seconds, now))
        return completed

    def close(self) -> None:
        """Cancel what is in flight and stop the local cluster (its workers, and with them every
        oracle call's process group)."""
        try:
            if self.futures:
                self.client.cancel(list(self.futures), force=True)
            self.futures.clear()
        finally:
            self.cluster.close()


#: What a local cluster's forkserver imports once for all its workers (module docstring).
WORKER_PRELOAD = ["distributed", __name__, "pinnbo.runner.build"]


def preloaded_workers(extra: list[str]):
    """Dask's configuration for local workers forked from a server that has imported
    :data:`WORKER_PRELOAD` and the ``extra`` modules; the caller leaves it (``__exit__``) when its
    cluster is closed. The preload is set before the server starts, which Dask does with its own
    environment for the workers (one BLAS and OpenMP thread each)."""
    import dask
    from distributed.utils import get_mp_context

    config = dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"})
    get_mp_context().set_forkserver_preload(WORKER_PRELOAD + list(extra))    # after Dask has set its own list
    return config


def _ignore(signum, frame) -> None:
    pass


def dask_setup(worker) -> None:
    """Dask's hook, run in each local worker process at its start (``preload``): Ctrl-C from the
    terminal reaches the workers too, and would end each with a traceback; the runner, which gets
    it as well, stops them. A Python handler, not SIG_IGN, which the programs an oracle starts would
    inherit across exec."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _ignore)


#: Seconds to wait for an existing scheduler to answer.
CONNECT_SECONDS = 10
#: Seconds a count of the cluster's workers is shown before it is asked again.
COUNT_SECONDS = 1.0
