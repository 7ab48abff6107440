"""What the report costs (issue targets: the report of a 100-evaluation 2-D run under 10 s;
``--report`` under 10 % of a run's wall time), side by side in one run.

For each method, the same case runs from the same seed without and with ``--report``, alternately
``--repeats`` times, as separate ``pinnbo run`` processes (one torch thread), and the medians are
compared; then ``pinnbo report`` is timed on the finished folder. The histories are compared: ``--report`` only reads the folder.

    python benchmarks/report_cost.py cases/heat_bc1.yaml --methods gp-ei,pinn-bo --budget 100
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

from pinnbo.files import write_text


def timed(command: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", type=Path)
    parser.add_argument("--methods", default="gp-ei")
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="pairs of runs per method; the medians are reported")
    parser.add_argument("--output", type=Path, default=Path("bench-results/cost/report.json"))
    args = parser.parse_args(argv)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for method in args.methods.split(","):
            base = [sys.executable, "-m", "pinnbo.cli", "run", str(args.case), "--method", method, "--budget",
                    str(args.budget), "--quiet"]
            plain, with_report = [], []
            for _ in range(args.repeats):    # alternated, so a slow spell of the machine hits both
                plain.append(timed(base + ["--output", f"{tmp}/{method}-plain", "--overwrite"], env))
                with_report.append(timed(base + ["--output", f"{tmp}/{method}-report", "--report", "--overwrite"], env))
            plain, with_report = float(np.median(plain)), float(np.median(with_report))
            report = timed([sys.executable, "-m", "pinnbo.cli", "report", f"{tmp}/{method}-plain"], env)
            same = (Path(tmp, f"{method}-plain", "evaluations.jsonl").read_bytes()
                    == Path(tmp, f"{method}-report", "evaluations.jsonl").read_bytes())
            rows.append({"method": method, "run_seconds": plain, "run_with_report_seconds": with_report,
                         "overhead": with_report / plain - 1, "report_seconds": report, "same_history": same})
            print(f"{method}: run {plain:.1f} s, with --report {with_report:.1f} s "
                  f"({100 * (with_report / plain - 1):+.1f} %), pinnbo report {report:.1f} s, same history {same}",
                  flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    from pinnbo.report.summary import versions

    commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    write_text(args.output, json.dumps({"case": str(args.case), "budget": args.budget, "rows": rows,
                                       "command": "python benchmarks/report_cost.py " + " ".join(sys.argv[1:]),
                                       "machine": versions()["cpu"], "commit": commit, "date": str(date.today())},
                                      indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
