"""benchmarks/results.py's summary of the promise: what auto runs against the better GP on
proposals to 1%, from bench summaries written by hand."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("results", ROOT / "benchmarks" / "results.py")
results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results)
physics_tables = sys.modules["physics_tables"]   # imported by results.py from benchmarks/


def method(median, hits, seconds):
    return {"proposals_to_1pct": {"median": median, "hits": hits, "n": 10},
            "seconds_per_iteration": {"mean": seconds}}


def bench_folder(root: Path, case: str, results: dict, auto_ran: str | None = None, dim: int = 2) -> Path:
    """A bench case folder: its summary, and one run's summary (what auto chose, the variables)."""
    folder = root / case
    run = folder / "runs" / ("auto" if auto_ran else next(iter(results))) / "seed0"
    run.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"results": results}))
    summary = {"variables": [f"x{i}" for i in range(dim)]}
    if auto_ran:
        summary["method"] = {"name": auto_ran, "chosen_by": "auto", "reason": "..."}
    (run / "summary.json").write_text(json.dumps(summary))
    return folder


def test_the_physics_summary_sets_auto_against_the_better_gp(tmp_path):
    # a bench that ran auto (pde-gp there): auto's own figures, and pde-gp's column reads them
    plate = bench_folder(tmp_path, "plate", {"auto": method(2, 10, 0.3), "pinn-bo": method(10, 9, 2.0),
                                            "gp-ei": method(20, 6, 0.5), "gp-ucb": method(None, 4, 0.4)}, "pde-gp", 3)
    # a bench of the chosen method without auto: the rule on the case file names it (harmonic: pde-gp)
    wave = bench_folder(tmp_path, "wave", {"pde-gp": method(1, 7, 0.3), "gp-ei": method(None, 0, 0.2),
                                           "gp-ucb": method(None, 1, 0.2)})
    (tmp_path / "cost.json").write_text(json.dumps({"cases": {"plate": {"dim": 3, "rows": {
        "pde-gp": [{"seconds": 0.3}], "gp-ei": [{"seconds": 0.1}]}}}}))
    # a second cost file: its cases add to the first's, and the first file's figures win
    (tmp_path / "more.json").write_text(json.dumps({"cases": {
        "plate": {"dim": 3, "rows": {"pde-gp": [{"seconds": 9.0}], "gp-ei": [{"seconds": 0.1}]}},
        "wave": {"dim": 2, "rows": {"pde-gp": [{"seconds": 0.5}], "gp-ei": [{"seconds": 0.2}]}}}}))
    rows = physics_tables.physics_summary({"plate": (plate, None), "wave": (wave, ROOT / "cases" / "harmonic.yaml")},
                                          [tmp_path / "cost.json", tmp_path / "more.json", tmp_path / "absent.json"])
    assert rows[2] == "| plate | 3 | `pde-gp` | 2 [10/10] | `gp-ei` | 20 [6/10] | 0.10 | 3.0 | 2 [10/10] | 10 [9/10] |"
    assert rows[3] == "| wave | 2 | `pde-gp` | 1 [7/10] | `gp-ucb` | — [1/10] | < 1 | 2.5 | 1 [7/10] | — |"
    assert len(rows) == 4


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


def test_the_refit_section_tallies_each_cases_replay(tmp_path):
    assert "Not measured yet" in "\n".join(physics_tables.refit_section(tmp_path / "none"))
    (tmp_path / "beam.json").write_text(json.dumps({
        "case": "beam", "commit": "abc", "runs_made_at": ["abc"],
        "tally": {"runs": 2, "refits": 28, "won": 0, "tied": 1, "lost": 27, "skipped": 16, "skipped_would_replace": 1}}))
    lines = physics_tables.refit_section(tmp_path)
    assert "| beam | 2 | 28 | 0 | 1 | 27 | 16 | 1 | abc |" in lines and "Replayed at commit abc." in lines


def test_the_refit_section_names_the_machine_and_date_of_each_replay(tmp_path):
    (tmp_path / "beam.json").write_text(json.dumps({
        "case": "beam", "commit": "abc", "machine": "Some CPU, 2 cores", "date": "2026-11-28", "runs_made_at": ["abc"],
        "tally": {"runs": 1, "refits": 14, "won": 0, "tied": 0, "lost": 14, "skipped": 8, "skipped_would_replace": 0}}))
    assert "Replayed at commit abc; Some CPU, 2 cores, 2026-11-28." in physics_tables.refit_section(tmp_path)
