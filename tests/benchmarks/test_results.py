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
    # where auto runs gp-ei, it is its own baseline
    box = bench_folder(tmp_path, "box", {"auto": method(8, 10, 0.2), "gp-ei": method(8, 10, 0.2),
                                         "gp-ucb": method(9, 10, 0.2)}, "gp-ei")
    # the cost column is the in-runs bench's: the plate's seeds cost 2 and 4 times gp-ei's; the wave was not timed
    runs_cost = tmp_path / "runs-cost"
    timed_run(runs_cost / "plate", "auto", "seed0", [0.3, 0.5], "pde-gp")
    timed_run(runs_cost / "plate", "gp-ei", "seed0", [0.2, 0.2])
    timed_run(runs_cost / "plate", "auto", "seed1", [0.8, 0.8], "pde-gp")
    timed_run(runs_cost / "plate", "gp-ei", "seed1", [0.1, 0.3])
    rows = physics_tables.physics_summary({"plate": (plate, None), "wave": (wave, ROOT / "cases" / "harmonic.yaml"),
                                           "box": (box, None)}, runs_cost)
    assert rows[2] == "| plate | 3 | `pde-gp` | 2 [10/10] | `gp-ei` | 20 [6/10] | 0.10 | 3.0 | 2 [10/10] | 10 [9/10] |"
    assert rows[3] == "| wave | 2 | `pde-gp` | 1 [7/10] | `gp-ucb` | — [1/10] | < 1 | — | 1 [7/10] | — |"
    assert rows[4] == "| box | 2 | `gp-ei` | 8 [10/10] | `gp-ei` | 8 [10/10] | 1.00 | 1.0 | — | — |"
    assert len(rows) == 5
    assert physics_tables.physics_summary({"plate": (plate, None)}, None)[2].split(" | ")[7] == "—"


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


def timed_run(folder: Path, method: str, seed: str, seconds: list[float], chosen: str | None = None) -> None:
    """A run of a budget-40 bench: its summary (what auto chose), and timings.jsonl with ten initial
    designs (no ask time to speak of), ``seconds`` for the asks from evaluation 11 on, and an ask
    past evaluation 40 that the window leaves out."""
    run = folder / "runs" / method / seed
    run.mkdir(parents=True)
    summary = {"variables": ["x", "y"], "versions": {"pinnbo_commit": "abc", "cpu": "Some CPU, 2 cores"}}
    if chosen:
        summary["method"] = {"name": chosen, "chosen_by": "auto", "reason": "..."}
    (run / "summary.json").write_text(json.dumps(summary))
    rows = [{"index": i, "ask_seconds": None if i == 0 else 1e-5, "oracle_seconds": 0.01} for i in range(10)]
    rows += [{"index": 10 + i, "ask_seconds": s, "oracle_seconds": 0.01} for i, s in enumerate(seconds)]
    rows.append({"index": 40, "ask_seconds": 100.0, "oracle_seconds": 0.01})
    (run / "timings.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_steps_cost_in_runs_sets_each_seed_against_the_same_seed_of_gp_ei(tmp_path):
    plate = tmp_path / "runs-cost" / "plate"
    timed_run(plate, "auto", "seed0", [0.3, 0.5], "pde-gp")
    timed_run(plate, "gp-ei", "seed0", [0.2, 0.2])
    timed_run(plate, "auto", "seed1", [0.8, 0.8], "pde-gp")
    timed_run(plate, "gp-ei", "seed1", [0.1, 0.3])
    timed_run(plate, "auto", "seed2", [9.0, 9.0], "pde-gp")       # no gp-ei run of this seed: left out
    assert physics_tables.runs_seconds(plate) == {"seed0": (0.4, 0.2), "seed1": (0.8, 0.2)}
    # the mean of the seeds' ratios (2 and 4), not the ratio of the means (0.6 / 0.2)
    assert physics_tables.runs_cost_rows({"plate": plate})[2] == \
        "| plate | 2 | `pde-gp` | 0.600 | 0.200 | 2.00, 4.00 | 3.0 |"
    lines = results.runs_cost_section(tmp_path / "runs-cost", ["wave", "plate"])
    assert "| plate | 2 | `pde-gp` | 0.600 | 0.200 | 2.00, 4.00 | 3.0 |" in lines and not any(x.startswith("| wave") for x in lines)
    assert any(x.startswith("Commit abc; Some CPU, 2 cores; ") for x in lines)
    # the refits named are pde-gp's own grid inside the window
    grid = [n for n in range(10, 40) if results.restart_due(n)]
    text = "\n".join(lines)
    assert f"fresh starts at {grid[0]} observations" in text and f"{grid[-2]} and {grid[-1]}, unless" in text
    assert f"both its long starts at {grid[1]} and {grid[2]} and with the shorter one at {grid[3]}, " in text
    assert "Not measured yet" in "\n".join(results.runs_cost_section(tmp_path / "none", ["plate"]))
