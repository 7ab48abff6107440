"""Where pde-gp's long starts end at each due refit, replayed on finished runs, and what the deficit
gate (:func:`pinnbo.optimizers.pde_gp.long_starts_due`) makes of it.

A run's history is told back to a pde-gp optimiser, step by step, with each proposal replaced by the
design the run recorded (the acquisition is not optimised): the fits are the run's own where the run
was pde-gp at this commit. Every due refit runs its long starts (the gate held open), and their
best −log evidence is set against the warm start's optimum: won (by more than 0.1 nats), tied
(within 0.1: the same basin) or lost. The gate is then played over those outcomes: the refits it
skips, and of those the ones whose long starts would have replaced the warm fit (by any margin),
which are where a run with the gate can first differ from one without it (a skipped refit whose
long starts end behind changes nothing: the warm fit is chosen either way). ``--refit-starts``
replays the refits past the first few with other long starts (fractions of the box, as
:data:`pinnbo.optimizers.pde_gp.REFIT_LENGTHSCALES`), and each start's refits where it alone ends
best, by more than 0.1 nats and by any margin, say which of them decide the fits.

    python benchmarks/refit_outcomes.py cases/beam.yaml R/beam/runs/pde-gp --output bench-results/refits/beam.json
    python benchmarks/refit_outcomes.py cases/dropwave.yaml R/dropwave/runs/pde-gp --refit-starts 0.2 0.6
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

import pinnbo.models.pde_gp as pde_gp_model
import pinnbo.optimizers.pde_gp as pde_gp
from pinnbo.files import write_text
from pinnbo.report.summary import versions
from pinnbo.runner.build import build_optimizer, build_problem
from pinnbo.runner.case import load_case

TIE = 0.1


def refits(case, problem, run: Path) -> list[tuple[int, float, float | None, dict | None]]:
    """(observations, deficit, long − warm, each long start − warm) of each PDE fit with long starts
    in the replay of ``run``: the deficit the optimiser records (the long starts' best −log evidence
    against the chosen fit's, :attr:`pinnbo.models.pde_gp.PDEGP.long_start_deficit`), and the
    best of theirs and each one's against the warm start's (None for the first fit, which has
    none)."""
    records = [json.loads(line) for line in (run / "evaluations.jsonl").read_text().splitlines()]
    seed = json.loads((run / "case.json").read_text())["seed"]     # the run's collocation points
    optimizer = build_optimizer(case.model_copy(update={"method": "pde-gp", "method_params": {}, "seed": seed}),
                                problem)
    found, design, values = [], {}, []
    fit, optimise = pde_gp_model.PDEGP._fit, pde_gp_model.PDEGP._optimise

    def tracing(self, raw):
        result = optimise(self, raw)
        values.append(result[1])
        return result

    def recording(self, start, long_starts=()):
        values.clear()
        value = fit(self, start, long_starts)
        if self.Z is not None and self.long_start_deficit is not None:
            longs = values[1:1 + len(long_starts)] if start else None
            found.append((len(self.targets[0]), self.long_start_deficit, min(longs) - values[0] if longs else None,
                          {f"{f:g}": v - values[0] for f, v in zip(long_starts, longs)} if longs else None))
        return value

    def recorded(self, *args, **kwargs):    # the search skipped: its choice, the escape's too, is the run's design
        return SimpleNamespace(best=lambda *_, **__: self.domain.to_unit(np.asarray(design["x"])[None])[0])

    saved = (pde_gp_model.PDEGP._fit, pde_gp_model.PDEGP._optimise, pde_gp.PDEGPOptimizer._search,
             pde_gp.DEFICIT_PER_OBSERVATION)
    pde_gp_model.PDEGP._fit, pde_gp_model.PDEGP._optimise = recording, tracing
    pde_gp.PDEGPOptimizer._search = recorded
    pde_gp.DEFICIT_PER_OBSERVATION = math.inf
    try:
        for record in records:
            y = record["y"] if record["status"] == "ok" and record["y"] is not None else None
            if record["phase"] != "initial":
                design["x"] = record["x"]
                optimizer.ask()
            optimizer.tell(np.asarray(record["x"]), None if y is None else problem.sign * y)
    finally:
        (pde_gp_model.PDEGP._fit, pde_gp_model.PDEGP._optimise, pde_gp.PDEGPOptimizer._search,
         pde_gp.DEFICIT_PER_OBSERVATION) = saved
    return found


def gated(found: list[tuple]) -> list[tuple]:
    """The refits the gate skips, played over ``found`` (the first entry is the first fit)."""
    skipped, last = [], None
    for entry in found:
        n, deficit = entry[0], entry[1]
        if last is not None and not pde_gp.long_starts_due(n, last):
            skipped.append(entry)
        else:
            last = pde_gp.with_long_starts({}, n, deficit, last)
    return skipped


def counted(found: list[tuple], skipped: list[tuple]) -> Counter:
    """One run's refits after the first fit by outcome, the gate's skips, and those of its skips whose
    long starts would have replaced the warm fit (the only ones that change a run)."""
    later = [e[2] for e in found[1:]]
    return Counter(runs=1, refits=len(later), won=sum(d < -TIE for d in later),
                   tied=sum(abs(d) <= TIE for d in later), lost=sum(d > TIE for d in later),
                   skipped=len(skipped), skipped_would_replace=sum(e[2] < 0 for e in skipped))


def decided(found: list[tuple]) -> dict[str, Counter]:
    """Per long start, the refits after the first fit where it alone ends best, ahead of the warm
    start and every other long start: by more than ``TIE`` (a fit in another basin) and by any
    margin (the same basin to a hair, which still moves a run's last digits)."""
    tallies: dict[str, Counter] = {}
    for entry in found[1:]:
        ends = {"warm": 0.0, **entry[3]}        # each start's −log evidence − the warm start's
        for start in entry[3]:
            margin = min(v for k, v in ends.items() if k != start) - ends[start]
            tally = tallies.setdefault(start, Counter(alone=0, ahead=0))
            tally["alone"] += margin > TIE
            tally["ahead"] += margin > 0
    return tallies


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", type=Path)
    parser.add_argument("runs", type=Path, help="a bench folder's runs/<method>, one seedN folder per run")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--refit-starts", type=float, nargs="+", default=None, metavar="F",
                        help="the long starts a refit runs, fractions of the box (default: pde-gp's)")
    args = parser.parse_args(argv)
    if args.refit_starts is not None:
        pde_gp.REFIT_LENGTHSCALES = tuple(args.refit_starts)
    torch.set_num_threads(1)          # replays of several cases share the machine
    case = load_case(args.case, {"device": "cpu"})
    problem = build_problem(case)
    runs = sorted((p for p in args.runs.iterdir() if (p / "evaluations.jsonl").is_file()), key=lambda p: p.name)
    produced = versions()
    out = {"command": "python benchmarks/refit_outcomes.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "commit": produced.get("pinnbo_commit"), "machine": produced["cpu"], "date": str(date.today()),
           "case": case.name, "refit_starts": list(pde_gp.REFIT_LENGTHSCALES), "runs": {}}
    tally, made = Counter(), set()
    starts: dict[str, Counter] = {}
    for run in runs:
        summary = run / "summary.json"
        if summary.is_file():
            made.add(json.loads(summary.read_text()).get("versions", {}).get("pinnbo_commit"))
        found = refits(case, problem, run)
        skipped = gated(found)
        out["runs"][run.name] = {"refits": found, "skipped": skipped}
        tally.update(counted(found, skipped))
        for start, one in decided(found).items():
            starts.setdefault(start, Counter()).update(one)
        print(f"{run.name}: " + " ".join(f"{e[0]}:{e[2]:+.1f}" for e in found[1:])
              + f"; skipped {[e[0] for e in skipped]}", flush=True)
    out["tally"], out["runs_made_at"] = dict(tally), sorted(str(c) for c in made)
    out["starts"] = {start: dict(c) for start, c in starts.items()}
    print(f"{case.name}: {dict(tally)}; ends best alone (> {TIE} nats, by any margin): "
          + ", ".join(f"from {f}: {c['alone']}, {c['ahead']}" for f, c in out["starts"].items()))
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        write_text(args.output, json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
