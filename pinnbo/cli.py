"""The ``pinnbo`` command: run, calibrate, bench, ask, tell, problems, schema (and show, report,
export: :mod:`pinnbo.cli_results`).

User mistakes (a bad case file, an unknown method, a results folder that would be overwritten) end
with one line ``error: <field>: <what was expected>`` on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from pinnbo.cli_app import app, console, err_console, fail
from pinnbo.errors import RunStopped, UserError
from pinnbo.runner import SCHEDULER_VARIABLE


def smoke_requested(flag: bool) -> bool:
    return flag or os.environ.get("PINNBO_SMOKE", "") not in ("", "0", "false")


# Overrides shared by run, bench, ask and tell (one definition, so their help never drifts apart).
SEED_OPTION = typer.Option(None, help="Override the case's seed.")
BUDGET_OPTION = typer.Option(None, help="Override the total number of evaluations.")
INITIAL_POINTS_OPTION = typer.Option(None, "--initial-points", help="Override the number of initial-design points "
                                     "(scrambled Sobol from the seed, shared by every method).")
OUTPUT_OPTION = typer.Option(None, help="Results folder (default results/<name>).")
DEVICE_OPTION = typer.Option(None, help="cpu, cuda or cuda:N.")
SMOKE_OPTION = typer.Option(False, "--smoke", help="Tiny budget and cheap settings (also PINNBO_SMOKE=1); "
                            "results in results/<name>-smoke unless --output is given.")


RESUME_OPTION = typer.Option(False, "--resume", help="Continue an interrupted run in its results folder.")
OVERWRITE_OPTION = typer.Option(False, "--overwrite", help="Replace the results of an earlier run.")
QUIET_OPTION = typer.Option(False, "--quiet", help="No live display.")
WORKERS_OPTION = typer.Option(None, "--workers", help="Evaluations in flight at once, on a local Dask cluster "
                              "(or the --scheduler's); 1 (default): one at a time.")
SCHEDULER_OPTION = typer.Option(None, "--scheduler", envvar=SCHEDULER_VARIABLE, show_envvar=True,
                                help="Address of an existing Dask scheduler (tcp://host:8786); its workers "
                                "evaluate, at most --workers at once. Only from here or the environment, never "
                                "from a case file: the client runs what a scheduler sends back.")
BATCH_OPTION = typer.Option(False, "--batch", help="Propose --workers designs at a time and wait for all of them "
                            "(default: a new design as soon as one evaluation comes back).")
# The overrides a resume must repeat (a resume with another seed or folder would be refused).
RESUMED_OVERRIDES = ("method", "seed", "budget", "initial_points", "output", "device", "workers", "scheduler")


def _run_case(case: Path, overrides: dict, *, resume: bool, overwrite: bool, quiet: bool, command: str = "run",
              check=None):
    """Load ``case`` with ``overrides``, run it (or resume it) with the live display and write its
    report: (case, problem, history, summary, evaluations recorded before). Every way it can stop is
    one line and an exit code (:func:`fail`). ``check(case, problem)`` refuses a case before any
    evaluation (a UserError)."""
    from pinnbo.bench.plan import recorded_evaluations
    from pinnbo.report.live import LiveProgress
    from pinnbo.report.live_report import LiveReport
    from pinnbo.report.summary import write_report
    from pinnbo.runner.build import build_optimizer, build_problem, run_settings
    from pinnbo.runner.case import load_case
    from pinnbo.runner.loop import run as run_loop
    from pinnbo.runner.steps import RunInterrupted

    loaded = None

    def again() -> str:
        flags = "".join(f" --{k.replace('_', '-')} {overrides[k]}" for k in RESUMED_OVERRIDES
                        if overrides.get(k) is not None)
        return f"pinnbo {command} {case} --resume{flags}" + (" --smoke" if loaded is not None and loaded.smoke else "")

    try:
        loaded = load_case(case, overrides)
        problem = build_problem(loaded)
        if check is not None:
            check(loaded, problem)
        optimizer = build_optimizer(loaded, problem)
        settings = run_settings(loaded, problem, resume=resume, overwrite=overwrite)
        recorded = recorded_evaluations(loaded.output_dir) if resume else 0
        observer = None if quiet else LiveProgress(title=f"{loaded.name} · {loaded.method} · seed {loaded.seed}",
                                                   choice=optimizer.choice)
        if loaded.report:
            observer = LiveReport(loaded.output_dir, problem, observer)
        try:
            history = run_loop(problem, optimizer, settings, observer)
        finally:
            if observer is not None:
                observer.stop()
        summary = write_report(history, problem, loaded.to_dict())
    except RunStopped as exc:
        where = "" if loaded is None else f"; every completed evaluation is in {loaded.output_dir}"
        fail(f"{exc}{where}. Continue with: {again()}", code=1)
    except UserError as exc:
        fail(str(exc))
    except RunInterrupted as exc:
        err_console.print(f"{exc}; every completed evaluation is in {loaded.output_dir}. Continue with: {again()}",
                          soft_wrap=True, highlight=False, markup=False)
        raise typer.Exit(143 if exc.terminated else 130)
    return loaded, problem, history, summary, recorded


@app.command()
def run(
    case: Path = typer.Argument(..., help="Case file (YAML), e.g. cases/heat_bc1.yaml"),
    method: Optional[str] = typer.Option(None, help="Override the case's method (its method_params are then "
                                         "dropped, and the results go to results/<name>-<method>)."),
    seed: Optional[int] = SEED_OPTION,
    budget: Optional[int] = BUDGET_OPTION,
    initial_points: Optional[int] = INITIAL_POINTS_OPTION,
    output: Optional[Path] = OUTPUT_OPTION,
    device: Optional[str] = DEVICE_OPTION,
    resume: bool = RESUME_OPTION,
    overwrite: bool = OVERWRITE_OPTION,
    smoke: bool = SMOKE_OPTION,
    quiet: bool = QUIET_OPTION,
    warm_start: Optional[Path] = typer.Option(None, "--warm-start", help="Evaluations made elsewhere (.csv or "
                                              ".jsonl), recorded before the first proposal."),
    target: Optional[float] = typer.Option(None, help="Stop once the best observed value reaches this."),
    max_time: Optional[float] = typer.Option(None, "--max-time", help="Stop after this many seconds (the "
                                             "evaluations under way finish)."),
    workers: Optional[int] = WORKERS_OPTION,
    scheduler: Optional[str] = SCHEDULER_OPTION,
    batch: bool = BATCH_OPTION,
    report: bool = typer.Option(False, "--report", help="Keep RESULTS/report.html up to date during the run "
                                "(it reloads itself in a browser; pinnbo report writes it afterwards)."),
) -> None:
    """Optimise the problem of a case file and write results, summary and plots."""
    from pinnbo.report.show import run_outcome

    loaded, problem, history, summary, recorded = _run_case(
        case, {"method": method, "seed": seed, "budget": budget, "initial_points": initial_points, "device": device,
               "output": None if output is None else str(output), "smoke": smoke_requested(smoke) or None,
               "warm_start": None if warm_start is None else str(warm_start.resolve()),
               "target": target, "max_time": max_time, "workers": workers, "scheduler": scheduler,
               "batch": batch or None, "report": report or None},
        resume=resume, overwrite=overwrite, quiet=quiet)
    for line in run_outcome(summary, loaded.name, loaded.output_dir, loaded.budget, recorded):
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
def calibrate(
    case: Path = typer.Argument(..., help="Case file (YAML) of a calibration problem, e.g. cases/rossler.yaml"),
    method: Optional[str] = typer.Option(None, help="Override the case's design strategy (exploit+, gp-ucb+, "
                                         "gp-ucb, random or any registered method)."),
    samples: int = typer.Option(2000, help="Posterior samples to draw from the surrogate."),
    seed: Optional[int] = SEED_OPTION,
    budget: Optional[int] = BUDGET_OPTION,
    initial_points: Optional[int] = INITIAL_POINTS_OPTION,
    output: Optional[Path] = OUTPUT_OPTION,
    device: Optional[str] = DEVICE_OPTION,
    resume: bool = RESUME_OPTION,
    overwrite: bool = OVERWRITE_OPTION,
    smoke: bool = SMOKE_OPTION,
    quiet: bool = QUIET_OPTION,
    workers: Optional[int] = WORKERS_OPTION,
    scheduler: Optional[str] = SCHEDULER_OPTION,
) -> None:
    """Calibrate a model from data: run the design strategy on the log-posterior, fit a GP surrogate
    to the design points and sample the posterior (results in <output>/calibration/)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from pinnbo.calibration import calibrate as calibrate_run, calibration_of, check_samples
    from pinnbo.report.format import fmt, print_table

    def check(loaded, problem) -> None:
        if calibration_of(problem) is None:
            raise UserError(f"problem: {loaded.problem} is not a calibration problem (pinnbo calibrate needs rossler, "
                            "lorenz63, calibration, or a problem file returning calibration_problem(...)); "
                            "pinnbo run optimises it")
        check_samples(samples)

    loaded, problem, history, summary, _ = _run_case(
        case, {"method": method, "seed": seed, "budget": budget, "initial_points": initial_points, "device": device,
               "output": None if output is None else str(output), "smoke": smoke_requested(smoke) or None,
               "workers": workers, "scheduler": scheduler},
        resume=resume, overwrite=overwrite, quiet=quiet, command="calibrate", check=check)
    folder = loaded.output_dir / "calibration"
    progress = Progress(TextColumn("[bold]sampling"), BarColumn(), MofNCompleteColumn(), console=err_console,
                        disable=quiet, transient=False)
    try:
        with progress:
            task = progress.add_task("sampling", total=samples)
            result = calibrate_run(history, problem, calibration_of(problem), folder, loaded.seed, samples,
                                   progress=lambda done, total: progress.update(task, completed=done, total=total))
    except RunStopped as exc:
        fail(f"{exc}; rerun the same command with --resume once the folder can be written", code=1)
    except UserError as exc:
        fail(str(exc))
    posterior = result.summary
    console.print(f"[bold]{loaded.name}[/bold]: {posterior['design_points']} design points, {posterior['samples']} "
                  f"samples by {posterior['sampler']} (acceptance {posterior['acceptance']:.2f})", highlight=False)
    table = Table(title="posterior (surrogate)")
    for column in ("parameter", "mean", "sd", "95% interval"):
        table.add_column(column, overflow="fold")
    for name, stats in posterior["parameters"].items():
        low, high = stats["interval_95"]
        table.add_row(escape(name), fmt(stats["mean"], 5), fmt(stats["sd"], 3),
                      escape(f"[{fmt(low, 5)}, {fmt(high, 5)}]"))
    print_table(console, table)
    console.print(f"samples, summaries and plots in {folder}/", highlight=False, markup=False)


@app.command()
def bench(
    cases: list[Path] = typer.Argument(..., help="Case files (YAML), e.g. cases/heat_bc1.yaml cases/dropwave.yaml"),
    methods: Optional[str] = typer.Option(None, help="Comma-separated methods (default: every registered one; "
                                          "for a constrained case, every one that handles constraints)."),
    seeds: str = typer.Option("10", help="Seeds for every method and case: N for 0..N-1, a range 5-9, a list "
                              "0,3,7 (to split a grid over machines)."),
    budget: Optional[int] = typer.Option(None, help="Override the cases' total number of evaluations."),
    initial_points: Optional[int] = INITIAL_POINTS_OPTION,
    jobs: int = typer.Option(1, help="Runs at once, on a local Dask cluster of that many workers (one torch "
                             "thread each), or on the --scheduler's."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", envvar=SCHEDULER_VARIABLE, show_envvar=True,
                                            help="Address of an existing Dask scheduler "
                                            "(tcp://host:8786); its workers run the runs, at most --jobs at once, "
                                            "writing under --output (a shared filesystem)."),
    output: Path = typer.Option(Path("bench-results"), help="Results root: one folder per case inside."),
    params: Optional[str] = typer.Option(None, help='Per-method overrides as JSON, e.g. \'{"pinn-bo": {"pde_weight": 0.5}}\'.'),
    reference: Optional[str] = typer.Option(None, help="Method tested against every other one (default pinn-bo; "
                                            "neural-cbo for a constrained case)."),
    device: Optional[str] = DEVICE_OPTION,
    smoke: bool = SMOKE_OPTION,
    quiet: bool = typer.Option(False, "--quiet", help="No live display or tables."),
) -> None:
    """Compare methods over seeds on cases: curves, table with tests, figure; restart to continue."""
    from pinnbo.bench import BenchInterrupted, BenchSettings, run_bench

    try:
        settings = BenchSettings.from_options(cases, methods, seeds, budget=budget, initial_points=initial_points,
                                              jobs=jobs, output=output, scheduler=scheduler,
                                              params=params, reference=reference, device=device,
                                              smoke=smoke_requested(smoke))
        result = run_bench(settings, console=console, quiet=quiet)
    except RunStopped as exc:
        fail(f"{exc}; rerun the same command once the folder can be written (complete runs are kept)", code=1)
    except UserError as exc:
        fail(str(exc))
    except BenchInterrupted as exc:
        err_console.print(str(exc), highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(143 if exc.terminated else 130)
    if result.failed:
        first = result.failed[0]
        err_console.print(f"{len(result.failed)} run(s) failed, e.g. {first['case']} {first['method']} seed "
                          f"{first['seed']}: {first['error']} (rerun the same command to retry them)",
                          highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(1)


@app.command()
def problems(name: Optional[str] = typer.Argument(None, help="A problem: its parameters and an example case.")) -> None:
    """List the registered problems and the cases shipped in cases/, or describe one problem."""
    from pinnbo.runner.build import PROBLEM_IMPORT_ERRORS, describe_problem, registered_problems
    from pinnbo.runner.case import list_cases

    from pinnbo.report.problems import cases_table, parameters_table, problems_table

    if name is not None:
        try:
            summary, parameters, example = describe_problem(name)
        except UserError as exc:
            fail(str(exc))
        console.print(f"[bold]{escape(name)}[/bold]: {escape(summary)}", highlight=False)
        console.print(parameters_table(parameters))   # text, folded to the terminal's width
        console.print("example case:", highlight=False)
        console.print(example.rstrip(), highlight=False, markup=False, soft_wrap=True)
        return
    console.print(problems_table(registered_problems()))
    for module, reason in sorted(PROBLEM_IMPORT_ERRORS.items()):
        err_console.print(f"[yellow]warning:[/yellow] problems/{escape(module)}.py did not import: {escape(reason)}",
                          soft_wrap=True, highlight=False)
    console.print(cases_table(list_cases()))


@app.command()
def schema() -> None:
    """Print the case file's JSON Schema, for editors that validate and complete case files."""
    from pinnbo.runner.schema import case_schema

    sys.stdout.write(json.dumps(case_schema(), indent=2) + "\n")


CASE_ARGUMENT = typer.Argument(..., help="Case file (YAML) of the run")


def _case_for_asktell(case: Path, seed, budget, output, device, smoke):
    from pinnbo.runner.case import load_case

    return load_case(case, {"seed": seed, "budget": budget, "device": device,
                            "output": None if output is None else str(output), "smoke": smoke_requested(smoke) or None})


@app.command()
def ask(
    case: Path = CASE_ARGUMENT,
    seed: Optional[int] = SEED_OPTION,
    budget: Optional[int] = BUDGET_OPTION,
    output: Optional[Path] = OUTPUT_OPTION,
    device: Optional[str] = DEVICE_OPTION,
    smoke: bool = SMOKE_OPTION,
    n: int = typer.Option(1, "--n", help="Keep up to this many designs pending at once (measured in parallel, "
                          "told in any order); one JSON line each."),
) -> None:
    """Print the next design to measure as JSON and keep it pending (asking again repeats it)."""
    from pinnbo.runner.asktell import ask as ask_next

    try:
        pending = ask_next(_case_for_asktell(case, seed, budget, output, device, smoke), n)
    except RunStopped as exc:
        fail(f"{exc}; ask again once the results folder can be written", code=1)
    except UserError as exc:
        fail(str(exc))
    for item in pending:
        typer.echo(json.dumps({k: item[k] for k in ("index", "x", "phase", "constraints") if k in item}))


@app.command()
def tell(
    case: Path = CASE_ARGUMENT,
    x: Optional[str] = typer.Option(None, "--x", help="The design measured, comma-separated, as printed by ask."),
    y: Optional[str] = typer.Option(None, "--y", help="The measured value (the problem's sense)."),
    constraint: Optional[list[str]] = typer.Option(None, "--constraint", help="A measured constraint value, "
                                                  "name=value (c <= 0 feasible); repeat for each one."),
    json_text: Optional[str] = typer.Option(None, "--json", help='Instead: {"x": [...], "y": value, '
                                            '"constraints": {name: value}}.'),
    failed: Optional[str] = typer.Option(None, "--failed", help="The measurement failed: the reason."),
    sd: Optional[str] = typer.Option(None, "--sd", help="The measurement's noise standard deviation, where known "
                                     "(the objective's units)."),
    seed: Optional[int] = SEED_OPTION,
    budget: Optional[int] = BUDGET_OPTION,
    output: Optional[Path] = OUTPUT_OPTION,
    device: Optional[str] = DEVICE_OPTION,
    smoke: bool = SMOKE_OPTION,
    tolerance: float = typer.Option(1e-6, "--tolerance", help="How far --x may be from the asked design, as a "
                                    "fraction of each variable's range (at most 0.05), for a lab that sets a design to "
                                    "its instruments' resolution; the asked design is what is recorded."),
) -> None:
    """Record the measurement of the pending design (from pinnbo ask)."""
    from pinnbo.report.format import fmt
    from pinnbo.report.summary import write_report
    from pinnbo.runner.asktell import TellError, parse_json, parse_sd, parse_y
    from pinnbo.runner.asktell import tell as tell_value

    try:
        loaded = _case_for_asktell(case, seed, budget, output, device, smoke)
        if json_text is not None:
            if x is not None or y is not None or constraint:
                raise TellError("--json: give the design and values either with --json or with --x/--y/--constraint, "
                                "not both")
            data = parse_json(json_text)
            design, value, failed = data["x"], data.get("objectives", data.get("y")), data.get("failed", failed)
            measured, noise = data.get("constraints"), data.get("sd")
        else:
            if x is None:
                raise TellError("--x: the measured design is missing (as printed by pinnbo ask)")
            design, value, measured = x, None if y is None else parse_y(y), constraint
            noise = None if sd is None else parse_sd(sd)
        record, history, problem = tell_value(loaded, design, value, failed, measured, tolerance, sd=noise)
        summary = write_report(history, problem, loaded.to_dict()) if len(history) >= loaded.budget else None
    except RunStopped as exc:
        fail(f"{exc}; tell again once the results folder can be written (a measurement already recorded "
             "is reported as such)", code=1)
    except UserError as exc:
        fail(str(exc))
    value = ", ".join(f"{n} {fmt(v)}" for n, v in record.objectives.items()) if record.objectives else fmt(record.y)
    state = value if record.ok else f"failed ({record.error})"
    if record.feasible is not None:
        violated = [f"{name} = {fmt(v, 4)} > 0" for name, v in record.constraints_true.items() if v > 0]
        state += ", feasible" if record.feasible else f", infeasible ({', '.join(violated)})"
    console.print(f"evaluation {record.index}: {state}; {len(history)}/{loaded.budget} recorded",
                  highlight=False, markup=False)
    if summary is not None:
        best = "best feasible" if history.constrained else "best"
        reached = f"hypervolume {fmt(summary.get('hypervolume'))}" if summary.get("objectives") else \
            f"{best} {fmt(summary['best_value'])}"
        console.print(f"budget complete: {reached}; results in {loaded.output_dir}/", highlight=False, markup=False)


import pinnbo.cli_results  # noqa: E402,F401  (registers show, report and export)


def main() -> None:
    from pinnbo.interrupts import Terminated, terminate_as_interrupt

    terminate_as_interrupt()
    try:
        app()
    except Terminated:
        err_console.print("terminated")
        sys.exit(143)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
