"""A case file or a results folder cannot run code.

Formulas are parsed, never evaluated: every escape attempt below goes into a field that holds a
formula and must end as one line ``error: <field>: ...`` with exit code 2, quickly, and without
the marker file its payload would create. State files are read weights-only and bound to their
run: a planted pickle is refused by run, bench, ask and tell before anything is written.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from pinnbo.cli import app
from tests.survival import folder_digest

runner = CliRunner()

# {m}: the marker file's path. Each payload would create it if the text were evaluated.
SHELL = "__import__('os').system('touch {m}')"
ESCAPES = [
    "sin.eval.__func__.__globals__['__builtins__']['__import__']('os').system('touch {m}') + {v}",
    "sin('\\x5f\\x5fimport\\x5f\\x5f(\"os\").system(\"touch {m}\")') + {v}",
    "{v}.ｓubs({v}, 2)",
    "＿＿import＿＿('os').system('touch {m}')",
    SHELL,
    "exec(\"import os; os.system('touch {m}')\")",
    "eval(\"" + SHELL.replace("'", "\\'") + "\")",
    "().__class__.__bases__[0].__subclasses__()",
    "[c for c in ().__class__.__base__.__subclasses__()][0]",
    "(lambda: " + SHELL + ")()",
    "Function('f')('" + SHELL.replace("'", '"') + "')",
    "Symbol('" + SHELL.replace("'", '"') + "')",
    "Integer('" + SHELL.replace("'", '"') + "')",
    "Piecewise(({v}, '" + SHELL.replace("'", '"') + "'), (1, True))",
    "Heaviside({v}, '" + SHELL.replace("'", '"') + "')",
    "getattr(sin, 'eval')",
    "open('{m}', 'w')",
    "{v} if " + SHELL + " else 1",
    "f'{" + SHELL.replace("'", '"') + "}'",
    "[" + SHELL + "]",
    "Min({v}, *[" + SHELL + "])",
    "sqrt({v}, evaluate=" + SHELL + ")",
    "{v}[0]",
    "{v}.__class__",
    "9**9**9",
    "2**2**2**2**2 + {v}",
    "(10**999)**1000 + {v}",
    "sin(" * 300 + "{v}" + ")" * 300,
    "-" * 5000 + "{v}",
    "{v}" + " + {v}" * 2000,
]


def _formula_fields(payload: str) -> dict[str, dict]:
    """Every kind of field that holds a formula, with ``payload`` (its {v}: a variable there)."""
    text = lambda v: payload.replace("{v}", v)  # noqa: E731
    return {
        "params.boundary.left": {"problem": "heat_plate", "params": {
            "grid": 16, "boundary": {"left": text("y"), "right": "0", "bottom": "0", "top": "x"}}},
        "params.EI": {"problem": "beam", "params": {"EI": text("x"), "q": "1",
                                                    "bc": {"left": {"w": 0, "M": 0}, "right": {"w": 0, "M": 0}}}},
        "params.q": {"problem": "beam", "params": {"EI": "1", "q": text("x"),
                                                   "bc": {"left": {"w": 0, "M": 0}, "right": {"w": 0, "M": 0}}}},
        "params.bc.left.w": {"problem": "beam", "params": {"EI": "1", "q": "1",
                                                           "bc": {"left": {"w": text("1"), "M": 0},
                                                                  "right": {"w": 0, "M": 0}}}},
        "constraints[0]": {"problem": "dropwave", "params": {"dim": 2}, "method": "random",
                           "constraints": [text("x1") + " <= 1"]},
        "params.pde": {"problem": "external", "params": {"bounds": {"x": [0, 1], "y": [0, 1]},
                                                         "pde": "diff(u, x, 2) + " + text("x") + " = 0"},
                       "oracle": {"command": "echo {x} {y}"}},
    }


CASES = [(i, field) for i in range(len(ESCAPES)) for field in _formula_fields("")]


def test_the_escape_table_has_at_least_20_attempts():
    assert len(ESCAPES) >= 20 and len(set(ESCAPES)) == len(ESCAPES)


@pytest.mark.parametrize("index,field", CASES, ids=[f"{i}-{f}" for i, f in CASES])
def test_an_escape_attempt_in_a_formula_is_one_line_and_runs_nothing(index, field, tmp_path):
    marker = tmp_path / "marker"
    payload = ESCAPES[index].replace("{m}", str(marker))
    case = {"name": "escape", "method": "pinn-bo", "budget": 5, "initial_points": 3, "output": str(tmp_path / "out"),
            **_formula_fields(payload)[field]}
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(case, allow_unicode=True))
    start = time.perf_counter()
    result = runner.invoke(app, ["run", str(path), "--quiet"])
    assert time.perf_counter() - start < 10
    assert not marker.exists()
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), result.stderr
    assert len(lines[0]) < 700 and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_constraint_told_as_code_is_refused_and_runs_nothing(tmp_path):
    marker = tmp_path / "marker"
    case = tmp_path / "lab.yaml"
    case.write_text(yaml.safe_dump({"name": "lab", "problem": "external", "method": "random", "budget": 5,
                                    "initial_points": 3, "output": str(tmp_path / "out"),
                                    "params": {"bounds": {"x": [0, 1]}, "constraints": ["c"]}}))
    asked = runner.invoke(app, ["ask", str(case)])
    assert asked.exit_code == 0, asked.output
    x = json.loads(asked.stdout)["x"]["x"]
    told = runner.invoke(app, ["tell", str(case), "--x", repr(x), "--y", "1",
                               "--constraint", "c=" + SHELL.replace("{m}", str(marker))])
    assert told.exit_code == 2 and "--constraint c: expected a number" in told.stderr
    assert not marker.exists()


# -- state files ---------------------------------------------------------------------------------------
class _Payload:
    """What a planted pickle holds: loading it unpickled runs ``touch marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _plant(path: Path, marker: Path) -> None:
    torch.save({"format": 2, "n_told": 3, "state": {"x": _Payload(marker)}}, path)


def _case(tmp_path: Path, **fields) -> Path:
    data = {"name": "t", "problem": "dropwave", "params": {"dim": 2}, "method": "neural-greedy",
            "method_params": {"hidden": [8], "initial_steps": 5, "steps_per_iteration": 2, "n_pool": 64},
            "budget": 6, "initial_points": 3, "seed": 0, "output": str(tmp_path / "out"), **fields}
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _refused(result, needle: str, marker: Path) -> None:
    assert not marker.exists()
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], result.stderr


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory) -> Path:
    """A run of 5 of its 6 evaluations: a folder to resume."""
    tmp = tmp_path_factory.mktemp("partial")
    case = _case(tmp)
    assert runner.invoke(app, ["run", str(case), "--quiet", "--budget", "5"]).exit_code == 0
    return tmp


@pytest.fixture
def copy(partial_run, tmp_path) -> Path:
    shutil.copytree(partial_run / "out", tmp_path / "out")
    return _case(tmp_path)


def test_resume_refuses_a_planted_checkpoint(copy, tmp_path):
    marker, out = tmp_path / "marker", tmp_path / "out"
    _plant(out / "checkpoint.pt", marker)
    before = folder_digest(out)
    _refused(runner.invoke(app, ["run", str(copy), "--resume", "--quiet"]), "checkpoint.pt: corrupted state file",
             marker)
    assert folder_digest(out) == before


def test_ask_refuses_a_planted_checkpoint(copy, tmp_path):
    marker, out = tmp_path / "marker", tmp_path / "out"
    _plant(out / "checkpoint.pt", marker)
    before = folder_digest(out)
    _refused(runner.invoke(app, ["ask", str(copy)]), "checkpoint.pt: corrupted state file", marker)
    assert folder_digest(out) == before


def test_tell_refuses_a_planted_pending_state(copy, tmp_path):
    marker, out = tmp_path / "marker", tmp_path / "out"
    asked = runner.invoke(app, ["ask", str(copy)])
    assert asked.exit_code == 0, asked.output
    x = ",".join(repr(v) for v in json.loads(asked.stdout)["x"].values())
    _plant(out / "pending.pt", marker)
    before = folder_digest(out)
    _refused(runner.invoke(app, ["tell", str(copy), "--x", x, "--y", "1.0"]), "pending.pt: corrupted state file",
             marker)
    assert folder_digest(out) == before


def test_bench_refuses_a_planted_checkpoint_before_any_run(tmp_path):
    marker = tmp_path / "marker"
    case = _case(tmp_path, output=None)
    settings = ["bench", str(case), "--methods", "random", "--seeds", "1", "--output", str(tmp_path / "bench"),
                "--quiet"]
    assert runner.invoke(app, settings + ["--budget", "5"]).exit_code == 0
    run = tmp_path / "bench" / "t" / "runs" / "random" / "seed0"
    _plant(run / "checkpoint.pt", marker)
    before = folder_digest(tmp_path / "bench")
    _refused(runner.invoke(app, settings), "checkpoint.pt: corrupted state file", marker)
    assert folder_digest(tmp_path / "bench") == before


def test_a_checkpoint_of_another_seed_is_refused(tmp_path):
    seed1 = _case(tmp_path, seed=1, output=str(tmp_path / "one"))
    assert runner.invoke(app, ["run", str(seed1), "--quiet", "--budget", "5"]).exit_code == 0
    seed0 = _case(tmp_path)
    assert runner.invoke(app, ["run", str(seed0), "--quiet", "--budget", "5"]).exit_code == 0
    shutil.copy(tmp_path / "one" / "checkpoint.pt", tmp_path / "out" / "checkpoint.pt")
    result = runner.invoke(app, ["run", str(seed0), "--resume", "--quiet"])
    assert result.exit_code == 2 and "checkpoint.pt: belongs to another run (seed 1" in result.stderr


def test_a_checkpoint_ahead_of_its_log_is_refused(copy, tmp_path):
    (tmp_path / "out" / "evaluations.jsonl").unlink()
    before = folder_digest(tmp_path / "out")
    result = runner.invoke(app, ["run", str(copy), "--resume", "--quiet"])
    assert result.exit_code == 2
    assert "checkpoint.pt: saved after 5 evaluations but the log beside it records 0" in result.stderr
    assert folder_digest(tmp_path / "out") == before


def test_state_files_hold_tensors_and_plain_containers_only(copy, tmp_path):
    """What every run writes loads weights-only, so reading a folder never needs pickle."""
    assert runner.invoke(app, ["run", str(copy), "--resume", "--quiet"]).exit_code == 0
    data = torch.load(tmp_path / "out" / "checkpoint.pt", weights_only=True)
    assert data["n_told"] == 6 and data["seed"] == 0 and data["format"] == 2
