"""The three routes by which a case file, a results folder or an imported table could break the
promise that nothing in them corrupts data, writes elsewhere or runs code, each tried with the
exploit itself:

1. a warm-start table whose objective column is ambiguous (a variable named ``y``);
2. a symbolic link planted in a results folder where pinnbo writes;
3. a case file that names a Dask scheduler (the client runs what a scheduler sends back).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pinnbo.cli import app
from pinnbo.errors import CaseError
from pinnbo.files import LinkRefused, append_line, loads, write_bytes, write_json
from pinnbo.runner.build import build_problem
from pinnbo.runner.case import case_from_dict
from pinnbo.runner.warm_start import read_evaluations
from tests.survival import ROOT, environment, folder_digest, records

runner = CliRunner()


def _one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# -- 1. warm start: the objective's column is never guessed ------------------------------------------
def _harmonic():
    """harmonic: variables x and y, so a column named y is a design coordinate, not the objective."""
    return build_problem(case_from_dict({"name": "h", "problem": "harmonic", "method": "random"}))


def test_a_column_named_like_a_variable_is_the_variable_and_the_objective_is_value(tmp_path):
    table = tmp_path / "earlier.csv"
    table.write_text("x,y,value\n0.25,0.75,1.5\n0.5,0.125,-2\n")
    imported = read_evaluations(table, _harmonic())
    assert [list(e.x) for e in imported] == [[0.25, 0.75], [0.5, 0.125]]
    assert [e.value for e in imported] == [1.5, -2.0]     # the value column, not y


@pytest.mark.parametrize("header, rows, needle", [
    ("x,y", "0.25,0.75\n", "earlier.csv: no objective column; name it value or objective (y is a design variable here)"),
    ("x,y,value,objective", "0.25,0.75,1,2\n", "earlier.csv: two objective columns (value, objective); keep one"),
    ("x,y,x,value", "0.25,0.75,0.5,1\n", "earlier.csv: the column 'x' is named twice in the header"),
    ("x,value", "0.25,1\n", "earlier.csv:2: no value for the design variable y"),
])
def test_an_ambiguous_table_is_refused_naming_file_and_column(tmp_path, header, rows, needle):
    table = tmp_path / "earlier.csv"
    table.write_text(f"{header}\n{rows}")
    with pytest.raises(CaseError) as refused:
        read_evaluations(table, _harmonic())
    assert needle in str(refused.value)


@pytest.mark.parametrize("line, needle", [
    ('{"x": [0.25, 0.75], "y": 1.0, "y": 2.0}', "earlier.jsonl:1: not JSON pinnbo reads (the key 'y' is given twice"),
    ('{"x": {"x": 0.25, "y": 0.75, "x": 0.5}, "y": 1.0}', "the key 'x' is given twice"),
    ('{"x": [0.25, 0.75], "value": 1.0}', "earlier.jsonl:1: no \"y\" (the objective"),
    ('{"x": {"x": 0.25, "y": 0.75, "z": 1}, "y": 1.0}', "'z' in \"x\" is not a design variable (x, y)"),
    ('{"x": [0.25, 0.75], "y": ' + "1" * 5000 + "}", "earlier.jsonl:1: not JSON pinnbo reads (Exceeds the limit"),
    ("[" * 100_000 + "]" * 100_000, "earlier.jsonl:1: not JSON pinnbo reads (nested too deeply)"),
])
def test_a_jsonl_row_that_could_be_read_two_ways_is_refused(tmp_path, line, needle):
    table = tmp_path / "earlier.jsonl"
    table.write_text(line + "\n")
    with pytest.raises(CaseError) as refused:
        read_evaluations(table, _harmonic())
    assert needle in str(refused.value)


def test_a_run_imports_the_objective_column_and_records_it(tmp_path):
    table = tmp_path / "earlier.csv"
    table.write_text("x,y,value\n0.25,0.75,0.5\n")
    case = tmp_path / "case.yaml"
    case.write_text(yaml.safe_dump({"name": "h", "problem": "harmonic", "method": "random", "budget": 4,
                                    "initial_points": 3, "output": str(tmp_path / "out"), "warm_start": "earlier.csv"}))
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    first = records(tmp_path / "out")[0]
    assert first["phase"] == "imported" and first["x"] == [0.25, 0.75] and first["y"] == 0.5


def test_tell_json_refuses_a_key_given_twice(tmp_path):
    case = tmp_path / "case.yaml"
    case.write_text(yaml.safe_dump({"name": "h", "problem": "harmonic", "method": "random", "budget": 4,
                                    "initial_points": 3, "output": str(tmp_path / "out")}))
    asked = runner.invoke(app, ["ask", str(case)])
    assert asked.exit_code == 0, asked.output
    x = list(json.loads(asked.stdout)["x"].values())
    told = runner.invoke(app, ["tell", str(case), "--json", json.dumps({"x": x, "y": 1.0})[:-1] + ', "y": 2.0}'])
    assert told.exit_code == 2 and "--json: not JSON pinnbo reads (the key 'y' is given twice" in _one_line(told)
    assert not (tmp_path / "out" / "evaluations.jsonl").exists()


# -- 2. links in a results folder are refused, never followed ------------------------------------------
def _case(tmp_path: Path) -> Path:
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "problem": "dropwave", "params": {"dim": 2}, "method": "neural-greedy",
                                    "method_params": {"hidden": [8], "initial_steps": 5, "steps_per_iteration": 2,
                                                      "n_pool": 64},
                                    "budget": 6, "initial_points": 3, "seed": 0, "output": str(tmp_path / "out")}))
    return path


@pytest.fixture(scope="module")
def partial(tmp_path_factory) -> Path:
    """5 of 6 evaluations of a run that writes every kind of file (log, state, summary, figures)."""
    tmp = tmp_path_factory.mktemp("partial")
    assert runner.invoke(app, ["run", str(_case(tmp)), "--quiet", "--budget", "5"]).exit_code == 0
    return tmp / "out"


# The final names a run replaces or appends to, and the temporary names the atomic writes used to
# open (a planted <name>.tmp was followed on --resume and --overwrite).
PLANTED = ["case.json", "summary.json", "timings.jsonl", "convergence.png", "asks.jsonl", "pending.json",
           "case.json.tmp", "summary.json.tmp", "checkpoint.pt.tmp", "evaluations.jsonl.tmp", "timings.jsonl.tmp"]


@pytest.mark.parametrize("flag", ["--resume", "--overwrite"])
@pytest.mark.parametrize("name", PLANTED)
def test_a_link_planted_in_a_results_folder_writes_nothing_outside(partial, tmp_path, name, flag):
    out = tmp_path / "out"
    shutil.copytree(partial, out)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(victim)
    result = runner.invoke(app, ["run", str(_case(tmp_path)), flag, "--quiet"])
    assert victim.read_text() == "precious"
    if not name.endswith(".tmp"):   # a link where pinnbo writes: one line, exit 2, before any evaluation
        assert result.exit_code == 2, result.output
        assert f"output: {out / name} is a symbolic link; pinnbo follows no links" in _one_line(result)
        assert len(records(out)) == 5
    else:                           # a name pinnbo no longer writes: the run goes on beside it
        assert result.exit_code == 0, result.output
        assert len(records(out)) == 6


def test_a_bench_refuses_a_link_between_its_root_and_a_run(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    case = _case(tmp_path)
    (tmp_path / "bench" / "t").mkdir(parents=True)
    (tmp_path / "bench" / "t" / "runs").symlink_to(elsewhere)
    result = runner.invoke(app, ["bench", str(case), "--methods", "random", "--seeds", "1", "--quiet",
                                 "--output", str(tmp_path / "bench")])
    assert result.exit_code == 2, result.output
    assert f"output: {tmp_path / 'bench' / 't' / 'runs'} is a symbolic link" in _one_line(result)
    assert not any(elsewhere.iterdir())


def test_the_write_path_refuses_links_and_leaves_no_temporary(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    for name in ("summary.json", "evaluations.jsonl"):
        (tmp_path / name).symlink_to(victim)
    with pytest.raises(LinkRefused):
        write_json(tmp_path / "summary.json", {"a": 1})
    with pytest.raises(LinkRefused):
        append_line(tmp_path / "evaluations.jsonl", "{}")
    (tmp_path / "folder.png").mkdir()
    with pytest.raises(LinkRefused):
        write_bytes(tmp_path / "folder.png", b"png")
    write_bytes(tmp_path / "fresh.bin", b"data")
    assert victim.read_text() == "precious" and (tmp_path / "fresh.bin").read_bytes() == b"data"
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_a_figure_is_rendered_to_bytes_and_never_follows_a_link(tmp_path):
    from pinnbo.report.figures import pyplot, save_figure

    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "convergence.png").symlink_to(victim)
    fig = pyplot().figure()
    with pytest.raises(LinkRefused):
        save_figure(fig, tmp_path / "convergence.png")
    assert victim.read_text() == "precious"


def test_json_from_a_folder_is_refused_in_one_way(tmp_path):
    for text, needle in [("{", "not valid JSON ("), ("1" * 5000, "Exceeds the limit"), ("[" * 100_000, "nested too deeply"),
                         ('{"a": 1, "a": 2}', "the key 'a' is given twice")]:
        with pytest.raises(ValueError, match="^where: ") as refused:
            loads(text, "where")
        assert needle in str(refused.value)


# -- 3. a scheduler comes from the command line only --------------------------------------------------
def test_a_case_file_naming_a_scheduler_is_refused_without_connecting(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    case = tmp_path / "case.yaml"
    case.write_text(yaml.safe_dump({"name": "t", "problem": "dropwave", "params": {"dim": 2}, "method": "random",
                                    "budget": 5, "initial_points": 3, "output": str(tmp_path / "out"),
                                    "scheduler": f"tcp://127.0.0.1:{port}"}))
    try:
        result = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", str(case), "--quiet"], cwd=ROOT,
                                env=environment(), capture_output=True, text=True, timeout=120)
        with pytest.raises(socket.timeout):
            listener.accept()                      # nobody connected
    finally:
        listener.close()
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: scheduler: a case file cannot name a Dask scheduler") and \
        "--scheduler ADDRESS" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_a_resumed_folder_never_supplies_the_scheduler(tmp_path):
    """case.json records no scheduler, so nothing in a results folder can name one."""
    case = tmp_path / "case.yaml"
    case.write_text(yaml.safe_dump({"name": "t", "problem": "dropwave", "params": {"dim": 2}, "method": "random",
                                    "budget": 5, "initial_points": 3, "output": str(tmp_path / "out")}))
    loaded = case_from_dict(yaml.safe_load(case.read_text()), overrides={"scheduler": "tcp://127.0.0.1:8786"})
    assert loaded.scheduler == "tcp://127.0.0.1:8786" and "scheduler" not in loaded.to_dict()
    before = folder_digest(tmp_path)
    assert runner.invoke(app, ["run", str(case), "--quiet"]).exit_code == 0
    assert "scheduler" not in json.loads((tmp_path / "out" / "case.json").read_text())
    assert folder_digest(tmp_path) != before
