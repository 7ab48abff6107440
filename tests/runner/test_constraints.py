"""Constrained design problems end to end: c_i(x) <= 0 feasible, black-box constraints returned by
the oracle with the objective, known constraints computed by the runner, the log, the results,
resume, case files, an external program, ask/tell and the bench.

The analytic problem: minimise x + y on [0, 1]² subject to c = 0.5 − x·y <= 0 (black box), so
x* = y* = √0.5 and f* = √2; a design is feasible iff x·y >= 0.5.
"""

from __future__ import annotations

import csv
import json
import math
import re
import shlex
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from pinnbo.bench import BenchError, BenchSettings, run_bench
from pinnbo.bench.options import default_methods, default_reference
from pinnbo.bench.statistics import penalise_infeasible
from pinnbo.runner.build import build_problem, output_std
from pinnbo.runner.case import CaseError, case_from_dict, load_case
from pinnbo.cli import app
from pinnbo.runner.history import Evaluation, History, HistoryError
from pinnbo.optimizers import make_optimizer
from pinnbo.oracles.command import CommandOracle
from pinnbo.problem import Box, Constraint, Problem
from pinnbo.runner.evaluation import evaluate
from pinnbo.runner.loop import run
from pinnbo.runner.steps import RunSettings
from tests.survival import CallLog

runner = CliRunner()
F_STAR = math.sqrt(2.0)
PYTHON = shlex.quote(sys.executable)


def product_problem(known: bool = False, noise: float = 0.0, as_mapping: bool = False, calls=None) -> Problem:
    """minimise x + y s.t. 0.5 − x·y <= 0; ``known``: the constraint is a known formula instead."""
    if known:
        def objective(p):
            return float(p[0] + p[1])
        constraints = (Constraint("product", function=lambda X: 0.5 - X[:, 0] * X[:, 1]),)
    else:
        def objective(p):
            if calls is not None:
                calls.append(list(p))
            c = 0.5 - p[0] * p[1]
            return float(p[0] + p[1]), ({"product": c} if as_mapping else [c])
        constraints = (Constraint("product", noise_std=noise),)
    return Problem("product", Box((0, 0), (1, 1), ("x", "y")), objective, "minimize", optimum=F_STAR,
                   constraints=constraints)


def settings(folder, budget=12, **kw):
    return RunSettings(budget=budget, initial_points=4, seed=2, output=folder,
                       case={"seed": 2, "constraints": ["product"]}, **kw)


def random_search(problem):
    return make_optimizer("random", problem.domain, 2, constraints=problem.constraints)


# -- records and the history ----------------------------------------------------------------------
@pytest.mark.parametrize("known", [False, True])
def test_feasibility_best_and_violation_follow_the_true_constraint(tmp_path, known):
    history = run(product_problem(known), random_search(product_problem(known)), settings(tmp_path))
    X = history.X()
    c = 0.5 - X[:, 0] * X[:, 1]
    for record, value in zip(history.evaluations, c):
        assert record.constraints == record.constraints_true == {"product": pytest.approx(value, abs=1e-15)}
        assert record.feasible is bool(value <= 0)
    feasible = c <= 0
    assert 0 < feasible.sum() < len(c)           # the sample has both kinds, so the check below means something
    f = X.sum(axis=1)
    expected = [np.min(f[: k + 1][feasible[: k + 1]]) if feasible[: k + 1].any() else np.nan for k in range(len(f))]
    np.testing.assert_array_equal(history.best_so_far(), expected)
    assert history.best().feasible and history.best().true == np.min(f[feasible])
    assert np.min(f) < history.best().true     # an infeasible design had a better objective and is not "best"
    np.testing.assert_allclose(history.simple_regret(), np.abs(F_STAR - np.array(expected)))
    assert history.cumulative_violation()["total"] == pytest.approx(np.maximum(c, 0).sum(), rel=1e-12)
    assert history.cumulative_violation()["per_constraint"] == {"product": pytest.approx(np.maximum(c, 0).sum())}
    assert history.feasible_fraction() == pytest.approx(feasible.mean())
    assert history.n_feasible == feasible.sum()


def test_nan_until_the_first_feasible_and_least_violation():
    history = History("maximize", optimum=3.0, constraints=("a", "b"))
    rows = [(5.0, {"a": 1.0, "b": -1.0}), (None, None), (4.0, {"a": 0.5, "b": 0.25}), (2.0, {"a": -1.0, "b": 0.0}),
            (9.0, {"a": 0.1, "b": -2.0}), (1.0, {"a": -3.0, "b": -3.0})]
    for i, (value, c) in enumerate(rows):
        if value is None:
            history.append(Evaluation(i, [0.0], None, None, "failed", "broke", "initial"))
        else:
            history.append(Evaluation(i, [float(i)], value, value, "ok", None, "initial", dict(c), dict(c),
                                      all(v <= 0 for v in c.values())))
    np.testing.assert_array_equal(history.best_so_far(), [np.nan, np.nan, np.nan, 2.0, 2.0, 2.0])
    assert history.best().index == 3 and history.simple_regret()[-1] == 1.0
    assert history.cumulative_violation() == {"total": pytest.approx(1.0 + 0.75 + 0.1),
                                              "per_constraint": {"a": pytest.approx(1.6), "b": pytest.approx(0.25)}}
    np.testing.assert_allclose(history.cumulative_violation_curve(), [1.0, 1.0, 1.75, 1.75, 1.85, 1.85])
    assert history.feasible_fraction() == pytest.approx(2 / 5) and list(history.feasible_so_far()) == [0, 0, 0, 1, 1, 2]
    infeasible_only = History("minimize", constraints=("a", "b"))
    for record in history.evaluations[:3]:
        infeasible_only.append(record)
    assert infeasible_only.best() is None and infeasible_only.least_violation().index == 2


def test_records_round_trip_and_corrupted_constraint_fields_are_refused(tmp_path):
    run(product_problem(), random_search(product_problem()), settings(tmp_path, budget=5))
    line = (tmp_path / "evaluations.jsonl").read_text().splitlines()[0]
    data = json.loads(line)
    assert list(data)[-3:] == ["constraints", "constraints_true", "feasible"]
    assert Evaluation.from_json(line, "x").to_json() == line
    for change, needle in [({"feasible": not data["feasible"]}, "'feasible' contradicts"),
                           ({"feasible": "yes"}, "'feasible' must be true or false"),
                           ({"constraints_true": {"product": "big"}}, "'constraints_true' must be a mapping")]:
        with pytest.raises(HistoryError, match=needle):
            Evaluation.from_json(json.dumps({**data, **change}), "x")
    # A log whose records miss a constraint the problem has is not resumed into a wrong optimiser.
    lines = (tmp_path / "evaluations.jsonl").read_text().splitlines()
    broken = json.loads(lines[1])
    for key in ("constraints", "constraints_true", "feasible"):
        broken.pop(key)
    lines[1] = json.dumps(broken)
    (tmp_path / "evaluations.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(HistoryError, match=r"evaluations.jsonl:2: corrupted record 1: constraint values \[\]"):
        run(product_problem(), random_search(product_problem()), settings(tmp_path, budget=6, resume=True))


def test_an_unconstrained_log_is_unchanged(tmp_path):
    record = Evaluation(0, [0.5], 1.0, 1.0, "ok", None, "initial")
    assert record.to_json() == ('{"index": 0, "x": [0.5], "y": 1.0, "true": 1.0, "status": "ok", "error": null, '
                                '"phase": "initial"}')
    problem = Problem("bowl", Box((0,), (1,)), lambda p: float((p[0] - 0.3) ** 2))
    run(problem, make_optimizer("random", problem.domain, 0), RunSettings(6, 3, 0, tmp_path, {"seed": 0}))
    for line in (tmp_path / "evaluations.jsonl").read_text().splitlines():
        assert list(json.loads(line)) == ["index", "x", "y", "true", "status", "error", "phase"]
    case = case_from_dict({"name": "t", "problem": "dropwave", "budget": 6, "initial_points": 3})
    assert "constraints" not in case.to_dict() and "constraint_noise" not in case.to_dict()


# -- noise -----------------------------------------------------------------------------------------
def test_constraint_noise_is_seeded_per_constraint_and_leaves_the_objective_stream_alone():
    x = np.array([0.9, 0.8])

    def problem(names, objective_noise=0.1, noise=0.2):
        def objective(p):
            return 1.0, {n: -0.1 for n in names}
        return Problem("p", Box((0, 0), (1, 1)), objective, noise_std=objective_noise,
                       constraints=tuple(Constraint(n, noise_std=noise) for n in names)
                       + (Constraint("known", function=lambda X: X[:, 0] - 2.0),))

    a, _ = evaluate(problem(["a"]), x, 7, seed=3, phase="optimizer")
    again, _ = evaluate(problem(["a"]), x, 7, seed=3, phase="optimizer")
    ab, _ = evaluate(problem(["a", "b"]), x, 7, seed=3, phase="optimizer")
    later, _ = evaluate(problem(["a"]), x, 8, seed=3, phase="optimizer")
    plain, _ = evaluate(Problem("p", Box((0, 0), (1, 1)), lambda p: 1.0, noise_std=0.1), x, 7, seed=3, phase="optimizer")
    assert a.to_json() == again.to_json()                           # deterministic
    assert a.y == ab.y == plain.y and a.y != a.true                 # the objective's stream is today's
    assert ab.constraints["a"] == a.constraints["a"] != -0.1        # adding "b" shifts nothing of "a"
    assert ab.constraints["b"] != ab.constraints["a"]               # each constraint its own stream
    assert later.constraints["a"] != a.constraints["a"]
    assert a.constraints_true == {"a": -0.1, "known": -1.1} and a.constraints["known"] == -1.1   # known: exact
    assert a.feasible is True
    quiet, _ = evaluate(problem(["a"], 0.0, 0.0), x, 7, seed=3, phase="optimizer")
    assert quiet.constraints == quiet.constraints_true


def test_constraint_noise_of_a_case_is_a_fraction_of_each_constraints_std(tmp_path):
    path = _problem_file(tmp_path)
    base = {"name": "p", "problem": f"{path}:product", "method": "random", "budget": 6, "initial_points": 3}
    noisy = build_problem(case_from_dict({**base, "constraint_noise": 0.1, "noise": 0.2}))
    f_std, c_std = output_std(build_problem(case_from_dict(base)))
    assert noisy.noise_std == pytest.approx(0.2 * f_std)
    assert noisy.constraints[0].noise_std == pytest.approx(0.1 * c_std["product"])
    per_name = build_problem(case_from_dict({**base, "constraint_noise": {"product": 0.3}}))
    assert per_name.constraints[0].noise_std == pytest.approx(0.3 * c_std["product"])
    with pytest.raises(CaseError, match=r"^constraint_noise\.other: unknown constraint; expected one of product$"):
        build_problem(case_from_dict({**base, "constraint_noise": {"other": 0.3}}))


# -- failures --------------------------------------------------------------------------------------
@pytest.mark.parametrize("result, reason", [
    (1.0, r"^malformed oracle result: oracle returned float, expected \(objective, constraints\)"),
    ((1.0, [0.1, 0.2]), r"^malformed oracle result: oracle returned 2 constraint values, expected 1"),
    ((1.0, {"other": 0.1}), r"^malformed oracle result: oracle constraints: missing \['product'\]"),
    ((1.0, [float("nan")]), r"^constraint product is nan$"),
    ((float("inf"), [0.1]), r"^oracle returned inf$"),
    ((1.0, ["high"]), r"^malformed oracle result: could not convert string to float"),
])
@pytest.mark.parametrize("timeout", [None, 5.0])
def test_a_malformed_outcome_is_a_failed_evaluation(result, reason, timeout):
    problem = Problem("p", Box((0, 0), (1, 1)), lambda p: result, constraints=(Constraint("product"),))
    record, _ = evaluate(problem, np.array([0.5, 0.5]), 0, seed=0, phase="initial", timeout=timeout)
    assert record.status == "failed" and record.y is None and record.feasible is None and not record.constraints
    assert re.search(reason, record.error), record.error


def test_an_unconstrained_oracle_returning_a_pair_fails_and_a_0d_array_does_not():
    record, _ = evaluate(Problem("p", Box((0,), (1,)), lambda p: (1.0, [0.0])), np.array([0.5]), 0, 0, "initial")
    assert record.error.startswith("malformed oracle result: oracle returned tuple, expected one number")
    record, _ = evaluate(Problem("p", Box((0,), (1,)), lambda p: np.array(2.5)), np.array([0.5]), 0, 0, "initial")
    assert record.y == 2.5
    record, _ = evaluate(Problem("p", Box((0,), (1,)), lambda p: np.float64(2.5)), np.array([0.5]), 0, 0, "initial",
                         timeout=5.0)
    assert record.y == 2.5


def test_a_failing_known_constraint_fails_the_evaluation():
    def broken(X):
        raise ZeroDivisionError("division by zero")

    problem = Problem("p", Box((0,), (1,)), lambda p: 1.0, constraints=(Constraint("k", function=broken),))
    record, _ = evaluate(problem, np.array([0.5]), 0, seed=0, phase="initial")
    assert record.status == "failed" and record.error == "constraint k: ZeroDivisionError: division by zero"


# -- resume ---------------------------------------------------------------------------------------
def test_resume_of_a_constrained_run_reproduces_the_history(tmp_path):
    calls = CallLog(tmp_path / "calls.log")
    straight = run(product_problem(noise=0.05), random_search(product_problem()), settings(tmp_path / "a"))
    run(product_problem(noise=0.05, calls=calls), random_search(product_problem()), settings(tmp_path / "b", budget=7))
    resumed = run(product_problem(noise=0.05, calls=calls), random_search(product_problem()),
                  settings(tmp_path / "b", resume=True))
    assert len(calls) == 12                                        # no oracle call repeated
    assert (tmp_path / "a" / "evaluations.jsonl").read_bytes() == (tmp_path / "b" / "evaluations.jsonl").read_bytes()
    np.testing.assert_array_equal(straight.best_so_far(), resumed.best_so_far())
    assert any(r.constraints != r.constraints_true for r in resumed.evaluations)   # the noise was replayed too


def test_the_optimiser_is_told_the_observed_constraints_in_order(tmp_path):
    problem = product_problem(noise=0.05)
    problem.constraints = problem.constraints + (Constraint("box", function=lambda X: X[:, 0] - 0.9),)
    optimizer = random_search(problem)
    history = run(problem, optimizer, settings(tmp_path, budget=6))
    X, y, C = optimizer.observed_constrained()
    assert C.shape == (6, 2)
    np.testing.assert_array_equal(C, [[r.constraints["product"], r.constraints["box"]] for r in history.evaluations])
    np.testing.assert_array_equal(y, [r.y for r in history.evaluations])


# -- a case file ------------------------------------------------------------------------------------
PROBLEM_FILE = '''
from pinnbo import Box, Constraint, Problem

def product():
    def objective(p):
        return float(p[0] + p[1]), {"product": float(0.5 - p[0] * p[1])}
    return Problem("product", Box((0, 0), (1, 1), ("x", "y")), objective, optimum=2 ** 0.5,
                   constraints=(Constraint("product"),))
'''


def _problem_file(tmp_path: Path) -> Path:
    path = tmp_path / "product.py"
    path.write_text(PROBLEM_FILE)
    return path


def _case(tmp_path: Path, **fields) -> Path:
    data = {"name": "prod", "problem": f"{_problem_file(tmp_path)}:product", "method": "random", "budget": 12,
            "initial_points": 4, "seed": 1, "output": str(tmp_path / "out"),
            "constraints": ["x <= 0.95", {"name": "edge", "expr": "0.05 - Min(x, y)"}]}
    data.update(fields)
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in data.items() if v is not None}, sort_keys=False))
    return path


def test_a_case_adds_known_constraints_and_the_results_show_feasibility(tmp_path):
    case = _case(tmp_path)
    problem = build_problem(load_case(case))
    assert problem.constraint_names == ("product", "x <= 0.95", "edge")
    assert [c.known for c in problem.constraints] == [False, True, True]
    np.testing.assert_allclose(problem.constraints[2].function(np.array([[0.2, 0.01], [0.5, 0.6]])), [0.04, -0.45])
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "best feasible" in result.stdout and "feasible of 12 successful evaluations" in result.stdout
    out = tmp_path / "out"
    records = [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]
    for r in records:
        x, y = r["x"]
        true = {"product": 0.5 - x * y, "x <= 0.95": x - 0.95, "edge": 0.05 - min(x, y)}
        assert r["constraints_true"] == pytest.approx(true) and r["feasible"] is all(v <= 0 for v in true.values())
    summary = json.loads((out / "summary.json").read_text())
    feasible = [r for r in records if r["feasible"]]
    assert summary["n_feasible"] == len(feasible) and summary["feasible_fraction"] == pytest.approx(len(feasible) / 12)
    best = min(feasible, key=lambda r: r["true"])
    assert summary["best_feasible"]["x"] == best["x"] and summary["best_feasible"]["value"] == best["true"]
    assert summary["best_value"] == best["true"] and summary["simple_regret"] == pytest.approx(best["true"] - F_STAR)
    violation = {n: sum(max(r["constraints_true"][n], 0) for r in records) for n in problem.constraint_names}
    assert summary["cumulative_violation"]["per_constraint"] == pytest.approx(violation)
    assert summary["cumulative_violation"]["total"] == pytest.approx(sum(violation.values()))
    assert [c["name"] for c in summary["constraints"]] == list(problem.constraint_names)
    assert json.loads((out / "case.json").read_text())["constraints"][1] == {"name": "edge", "expr": "0.05 - Min(x, y)"}
    assert (out / "convergence.png").stat().st_size > 1000
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0 and "feasible" in shown.stdout and "cumulative violation" in shown.stdout
    # A changed constraint is another problem: the folder is not resumed with it.
    changed = _case(tmp_path, constraints=["x <= 0.9"])
    refused = runner.invoke(app, ["run", str(changed), "--resume", "--quiet"])
    assert refused.exit_code == 2 and "was produced with a different constraints" in refused.stderr


def test_a_method_that_ignores_constraints_is_refused_with_one_line(tmp_path):
    result = runner.invoke(app, ["run", str(_case(tmp_path, method="pinn-bo")), "--quiet"])
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error: method: 'pinn-bo' ignores constraints and this problem has product")
    assert len(result.stderr.strip().splitlines()) == 1


# -- an external program ----------------------------------------------------------------------------
SIMULATOR = textwrap.dedent('''
    import json, sys
    mode, x, y = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    print("mesh converged")
    if mode == "ok":
        print(json.dumps({"objective": x + y, "constraints": {"product": 0.5 - x * y}, "iterations": 4}))
    elif mode == "missing":
        print(json.dumps({"objective": x + y, "constraints": {}}))
    elif mode == "bare":
        print(json.dumps(x + y))
''')


def test_an_external_program_reports_its_constraints_as_json(tmp_path):
    (tmp_path / "simulate.py").write_text(SIMULATOR)

    def command(mode):
        return CommandOracle(f"{PYTHON} simulate.py {mode} {{x}} {{y}}", ("x", "y"), "json", cwd=tmp_path,
                             constraints=("product",))

    assert command("ok")([0.5, 0.25]) == (0.75, {"product": 0.375})
    problem = Problem("p", Box((0, 0), (1, 1), ("x", "y")), command("missing"), constraints=(Constraint("product"),))
    record, _ = evaluate(problem, np.array([0.5, 0.5]), 0, seed=0, phase="initial")
    assert record.status == "failed" and record.error == ('unparsable output: "constraints" misses product; '
                                                          'expected product')
    record, _ = evaluate(replace(problem, objective=command("bare")), np.array([0.5, 0.5]), 0, seed=0, phase="initial")
    assert record.status == "failed" and "expected JSON {\"objective\": ..., \"constraints\": {...}}" in record.error
    case = tmp_path / "sim.yaml"
    case.write_text(yaml.safe_dump({
        "name": "sim", "problem": "external", "method": "random", "budget": 6, "initial_points": 3,
        "params": {"bounds": {"x": [0, 1], "y": [0, 1]}, "constraints": ["product"]},
        "oracle": {"command": f"{sys.executable} simulate.py ok {{x}} {{y}}", "parse": "json"},
        "constraints": ["x + y <= 1.8"], "output": str(tmp_path / "out")}, sort_keys=False))
    result = runner.invoke(app, ["run", str(case), "--quiet"])
    assert result.exit_code == 0, result.output
    for r in (json.loads(line) for line in (tmp_path / "out" / "evaluations.jsonl").read_text().splitlines()):
        x, y = r["x"]
        assert r["status"] == "ok" and r["y"] == x + y
        assert r["constraints"] == {"product": 0.5 - x * y, "x + y <= 1.8": pytest.approx(x + y - 1.8)}


# -- ask / tell -------------------------------------------------------------------------------------
def test_tell_records_measured_constraints(tmp_path):
    case = tmp_path / "lab.yaml"
    case.write_text(yaml.safe_dump({
        "name": "lab", "problem": "external", "method": "random", "budget": 4, "initial_points": 2,
        "params": {"bounds": {"x": [0, 1], "y": [0, 1]}, "constraints": ["product"]},
        "constraints": [{"name": "edge", "expr": "x - 0.99"}], "output": str(tmp_path / "out")}, sort_keys=False))
    out = tmp_path / "out"

    def tell(*args):
        return runner.invoke(app, ["tell", str(case), *args])

    for k in range(4):
        asked = json.loads(runner.invoke(app, ["ask", str(case)]).stdout)
        assert asked["constraints"] == ["product"]
        x, y = asked["x"]["x"], asked["x"]["y"]
        design = f"{x!r},{y!r}"
        if k == 0:
            for args, needle in [
                ([], "--constraint: no value for product"),
                (["--constraint", "other=1"], "--constraint: unknown constraint 'other'; expected product"),
                (["--constraint", "edge=1"], "--constraint edge: a known constraint, computed by pinnbo"),
                (["--constraint", "product=hot"], "--constraint product: expected a number, got 'hot'"),
                (["--constraint", "product"], "--constraint: expected name=value, got 'product'"),
            ]:
                bad = tell("--x", design, "--y", "1.0", *args)
                assert bad.exit_code == 2 and bad.stderr.startswith(f"error: {needle}"), bad.stderr
                assert len(bad.stderr.strip().splitlines()) == 1
            told = tell("--x", design, "--y", repr(x + y), "--constraint", f"product={0.5 - x * y!r}")
        elif k == 1:
            told = tell("--json", json.dumps({"x": [x, y], "y": x + y, "constraints": {"product": 0.5 - x * y}}))
        elif k == 2:
            told = tell("--x", design, "--failed", "sample cracked")
        else:
            told = tell("--x", design, "--y", repr(x + y), "--constraint", "product=-1")
        assert told.exit_code == 0, told.output
        assert ("feasible" in told.stdout) == (k != 2)
    records = [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["ok", "ok", "failed", "ok"]
    for r in records[:2]:
        x, y = r["x"]
        assert r["constraints"] == {"product": 0.5 - x * y, "edge": pytest.approx(x - 0.99)}
        assert r["feasible"] is (0.5 - x * y <= 0 and x <= 0.99)
    assert records[3]["constraints"]["product"] == -1.0 and "feasible" not in records[2]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_feasible"] == sum(bool(r.get("feasible")) for r in records)


# -- the bench --------------------------------------------------------------------------------------
def test_bench_of_a_constrained_case(tmp_path):
    case = _case(tmp_path, budget=8, output=None)
    assert "pinn-bo" not in default_methods(True) and "random" in default_methods(True)
    assert default_reference(True) == "neural-cbo" and default_reference(False) == "pinn-bo"
    with pytest.raises(BenchError, match=r"^--methods: 'pinn-bo' ignores constraints and case 'prod' has product"):
        run_bench(BenchSettings.from_options([case], "pinn-bo,random", 2, output=tmp_path / "b"), quiet=True)
    settings = BenchSettings.from_options([case], "random", 3, output=tmp_path / "b")
    assert settings.methods == ["random"]
    summary = run_bench(settings, quiet=True).summaries[0]
    folder = tmp_path / "b" / "prod"
    result = summary["results"]["random"]
    finals, counts = [], []
    for seed in range(3):
        lines = [json.loads(line) for line in
                 (folder / "runs" / "random" / f"seed{seed}" / "evaluations.jsonl").read_text().splitlines()]
        feasible = [r["true"] for r in lines if r["feasible"]]
        finals.append(min(feasible) if feasible else None)
        counts.append(sum(sum(max(v, 0) for v in r["constraints_true"].values()) for r in lines))
    assert result["final_best"]["values"] == finals
    assert result["no_feasible_seeds"] == [s for s, v in enumerate(finals) if v is None]
    assert result["cumulative_violation"]["values"] == pytest.approx(counts)
    rows = list(csv.DictReader(open(folder / "curves.csv", newline="")))
    assert list(rows[0]) == ["method", "seed", "evaluation", "best_true", "simple_regret", "normalised_regret",
                             "n_feasible", "cumulative_violation"]
    assert float(rows[7]["cumulative_violation"]) == pytest.approx(counts[0])
    table = (folder / "table.md").read_text()
    assert "best feasible" in table and "no feasible" in table and "violation" in table


def test_a_seed_without_a_feasible_point_counts_as_the_worst_in_the_tests():
    finals = {"a": [1.0, None, 2.0], "b": [3.0, 0.5, None]}
    assert penalise_infeasible(finals, "minimize") == ({"a": [1.0, 3.0, 2.0], "b": [3.0, 0.5, 3.0]}, 3.0)
    assert penalise_infeasible(finals, "maximize")[1] == 0.5
    assert penalise_infeasible({"a": [None]}, "minimize") == ({"a": [None]}, None)
