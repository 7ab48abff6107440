"""Record, or check byte for byte, a short run of every shipped case with every method its problem
admits (a method that refuses a case's kinds of variables or objectives by name has no run there):
the behaviour freeze that a restructuring of the package must keep; a check compares the runs the
recording holds.

    python benchmarks/golden.py --record benchmarks/golden          # writes <case>/<method>.jsonl
    python benchmarks/golden.py --check benchmarks/golden           # reruns and compares, exit 1 on a difference

Each run is ``pinnbo run`` on a copy of the shipped case with budget 14, 10 initial points and seed 0,
the method's defaults (the case's own ``method_params`` for the case's own method, as ``pinnbo
bench`` does), one torch thread. The cases measured by hand (``problem: external`` without an
oracle) have no oracle to run and are left out. Byte-identical results hold on one machine and
library set; the files record the commit and machine they came from in ``MANIFEST.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
UNCONSTRAINED = ("pinn-bo", "pde-gp", "random", "neural-bo", "neural-greedy", "gp-ei", "gp-ucb", "gp-ucb+", "exploit+",
                 "exploit", "neural-cbo", "gp-cei")
CONSTRAINED = ("random", "neural-cbo", "gp-cei")
BUDGET, INITIAL, SEED = 14, 10, 0


def shipped_cases() -> list[tuple[str, dict]]:
    out = []
    for path in sorted((ROOT / "cases").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        if data.get("problem") == "external" and "oracle" not in data:
            continue
        out.append((path.stem, data))
    return out


def runs(only: set[str] | None = None) -> list[tuple[str, str, dict]]:
    """(case, method, case data) for every run of the freeze."""
    out = []
    for name, data in shipped_cases():
        constrained = bool(data.get("constraints")) or data.get("method") in ("neural-cbo", "gp-cei")
        for method in CONSTRAINED if constrained else UNCONSTRAINED:
            if only and f"{name}/{method}" not in only and name not in only:
                continue
            out.append((name, method, data))
    return out


class NotAdmitted(Exception):
    """The problem is not one the method takes (it refused it by name): no run to freeze."""


def run_one(name: str, method: str, data: dict, folder: Path) -> bytes:
    case = dict(data)
    if method != data.get("method"):
        case.pop("method_params", None)
    case.update(method=method, budget=BUDGET, initial_points=INITIAL, seed=SEED, output=str(folder / "out"))
    case_file = folder / f"{name}.yaml"
    case_file.write_text(yaml.safe_dump(case, sort_keys=False))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "pinnbo.cli", "run", str(case_file), "--quiet"], env=env,
                          capture_output=True, text=True, cwd=folder)
    if done.returncode == 2 and done.stderr.strip().startswith("error: method:"):
        raise NotAdmitted(done.stderr.strip())   # a kind of variable or objective the method refuses
    if done.returncode != 0:
        raise RuntimeError(f"{name}/{method}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    return (folder / "out" / "evaluations.jsonl").read_bytes()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", type=Path, help="folder to write the golden logs to")
    mode.add_argument("--check", type=Path, help="folder of golden logs to compare against")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--only", nargs="*", help="case or case/method names to run (default: all)")
    args = parser.parse_args()
    todo = runs(set(args.only) if args.only else None)
    if args.check:   # a case added since the recording is not part of the freeze
        recorded = [t for t in todo if (args.check / t[0] / f"{t[1]}.jsonl").exists()]
        if len(recorded) < len(todo):
            print(f"{len(todo) - len(recorded)} runs of cases added since the recording left out", flush=True)
        todo = recorded

    def one(item):
        name, method, data = item
        with tempfile.TemporaryDirectory() as tmp:
            try:
                return name, method, run_one(name, method, data, Path(tmp)), None
            except NotAdmitted as exc:
                return name, method, None, exc
            except RuntimeError as exc:
                return name, method, None, str(exc)

    failures = skipped = 0
    with ThreadPoolExecutor(args.jobs) as pool:
        for name, method, log, error in pool.map(one, todo):
            target = (args.record or args.check) / name / f"{method}.jsonl"
            if isinstance(error, NotAdmitted):
                print(f"n/a {name}/{method}: {error}", flush=True)
                skipped += 1
                continue
            if error is not None:
                print(f"FAIL {name}/{method}: {error}", flush=True)
                failures += 1
            elif args.record:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(log)
                print(f"recorded {name}/{method}", flush=True)
            elif not target.exists():
                print(f"MISSING {name}/{method}: no golden file {target}", flush=True)
                failures += 1
            elif target.read_bytes() != log:
                print(f"DIFFERS {name}/{method}", flush=True)
                failures += 1
            else:
                print(f"same {name}/{method}", flush=True)
    if args.record:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        manifest = {"commit": commit, "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
                    "cpus": os.cpu_count(), "python": platform.python_version(),
                    "budget": BUDGET, "initial_points": INITIAL, "seed": SEED, "runs": len(todo),
                    "sha256": hashlib.sha256(b"".join(
                        (args.record / n / f"{m}.jsonl").read_bytes() for n, m, _ in todo
                        if (args.record / n / f"{m}.jsonl").exists())).hexdigest()}
        path = args.record / "MANIFEST.json"
        if args.only and path.exists():   # runs added to an existing freeze (new cases): say which and when
            previous = json.loads(path.read_text())
            previous.setdefault("additions", []).append(
                {"commit": commit, "runs": [f"{n}/{m}" for n, m, _ in todo]})
            manifest = previous
        path.write_text(json.dumps(manifest, indent=2) + "\n")
    admitted = len(todo) - skipped
    print(f"{admitted - failures} of {admitted} runs {'recorded' if args.record else 'identical'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
