"""Each method's best value after n evaluations, for several n, from one bench case folder.

`pinnbo bench` tables the final best only. Whether a gap between methods closes with the budget is
read from the best-so-far curves it writes (``curves.csv``, one row per method, seed and
evaluation): this script prints, at each requested evaluation count, the mean ± standard error over
seeds of the best true value, and the one-sided Welch p-values of the reference method against each
other method in both directions ("p better": H1 the reference is better; "p worse": H1 it is
worse). A run of budget B gives, at n < B, the same value as a run of budget n (the proposals do
not depend on the budget), so one long bench answers every shorter budget.

    python benchmarks/best_at.py bench-results/st_400/styblinski_tang --at 100,200,300,400 --reference pinn-bo
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

from pinnbo.bench.statistics import mean_se, welch_one_sided


def read_curves(folder: Path) -> tuple[str, dict[str, dict[int, dict[int, float]]]]:
    """(sense, {method: {evaluation: {seed: best_true}}}) from ``summary.json`` and ``curves.csv``."""
    sense = json.loads((folder / "summary.json").read_text())["sense"]
    curves: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    with (folder / "curves.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            if row["best_true"] not in ("", "None", "nan"):
                curves[row["method"]][int(row["evaluation"])][int(row["seed"])] = float(row["best_true"])
    return sense, curves


def _best(values: list[float]) -> str:
    """mean ± s.e. (no s.e. from one seed) and the number of seeds, as table cells."""
    stats = mean_se(values)
    se = "" if stats["se"] is None else f" ± {stats['se']:.2g}"
    return f"{stats['n']} | {stats['mean']:.2f}{se}"


def _p(p: float | None) -> str:
    return "—" if p is None else f"{p:.2g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a case folder of a bench --output (it holds curves.csv)")
    parser.add_argument("--at", required=True, help="evaluation counts, comma-separated, e.g. 100,200")
    parser.add_argument("--reference", default="pinn-bo", help="the method tested against the others")
    args = parser.parse_args(argv)

    for name in ("curves.csv", "summary.json"):
        if not (args.folder / name).is_file():
            print(f"error: {args.folder}: no {name} here; give a case folder of a bench --output", file=sys.stderr)
            return 1
    try:
        counts = [int(v) for v in args.at.split(",")]
    except ValueError:
        print(f"error: --at: expected comma-separated evaluation counts, got {args.at!r}", file=sys.stderr)
        return 1
    if any(n < 1 for n in counts):
        print(f"error: --at: expected evaluation counts >= 1, got {args.at!r}", file=sys.stderr)
        return 1
    sense, curves = read_curves(args.folder)
    if args.reference not in curves:
        print(f"error: --reference: {args.reference!r} has no runs in {args.folder}; it has "
              f"{', '.join(sorted(curves))}", file=sys.stderr)
        return 1
    shortest = min(max(by_n) for by_n in curves.values())
    if max(counts) > shortest:
        print(f"error: --at: {max(counts)} is beyond the shortest method's curve ({shortest} evaluations)",
              file=sys.stderr)
        return 1

    others = [m for m in sorted(curves) if m != args.reference]
    print(f"{args.folder.name} ({sense}): best after n evaluations, mean ± s.e. over seeds; "
          f"p: one-sided Welch, {args.reference} against the method")
    print("| n | method | seeds | best | p better | p worse |")
    print("|---|---|---|---|---|---|")
    for n in counts:
        ref = list(curves[args.reference][n].values())
        print(f"| {n} | {args.reference} | {_best(ref)} | | |")
        for method in others:
            values = list(curves[method][n].values())
            better = welch_one_sided(ref, values, sense)["p_value"]
            worse = welch_one_sided(values, ref, sense)["p_value"]
            print(f"| {n} | {method} | {_best(values)} | {_p(better)} | {_p(worse)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
