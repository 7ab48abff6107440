"""``pinnbo bench`` on an existing Dask cluster (``--scheduler``, a real ``dask scheduler`` and
``dask worker`` on 127.0.0.1): the runs happen on its workers and give what a bench in one process
gives; a SIGTERM to the bench alone, which cannot reach those workers' processes, is forwarded
through Dask and stops every run the way ``pinnbo run`` stops."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pinnbo.cli import app
from tests.survival import ExternalDask, calls, kill_started, pid_alive, start_cli, wait_for, write_case

runner = CliRunner()
SLEEPY = Path(__file__).resolve().parents[1] / "runner" / "sleepy_problem.py"


@pytest.fixture(autouse=True)
def no_hang(monkeypatch):
    monkeypatch.delenv("PINNBO_TEST_HANG_AT", raising=False)
    yield
    kill_started()


def run_logs(root: Path, case: str, methods: list[str], seeds: int) -> dict:
    return {(m, s): (root / case / "runs" / m / f"seed{s}" / "evaluations.jsonl").read_bytes()
            for m in methods for s in range(seeds)}


def test_bench_on_an_existing_scheduler_gives_the_runs_of_one_process(tmp_path):
    case = tmp_path / "sleepy.yaml"
    case.write_text(f"name: sleepy\nproblem: {SLEEPY}:sleepy\nparams: {{seconds: 0.05, log: {tmp_path / 'calls.log'}}}\n"
                    "method: random\nbudget: 6\ninitial_points: 3\n")
    methods = ["random", "gp-ei"]
    with ExternalDask(tmp_path, workers=2) as dask:
        process = start_cli("bench", str(case), "--methods", ",".join(methods), "--seeds", "2", "--jobs", "2",
                            "--scheduler", dask.address, "--quiet", "--output", str(tmp_path / "remote"))
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        # Every oracle call's parent (the run) was forked by a worker process of `dask worker`.
        lines = [line.split() for line in (tmp_path / "calls.log").read_text().splitlines()]
        workers = {int(line[4]) for line in lines}
        assert len(lines) == 4 * 6 and workers
        for pid in workers:
            assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1] == str(dask.worker.pid)
    result = runner.invoke(app, ["bench", str(case), "--methods", ",".join(methods), "--seeds", "2", "--quiet",
                                 "--output", str(tmp_path / "here")])
    assert result.exit_code == 0, result.output
    assert run_logs(tmp_path / "remote", "sleepy", methods, 2) == run_logs(tmp_path / "here", "sleepy", methods, 2)
    assert json.loads((tmp_path / "remote" / "sleepy" / "summary.json").read_text())["results"].keys() == set(methods)


def test_a_signal_to_the_bench_alone_stops_the_runs_on_an_existing_cluster(tmp_path):
    """The hung oracle runs under a worker of a separately started cluster, outside the bench's
    process tree: only the stop forwarded through Dask reaches its run, which stops it and records
    nothing half-done; the same command in one process then completes the grid."""
    log = tmp_path / "calls.log"
    case = write_case(tmp_path, timeout=60, method="random", method_params={})
    args = ("bench", str(case), "--methods", "random", "--seeds", "2", "--quiet", "--output", str(tmp_path / "bench"))
    with ExternalDask(tmp_path, workers=2, PINNBO_TEST_HANG_AT="6") as dask:
        process = start_cli(*args, "--jobs", "2", "--scheduler", dask.address)
        hang = Path(str(log) + ".hang")
        wait_for(lambda: hang.exists() and hang.read_text().strip().isdigit(), process=process)
        hung = int(hang.read_text())
        started_at = time.monotonic()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
        assert process.returncode == 143, stderr
        assert "Traceback" not in stderr and "bench terminated" in stderr, stderr
        assert time.monotonic() - started_at < 20, "the runs did not stop on the forwarded signal"
        deadline = time.monotonic() + 10
        while pid_alive(hung) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not pid_alive(hung), "the hung oracle call outlived the stopped bench"
        assert dask.worker.poll() is None      # the cluster itself is left running
    trail = calls(log)
    assert trail["start"] - 2 <= trail["done"] <= trail["start"] - 1, trail

    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    (tmp_path / "ref").mkdir()
    fresh = write_case(tmp_path / "ref", timeout=60, method="random", method_params={})
    assert runner.invoke(app, ["bench", str(fresh), *args[2:-1], str(tmp_path / "ref" / "bench")]).exit_code == 0
    for seed in (0, 1):
        resumed = tmp_path / "bench" / case.stem / "runs" / "random" / f"seed{seed}" / "evaluations.jsonl"
        uninterrupted = tmp_path / "ref" / "bench" / fresh.stem / "runs" / "random" / f"seed{seed}" / "evaluations.jsonl"
        assert resumed.read_bytes() == uninterrupted.read_bytes()
