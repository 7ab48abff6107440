"""A bench's runs on Dask (``pinnbo bench --jobs N``, ``--scheduler``): the engine of
:func:`pinnbo.bench.execute.run_bench` when runs go in parallel, on the machinery of asynchronous
runs (:class:`pinnbo.runner.cluster.Cluster`).

Each run is one task. The task forks a child of its worker process that runs the normal run loop
in its own main thread, because only a main thread gets signals: Ctrl-C and SIGTERM stop a run
there as they stop ``pinnbo run`` (its last record finished, its oracle call stopped), which a
task's thread could not. Progress goes from the child to its task through a pipe and from the
task to the bench as Dask events (``Worker.log_event``), so a remote cluster shows it too.

A stop is forwarded through Dask itself (``Client.run``), so it reaches the runs of an existing
cluster's workers as well as a local one's: each worker sends SIGTERM to the runs it has under way
for this bench and starts none of its tasks after that; a run still alive after the grace is
killed. A terminal's Ctrl-C reaches a local cluster's runs directly too; each run stops on the
first signal and ignores the rest. A record is written whole, or dropped whole on resume, either
way. A child also gets SIGTERM when its worker process dies, and Dask then runs the task again on
another worker, which resumes the run from its folder.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
import time
import uuid
from typing import Any

from pinnbo.bench.job import execute
from pinnbo.bench.plan import RunJob
from pinnbo.oracles.isolation import die_with_parent, exit_reason
from pinnbo.runner.cluster import allow_children

#: The Dask event topic of run progress.
TOPIC = "pinnbo-bench"

# This worker process's runs under way: pid -> the bench they belong to; and the benches stopped.
_RUNS: dict[int, str] = {}
_STOPPED: set[str] = set()
_LOCK = threading.Lock()


def failed_run(job: RunJob, error: str) -> dict:
    """The outcome of a run that did not finish, as :func:`pinnbo.bench.job.execute` gives it."""
    return {"key": job.key, "ok": False, "error": error, "traceback": None, "seconds": None}


def run_on_worker(job: RunJob, bench: str, folder: str) -> dict:
    """The task: run ``job`` in a child process (module docstring), in the bench's working
    directory ``folder``, and return its outcome as :func:`pinnbo.bench.job.execute` does;
    progress events go to :data:`TOPIC`."""
    from distributed import get_worker

    worker = get_worker()
    allow_children()     # the run is reaped here, or dies with its worker (_run_child)
    context = multiprocessing.get_context("fork")   # the worker has imported what a run needs
    receive, send = context.Pipe(duplex=False)
    with _LOCK:
        if bench in _STOPPED:
            return failed_run(job, "interrupted")
        child = context.Process(target=_run_child, args=(job, send, os.getpid(), folder), name=f"pinnbo-run-{job.key}")
        child.start()
        _RUNS[child.pid] = bench
    send.close()
    result = None
    try:
        while True:
            try:
                kind, payload = receive.recv()
            except EOFError:
                break
            if kind == "event":
                worker.log_event(TOPIC, [bench, *payload])
            else:
                result = payload
        child.join()
    finally:
        with _LOCK:
            _RUNS.pop(child.pid, None)
        receive.close()
    if result is None:
        return failed_run(job, f"the run's process died ({exit_reason(child.exitcode)})")
    return result


def _run_child(job: RunJob, send, worker_pid: int, folder: str) -> None:
    """The run, in the child's main thread: the first SIGINT or SIGTERM stops it cleanly; so does
    its worker's death (SIGTERM, Linux)."""
    import torch

    from pinnbo.interrupts import interruptible_job, worker_interrupts
    from pinnbo.runner.steps import RunInterrupted

    worker_interrupts()
    die_with_parent(worker_pid, signal.SIGTERM)
    torch.set_num_threads(1)
    try:
        os.chdir(folder)     # the case's relative paths and the run's folder are the bench's
    except OSError as exc:
        send.send(("result", failed_run(job, f"the bench's folder {folder} is not on this worker ({exc.strerror}); "
                                             "a cluster's workers need the same files at the same paths")))
        return
    try:
        with interruptible_job():
            result = execute(job, lambda event: send.send(("event", list(event))))
    except (KeyboardInterrupt, RunInterrupted):
        result = failed_run(job, "interrupted")
    send.send(("result", result))
    send.close()


def signal_runs(bench: str, signum: int) -> int:
    """Run on every worker through ``Client.run``: start none of ``bench``'s tasks from now on,
    send ``signum`` to its runs under way; how many there were."""
    with _LOCK:
        _STOPPED.add(bench)
        pids = [pid for pid, owner in _RUNS.items() if owner == bench]
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass
    return len(pids)


#: Seconds a run has to stop after the bench forwards its interrupt, before it is killed.
STOP_GRACE_SECONDS = 30.0


class BenchCluster:
    """Runs as tasks on a :class:`~pinnbo.runner.cluster.Cluster` (module docstring)."""

    def __init__(self, jobs: int, scheduler: str | None = None) -> None:
        from pinnbo.runner.cluster import Cluster

        self.bench = uuid.uuid4().hex     # names this bench's runs on shared workers; no result depends on it
        self.slots = jobs
        self.waiting: list[RunJob] = []
        self.submitted = 0
        self.cluster = Cluster(jobs, scheduler, preload=[__name__])
        self.client = self.cluster.client
        self.events: queue.Queue = queue.Queue()
        self.client.subscribe_topic(TOPIC, self._event)
        self.futures: dict[Any, RunJob] = {}

    def _event(self, event) -> None:   # on the client's event loop: handed to the main thread
        _, (bench, kind, key, *rest) = event
        if bench == self.bench:
            self.events.put((kind, tuple(key), *rest))

    def submit(self, jobs: list[RunJob]) -> None:
        """Run ``jobs``, in this order, at most ``slots`` at once (an existing cluster may have more
        workers)."""
        self.waiting.extend(jobs)
        self._top_up()

    def _top_up(self) -> None:
        while self.waiting and len(self.futures) < self.slots:
            job = self.waiting.pop(0)
            future = self.client.submit(run_on_worker, job, self.bench, os.getcwd(),
                                        key=f"run-{self.bench}-{self.submitted}", pure=False)
            self.submitted += 1
            self.futures[future] = job

    @property
    def under_way(self) -> int:
        return len(self.futures) + len(self.waiting)

    def finished(self) -> list[tuple[RunJob, dict]]:
        """The runs that have come back since the last call, with their outcomes; as many as came
        back are started."""
        done = []
        for future in [f for f in self.futures if f.done()]:
            job = self.futures.pop(future)
            try:
                result = future.result()
            except Exception as exc:   # the task's worker died too often (KilledWorker), or was lost
                result = failed_run(job, f"the run's worker died ({type(exc).__name__}: {exc})")
            done.append((job, result))
        self._top_up()
        return done

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> None:
        """Forward the bench's interrupt (module docstring) and wait for the runs to stop; kill
        what is still running after ``grace`` seconds, or at once on a second interrupt."""
        self.waiting.clear()
        deadline = time.monotonic() + grace
        try:
            # Sent again each round: a task that was forking its run at the first one stops at the next.
            while self._signal(signal.SIGTERM) and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            self._signal(signal.SIGKILL)
            self.client.cancel(list(self.futures), force=True)

    def _signal(self, signum: int) -> int:
        try:
            counts = self.client.run(signal_runs, self.bench, int(signum), on_error="return")
        except Exception:   # a cluster going away: its workers' deaths stop their runs
            return 0
        return sum(n for n in counts.values() if isinstance(n, int))

    def close(self) -> None:
        try:
            self.client.unsubscribe_topic(TOPIC)
        finally:
            self.cluster.close()
