"""Writing results can fail (a full disk, a file-size limit, a read-only folder): the command ends with
one line naming the file and the command that continues, leaves no temporary file and no partial
record, and the continued run gives the history of a run that never failed."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import pinnbo.files
import pinnbo.runner.history
from pinnbo.cli import app
from tests.survival import ROOT, environment, folder_digest, records

runner = CliRunner()


def _case(tmp_path: Path, method: str = "random", **fields) -> Path:
    data = {"name": "w", "problem": "dropwave", "params": {"dim": 2}, "method": method, "budget": 12,
            "initial_points": 4, "seed": 2, "output": str(tmp_path / "out"), **fields}
    if method == "neural-greedy":
        data["method_params"] = {"hidden": [8], "initial_steps": 5, "steps_per_iteration": 2, "n_pool": 64}
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> bytes:
    folder = tmp_path_factory.mktemp("straight")
    assert runner.invoke(app, ["run", str(_case(folder, "neural-greedy")), "--quiet"]).exit_code == 0
    return (folder / "out" / "evaluations.jsonl").read_bytes()


def _limit_file_size(size: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return apply


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_file_size_limit_mid_run_is_one_line_and_the_run_continues(tmp_path, uninterrupted):
    """A real EFBIG from the kernel (RLIMIT_FSIZE): the record being appended is cut back, the
    command says how to continue, and the continued run is the uninterrupted one byte for byte."""
    case = _case(tmp_path, "neural-greedy")
    done = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", str(case), "--quiet"], cwd=ROOT,
                          env=environment(), capture_output=True, text=True, timeout=300,
                          preexec_fn=_limit_file_size(1200))
    assert done.returncode == 1, done.stderr
    line = _one_line(done.stderr)
    assert line.startswith("error: cannot write ") and "(File too large)" in line
    assert f"Continue with: pinnbo run {case} --resume" in line and "Traceback" not in done.stderr
    out = tmp_path / "out"
    assert (out / "evaluations.jsonl").read_bytes().endswith(b"\n")
    assert not list(out.glob("*.tmp"))
    recorded = len(records(out))
    assert 0 < recorded < 12
    resumed = runner.invoke(app, ["run", str(case), "--resume", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert (out / "evaluations.jsonl").read_bytes() == uninterrupted


def test_a_full_disk_while_checkpointing_leaves_no_temporary_file(tmp_path, monkeypatch, uninterrupted):
    case = _case(tmp_path, "neural-greedy")
    real_write = os.write
    calls = {"n": 0}

    def full_disk(fd, data):  # the third checkpoint: part of the file, then ENOSPC
        name = os.readlink(f"/proc/self/fd/{fd}")
        if Path(name).name.startswith(".checkpoint.pt.") and name.endswith(".tmp"):
            calls["n"] += 1
            if calls["n"] == 3:
                real_write(fd, b"PK\x03\x04 half a checkpoint")
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(pinnbo.files.os, "write", full_disk)
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    monkeypatch.undo()
    assert result.exit_code == 1
    line = _one_line(result.stderr)
    assert "checkpoint.pt (No space left on device)" in line and "--resume" in line
    out = tmp_path / "out"
    assert not list(out.glob("*.tmp"))
    resumed = runner.invoke(app, ["run", str(case), "--resume", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert (out / "evaluations.jsonl").read_bytes() == uninterrupted


def test_a_failed_append_leaves_no_partial_record(tmp_path, monkeypatch):
    """A write that stops part-way through a record (ENOSPC): the log is cut back to its last
    whole record."""
    case = _case(tmp_path)
    assert runner.invoke(app, ["run", str(case), "--quiet", "--budget", "6"]).exit_code == 0
    log = tmp_path / "out" / "evaluations.jsonl"
    before = log.read_bytes()
    real_write = os.write

    def partial(fd, data):
        if not os.readlink(f"/proc/self/fd/{fd}").endswith("evaluations.jsonl"):
            return real_write(fd, data)
        real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pinnbo.files.os, "write", partial)
    result = runner.invoke(app, ["run", str(case), "--resume", "--quiet"])
    monkeypatch.undo()
    assert result.exit_code == 1 and "evaluations.jsonl (No space left on device)" in _one_line(result.stderr)
    assert log.read_bytes() == before


@pytest.mark.parametrize("command", [["run", "--resume", "--quiet"], ["ask"]])
def test_a_read_only_folder_on_resume_or_ask_is_one_line(tmp_path, monkeypatch, command):
    case = _case(tmp_path)
    assert runner.invoke(app, ["run", str(case), "--quiet", "--budget", "6"]).exit_code == 0
    out = tmp_path / "out"
    before = folder_digest(out)
    real_open = open

    def read_only(path, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and Path(path).parent == out:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, mode, *args, **kwargs)

    real_os_open = pinnbo.runner.history.os.open

    def read_only_fd(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR) and Path(path).parent == out:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(pinnbo.runner.history, "open", read_only, raising=False)
    monkeypatch.setattr(pinnbo.files.os, "open", read_only_fd)
    result = runner.invoke(app, [command[0], str(case), *command[1:]])
    monkeypatch.undo()
    assert result.exit_code == 1, result.output
    line = _one_line(result.stderr)
    assert line.startswith("error: cannot write ") and "(Read-only file system)" in line
    assert folder_digest(out) == before
