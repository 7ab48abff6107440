"""benchmarks/ask_seconds.py reads what runs spent per ask: inside a window of evaluations, and split
into pde-gp's refit grid and the warm steps between."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from pinnbo.optimizers.pde_gp import restart_due

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("ask_seconds", ROOT / "benchmarks" / "ask_seconds.py")
ask_seconds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ask_seconds)


def write_run(folder: Path, seconds) -> Path:
    """A run's timings.jsonl: the initial designs' asks (index < 10) untimed, then seconds(i)."""
    folder.mkdir(parents=True)
    rows = [{"index": i, "ask_seconds": None if i < 10 else seconds(i), "oracle_seconds": 0.01} for i in range(45)]
    (folder / "timings.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_the_refit_split_follows_pde_gps_grid_inside_the_window(tmp_path):
    # a refit costs 1 s and a warm step 0.1 s; asks outside the window cost 100 s
    run = write_run(tmp_path / "runs" / "pde-gp" / "seed0",
                    lambda i: 100.0 if i >= 40 else (1.0 if restart_due(i) else 0.1))
    grid, between = ask_seconds.refit_split(run, 10, 40)
    # the first fit at 10 observations, then every step to 12 and ever more rarely: 15 of 30 asks
    assert len(grid) == 15 and len(between) == 15
    assert set(grid) == {1.0} and set(between) == {0.1}
    assert sorted(ask_seconds.window_seconds(run, 10, 40)) == sorted(grid + between)


def test_the_refits_table_gives_the_grids_share_of_a_runs_time(tmp_path, capsys):
    write_run(tmp_path / "runs" / "pde-gp" / "seed0", lambda i: 1.0 if restart_due(i) else 0.1)
    ask_seconds.main([str(tmp_path), "--window", "10", "40", "--refits"])
    out = capsys.readouterr().out
    # 15 s on the grid against 1.5 s between: 15 / 16.5 of the time
    assert "| pde-gp | seed0 | 1.000 | 15 | 0.100 | 15 | 0.91 |" in out
