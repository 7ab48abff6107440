"""Ask/tell from outside: separate `pinnbo ask` / `pinnbo tell` commands give the run `pinnbo run`
gives, with the state in the results folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml
from typer.testing import CliRunner

from pinnbo import load_problem
from pinnbo.cli import app
from pinnbo.streams import initial_design
from tests.survival import SMALL_PINN, folder_digest, records

runner = CliRunner()
DROPWAVE = load_problem("dropwave", dim=2)


def write_case(folder: Path, **fields) -> Path:
    data = {"name": "dw", "problem": "dropwave", "params": {"dim": 2}, "method": "pinn-bo",
            "method_params": SMALL_PINN, "budget": 7, "initial_points": 3, "seed": 5}
    data.update(fields)
    path = folder / "dw.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}))
    return path


def ask(case: Path, out: Path, *extra: str) -> dict:
    result = runner.invoke(app, ["ask", str(case), "--output", str(out), *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def tell(case: Path, out: Path, *args: str):
    return runner.invoke(app, ["tell", str(case), "--output", str(out), *args])


def measure(pending: dict) -> tuple[str, str]:
    x = list(pending["x"].values())
    return ",".join(repr(v) for v in x), repr(DROPWAVE.objective(np.array(x)))


def test_ask_tell_from_outside_gives_the_run_of_pinnbo_run(tmp_path):
    case = write_case(tmp_path)
    assert runner.invoke(app, ["run", str(case), "--quiet", "--output", str(tmp_path / "run")]).exit_code == 0
    out = tmp_path / "asktell"
    design = initial_design(DROPWAVE.domain, 3, 5)
    for k in range(7):
        pending = ask(case, out)
        assert pending["index"] == k
        assert pending == ask(case, out)  # asking again repeats the pending design
        assert (out / "pending.json").exists()
        if k < 3:  # the initial design first, as pinnbo run does
            assert pending["phase"] == "initial" and list(pending["x"].values()) == list(design[k])
        else:
            assert pending["phase"] == "optimizer"
        x, y = measure(pending)
        result = tell(case, out, "--x", x, "--y", y)
        assert result.exit_code == 0, result.output
        assert not (out / "pending.json").exists()
    assert "budget complete" in result.stdout
    # The same log, except that a told value is a measurement: observed, with no true value.
    told, run = records(out), records(tmp_path / "run")
    assert all(r.pop("true") is None for r in told) and all(r.pop("true") == r["y"] for r in run)
    assert told == run
    assert json.loads((out / "summary.json").read_text())["evaluations"] == 7
    spent = runner.invoke(app, ["ask", str(case), "--output", str(out)])
    assert spent.exit_code == 2 and "budget: all 7 evaluations are recorded" in spent.stderr


def test_json_and_failed_tells_and_a_run_that_takes_over(tmp_path):
    """Tell by --json (a list or a mapping) and --failed; then `pinnbo run --resume` continues the
    same folder, and its result is the run that would have had the same failure."""
    case = write_case(tmp_path, method="random", method_params=None)
    out = tmp_path / "out"
    first = ask(case, out)
    assert tell(case, out, "--json", json.dumps({"x": list(first["x"].values()),
                                                 "y": float(measure(first)[1])})).exit_code == 0
    second = ask(case, out)
    result = tell(case, out, "--json", json.dumps({"x": second["x"], "failed": "sample cracked"}))
    assert result.exit_code == 0 and "failed (sample cracked)" in result.stdout
    third = ask(case, out)
    assert third["index"] == 2
    # A run takes over: it evaluates the pending design itself; the stale pending is then dropped.
    assert runner.invoke(app, ["run", str(case), "--resume", "--quiet", "--output", str(out)]).exit_code == 0
    logged = records(out)
    assert [r["status"] for r in logged] == ["ok", "failed", "ok", "ok", "ok", "ok", "ok"]
    assert logged[1]["error"] == "sample cracked" and logged[2]["x"] == list(third["x"].values())
    before = folder_digest(out)
    late = tell(case, out, "--x", measure(third)[0], "--y", "1.0")
    assert late.exit_code == 2 and "is already recorded, as evaluation 2" in late.stderr
    assert folder_digest(out) == before
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failed"] == 1 and summary["failures"][0]["error"] == "sample cracked"


def test_a_problem_declared_in_yaml_is_measured_by_hand(tmp_path):
    """`problem: external` without an oracle: pinnbo run refuses it, ask/tell drive it."""
    case = tmp_path / "lab.yaml"
    case.write_text(yaml.safe_dump({
        "name": "lab", "problem": "external", "method": "random", "budget": 4, "initial_points": 2,
        "params": {"bounds": {"temperature": [20, 80], "pressure": [1, 3]}, "sense": "maximize"},
        "output": str(tmp_path / "out")}, sort_keys=False))
    refused = runner.invoke(app, ["run", str(case), "--quiet"])
    assert refused.exit_code == 2 and "oracle: problem 'external' is measured outside pinnbo" in refused.stderr
    best = None
    for k in range(4):
        pending = runner.invoke(app, ["ask", str(case)])
        x = json.loads(pending.stdout)["x"]
        assert set(x) == {"temperature", "pressure"} and 20 <= x["temperature"] <= 80
        value = -((x["temperature"] - 50) ** 2) - x["pressure"]
        best = value if best is None else max(best, value)
        told = runner.invoke(app, ["tell", str(case), "--x", f"pressure={x['pressure']!r},temperature="
                                   f"{x['temperature']!r}", "--y", repr(value)])
        assert told.exit_code == 0, told.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["sense"] == "maximize" and summary["best_value"] == best


def test_a_repeated_ask_prints_the_variables_in_the_box_order(tmp_path):
    """pending.json is stored with sorted keys; the ask that repeats it must keep the order --x takes."""
    case = tmp_path / "lab.yaml"
    case.write_text(yaml.safe_dump({
        "name": "lab", "problem": "external", "method": "random", "budget": 4, "initial_points": 2,
        "params": {"bounds": {"temperature": [20, 80], "pressure": [1, 3]}}, "output": str(tmp_path / "out")},
        sort_keys=False))
    first = runner.invoke(app, ["ask", str(case)])
    again = runner.invoke(app, ["ask", str(case)])
    assert first.exit_code == 0 and again.stdout == first.stdout
    assert list(json.loads(again.stdout)["x"]) == ["temperature", "pressure"]
    x = ",".join(repr(v) for v in json.loads(again.stdout)["x"].values())
    assert runner.invoke(app, ["tell", str(case), "--x", x, "--y", "1.5"]).exit_code == 0
    shown = runner.invoke(app, ["show", str(tmp_path / "out")])
    assert shown.exit_code == 2 and "is not finished: 1 of 4 evaluations recorded" in shown.stderr
    x = ",".join(repr(v) for v in json.loads(runner.invoke(app, ["ask", str(case)]).stdout)["x"].values())
    neither = runner.invoke(app, ["tell", str(case), "--x", x])
    assert neither.exit_code == 2 and "not both" not in neither.stderr
    assert "tell: give the measured value (--y) or the reason it failed (--failed)" in neither.stderr


def test_reordered_variables_are_refused_on_resume(tmp_path):
    """Each record's x is a list in the box's order; case.json is stored with sorted keys, so a YAML
    whose bounds were reordered would compare equal: case.json keeps the order apart and it is checked."""
    case = tmp_path / "lab.yaml"

    def write(bounds: dict) -> None:
        case.write_text(yaml.safe_dump({"name": "lab", "problem": "external", "method": "random", "budget": 4,
                                        "initial_points": 2, "params": {"bounds": bounds},
                                        "output": str(tmp_path / "out")}, sort_keys=False))

    write({"a": [0, 1], "b": [0, 1]})
    x = ",".join(repr(v) for v in json.loads(runner.invoke(app, ["ask", str(case)]).stdout)["x"].values())
    assert runner.invoke(app, ["tell", str(case), "--x", x, "--y", "1.0"]).exit_code == 0
    assert json.loads((tmp_path / "out" / "case.json").read_text())["variables"] == ["a", "b"]
    write({"b": [0, 1], "a": [0, 1]})
    refused = runner.invoke(app, ["ask", str(case)])
    assert refused.exit_code == 2
    assert "produced with the design variables in the order (a, b), now (b, a)" in refused.stderr
    # A folder written before case.json had the list is not checked (and gets the list on its next write).
    stored = json.loads((tmp_path / "out" / "case.json").read_text())
    del stored["variables"]
    (tmp_path / "out" / "case.json").write_text(json.dumps(stored))
    write({"a": [0, 1], "b": [0, 1]})
    assert runner.invoke(app, ["ask", str(case)]).exit_code == 0


def ask_several(case: Path, out: Path, n: int) -> list[dict]:
    result = runner.invoke(app, ["ask", str(case), "--output", str(out), "--n", str(n)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_several_designs_pending_told_in_any_order(tmp_path):
    case = write_case(tmp_path, method="gp-ei", method_params={"num_restarts": 2, "raw_samples": 32, "maxiter": 20},
                      budget=9)
    out = tmp_path / "lab"
    first = ask_several(case, out, 3)
    assert [p["index"] for p in first] == [0, 1, 2] and all(p["phase"] == "initial" for p in first)
    assert first == ask_several(case, out, 3)        # asking again prints the same pending designs
    for pending in (first[2], first[0]):             # told out of order
        x, y = measure(pending)
        assert tell(case, out, "--x", x, "--y", y).exit_code == 0
    again = tell(case, out, "--x", measure(first[0])[0], "--y", "0.5")
    assert again.exit_code == 2 and "already recorded, as evaluation 0" in again.stderr
    stranger = tell(case, out, "--x", "0.1,0.2", "--y", "0.5")
    assert stranger.exit_code == 2 and "never asked" in stranger.stderr and "1: (" in stranger.stderr
    # Design 1 is still pending; two more are proposed knowing it, none repeating a taken design.
    second = ask_several(case, out, 3)
    assert [p["index"] for p in second] == [1, 3, 4] and [p["phase"] for p in second] == ["initial"] + ["optimizer"] * 2
    taken = [list(p["x"].values()) for p in first + second[1:]]
    assert len({tuple(np.round(t, 9)) for t in taken}) == 5
    while True:
        pending = ask_several(case, out, 2) if len(records(out)) + 2 <= 9 else ask_several(case, out, 1)
        for item in reversed(pending):
            x, y = measure(item)
            result = tell(case, out, "--x", x, "--y", y)
            assert result.exit_code == 0, result.output
        if "budget complete" in result.stdout:
            break
    logged = records(out)
    assert sorted(r["index"] for r in logged) == list(range(9))
    for r in logged:
        assert r["y"] == DROPWAVE.objective(np.array(r["x"]))
    spent = runner.invoke(app, ["ask", str(case), "--output", str(out), "--n", "2"])
    assert spent.exit_code == 2 and "budget: all 9 evaluations are recorded" in spent.stderr
