"""pinnbo bench: the grid of methods × seeds, its folder layout, restart without repeated oracle
calls, the summary's numbers against its curves, and --jobs not changing any result."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

import pinnbo.runner.loop
from pinnbo.bench import BenchSettings, run_bench
from pinnbo.bench.options import parse_seeds
from pinnbo.bench.tables import table_rows
from pinnbo.cli import app

ROOT = Path(__file__).resolve().parents[2]
DROPWAVE = ROOT / "cases" / "dropwave.yaml"
METHODS = ["pinn-bo", "random"]
SEEDS = 2
BUDGET, INITIAL = 6, 4      # what --smoke makes of the dropwave case


def settings(output: Path, jobs: int = 1) -> BenchSettings:
    return BenchSettings.from_options([DROPWAVE], ",".join(METHODS), SEEDS, jobs=jobs, output=output, smoke=True)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """One smoke bench (2 methods × 2 seeds on dropwave) shared by the tests that only read it."""
    output = tmp_path_factory.mktemp("bench")
    result = run_bench(settings(output), quiet=True)
    return output, result


def run_files(output: Path) -> dict[str, bytes]:
    runs = output / "dropwave" / "runs"
    return {str(p.relative_to(runs)): p.read_bytes() for p in sorted(runs.glob("*/*/evaluations.jsonl"))}


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_layout_and_counts(bench):
    output, result = bench
    folder = output / "dropwave"
    assert result.ran == len(METHODS) * SEEDS and result.skipped == 0 and not result.failed
    for name in ("curves.csv", "table.md", "summary.json", "convergence.png"):
        assert (folder / name).exists(), name
    assert (folder / "convergence.png").stat().st_size > 1000
    for method in METHODS:
        for seed in range(SEEDS):
            run = folder / "runs" / method / f"seed{seed}"
            assert len((run / "evaluations.jsonl").read_text().splitlines()) == BUDGET
            assert json.loads((run / "case.json").read_text())["method"] == method
            assert json.loads((run / "summary.json").read_text())["evaluations"] == BUDGET
    rows = read_csv(folder / "curves.csv")
    assert list(rows[0]) == ["method", "seed", "evaluation", "best_true", "simple_regret", "normalised_regret"]
    assert len(rows) == len(METHODS) * SEEDS * BUDGET
    table = (folder / "table.md").read_text()
    assert all(f"| {method} |" in table for method in METHODS)
    assert "Welch" in table and "Benjamini" in table and "Mann–Whitney" in table and "| to 1% |" in table


def test_initial_design_is_shared_by_methods_for_a_seed(bench):
    output, _ = bench
    runs = output / "dropwave" / "runs"
    first = {}
    for method in METHODS:
        for seed in range(SEEDS):
            lines = (runs / method / f"seed{seed}" / "evaluations.jsonl").read_text().splitlines()
            first[method, seed] = [json.loads(line)["x"] for line in lines[:INITIAL]]
    for seed in range(SEEDS):
        assert first["pinn-bo", seed] == first["random", seed]
    assert first["pinn-bo", 0] != first["pinn-bo", 1]


def test_summary_numbers_equal_recomputation_from_csv(bench):
    output, _ = bench
    folder = output / "dropwave"
    summary = json.loads((folder / "summary.json").read_text())
    rows = read_csv(folder / "curves.csv")
    assert summary["budget"] == BUDGET and summary["optimum"] == -1.0 and summary["sense"] == "minimize"
    finals = {}
    for method in METHODS:
        result = summary["results"][method]
        last = [r for r in rows if r["method"] == method and int(r["evaluation"]) == BUDGET]
        best = np.array([float(r["best_true"]) for r in last])
        regret = np.array([float(r["simple_regret"]) for r in last])
        finals[method] = best
        assert result["completed"] == SEEDS == len(best)
        assert result["final_best"]["mean"] == pytest.approx(best.mean(), rel=1e-12)
        assert result["final_best"]["se"] == pytest.approx(best.std(ddof=1) / math.sqrt(SEEDS), rel=1e-12)
        assert result["simple_regret"]["mean"] == pytest.approx(regret.mean(), rel=1e-12)
        assert result["simple_regret"]["se"] == pytest.approx(regret.std(ddof=1) / math.sqrt(SEEDS), rel=1e-12)
        assert result["seconds_per_iteration"]["mean"] > 0
        for k in (1, BUDGET // 2, BUDGET):
            at_k = [float(r["best_true"]) for r in rows if r["method"] == method and int(r["evaluation"]) == k]
            assert result["mean_curve"][k - 1] == pytest.approx(np.mean(at_k), rel=1e-12)
    test = summary["tests"]["baselines"]["random"]
    expected = stats.ttest_ind(finals["pinn-bo"], finals["random"], equal_var=False, alternative="less")
    assert test["p_value"] == pytest.approx(expected.pvalue, rel=1e-12)
    assert test["p_adjusted"] == pytest.approx(expected.pvalue, rel=1e-12)   # one baseline: BH is identity


def test_sample_efficiency_equals_recomputation_from_the_runs(bench):
    """r_n = |f* − best_n| / |f* − m0| with m0 the median true value of the seed's initial design,
    recomputed from each run's evaluations.jsonl, and the proposals until r_n <= 0.1 and 0.01."""
    output, _ = bench
    folder = output / "dropwave"
    summary = json.loads((folder / "summary.json").read_text())
    rows = read_csv(folder / "curves.csv")
    for method in METHODS:
        result = summary["results"][method]
        for i, seed in enumerate(range(SEEDS)):
            records = [json.loads(line) for line in
                       (folder / "runs" / method / f"seed{seed}" / "evaluations.jsonl").read_text().splitlines()]
            m0 = float(np.median([r["true"] for r in records[:INITIAL]]))
            best = np.minimum.accumulate([r["true"] for r in records])
            r = np.abs(-1.0 - best) / abs(-1.0 - m0)
            csv_r = [float(row["normalised_regret"]) for row in rows if row["method"] == method
                     and int(row["seed"]) == seed]
            np.testing.assert_allclose(csv_r, r, rtol=1e-12)
            for target, key in ((0.1, "proposals_to_10pct"), (0.01, "proposals_to_1pct")):
                hit = np.flatnonzero(r <= target)
                expected = None if not len(hit) else max(0, int(hit[0]) + 1 - INITIAL)
                assert result[key]["values"][i] == expected
            assert result["mean_log10_regret"]["values"][i] == pytest.approx(np.mean(np.log10(np.maximum(r[INITIAL:],
                                                                                                         1e-8))))
    assert summary["tests"]["efficiency"]["target"] == 0.01


def test_restart_skips_complete_runs_and_resumes_an_incomplete_one(bench, tmp_path, monkeypatch):
    source, _ = bench
    output = tmp_path / "bench"
    shutil.copytree(source, output)
    before = run_files(output)
    stamps = {p: p.stat().st_mtime_ns for p in output.glob("dropwave/runs/*/*/evaluations.jsonl")}
    calls = []
    original = pinnbo.runner.loop.evaluate
    monkeypatch.setattr(pinnbo.runner.loop, "evaluate", lambda *a, **k: calls.append(a[2]) or original(*a, **k))

    again = run_bench(settings(output), quiet=True)
    assert (again.ran, again.skipped, calls) == (0, len(METHODS) * SEEDS, [])
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps

    # A crash after evaluation 5 of pinn-bo seed 1: the last record and the summary marker are gone.
    run = output / "dropwave" / "runs" / "pinn-bo" / "seed1"
    lines = (run / "evaluations.jsonl").read_text().splitlines(keepends=True)
    (run / "evaluations.jsonl").write_text("".join(lines[:-1]))
    (run / "summary.json").unlink()
    (run / "checkpoint.pt").unlink()   # saved after the lost record: the log rebuilds the state
    resumed = run_bench(settings(output), quiet=True)
    assert (resumed.ran, resumed.skipped, calls) == (1, len(METHODS) * SEEDS - 1, [BUDGET - 1])
    assert run_files(output) == before
    assert (run / "summary.json").exists()
    assert (output / "dropwave" / "curves.csv").read_bytes() == (source / "dropwave" / "curves.csv").read_bytes()


@pytest.mark.parametrize("text, seeds", [
    ("3", (0, 1, 2)), (3, (0, 1, 2)), ("5-7", (5, 6, 7)), ("7,0,3", (0, 3, 7)), (" 0-1, 9 ", (0, 1, 9)), ([4, 2], (2, 4)),
])
def test_seeds_as_a_count_a_range_or_a_list(text, seeds):
    assert parse_seeds(text) == seeds


def test_a_grid_split_over_seeds_merges_into_one_table(bench, tmp_path):
    """Seeds run elsewhere (--seeds 1-1) are skipped when complete, and a table over a subset says which."""
    output, _ = bench
    shutil.copytree(output, tmp_path / "copy")
    result = run_bench(BenchSettings.from_options([DROPWAVE], ",".join(METHODS), "1-1", output=tmp_path / "copy",
                                                  smoke=True), quiet=True)
    assert result.ran == 0 and result.skipped == len(METHODS)
    summary = json.loads((tmp_path / "copy" / "dropwave" / "summary.json").read_text())
    assert summary["seeds"] == [1]
    whole = json.loads((output / "dropwave" / "summary.json").read_text())
    for method in METHODS:
        assert summary["results"][method]["final_best"]["values"] == whole["results"][method]["final_best"]["values"][1:]
    assert "seeds 1..1" in (tmp_path / "copy" / "dropwave" / "table.md").read_text()


def test_parallel_jobs_give_the_same_runs(bench, tmp_path):
    source, _ = bench
    result = run_bench(settings(tmp_path, jobs=2), quiet=True)
    assert result.ran == len(METHODS) * SEEDS and not result.failed
    assert run_files(tmp_path) == run_files(source)
    assert (tmp_path / "dropwave" / "curves.csv").read_bytes() == (source / "dropwave" / "curves.csv").read_bytes()


runner = CliRunner()


def test_cli_bench_prints_the_table(tmp_path):
    result = runner.invoke(app, ["bench", str(DROPWAVE), "--methods", "random", "--seeds", "2", "--smoke",
                                 "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "random" in result.output and "regret" in result.output
    summary = json.loads((tmp_path / "dropwave" / "summary.json").read_text())
    assert summary["tests"] is None and summary["results"]["random"]["completed"] == 2


def test_show_prints_a_bench_table_from_its_folder_or_root(bench):
    output, _ = bench
    summary = json.loads((output / "dropwave" / "summary.json").read_text())
    for target in (output / "dropwave", output):
        result = runner.invoke(app, ["show", str(target)], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        rows = [line for line in result.output.splitlines() if line.startswith("│")]
        # one row per method, with its mean best as the table prints it
        assert [row.split("│")[1].strip() for row in rows] == METHODS
        headers, cells = table_rows(summary)
        for row, expected in zip(rows, cells):
            assert [c.strip() for c in row.split("│")[1:-1]] == expected
        assert "table.md" in result.output
    run = runner.invoke(app, ["show", str(output / "dropwave" / "runs" / "random" / "seed0")])
    assert run.exit_code == 0 and "best design" in run.output


@pytest.mark.parametrize("args, needle", [
    (["--methods", "pinn-bo,randm"], "--methods: unknown method 'randm' (did you mean 'random'?)"),
    (["--methods", "random", "--reference", "gp-ei"], "--reference: 'gp-ei' is not among --methods (random)"),
    (["--output", "__FILE__/sub"], "--output: cannot create"),
    (["--seeds", "0"], "--seeds: expected N (seeds 0..N-1, 1 <= N <= 10000)"),
    (["--seeds", "5-3"], "--seeds: expected N"),
    (["--seeds", "1,x"], "--seeds: expected N"),
    (["--seeds", "0-2,2"], "--seeds: seed 2 is given twice in '0-2,2'"),
    (["--jobs", "0"], "--jobs"),
    (["--scheduler", "head node"], "--scheduler: expected a Dask scheduler address such as tcp://host:8786"),
    (["--scheduler", "tcp://127.0.0.1:9"], "--scheduler: cannot reach a Dask scheduler at 'tcp://127.0.0.1:9'"),
    (["--initial-points", "0"], "--initial-points: expected an integer from 1 to 10000, got 0"),
    (["--params", '{"pinn-bo": {"hiden": [8]}}'], "--params: pinn-bo: method_params.hiden"),
    (["--params", "{oops"], "--params: invalid JSON"),
    (["--params", "nothere.json"], "--params: 'nothere.json' is neither a JSON object nor a JSON file"),
    (["--params", '{"gp-x": {}}'], "--params"),
    (["--case", "bad"], "params.dim"),
])
def test_user_errors_exit_2_with_one_line(tmp_path, args, needle):
    case = DROPWAVE
    if args == ["--case", "bad"]:
        case = tmp_path / "bad.yaml"
        case.write_text("name: bad\nproblem: dropwave\nparams: {dim: -2}\n")
        args = []
    if "__FILE__/sub" in args:                 # an output root below a file
        (tmp_path / "afile").write_text("")
        args = [a.replace("__FILE__", str(tmp_path / "afile")) for a in args]
    result = runner.invoke(app, ["bench", str(case), "--smoke", "--quiet", "--output", str(tmp_path / "out"),
                                 *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in result.output, result.output
    assert not (tmp_path / "out").exists()


def test_a_plus_method_gets_its_best_without_the_random_points(tmp_path):
    """gp-ucb+ beside random: the table and summary give gp-ucb+'s best without its random points
    (the mean of the per-seed minima over the non-exploration evaluations), random has none."""
    result = run_bench(BenchSettings.from_options([DROPWAVE], "gp-ucb+,random", 2, output=tmp_path, smoke=True,
                                                  budget=8), quiet=True)
    assert result.ran == 4 and not result.failed
    folder = tmp_path / "dropwave"
    summary = json.loads((folder / "summary.json").read_text())
    expected = []
    for seed in range(2):
        rows = [json.loads(line) for line in
                (folder / "runs" / "gp-ucb+" / f"seed{seed}" / "evaluations.jsonl").read_text().splitlines()]
        phases = [r["phase"] for r in rows if r["phase"] != "initial"]
        assert phases and phases[1::2] == ["exploration"] * (len(phases) // 2)
        expected.append(min(r["true"] for r in rows if r["phase"] != "exploration"))
    plus = summary["results"]["gp-ucb+"]
    assert plus["final_best_without_exploration"]["values"] == expected
    assert plus["simple_regret_without_exploration"]["values"] == pytest.approx([v + 1.0 for v in expected])
    assert "final_best_without_exploration" not in summary["results"]["random"]
    table = (folder / "table.md").read_text()
    assert "best w/o exploration" in table and "| random | 2/2 |" in table


def test_the_results_page_renders_a_bench(bench):
    """benchmarks/results.py turns a bench folder into docs/results.md's tables: the case's rows carry
    the summary's numbers, and a case not in the folder says it was not measured."""
    import importlib.util

    from pinnbo.report.format import fmt

    spec = importlib.util.spec_from_file_location("results", ROOT / "benchmarks" / "results.py")
    results = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(results)
    output, _ = bench
    text = results.render([output])
    section = text[text.index("### dropwave"):].split("###")[1]
    summary = json.loads((output / "dropwave" / "summary.json").read_text())
    assert "smoke settings" in section
    for method in METHODS:
        row = next(line for line in section.splitlines() if line.startswith(f"| `{method}` |"))
        assert fmt(summary["results"][method]["final_best"]["mean"], 6) in row
    assert "### heat_bc1\n\nNot measured yet" in text


def test_initial_points_override_the_cases(tmp_path):
    """--initial-points: every run of the bench starts from that many shared Sobol points (DropWave's
    case has 50), and the summary says so."""
    result = run_bench(BenchSettings.from_options([DROPWAVE], "random", 2, budget=7, initial_points=3,
                                                  output=tmp_path), quiet=True)
    assert result.ran == 2 and not result.failed
    summary = json.loads((tmp_path / "dropwave" / "summary.json").read_text())
    assert summary["initial_points"] == 3 and summary["budget"] == 7
    for seed in range(2):
        phases = [json.loads(line)["phase"] for line in
                  (tmp_path / "dropwave" / "runs" / "random" / f"seed{seed}" / "evaluations.jsonl").read_text().splitlines()]
        assert phases == ["initial"] * 3 + ["optimizer"] * 4
