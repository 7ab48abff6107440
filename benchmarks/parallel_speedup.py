"""Wall-time speed-up of asynchronous runs, real processes: ``pinnbo run --workers 8`` against
``--workers 1`` on a case whose oracle sleeps (benchmarks/parallel/sleepy_dropwave.yaml, 2 s per
call, 100 evaluations), per method, one after the other on this machine; a count repeated in
``--workers`` is run again (the parallel run's wall time varies with the completion order).

    python benchmarks/parallel_speedup.py --methods gp-ei pinn-bo --workers 8 1 8 8 \\
        --output bench-results/parallel/speedup

Writes ``speedup.json`` and prints a table: wall time, the ratio T8/T1, the oracle time, worker
utilisation and the mean time per proposal by the number of designs pending when it was asked.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "benchmarks" / "parallel" / "sleepy_dropwave.yaml"


def run(method: str, workers: int, folder: Path, seconds: float, budget: int) -> dict:
    folder.parent.mkdir(parents=True, exist_ok=True)
    case = folder.parent / f"{method}-s{seconds:g}.yaml"   # the shipped case with this method and sleep
    case.write_text(CASE.read_text().replace("method: gp-ei", f"method: {method}")
                    .replace("seconds: 2.0", f"seconds: {seconds}")
                    .replace("problem: sleepy_dropwave.py", f"problem: {CASE.parent / 'sleepy_dropwave.py'}"))
    command = [sys.executable, "-W", "ignore", "-m", "pinnbo.cli", "run", str(case), "--quiet", "--overwrite",
               "--budget", str(budget), "--workers", str(workers), "--output", str(folder)]
    start = time.monotonic()
    subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"}, cwd=ROOT)
    wall = time.monotonic() - start
    summary = json.loads((folder / "summary.json").read_text())
    timings = [json.loads(line) for line in (folder / "timings.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (folder / "evaluations.jsonl").read_text().splitlines()]
    asks: dict[int, list[float]] = {}
    for t, r in zip(timings, records):
        if r["phase"] != "initial" and t.get("ask_seconds") is not None:
            asks.setdefault(int(t.get("pending_at_ask", 0)), []).append(t["ask_seconds"])
    return {"method": method, "workers": workers, "seconds": seconds, "wall_seconds": round(wall, 2),
            "oracle_seconds": round(sum(t.get("oracle_seconds", 0.0) for t in timings), 2),
            "parallel": summary.get("parallel"), "best": summary["best_value"], "versions": summary["versions"],
            "ask_seconds_by_pending": {k: round(float(np.mean(v)), 3) for k, v in sorted(asks.items())},
            "ask_seconds_mean": round(float(np.mean([a for v in asks.values() for a in v])), 3)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["gp-ei", "pinn-bo"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--output", default="bench-results/parallel/speedup")
    args = parser.parse_args(argv)
    out = Path(args.output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for method in args.methods:
        for workers in args.workers:
            result = run(method, workers, out / f"{method}-w{workers}-s{args.seconds:g}", args.seconds, args.budget)
            results.append(result)
            print(json.dumps(result), flush=True)
    for method in args.methods:
        walls = {r["workers"]: r["wall_seconds"] for r in results if r["method"] == method}
        if 1 in walls:
            for w, t in sorted(walls.items()):
                print(f"{method}: --workers {w}: {t:.1f} s, T{w}/T1 = {t / walls[1]:.3f}")
    (out / f"speedup-s{args.seconds:g}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
