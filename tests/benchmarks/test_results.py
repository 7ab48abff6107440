"""benchmarks/results.py's summary of the promise: the best physics-informed method against the
better GP on proposals to 1%, from bench summaries written by hand."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("results", ROOT / "benchmarks" / "results.py")
results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results)


def method(median, hits, seconds):
    return {"proposals_to_1pct": {"median": median, "hits": hits, "n": 10},
            "seconds_per_iteration": {"mean": seconds}}


def test_the_physics_summary_takes_the_best_of_each_side_and_divides(tmp_path):
    (tmp_path / "plate").mkdir()
    (tmp_path / "plate" / "summary.json").write_text(json.dumps({"results": {
        "pinn-bo": method(10, 9, 2.0), "pde-gp": method(None, 2, 0.5),       # pde-gp never got there in half
        "gp-ei": method(20, 6, 0.5), "gp-ucb": method(None, 4, 0.4)}}))
    (tmp_path / "wave").mkdir()
    (tmp_path / "wave" / "summary.json").write_text(json.dumps({"results": {
        "pde-gp": method(1, 7, 0.3), "gp-ei": method(None, 0, 0.2), "gp-ucb": method(None, 1, 0.2)}}))
    rows = [line for line in results.physics_summary([tmp_path], ["plate", "wave", "absent"]) if line.startswith("| ")]
    # the other physics-informed method in the last three columns, where the case has one
    assert rows[1] == "| plate | `pinn-bo` | 10 [9/10] | `gp-ei` | 20 [6/10] | 0.50 | 4.0* | `pde-gp` | — [2/10] | 1.0* |"
    assert rows[2] == "| wave | `pde-gp` | 1 [7/10] | `gp-ucb` | — [1/10] | < 1 | 1.5* | — | — | — |"
    assert len(rows) == 3      # the header, and no row for a case not measured
    # a sequential timing of the case (benchmarks/iteration_cost.py --output) replaces the bench's ratio
    (tmp_path / "cost").mkdir()
    (tmp_path / "cost" / "plate.json").write_text(json.dumps({"commit": "abc", "seconds_per_iteration": {
        "pinn-bo": [0.3, 0.36], "pde-gp": [0.05, 0.06], "gp-ei": [0.1, 0.12]}}))
    lines = results.physics_summary([tmp_path], ["plate"], tmp_path / "cost")
    assert "| plate | `pinn-bo` | 10 [9/10] | `gp-ei` | 20 [6/10] | 0.50 | 3.0, 3.0 | `pde-gp` | — [2/10] | 0.5, 0.5 |" in lines
    assert any("commit abc" in line for line in lines)


def test_the_calibration_section_without_measurements_gives_its_commands(tmp_path):
    text = "\n".join(results.calibration_section(tmp_path / "none"))
    assert "## Calibration accuracy" in text and "Not measured yet" in text
    assert "calibration_accuracy.py cases/rossler.yaml" in text


def test_a_family_measured_into_its_own_root_reads_only_that_root():
    """heat_bc1 is in the PDE family and in the Optuna family: each reads its own bench of it."""
    roots = [Path("b/optuna-pde"), Path("b/results"), Path("b/optuna-constrained")]
    optuna = next(f for f in results.FAMILIES if f[0].startswith("Optuna"))
    assert "heat_bc1" in optuna[2] and "heat_bc1" in results.FAMILIES[0][2]
    assert results.family_roots(roots, ()) == [Path("b/results")]
    assert results.family_roots(roots, optuna[4]) == [Path("b/optuna-pde"), Path("b/optuna-constrained")]
