"""Kim & Sanz-Alonso's four methods run with the `bayes_opt` package (1.4.3) instead of pinnbo.

Kim & Sanz-Alonso's GP-UCB+ / EXPLOIT+ table (docs/algorithms.md) does not hold with pinnbo's GP methods
(docs/benchmarks.md, "Kim & Sanz-Alonso's random exploration"). The paper's §6.1 settings (Matérn
ν = 2.5 from "the default" with initial lengthscale 1, β^½ = 2, EXPLOIT as β = 0, EI and PI as the
other baselines) are those of `bayes_opt` (`BayesianOptimization` with `UtilityFunction("ucb",
kappa)`), the release of the paper's time being 1.4.3. This script runs the paper's algorithms with
that package, unchanged, to tell two explanations apart: the ordering comes from the algorithms (then
it shows here and pinnbo's GP methods differ somewhere), or from what `bayes_opt` does that pinnbo
does not. What it does differently is the acquisition maximisation (`bayes_opt.util.acq_max`): the
best of 10 000 uniform points, or of L-BFGS-B runs with finite-difference gradients from 10 uniform
starts if one of them ends higher; pinnbo refines the best of 512 Sobol points with L-BFGS-B and
exact gradients (BoTorch's ``optimize_acqf``). Its GP is scikit-learn's: one lengthscale, unit
amplitude on standardised targets, 6 ML starts, ``alpha = 1e-6``.

Per run: ``--initial`` uniform points (the same for every method at a seed), then, until
``--budget`` observations: the acquisition's point (``kappa`` 2 for GP-UCB, 0 for EXPLOIT), and
for the "+" methods a uniform point after each (Algorithm 2 of the paper; the budget counts
observations). Every run's values go to ``OUTPUT/<function>/<method>/seed_<k>.json`` (a finished
run is skipped when the script is run again); the table printed at the end is mean ± standard error
of the final simple regret (f* = 0 for both functions, so the best value found is the regret),
with the best without the random points for the "+" methods, and one-sided Welch p-values of each
"+" method against each plain one.

    pip install bayesian-optimization==1.4.3     # not a pinnbo dependency; it brings scikit-learn
    python benchmarks/ksa_bayes_opt.py --functions ackley,levy --budget 200 --seeds 10 --jobs 2 \\
        --output bench-results/ksa_bayes_opt200
"""

from __future__ import annotations

import os

# One BLAS thread per process: two runs in parallel on two cores otherwise thrash (set before numpy).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pinnbo.files import write_json  # noqa: E402
from problems.sfu import ACKLEY_BOUND, LEVY_BOUND, ackley_values, levy_values  # noqa: E402

FUNCTIONS = {"ackley": (ackley_values, ACKLEY_BOUND), "levy": (levy_values, LEVY_BOUND)}
# method -> (kappa of the UCB utility, a uniform point after each acquisition point)
METHODS = {"gp-ucb+": (2.0, True), "exploit+": (0.0, True), "gp-ucb": (2.0, False), "exploit": (0.0, False)}


def run_one(function: str, method: str, seed: int, budget: int, initial: int, dim: int) -> dict:
    """One run; returns the values in evaluation order and which of them were random points."""
    from bayes_opt import BayesianOptimization, UtilityFunction

    fn, bound = FUNCTIONS[function]
    kappa, plus = METHODS[method]
    names = [f"x{i:02d}" for i in range(dim)]
    # Streams: the initial design depends on the seed only (shared by the four methods); bayes_opt's
    # own stream (GP restarts, acquisition starts) and the exploration points on seed and method.
    init_rng = np.random.default_rng([seed, 0])
    method_key = list(METHODS).index(method) + 1
    explore_rng = np.random.default_rng([seed, method_key, 1])
    optimizer = BayesianOptimization(f=None, pbounds={n: (-bound, bound) for n in names}, verbose=0,
                                     random_state=np.random.RandomState([seed, method_key]),
                                     allow_duplicate_points=True)
    utility = UtilityFunction(kind="ucb", kappa=kappa)
    values: list[float] = []
    roles: list[str] = []
    seconds: list[float] = []

    def observe(x: np.ndarray, role: str) -> None:
        value = float(fn(x[None, :])[0])
        optimizer.register(params=dict(zip(names, x)), target=-value)   # bayes_opt maximises
        values.append(value)
        roles.append(role)

    for x in init_rng.uniform(-bound, bound, size=(initial, dim)):
        observe(x, "initial")
    while len(values) < budget:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            suggestion = optimizer.suggest(utility)
        seconds.append(time.perf_counter() - start)
        observe(np.array([suggestion[n] for n in names]), "acquisition")
        if plus and len(values) < budget:
            observe(explore_rng.uniform(-bound, bound, size=dim), "exploration")
    return {"function": function, "method": method, "seed": seed, "budget": budget, "initial": initial,
            "dim": dim, "values": values, "roles": roles, "suggest_seconds": seconds}


def _task(args: tuple) -> tuple[Path, dict]:
    path, function, method, seed, budget, initial, dim = args
    result = run_one(function, method, seed, budget, initial, dim)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, result)   # on disk whole or not at all, so a rerun skips only finished runs
    return path, result


def final_regret(result: dict, without_random: bool = False) -> float:
    values = [v for v, r in zip(result["values"], result["roles"]) if not (without_random and r == "exploration")]
    return float(min(values))   # f* = 0 for Ackley and Levy: the best value is the simple regret


def _g(x: float | None) -> str:
    return "—" if x is None else f"{x:.2g}"


def summarise(results: dict, methods: list[str]) -> str:
    from pinnbo.bench.statistics import mean_se, welch_one_sided

    lines = ["| function | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    tests = []
    for function, by_method in results.items():
        regrets = {m: [final_regret(r) for r in by_method[m]] for m in methods if by_method.get(m)}
        cells = []
        for m in methods:
            if m not in regrets:
                cells.append("—")
                continue
            s = mean_se(regrets[m])
            cell = f"{s['mean']:.3g} ± {_g(s['se'])} ({len(regrets[m])})"
            if METHODS[m][1]:
                w = mean_se([final_regret(r, without_random=True) for r in by_method[m]])
                cell += f"; w/o random {w['mean']:.3g}"
            cells.append(cell)
        lines.append(f"| {function} | " + " | ".join(cells) + " |")
        for plus in (m for m in regrets if METHODS[m][1]):
            for plain in (m for m in regrets if not METHODS[m][1]):
                p = welch_one_sided(regrets[plus], regrets[plain], "min")["p_value"]
                q = welch_one_sided(regrets[plain], regrets[plus], "min")["p_value"]
                tests.append(f"{function}: {plus} better than {plain}: p = {_g(p)}; the reverse: p = {_g(q)}")
    mean_suggest = {m: np.mean([np.mean(r["suggest_seconds"]) for rs in results.values() for r in rs.get(m, [])])
                    for m in methods if any(rs.get(m) for rs in results.values())}
    lines.append("")
    lines.append("seconds per acquisition point (GP fit + acq_max), mean over runs: "
                 + ", ".join(f"{m} {s:.2f}" for m, s in mean_suggest.items()))
    return "\n".join(lines + [""] + tests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", default="ackley,levy")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=int, default=200, help="observations per run, initial ones included")
    parser.add_argument("--initial", type=int, default=10)
    parser.add_argument("--dim", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)

    functions = args.functions.split(",")
    methods = args.methods.split(",")
    for f in functions:
        if f not in FUNCTIONS:
            parser.error(f"--functions: unknown {f!r}; expected some of {', '.join(FUNCTIONS)}")
    for m in methods:
        if m not in METHODS:
            parser.error(f"--methods: unknown {m!r}; expected some of {', '.join(METHODS)}")
    if not 1 <= args.initial < args.budget:
        parser.error(f"--initial: expected 1 <= initial < budget ({args.budget}), got {args.initial}")

    try:
        import bayes_opt  # noqa: F401
    except ImportError:
        parser.error("the bayes_opt package is not installed; expected: pip install bayesian-optimization==1.4.3")

    results: dict = {f: {m: [] for m in methods} for f in functions}
    todo = []
    for seed in range(args.seeds):
        for f in functions:
            for m in methods:
                path = args.output / f / m / f"seed_{seed}.json"
                if path.exists():
                    done = json.loads(path.read_text())
                    if (done["budget"], done["initial"], done["dim"]) == (args.budget, args.initial, args.dim):
                        results[f][m].append(done)
                        continue
                todo.append((path, f, m, seed, args.budget, args.initial, args.dim))
    print(f"{len(todo)} runs to do, {sum(len(v) for r in results.values() for v in r.values())} on disk",
          flush=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for path, result in pool.map(_task, todo):
            results[result["function"]][result["method"]].append(result)
            print(f"{path}: regret {final_regret(result):.4g}", flush=True)
    for by_method in results.values():
        for runs in by_method.values():
            runs.sort(key=lambda r: r["seed"])
    table = summarise(results, methods)
    (args.output / "table.md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
