"""benchmarks/best_at.py: the best after n evaluations, read from a bench folder's curves."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
from scipy import stats

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "best_at.py"
spec = importlib.util.spec_from_file_location("best_at", SCRIPT)
best_at = importlib.util.module_from_spec(spec)
spec.loader.exec_module(best_at)


def bench_folder(tmp_path: Path) -> tuple[Path, dict]:
    """Two methods, three seeds, curves of 4 evaluations (minimise)."""
    curves = {"a": [[5, 4, 2, 1], [6, 3, 3, 0.5], [4, 4, 2, 2]], "b": [[5, 5, 5, 3], [6, 6, 4, 4], [4, 4, 4, 4]]}
    lines = ["method,seed,evaluation,best_true,simple_regret"]
    for method, runs in curves.items():
        for seed, run in enumerate(runs):
            lines += [f"{method},{seed},{n + 1},{v},{v}" for n, v in enumerate(run)]
    (tmp_path / "curves.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "summary.json").write_text(json.dumps({"sense": "minimize"}))
    return tmp_path, curves


def test_means_and_both_one_sided_tests_at_each_count(tmp_path, capsys):
    folder, curves = bench_folder(tmp_path)
    assert best_at.main([str(folder), "--at", "3,4", "--reference", "a"]) == 0
    out = capsys.readouterr().out
    a = np.array(curves["a"])[:, 3]
    b = np.array(curves["b"])[:, 3]
    se = a.std(ddof=1) / np.sqrt(3)
    assert f"| 4 | a | 3 | {a.mean():.2f} ± {se:.2g} |" in out
    better = stats.ttest_ind(a, b, equal_var=False, alternative="less").pvalue
    worse = stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue
    assert f"| 4 | b | 3 | {b.mean():.2f} ± {b.std(ddof=1) / np.sqrt(3):.2g} | {better:.2g} | {worse:.2g} |" in out
    assert "| 3 | a | 3 | 2.33 ± 0.33 | | |" in out


def test_bad_input_is_one_line_and_exit_1(tmp_path, capsys):
    folder, _ = bench_folder(tmp_path)
    for argv, expected in (([str(folder), "--at", "5", "--reference", "a"], "--at: 5 is beyond the shortest method's curve (4"),
                           ([str(folder), "--at", "two", "--reference", "a"], "--at: expected comma-separated evaluation counts"),
                           ([str(folder), "--at", "2", "--reference", "c"], "--reference: 'c' has no runs"),
                           ([str(folder / "missing"), "--at", "2"], "no curves.csv here")):
        assert best_at.main(argv) == 1
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1, err
