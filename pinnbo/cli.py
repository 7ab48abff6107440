"""The ``pinnbo`` command: run, problems, show.

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
from rich.console import Console
from rich.table import Table

USER_ERRORS: tuple[type[Exception], ...] = ()


def _user_errors() -> tuple[type[Exception], ...]:
    from pinnbo.case import CaseError
    from pinnbo.history import HistoryError
    from pinnbo.optimizers.base import MethodError
    from pinnbo.pde import PDEError
    from pinnbo.problem import ProblemError

    return (CaseError, HistoryError, MethodError, PDEError, ProblemError)


app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Physics-informed Bayesian optimisation of expensive designs.")
console = Console()
err_console = Console(stderr=True)


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/bold red] {message}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def smoke_requested(flag: bool) -> bool:
    return flag or os.environ.get("PINNBO_SMOKE", "") not in ("", "0", "false")


@app.command()
def run(
    case: Path = typer.Argument(..., help="Case file (YAML), e.g. cases/heat_bc1.yaml"),
    seed: Optional[int] = typer.Option(None, help="Override the case's seed."),
    budget: Optional[int] = typer.Option(None, help="Override the total number of evaluations."),
    output: Optional[Path] = typer.Option(None, help="Results folder (default results/<name>)."),
    device: Optional[str] = typer.Option(None, help="cpu, cuda or cuda:N."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run in its results folder."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the results of an earlier run."),
    smoke: bool = typer.Option(False, "--smoke", help="Tiny budget and cheap settings (also PINNBO_SMOKE=1)."),
    quiet: bool = typer.Option(False, "--quiet", help="No live display."),
) -> None:
    """Optimise the problem of a case file and write results, summary and plots."""
    from pinnbo.case import load_case
    from pinnbo.report import LiveProgress, fmt, write_report
    from pinnbo.run import RunInterrupted, RunSettings
    from pinnbo.run import run as run_loop

    try:
        loaded = load_case(case, {"seed": seed, "budget": budget, "device": device,
                                  "output": None if output is None else str(output),
                                  "smoke": smoke_requested(smoke) or None})
        problem = loaded.build_problem()
        optimizer = loaded.build_optimizer(problem)
        settings = RunSettings(budget=loaded.budget, initial_points=loaded.initial_points, seed=loaded.seed,
                               output=loaded.output_dir, case=loaded.to_dict(), resume=resume, overwrite=overwrite)
        observer = None if quiet else LiveProgress(title=f"{loaded.name} · {loaded.method} · seed {loaded.seed}")
        try:
            history = run_loop(problem, optimizer, settings, observer)
        finally:
            if observer is not None:
                observer.stop()
    except _user_errors() as exc:
        fail(str(exc))
    except RunInterrupted as exc:
        err_console.print(f"{exc}; every completed evaluation is in {loaded.output_dir}. "
                          f"Continue with: pinnbo run {case} --resume"
                          + (f" --output {output}" if output else ""))
        raise typer.Exit(130)
    summary = write_report(history, problem, loaded.to_dict())
    console.print(f"[bold]{loaded.name}[/bold]: best {fmt(summary['best_value'])} at "
                  f"({', '.join(fmt(v, 6) for v in summary['best']['x'])})" if summary["best"] else
                  f"[bold]{loaded.name}[/bold]: no successful evaluation")
    if summary["optimum"] is not None and summary["simple_regret"] is not None:
        console.print(f"optimum f* = {fmt(summary['optimum'])}, simple regret {fmt(summary['simple_regret'], 4)}")
    if summary["failed"]:
        console.print(f"[yellow]{summary['failed']} failed evaluation(s)[/yellow] (see summary.json)")
    console.print(f"{summary['evaluations']} evaluations, {fmt(summary['seconds_per_iteration'], 3)} s per "
                  f"iteration; results in {loaded.output_dir}/")


@app.command()
def problems() -> None:
    """List the registered problems and the cases shipped in cases/."""
    from pinnbo.case import list_cases, registered_problems

    table = Table(title="problems")
    table.add_column("name")
    table.add_column("description")
    for name, factory in sorted(registered_problems().items()):
        doc = (factory.__doc__ or "").strip().splitlines()
        table.add_row(name, doc[0] if doc else "")
    console.print(table)
    cases = Table(title="cases")
    for column in ("case", "problem", "method", "budget"):
        cases.add_column(column)
    for path, data in list_cases():
        cases.add_row(str(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path),
                      str(data.get("problem", "")), str(data.get("method", "pinn-bo")), str(data.get("budget", "")))
    console.print(cases)


@app.command()
def show(results: Path = typer.Argument(..., help="A results folder, e.g. results/heat_bc1")) -> None:
    """Print the summary of a finished run."""
    path = results / "summary.json"
    if not path.exists():
        fail(f"results: {results} has no summary.json (run it first, or --resume it)")
    summary = json.loads(path.read_text())
    table = Table(title=str(results), show_header=False)
    for key in ("problem", "sense", "evaluations", "failed", "best_value", "optimum", "simple_regret",
                "seconds_per_iteration"):
        table.add_row(key, str(summary.get(key)))
    if summary.get("best"):
        table.add_row("best x", str(summary["best"]["x"]))
    console.print(table)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
