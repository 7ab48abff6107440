"""Does a method match or beat a baseline, case by case? Both one-sided tests from bench results.

`pinnbo bench` tests its reference method against each baseline in one direction (H1: the
reference is better). "Matches or beats" needs the other direction too: this script reads the
``summary.json`` that bench wrote for each case folder and, per case, runs the one-sided Welch
t-test both ways on the final best (feasible) values, a seed without a feasible point counting as
the case's worst value (as bench does), with Benjamini–Hochberg correction across the cases for
each direction. Verdict per case: **beats** (the method is better, adjusted p < alpha), **loses**
(the baseline is better, adjusted p < alpha) or **matches** (neither difference is significant;
with 10 seeds that is "no detectable difference", not proven equivalence, so the relative gaps to
f* are printed too).

    python benchmarks/match_or_beat.py bench-results/constrained10 --method neural-cbo --baseline gp-cei
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pinnbo.bench.statistics import benjamini_hochberg, mean_se, penalise_infeasible, welch_one_sided


def case_finals(folder: Path) -> tuple[dict, dict[str, list]]:
    summary = json.loads((folder / "summary.json").read_text())
    finals = {m: r["final_best"]["values"] for m, r in summary["results"].items()}
    return summary, finals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="bench --output folder (one folder per case inside)")
    parser.add_argument("--method", required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)

    rows = []
    for folder in sorted(p for p in args.root.iterdir() if (p / "summary.json").exists()):
        summary, finals = case_finals(folder)
        if args.method not in finals or args.baseline not in finals:
            continue
        finals, _ = penalise_infeasible(finals, summary["sense"])
        a, b = finals[args.method], finals[args.baseline]
        better = welch_one_sided(a, b, summary["sense"])["p_value"]
        worse = welch_one_sided(b, a, summary["sense"])["p_value"]
        rows.append((folder.name, summary, a, b, better, worse))
    if not rows:
        print(f"no case in {args.root} has both {args.method} and {args.baseline}", file=sys.stderr)
        return 1
    better_adj = benjamini_hochberg([r[4] for r in rows])
    worse_adj = benjamini_hochberg([r[5] for r in rows])

    def gap(values: list, f_star) -> str:
        m = mean_se(values)["mean"]
        if f_star is None or m is None:
            return "—"
        return f"{abs(m - f_star) / max(abs(f_star), 1e-12):.2%}" if f_star != 0 else f"{abs(m):.3g} (abs)"

    print(f"| case | seeds | {args.method} | {args.baseline} | gap to f*, {args.method} | gap to f*, "
          f"{args.baseline} | p ({args.method} better, BH) | p ({args.baseline} better, BH) | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    tally = {"beats": 0, "matches": 0, "loses": 0}
    for (name, summary, a, b, _, _), p_better, p_worse in zip(rows, better_adj, worse_adj):
        f_star = summary.get("optimum")
        if p_better is not None and p_better < args.alpha:
            verdict = "beats"
        elif p_worse is not None and p_worse < args.alpha:
            verdict = "loses"
        else:
            verdict = "matches"
        tally[verdict] += 1
        sa, sb = mean_se(a), mean_se(b)
        fmt = lambda s: f"{s['mean']:.6g} ± {s['se']:.2g}" if s["se"] is not None else f"{s['mean']:.6g}"  # noqa: E731
        pf = lambda p: "—" if p is None else f"{p:.2g}"  # noqa: E731
        print(f"| {name} | {sa['n']}/{sb['n']} | {fmt(sa)} | {fmt(sb)} | {gap(a, f_star)} | {gap(b, f_star)} | "
              f"{pf(p_better)} | {pf(p_worse)} | {verdict} |")
    print(f"\n{args.method} against {args.baseline}: beats {tally['beats']}, matches {tally['matches']}, "
          f"loses {tally['loses']} of {len(rows)} (alpha {args.alpha}, BH across cases per direction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
