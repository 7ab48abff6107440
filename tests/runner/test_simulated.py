"""The asynchronous loop on the virtual-clock engine (no cluster, no sleeping): with one slot it is
the sequential run record for record; with q slots every evaluation is recorded once in completion
order, q are in flight, and the run repeats exactly from its seed and durations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pinnbo import load_problem, make_optimizer
from pinnbo.runner.asynchronous import read_asks
from pinnbo.runner.loop import run
from pinnbo.runner.steps import RunSettings
from pinnbo.runner.simulated import SimulatedEngine

GP = {"num_restarts": 2, "raw_samples": 32, "maxiter": 20}


def dropwave_run(folder, slots: int | None, method: str = "gp-ei", budget: int = 12, duration=lambda k: 1.0):
    problem = load_problem("dropwave", dim=2)
    optimizer = make_optimizer(method, problem, 3, params=GP if method.startswith("gp") else None)
    settings = RunSettings(budget=budget, initial_points=5, seed=3, output=folder, case={"name": "t", "seed": 3})
    engine = None if slots is None else SimulatedEngine(problem.objective, slots=slots, duration=duration)
    return run(problem, optimizer, settings, engine=engine), engine


def test_one_slot_is_the_sequential_run(tmp_path):
    sequential, _ = dropwave_run(tmp_path / "seq", None)
    simulated, engine = dropwave_run(tmp_path / "sim", 1)
    assert (tmp_path / "seq" / "evaluations.jsonl").read_bytes() == (tmp_path / "sim" / "evaluations.jsonl").read_bytes()
    assert engine.clock == 12.0 and len(read_asks(tmp_path / "sim")) == 12


def test_q_slots_keep_q_in_flight_and_record_each_once(tmp_path):
    rng = np.random.default_rng(0)
    durations = rng.lognormal(0.0, 1.0, size=100)
    history, engine = dropwave_run(tmp_path / "a", 4, duration=lambda k: durations[k])
    indices = [r.index for r in history.evaluations]
    assert sorted(indices) == list(range(12)) and indices != sorted(indices)   # completion order
    # Each record came back when its duration said: finish times do not decrease along the log.
    finished = [t["finished_seconds"] for t in history.timings]
    assert finished == sorted(finished)
    # Proposals were made with the other in-flight designs pending (up to q - 1 of them).
    pending = [t.get("pending_at_ask") for t in history.timings if t.get("pending_at_ask") is not None]
    assert max(pending) == 3
    # Four initial points were dispatched at time 0 and the clock ends at the last completion.
    assert engine.clock == pytest.approx(max(finished), abs=1e-6)
    again, _ = dropwave_run(tmp_path / "b", 4, duration=lambda k: durations[k])
    assert (tmp_path / "a" / "evaluations.jsonl").read_bytes() == (tmp_path / "b" / "evaluations.jsonl").read_bytes()


def test_batches_wait_for_the_whole_batch(tmp_path):
    problem = load_problem("dropwave", dim=2)
    optimizer = make_optimizer("random", problem, 1)
    settings = RunSettings(budget=12, initial_points=4, seed=1, output=None, batch=True)
    durations = [1.0, 5.0, 2.0, 1.0] * 3
    engine = SimulatedEngine(problem.objective, slots=4, duration=lambda k: durations[k])
    history = run(problem, optimizer, dataclasses.replace(settings), engine=engine)
    # Three batches of four, each as long as its slowest call.
    assert engine.clock == 15.0
    starts = [t["finished_seconds"] - t["oracle_seconds"] for t in history.timings]
    assert sorted(set(np.round(starts, 9))) == [0.0, 5.0, 10.0]
