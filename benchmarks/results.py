"""docs/results.md from bench folders: the current table per case family, never typed by hand.

Each family names its cases and the `pinnbo bench` command that makes them; this script reads each
case's summary.json (and its runs' summaries, for the commit and the machine that produced them)
under the root(s) given and writes one table per case:

    python benchmarks/results.py bench-results/results            # writes docs/results.md
    python benchmarks/results.py ROOT --output -                  # prints it

A case missing from every root is listed as not measured, with its command.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pinnbo.bench.options import seeds_text  # noqa: E402
from pinnbo.bench.statistics import REGRET_TARGETS, target_key  # noqa: E402
from pinnbo.optimizers.pde_gp import REFIT_LENGTHSCALES, refit_starts, restart_due  # noqa: E402
from pinnbo.report.format import fmt  # noqa: E402
from physics_tables import (RUNS_COST_COMMAND, RUNS_COST_WINDOW, physics_summary, refit_section,  # noqa: E402
                            runs_cost_rows, step_cost_section)

PDE_METHODS = "pde-gp,pinn-bo,gp-ei,gp-ucb --reference pde-gp"
DIMENSION_METHODS = "auto,pinn-bo,gp-ei,gp-ucb --reference auto"
WITH_PDE_GP = DIMENSION_METHODS.replace("auto,", "auto,pde-gp,")     # where auto runs gp-ei
# pinn-bo refuses a PDE with boundary conditions (Laplace's and the heat equation declare theirs)
CONDITIONED = "auto,gp-ei,gp-ucb --reference auto"
CONDITIONED_WITH_PDE_GP = CONDITIONED.replace("auto,", "auto,pde-gp,")
FAMILIES = [
    ("Problems with a PDE, 1-D and 2-D",
     "PINN-BO's real tasks (the heat plates, the beam), DropWave, and three closed-form solutions (a Helmholtz "
     "solution and a harmonic function with its maximum on an edge, linear; a Liouville solution, nonlinear; the "
     "harmonic one was added after every default had been chosen, as a check on them): 10 seeds, budget 40 (10 "
     "initial points and 30 proposals), where sample efficiency shows; the shipped cases' own budgets are larger.",
     ["heat_bc1", "heat_bc2", "heat_bc3", "beam", "dropwave", "helmholtz", "harmonic", "liouville"],
     ["pinnbo bench cases/heat_bc1.yaml cases/heat_bc2.yaml cases/heat_bc3.yaml cases/beam.yaml cases/dropwave.yaml "
      f"cases/helmholtz.yaml cases/harmonic.yaml cases/liouville.yaml --methods {PDE_METHODS} --seeds 10 --budget 40 "
      "--initial-points 10 --jobs 2 --output ROOT"]),
    ("Other kinds of PDE",
     "A Poisson problem with a source, a nonlinear reaction–diffusion problem with a known forcing, standing waves "
     "on a string whose fixed ends the problem declares as boundary conditions, a "
     "damped oscillator driven over a range of frequencies (problems/pde_kinds.py) and two beams with other stiffness, "
     "loads and supports than the paper's (cases in benchmarks/kinds/), written after the rule for `auto` was "
     "chosen, to measure it where it was not tuned: `auto` (which runs `pde-gp` on each) against the GPs, 10 seeds, "
     "budget 40. Beside them two heat plates with boundary data that jump at every corner, written after `pde-gp` "
     "modelled the isotropic plates' corners and before its corner functions took their operators: a fibre "
     "composite, T_xx + 8 T_yy = 0 (the heat plate's `conductivity`), and heat carried by a flow, "
     "T_xx + T_yy − 3 T_x = 0 (its `velocity`); and a laminate whose fibres run at 30° to the edges, "
     "3.25 T_xx + 2.598 T_xy + 1.75 T_yy = 0 (a conductivity tensor), written with the corner functions of a "
     "mixed derivative. Four graded plates whose conductivity is a formula of x and y, written with the "
     "corner functions of coefficients that vary: ∇·((1 + 3x)∇T) = 0, the paper's third and second plates with "
     "k = 1 + xy/4 and k = 1 + (x − y)²/8, and the first with a flow, v = (−3, 2), and the laminate's fibres "
     "in a graded matrix, K = (1 + 3x) A (a tensor of formulas). `auto` runs `pde-gp` "
     "with the corner functions of each operator, and `pinn-bo`, which `auto` had run there, is measured beside it. "
     "Three heat boxes, ∇²T = 0 in three variables with faces that disagree along every edge, written with the "
     "edge functions: two whose supremum is a face's limit at an edge, one whose supremum is inside a face; "
     "and a fourth whose heat a flow carries, ∇²T − v·∇T = 0, written with the edge functions of a flow, and a "
     "fifth, a graded conductor ∇·(k∇T) = 0, written with the edge functions divided by √k, and a sixth, a "
     "conductivity tensor ∇·(K∇T) = 0, written with the sheared angles across the edges, and a seventh, the graded "
     "conductor carried by a flow, ∇·(k∇T) − v·∇T = 0, written with the flow's edge functions whose drift and decay "
     "k at the edge divides, and an eighth, a graded composite ∇·(K∇T) = 0 with K = (1 + 2x + yz) A (the sixth's "
     "tensor A), written with the sheared angles divided by √(k/k(m_e)), m_e each edge's midpoint, and a ninth, "
     "the graded composite carried by a flow, ∇·(K∇T) − v·∇T = 0, written with the flow's sheared edge functions "
     "whose drift and decay k at the edge divides, divided by √(k/k(m_e)). "
     "`auto` runs `pde-gp` with the edge functions, and `pinn-bo`, which `auto` had run there, is measured "
     "beside it. Two plates whose heat grows with the temperature, T_xx + T_yy + qT = 0 (its `reaction`, a gain: "
     "no maximum principle), written with the corner functions of a Helmholtz operator, θ J₀(√q ρ): q = 8, whose "
     "supremum is still the left edge's limit at a corner with a hot spot inside 3.5 % below it, and q = 10, whose "
     "hottest point is inside; and two such cubes, ∇²T + qT = 0 with the first box's faces, written with the edge "
     "functions θ J₀(√q ρ): q = 12, whose supremum is still the top face's limit at an edge, and q = 20, whose hottest "
     "point is inside. The first graded plate and the graded box with a reaction, ∇·(k∇T) + qT = 0 (q = 8 and 12): "
     "the plate written with the functions of the operator frozen at each corner, the box with the graded edge "
     "functions whose reaction k at the edge divides, θ J₀(√(q/k(z_e)) ρ) divided by √(k/k(z_e)).",
     ["poisson", "reaction_diffusion", "wave", "forced_oscillator", "beam_supported", "beam_clamped",
      "heat_orthotropic", "heat_advection", "heat_laminate", "heat_graded", "heat_graded_bc3", "heat_graded_bc2",
      "heat_graded_flow", "heat_graded_laminate", "heat_box", "heat_box_bc2", "heat_box_bc3", "heat_box_flow",
      "heat_box_graded", "heat_box_tensor", "heat_box_graded_flow", "heat_box_graded_tensor", "heat_box_graded_tensor_flow", "heat_reaction",
      "heat_reaction_inside", "heat_box_reaction", "heat_box_reaction_inside", "heat_graded_reaction",
      "heat_box_graded_reaction"],
     ["pinnbo bench benchmarks/kinds/poisson.yaml benchmarks/kinds/reaction_diffusion.yaml benchmarks/kinds/wave.yaml "
      "benchmarks/kinds/forced_oscillator.yaml benchmarks/kinds/beam_supported.yaml benchmarks/kinds/beam_clamped.yaml "
      "--methods auto,gp-ei,gp-ucb --reference auto --seeds 10 --budget 40 --initial-points 10 --jobs 2 "
      "--output ROOT",
      "pinnbo bench benchmarks/kinds/heat_orthotropic.yaml benchmarks/kinds/heat_advection.yaml "
      "benchmarks/kinds/heat_laminate.yaml --methods auto,pinn-bo,gp-ei,gp-ucb --reference auto --seeds 10 --budget 40 --initial-points 10 --jobs 2 "
      "--output ROOT",
      "pinnbo bench benchmarks/kinds/heat_graded.yaml benchmarks/kinds/heat_graded_bc3.yaml "
      "benchmarks/kinds/heat_graded_bc2.yaml benchmarks/kinds/heat_graded_flow.yaml benchmarks/kinds/heat_graded_laminate.yaml "
      "--methods auto,pinn-bo,gp-ei,gp-ucb "
      "--reference auto --seeds 10 --budget 40 --initial-points 10 --jobs 2 --output ROOT",
      "pinnbo bench benchmarks/kinds/heat_box.yaml benchmarks/kinds/heat_box_bc2.yaml benchmarks/kinds/heat_box_bc3.yaml "
      "benchmarks/kinds/heat_box_flow.yaml benchmarks/kinds/heat_box_graded.yaml "
      "benchmarks/kinds/heat_box_tensor.yaml benchmarks/kinds/heat_box_graded_flow.yaml "
      "benchmarks/kinds/heat_box_graded_tensor.yaml --methods auto,gp-ei,gp-ucb,pinn-bo --reference auto --seeds 10 --budget 40 --initial-points 10 --jobs 2 "
      "--output ROOT",
      "pinnbo bench benchmarks/kinds/heat_box_graded_tensor_flow.yaml --methods auto,gp-ei,gp-ucb,pinn-bo --reference auto "
      "--seeds 10 --budget 40 --initial-points 10 --jobs 2 --output ROOT",
      "pinnbo bench benchmarks/kinds/heat_reaction.yaml benchmarks/kinds/heat_reaction_inside.yaml "
      "benchmarks/kinds/heat_box_reaction.yaml benchmarks/kinds/heat_box_reaction_inside.yaml --methods auto,gp-ei,gp-ucb,pinn-bo --reference auto --seeds 10 --budget 40 --initial-points 10 --jobs 2 "
      "--output ROOT",
      "pinnbo bench benchmarks/kinds/heat_graded_reaction.yaml benchmarks/kinds/heat_box_graded_reaction.yaml "
      "--methods auto,gp-ei,gp-ucb,pinn-bo --reference auto --seeds 10 --budget 40 --initial-points 10 --jobs 2 "
      "--output ROOT"]),
    ("Three variables and more",
     "Laplace's, Helmholtz's and the heat equation (time the last variable) in 3, 4 and 6 variables, closed-form "
     "solutions with continuous boundary data (problems/pde_dimensions.py, cases in benchmarks/dimensions/), written "
     "after the rule for `auto` was first chosen: budget 40, 10 seeds. Laplace's problem declares its faces at the "
     "origin held at zero and the heat equation its zero edges, as boundary conditions (which `pinn-bo` refuses); "
     "Helmholtz's has none to declare. `auto` runs `pde-gp` in 3 variables and on the heat equation, with its "
     "declared edges, in 4; from what these problems showed, `gp-ei` on Helmholtz's and Laplace's in 4 and on every "
     "one in 6, where `pde-gp` runs under its own name too. The Laplace and Helmholtz tables in 3 and 4 variables "
     "are of `pde-gp` with its stall rule (algorithms.md, \"The stall rule\"), which brought the seeds it had "
     "missed in 3 variables to 1 %. A nonlinear reaction–diffusion problem, −∇²u + u³ = f with a known forcing "
     "(the 2-D problem's two bumps), was written in 3 and 4 variables after the rule: `auto` runs `pde-gp` on it "
     "in 3 and `gp-ei` in 4, where `pde-gp` runs under its own name too. Standing waves in a membrane and in a box "
     "fixed on every face (declared), time the last variable, were written in 3 and 4 variables after the rule, "
     "which then ran `pde-gp` on both; in 4 `pde-gp` fell behind `gp-ei`, and `auto` runs `gp-ei` there since "
     "(a PDE with boundary conditions in 4 variables that is not first order in a time), `pde-gp` under its own "
     "name. The same waves damped, u_tt + u_t = ∇²u (the telegraph equation, every mode fading as e^{−t/2}), "
     "written after that: `auto` runs `pde-gp` in 3 variables and `gp-ei` in 4, `pde-gp` under its own name. A "
     "Poisson problem with a known source, −∇²u = f (the 2-D problem's solution with a sine arch in every other "
     "variable), written after that, in 3 to 6 variables: the rule then ran `gp-ei` on it in 4 and 5, where `pde-gp` "
     "needed a third and half of its proposals, and `auto` runs `pde-gp` there since (a linear PDE with a source "
     "whose operator keeps the maximum principle; the `auto` rows of poisson_4d to poisson_6d are of that rule, "
     "their `gp-ei` rows what `auto` ran before). A steady advection–diffusion problem with a known source, "
     "−∇²u + v·∇u = f (two Gaussian plumes), written last to test that rule, in 3 to 6 variables: from 4 "
     "variables `pde-gp` draws half its collocation points where the source is large (algorithms.md, "
     "\"Collocation where the source is\"), which the `auto` rows of both problems from 4 variables are of, and "
     "`auto` runs `pde-gp` up to 6.",
     [f"{kind}_{d}d" for d in (3, 4, 6) for kind in ("laplace", "helmholtz", "heat")]
     + ["reaction_diffusion_3d", "reaction_diffusion_4d", "wave_3d", "wave_4d", "damped_wave_3d", "damped_wave_4d",
        "poisson_3d", "poisson_4d", "poisson_5d", "poisson_6d", "advection_diffusion_3d", "advection_diffusion_4d",
        "advection_diffusion_5d", "advection_diffusion_6d"],
     ["pinnbo bench " + " ".join(f"benchmarks/dimensions/{kind}_{d}d.yaml" for kind in kinds for d in dims)
      + f" --methods {methods} --seeds {seeds} --budget 40 --initial-points 10 --jobs 2 --output ROOT"
      for kinds, dims, methods, seeds in ((("helmholtz",), (3,), DIMENSION_METHODS, 10),
                                          (("helmholtz",), (4, 6), WITH_PDE_GP, 10),
                                          (("heat",), (3, 4), CONDITIONED, 10),
                                          (("heat",), (6,), CONDITIONED_WITH_PDE_GP, 10),
                                          (("laplace",), (3,), CONDITIONED, 10),
                                          (("laplace",), (4, 6), CONDITIONED_WITH_PDE_GP, 10),
                                          (("reaction_diffusion",), (3,), DIMENSION_METHODS, 10),
                                          (("reaction_diffusion",), (4,), WITH_PDE_GP, 10),
                                          (("wave",), (3,), CONDITIONED, 10),
                                          (("wave",), (4,), CONDITIONED_WITH_PDE_GP, 10),
                                          (("damped_wave",), (3,), CONDITIONED, 10),
                                          (("damped_wave",), (4,), CONDITIONED_WITH_PDE_GP, 10),
                                          (("poisson",), (3,), DIMENSION_METHODS, 10),
                                          (("poisson",), (4,), DIMENSION_METHODS, 10),
                                          (("poisson",), (5, 6), CONDITIONED, 10),
                                          (("advection_diffusion",), (3, 4, 5, 6), CONDITIONED, 10))]),
    ("Constrained problems",
     "Neural-CBO's benchmarks and the heat plate under a thermal-gradient limit: 10 seeds, budget 60.",
     ["branin_c", "simionescu", "gas", "ackley5_c", "hartmann6_c", "welded_beam", "speed_reducer",
      "heat_bc1_gradient"],
     ["pinnbo bench cases/branin_c.yaml cases/simionescu.yaml cases/gas.yaml cases/ackley5_c.yaml "
      "cases/hartmann6_c.yaml cases/welded_beam.yaml cases/speed_reducer.yaml cases/heat_bc1_gradient.yaml "
      "--methods neural-cbo,gp-cei,random --seeds 10 --budget 60 --initial-points 10 --jobs 2 --output ROOT"]),
    ("High-dimensional functions with a PDE",
     "PINN-BO's synthetic functions in 10 to 50 dimensions, the shipped cases' 50 initial points: "
     "5 seeds, budget 100.",
     ["styblinski_tang", "rastrigin", "michalewicz", "cosine_mixture"],
     ["pinnbo bench cases/styblinski_tang.yaml cases/rastrigin.yaml cases/michalewicz.yaml cases/cosine_mixture.yaml "
      "--methods pinn-bo,gp-ei,exploit,random --seeds 5 --budget 100 --jobs 2 --output ROOT"]),
]
FAMILIES += [
    ("Variables of every kind",
     "Mixed problems with a known optimum (benchmarks/mixed/problems.py: Branin with a three-way choice and an "
     "integer; Ackley in three real and three integer variables; a fin array's heat per unit mass over a material, "
     "a number of fins and a log-scale length) and the heated plate, whose PDE holds in the sensor's position for "
     "every integer heater level (pde-gp against the mixed GP there): 10 seeds, budget 40.",
     ["branin_choice", "ackley_mixed", "fins", "heated_plate"],
     ["pinnbo bench benchmarks/mixed/branin_choice.yaml benchmarks/mixed/ackley_mixed.yaml benchmarks/mixed/fins.yaml "
      "--methods gp-ei,random --seeds 10 --budget 40 --initial-points 10 --jobs 2 --output bench-results/mixed",
      "pinnbo bench cases/heated_plate.yaml --methods pde-gp,gp-ei,random --seeds 10 --budget 40 --initial-points 10 "
      "--jobs 2 --output bench-results/mixed-pde"]),
    ("Noisy measurements",
     "Measurements with noise of 10 % (5 % for the heat plate) of the objective's spread, `observation_noise: "
     "learned`: the true regret of the design each run recommends (the best posterior mean) against that of its best "
     "observed design, what a user who sees only the measurements would otherwise pick: 10 seeds, budget 40. `auto` "
     "runs `pde-gp` on the harmonic function and the heat plate (with its corners' angle functions) and `gp-ei` on "
     "Levy's function (no PDE); "
     "`pde-gp`, which `auto` also runs on Helmholtz's and the Poisson problem, is measured there by its name.",
     ["harmonic_noisy", "levy_noisy", "heat_bc1_noisy", "helmholtz_noisy", "poisson_noisy"],
     ["pinnbo bench benchmarks/noise/harmonic_noisy.yaml benchmarks/noise/levy_noisy.yaml cases/heat_bc1_noisy.yaml "
      "--methods auto,gp-ei,random --reference gp-ei --seeds 10 --budget 40 --initial-points 10 --jobs 2 "
      "--output bench-results/noise",
      "pinnbo bench benchmarks/noise/helmholtz_noisy.yaml benchmarks/noise/poisson_noisy.yaml --methods pde-gp,gp-ei "
      "--reference gp-ei --seeds 10 --budget 40 --initial-points 10 --jobs 1 --output bench-results/noise"]),
    ("Several objectives",
     "ZDT1 and ZDT2 in 6 variables (reference (11, 11), largest hypervolume known) and the cantilever's mass against "
     "its deflection (reference 100 kg, 0.1 m; f* the best hypervolume of any run): the hypervolume after 30 "
     "proposals and the proposals until the gap to the largest is 1 % of the initial design's: 10 seeds, budget 40. "
     "Ax's default for several objectives is the same qLogNEHVI as gp-ehvi; Ax itself was not run.",
     ["zdt1", "zdt2", "beam_pareto"],
     ["pinnbo bench benchmarks/pareto/zdt1.yaml benchmarks/pareto/zdt2.yaml cases/beam_pareto.yaml --methods "
      "gp-ehvi,random --seeds 10 --budget 40 --initial-points 10 --jobs 2 --output bench-results/pareto"]),
]
# Families measured into their own root, with case names that other families use too: a family
# with a root name reads only that root, and the others never read it.
FAMILIES += [
    ("Optuna's samplers beside pinnbo's methods",
     "Optuna's TPE and GP samplers (`optuna-tpe`, `optuna-gp`, Optuna 5.0 at its defaults), the peers an Optuna user "
     "would pick, after the same initial design as pinnbo's methods: the PDE cases (pde-gp tested against each) and "
     "the constrained ones (gp-cei tested against each), 10 seeds, budgets 40 and 60.",
     ["heat_bc1", "beam", "helmholtz", "harmonic", "branin_c", "simionescu", "gas", "welded_beam", "speed_reducer"],
     ["pinnbo bench cases/heat_bc1.yaml cases/beam.yaml cases/helmholtz.yaml cases/harmonic.yaml --methods "
      "pde-gp,gp-ei,optuna-tpe,optuna-gp --reference pde-gp --seeds 10 --budget 40 --initial-points 10 --jobs 2 "
      "--output bench-results/optuna-pde",
      "pinnbo bench cases/branin_c.yaml cases/simionescu.yaml cases/gas.yaml cases/welded_beam.yaml "
      "cases/speed_reducer.yaml --methods gp-cei,optuna-tpe,optuna-gp --reference gp-cei --seeds 10 --budget 60 "
      "--initial-points 10 --jobs 2 --output bench-results/optuna-constrained"],
     ("optuna-pde", "optuna-constrained")),
]
OWN_ROOTS = {name for family in FAMILIES if len(family) > 4 for name in family[4]}


def family_roots(roots: list[Path], own: tuple[str, ...]) -> list[Path]:
    """The roots a family reads: its own (by folder name), or every root no family owns."""
    return [r for r in roots if r.name in own] if own else [r for r in roots if r.name not in OWN_ROOTS]
CALIBRATION_COMMANDS = [
    "python benchmarks/calibration_accuracy.py cases/rossler.yaml --seeds 20 --jobs 2 --output bench-results/calibration",
    "python benchmarks/calibration_accuracy.py cases/lorenz63.yaml --methods exploit+,random --seeds 5 --budget 100 "
    "--reference-points 1000 --jobs 2 --output bench-results/calibration",
]


def _pm(stats: dict | None, digits: int = 4) -> str:
    if not stats or stats.get("mean") is None:
        return "—"
    return fmt(stats["mean"], digits) + ("" if stats.get("se") is None else f" ± {fmt(stats['se'], 2)}")


def _proposals(stats: dict | None) -> str:
    if not stats or not stats.get("n"):
        return "—"
    return f"{'—' if stats['median'] is None else fmt(stats['median'], 3)} [{stats['hits']}/{stats['n']}]"


def _p(tests: dict | None, method: str) -> str:
    if not tests or method == tests["reference"]:
        return "—"
    p = tests["baselines"].get(method, {}).get("p_adjusted")
    return "—" if p is None else f"{p:.2g}" + (" *" if p <= tests["alpha"] else "")


def provenance(folder: Path) -> tuple[list[str], list[str], list[str]]:
    """The commits and CPUs recorded by the case's runs (most frequent first), and the first and last
    dates (UTC) their summaries were written."""
    commits, cpus, dates = Counter(), Counter(), set()
    for path in folder.glob("runs/*/*/summary.json"):
        found = json.loads(path.read_text()).get("versions", {})
        commits[found.get("pinnbo_commit", "unknown")] += 1
        cpus[found.get("cpu", found.get("machine", "unknown"))] += 1
        dates.add(datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date().isoformat())
    return ([c for c, _ in commits.most_common()], [c for c, _ in cpus.most_common()],
            sorted({min(dates), max(dates)}) if dates else [])


def case_table(summary: dict) -> list[str]:
    constrained = "constraints" in summary
    known = summary["optimum"] is not None
    noisy = all("recommended_regret" in summary["results"][m] for m in summary["methods"])
    headers = ["method", "runs", "hypervolume" if "objectives" in summary else "best feasible" if constrained else "best"]
    if constrained:
        headers.append("no feasible")
    if known:
        headers += ["regret"] + [f"to {100 * t:g}%" for t in REGRET_TARGETS] + ["log₁₀ r"]
    if noisy:
        headers += ["regret (recommended)", "regret (best observed)"]
    headers += ["s/iter", "p (BH)"]
    efficiency = (summary.get("tests") or {}).get("efficiency")
    if efficiency:
        headers.append(f"p to {100 * efficiency['target']:g}% (BH)")
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for method in summary["methods"]:
        r = summary["results"][method]
        row = [f"`{method}`", f"{r['completed']}/{r['runs']}", _pm(r["final_best"], 6)]
        if constrained:
            row.append(f"{len(r['no_feasible_seeds'])}/{r['completed']}")
        if known:
            row += [_pm(r["simple_regret"], 3)] + [_proposals(r.get(target_key(t))) for t in REGRET_TARGETS]
            row.append(_pm(r.get("mean_log10_regret"), 3))
        if noisy:
            row += [_pm(r.get("recommended_regret"), 3), _pm(r.get("observed_best_regret"), 3)]
        row += [_pm(r["seconds_per_iteration"], 3), _p(summary.get("tests"), method)]
        if efficiency:
            row.append(_p(efficiency, method))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def _case_folder(roots: list[Path], case: str) -> Path | None:
    """The first root's folder of ``case`` that holds a bench summary."""
    return next((root / case for root in roots if (root / case / "summary.json").exists()), None)


def physics_intro(roots: list[Path], cost: Path | None) -> list[str]:
    """The physics tables, heading the PDE families: does the PDE pay under ``auto``, in 1 to 6
    variables, and what a step costs as the data grow."""
    cases = FAMILIES[0][2] + FAMILIES[1][2] + FAMILIES[2][2]
    files = {p.stem: p for p in [*(ROOT / "cases").glob("*.yaml"), *(ROOT / "benchmarks" / "kinds").glob("*.yaml"),
                                 *(ROOT / "benchmarks" / "dimensions").glob("*.yaml")]}
    folders = {case: (folder, files.get(case)) for case in cases
               if (folder := _case_folder(family_roots(roots, ()), case)) is not None}
    runs_cost = None if cost is None else cost.parent / "runs-cost"
    return ["### Does the PDE pay?", "",
            "Per case, what `auto` (the default) runs and its proposals to 1% against the better of `gp-ei` and "
            "`gp-ucb` (median [seeds that got there]; — never in half the seeds); ratio < 1: fewer evaluations than "
            "the GP; cost: its seconds per proposal over gp-ei's in budget-40 runs from the same initial designs, "
            "the mean of the seeds' ratios (\"A step's cost in runs\", below; 1.0 where `auto` runs gp-ei); then "
            "each physics-informed method's proposals to 1%. Where a bench ran the chosen method and not `auto`, "
            "`auto`'s figures are that method's: its runs are the chosen method's, proposal for proposal "
            "(tests/runner/test_auto.py). The tables of each case, further down, have every method.", "",
            *physics_summary(folders, runs_cost), "",
            "### A step as the data grow", "",
            "Seconds per proposal (fit and acquisition) after t observations, as parallel runs reach them; "
            "pde-gp's figure is its average over its refit schedule (benchmarks/step_cost.py says how), with its "
            "warm and refit steps beside it. The last three cases carry pde-gp's functions for boundary data that "
            "jump (docs/algorithms.md, \"Boundary data that jump at a corner\"): a plate's corner functions of the "
            "operator frozen at each corner (heat_graded_flow), and a box's 36 edge functions with their slopes and "
            "curvatures (heat_box_bc3, and heat_box_graded_tensor_flow, the dearest of the twelve boxes in runs).", "",
            *step_cost_section(None if cost is None else cost / "step_cost.json"),
            *runs_cost_section(runs_cost, cases),
            *refit_section(None if cost is None else cost.parent / "refits")]


def runs_cost_section(root: Path | None, cases: list[str]) -> list[str]:
    """What a budget-40 run pays per proposal against gp-ei (physics_tables.RUNS_COST_COMMAND's
    bench), with where and when its runs were made."""
    first, *refits = [n for n in range(*RUNS_COST_WINDOW) if restart_due(n)]
    # which refits run more than the later refits' long start, by pde-gp's own rule
    early = [n for n in refits if refit_starts(n, {"first_fit_at": first}) != REFIT_LENGTHSCALES]
    late = [n for n in refits if n not in early]
    out = ["### A step's cost in runs", "",
           "Seconds per proposal in budget-40 runs of `auto` and `gp-ei` from the same initial designs, over "
           f"evaluations {RUNS_COST_WINDOW[0] + 1}–{RUNS_COST_WINDOW[1]}, one job alone on the machine: what a run "
           f"pays, its first fit and refits included (`pde-gp` fits from its fresh starts at {first} observations, "
           f"refits with both its long starts at {' and '.join(map(str, early))} and with the shorter one at "
           f"{', '.join(map(str, late[:-1]))} and {late[-1]}, unless they trail; "
           "benchmarks/step_cost.py's figure above spreads one timed refit over its grid at 40 observations). "
           "The ratio is each seed's against the same seed's `gp-ei`, then their mean. The first run after an "
           "install also compiles pde-gp's fused kernels in its first fit (about 5 s, cached for every later "
           "run), which the first case's seed 0 carries.", "",
           "```bash", RUNS_COST_COMMAND, "```", ""]
    folders = {case: root / case for case in cases if root is not None and (root / case / "runs").is_dir()}
    if not folders:
        return out + ["Not measured yet: run the command above.", ""]
    commits, cpus, dates = Counter(), Counter(), set()
    for folder in folders.values():
        found = provenance(folder)
        commits.update(found[0])
        cpus.update(found[1])
        dates.update(found[2])
    span = " to ".join(sorted({min(dates), max(dates)}))
    return out + [*runs_cost_rows(folders), "",
                  f"Commit {', '.join(c for c, _ in commits.most_common())}; "
                  f"{'; '.join(c for c, _ in cpus.most_common())}; {span}.", ""]


MIXED_COST_COMMAND = ("python benchmarks/mixed_step_cost.py --dims 4 8 --t 20 60 --asks 4 "
                      "--output bench-results/cost/mixed.json")


def mixed_cost_section(path: Path | None) -> list[str]:
    """Seconds per proposal on mixed boxes against continuous ones, and gp-ehvi's (mixed_step_cost.py)."""
    out = ["### Step cost: mixed and several objectives", "",
           "gp-ei's seconds per proposal on a box of d variables (a quarter integers, a quarter three-way choices) "
           "against [0, 1]^d, and gp-ehvi's on ZDT1 in d variables, after t observations; one process, one torch "
           "thread, the methods one after the other (targets: a mixed proposal within 3× a continuous one; gp-ehvi "
           "under 2 s at 60 observations).", "", "```bash", MIXED_COST_COMMAND, "```", ""]
    if path is None or not path.exists():
        return out + ["Not measured yet: run the command above.", ""]
    timed = json.loads(path.read_text())
    out += ["| d | t | gp-ei continuous (s) | gp-ei mixed (s) | mixed / continuous | gp-ehvi, ZDT1 (s) |",
            "|---|---|---|---|---|---|"]
    out += [f"| {r['d']} | {r['t']} | {r['continuous']:.3f} | {r['mixed']:.3f} | {r['mixed'] / r['continuous']:.2f} | "
            f"{r['ehvi']:.3f} |" for r in timed["rows"]]
    return out + ["", f"Timed at commit {timed['commit']}, {timed['cpu']}, {timed['date']}; mean of {timed['asks']} "
                      "asks after one untimed ask.", ""]


def calibration_section(folder: Path) -> list[str]:
    """The calibration benchmark's tables (benchmarks/calibration_accuracy.py), from its accuracy.json files."""
    from calibration_accuracy import markdown

    out = ["## Calibration accuracy", "",
           "How close `pinnbo calibrate`'s surrogate posterior comes to the true one, per design strategy, as in "
           "Kim & Sanz-Alonso's Tables 2 and 3 (definitions in [guide/calibration.md](guide/calibration.md) and "
           "`benchmarks/calibration_accuracy.py`):", "", "```bash", *CALIBRATION_COMMANDS, "```", ""]
    found = sorted(folder.glob("*/accuracy.json")) if folder.is_dir() else []
    if not found:
        return out + ["Not measured yet: run the commands above.", ""]
    for path in found:
        report = json.loads(path.read_text())
        out += [f"### {report['problem']}", "", markdown(report), ""]
    return out


PARALLEL_COMMANDS = [
    "python benchmarks/parallel_speedup.py --methods gp-ei pinn-bo --workers 8 1 8 8 --output bench-results/parallel/speedup",
    "python benchmarks/parallel_simulation.py --cases heat_bc1 heat_bc2 beam --methods pinn-bo gp-ei --q 1 4 "
    "--durations constant --seeds 10 --budget 40 --jobs 2 --output bench-results/parallel/quality",
    "python benchmarks/parallel_simulation.py --cases heat_bc1 --methods pinn-bo gp-ei --q 1 2 4 8 16 "
    "--durations constant lognormal --seeds 3 --budget 40 --jobs 2 --output bench-results/parallel/simulation",
]


def parallel_section(folder: Path) -> list[str]:
    """The asynchronous-run benchmarks (benchmarks/parallel_speedup.py, parallel_simulation.py)."""
    out = ["## Many evaluations at once", "",
           "`--workers q` ([guide/parallel.md](guide/parallel.md)): the wall-time speed-up with real processes and "
           "an oracle that sleeps, the quality of q = 4 asynchronous runs against sequential ones at equal "
           "evaluations, and a discrete-event simulation (virtual clock: each call takes 1 unit, or exp N(0, 1) "
           "units drawn per evaluation; proposals take none) of the time to 1% regret over q.", "",
           "```bash", *PARALLEL_COMMANDS, "```", ""]
    speedups = sorted((folder / "speedup").glob("speedup-s*.json")) if (folder / "speedup").is_dir() else []
    for path in speedups:
        results = json.loads(path.read_text())
        first = results[0]
        out += [f"### Wall time, an oracle sleeping {fmt(first['seconds'])} s per call, "
                f"{len(results)} runs", "",
                f"{first['versions'].get('cpu')}; "
                f"{datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).date().isoformat()}.", "",
                "Wall s is the command's, from start to exit; loop s the run's once the cluster is up (the "
                "difference: Python, the cluster and its workers starting). T_q / T_1 against the same "
                "method's sequential run.", "",
                "| method | workers | commit | wall s | T_q / T_1 | loop s | oracle s | utilisation | "
                "s per proposal (mean) | s per proposal by designs pending |", "|---|---|---|---|---|---|---|---|---|---|"]
        walls: dict[tuple, list[float]] = {}
        for r in results:
            walls.setdefault((r["method"], r["workers"]), []).append(r["wall_seconds"])
        for r in sorted(results, key=lambda r: (r["method"], r["workers"])):
            base = walls.get((r["method"], 1))
            ratio = "—" if not base else f"{r['wall_seconds'] / float(np.median(base)):.3f}"
            utilisation = (r.get("parallel") or {}).get("utilisation")
            by_pending = ", ".join(f"{k}: {v:.2f}" for k, v in r["ask_seconds_by_pending"].items())
            loop = (r.get("parallel") or {}).get("wall_seconds")
            commit = r["versions"].get("pinnbo_commit", "unknown")
            commit = commit[:7] + ("-dirty" if commit.endswith("-dirty") else "")
            out.append(f"| {r['method']} | {r['workers']} | {commit} | "
                       f"{r['wall_seconds']:.1f} | {ratio} | {fmt(loop, 3)} | "
                       f"{r['oracle_seconds']:.1f} | {fmt(utilisation, 3)} | {r['ask_seconds_mean']:.3f} | {by_pending} |")
        medians = [f"{method} {float(np.median(w)) / float(np.median(walls[(method, 1)])):.3f} (q = {q}, "
                   f"{len(w)} run{'s' * (len(w) > 1)})" for (method, q), w in sorted(walls.items())
                   if q > 1 and (method, 1) in walls]
        if medians:
            out += ["", "Median T_q / T_1: " + "; ".join(medians) + "."]
        out.append("")
    for name, title in (("quality", "Quality at equal evaluations: q = 4 asynchronous against sequential"),
                        ("simulation", "Discrete-event simulation over q")):
        table = folder / name / "table.md"
        if not table.exists():
            out += [f"### {title}", "", "Not measured yet: run the commands above.", ""]
            continue
        runs = [json.loads(line) for line in (folder / name / "runs.jsonl").read_text().splitlines()]
        commits = Counter(r.get("versions", {}).get("pinnbo_commit", "unknown") for r in runs)
        cpus = Counter(r.get("versions", {}).get("cpu", "unknown") for r in runs)
        dates = sorted({r.get("date", "unknown") for r in runs})
        out += [f"### {title}", "",
                f"{len(runs)} runs; commit {', '.join(c for c, _ in commits.most_common())}; "
                f"{'; '.join(c for c, _ in cpus.most_common())}; {' to '.join(sorted({dates[0], dates[-1]}))}. "
                "Proposals and time to 1%: medians over seeds [seeds that got there]; speed-up: the median over seeds "
                "of T1/Tq; p: two-sided Mann–Whitney against q = 1 (runs that never got there ranked last).", "",
                table.read_text().rstrip(), ""]
        figure = folder / name / "speedup.png"
        if name == "simulation" and figure.exists():
            target = ROOT / "docs" / "figures" / "parallel-speedup.png"
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(figure.read_bytes())
            out += ["![speed-up to 1% regret over q](figures/parallel-speedup.png)", ""]
    return out


def optuna_section(path: Path) -> list[str]:
    """PinnboSampler against Optuna's samplers in Optuna studies (benchmarks/optuna/compare.py)."""
    if not path.exists():
        return ["### pinnbo inside Optuna", "", "Not measured yet: `python benchmarks/optuna/compare.py "
                "cases/heat_bc1.yaml cases/harmonic.yaml --seeds 10 --trials 40`.", ""]
    data = json.loads(path.read_text())
    meta = data["meta"]
    out = ["### pinnbo inside Optuna", "",
           f"An Optuna study with `PinnboSampler(method=\"pde-gp\", pde=<the case's PDE>)` against Optuna's TPE "
           f"and GP samplers: for each seed the three studies start from the same {meta['initial_points']} initial "
           f"designs (pinnbo's, enqueued) and run {meta['trials']} trials; trials after the initial design until the "
           "best value is within 1 % of the initial design's gap to f*, median [seeds that got there].", "",
           "```bash", meta["command"], "```", "",
           f"Optuna {meta['optuna']}; commit {meta['commit']}; {meta['machine']}; {meta['date']}; one torch thread.", "",
           "| case | sampler | trials to 1 % | seconds per study (median) |", "|---|---|---|---|"]
    for case, rows in data["results"].items():
        for label, runs in rows.items():
            reached = [r["to_1pct"] for r in runs if r["to_1pct"] is not None]
            median = f"{np.median(reached):g}" if reached and 2 * len(reached) >= len(runs) else "—"
            out.append(f"| {case} | {label} | {median} [{len(reached)}/{len(runs)}] | "
                       f"{np.median([r['seconds'] for r in runs]):.1f} |")
    return out + [""]


def report_cost_section(path: Path) -> list[str]:
    """What the report costs (benchmarks/report_cost.py)."""
    if not path.exists():
        return ["### The report's cost", "", "Not measured yet: `python benchmarks/report_cost.py "
                "cases/heat_bc1.yaml --methods gp-ei,pinn-bo --budget 100`.", ""]
    data = json.loads(path.read_text())
    out = ["### The report's cost", "",
           f"Each method's run of {data['case']} (budget {data['budget']}) without and with `--report`, "
           "alternated three times (the medians), and `pinnbo report` on the finished folder (process start-up "
           "included); targets: `--report` under 10 % of the run, the report under 10 s.", "",
           "```bash", data["command"], "```", "", f"Commit {data['commit']}; {data['machine']}; {data['date']}.", "",
           "| method | run | with --report | extra | pinnbo report | same history |", "|---|---|---|---|---|---|"]
    for row in data["rows"]:
        out.append(f"| `{row['method']}` | {row['run_seconds']:.1f} s | {row['run_with_report_seconds']:.1f} s | "
                   f"{100 * row['overhead']:+.1f} % | {row['report_seconds']:.1f} s | "
                   f"{'yes' if row['same_history'] else 'no'} |")
    return out + [""]


def render(roots: list[Path], calibration: Path | None = None, parallel: Path | None = None,
           cost: Path | None = None, optuna: Path | None = None) -> str:
    out = ["# Results", "",
           "Generated by `python benchmarks/results.py` from `pinnbo bench` folders; do not edit by hand. "
           "Columns as in [guide/bench.md](guide/bench.md#what-the-table-says): best and regret are means ± "
           "standard error over seeds; `to 10%` / `to 1%` the median proposals after the initial design until "
           "the normalised regret |f* − best| / |f* − m0| reaches 0.1 / 0.01 [seeds that got there]; s/iter the "
           "seconds per proposal (fit + acquisition, oracle excluded; wall time on the machine named, which other benches may have shared, so compare it within a table, "
           "and of the commits named; \"A step's cost in runs\" has the physics default's against gp-ei's at a later "
           "commit); p (BH) the one-sided Welch test of the "
           "first method's final best against each other's and p to 1% (BH) the rank test on proposals to 1 %, "
           "Benjamini–Hochberg adjusted (`*`: significant at 0.05). Every method of a seed starts from the same "
           "initial design. The algorithms: [algorithms.md](algorithms.md); older measurements, with the "
           "commits that made them: [archive/](archive/).", ""]
    for title, about, cases, command, *own in FAMILIES:
        out += [f"## {title}", "", about, "", "```bash", *(c.replace("ROOT", "bench-results/results") for c in command),
                "```", ""]
        mine = family_roots(roots, own[0] if own else ())
        if cases is FAMILIES[0][2]:
            out += physics_intro(roots, cost)
        for case in cases:
            folder = _case_folder(mine, case)
            if folder is None:
                out += [f"### {case}", "", "Not measured yet: run the command above.", ""]
                continue
            summary = json.loads((folder / "summary.json").read_text())
            commits, cpus, dates = provenance(folder)
            optimum = "unknown" if summary["optimum"] is None else fmt(summary["optimum"])
            out += [f"### {case}", "",
                    f"{summary['problem']}, {summary['sense']}, f* {optimum}; budget {summary['budget']} with "
                    f"{summary['initial_points']} initial points, seeds {seeds_text(summary['seeds'])}"
                    + (" (smoke settings: a check of the machinery, not a result)" if summary["smoke"] else "")
                    + f". Commit {', '.join(commits)}; {'; '.join(cpus)}; {' to '.join(dates)}.", ""]
            out += case_table(summary) + [""]
        if title == "Variables of every kind":
            out += mixed_cost_section(None if cost is None else cost / "mixed.json")
        if own and optuna is not None:
            out += optuna_section(optuna / "compare.json")
    if cost is not None:
        out += ["## The report", ""] + report_cost_section(cost / "report.json")
    if calibration is not None:
        out += calibration_section(calibration)
    if parallel is not None:
        out += parallel_section(parallel)
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path, help="bench output folders (the first holding a case wins)")
    parser.add_argument("--calibration", type=Path, default=Path("bench-results/calibration"),
                        help="the calibration benchmark's output folder")
    parser.add_argument("--parallel", type=Path, default=Path("bench-results/parallel"),
                        help="the asynchronous-run benchmarks' output folder")
    parser.add_argument("--cost", type=Path, default=Path("bench-results/cost"),
                        help="the timings' folder (step_cost.py's, mixed_step_cost.py's and report_cost.py's JSON "
                             "files); beside it, runs-cost/ (the in-runs bench) and refits/ (refit_outcomes.py's)")
    parser.add_argument("--optuna", type=Path, default=Path("bench-results/optuna"),
                        help="benchmarks/optuna/compare.py's output folder (compare.json)")
    parser.add_argument("--output", default=str(ROOT / "docs" / "results.md"), help="file to write, or - to print")
    args = parser.parse_args()
    text = render(args.roots, args.calibration, args.parallel, args.cost, args.optuna)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
