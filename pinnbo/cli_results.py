"""The commands that read a results folder: show (its summary or table), report (its HTML page) and
export (its evaluations as a table). None of them runs anything a folder names: a run's problem is
rebuilt only from what case.json declares (a registered problem, a PDE's formulas), never from a
Python file unless the user names its case with ``--case``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table
from rich.markup import escape

from pinnbo.cli_app import app, console, fail
from pinnbo.errors import RunStopped, UserError


@app.command()
def show(results: Path = typer.Argument(..., help="A run's results folder (results/heat_bc1), a bench case "
                                                   "folder (bench-results/heat_bc1) or a bench root"),
         as_json: bool = typer.Option(False, "--json", help="Print the summary.json of a run (or of each bench "
                                      "case) as JSON instead of a table.")) -> None:
    """Print the summary of a finished run, or the table of a bench."""
    from pinnbo.report.format import print_table
    from pinnbo.report.show import is_bench_summary, read_json, summary_rows

    path = results / "summary.json"
    if not results.exists():
        fail(f"results: {results} does not exist")
    if not results.is_dir():
        fail(f"results: {results} is not a folder; give a run's or a bench's results folder")
    if not path.exists():
        benches = [(p.parent, summary) for p in sorted(results.glob("*/summary.json"))
                   if is_bench_summary(summary := read_json(p))]
        if not benches and (results / "evaluations.jsonl").exists():
            from pinnbo.bench.plan import recorded_evaluations

            stored = read_json(results / "case.json")
            budget = stored.get("budget") if isinstance(stored, dict) else None
            of = f" of {budget}" if isinstance(budget, int) and not isinstance(budget, bool) else ""
            fail(f"results: {results} is not finished: {recorded_evaluations(results)}{of} evaluations recorded "
                 "(pinnbo run --resume, or pinnbo ask / tell, continues it; the summary is written at the end)")
        if not benches:
            fail(f"results: {results} has no summary.json (run it first, or --resume it)")
        if as_json:
            typer.echo(json.dumps({str(folder): summary for folder, summary in benches}, indent=2))
            return
        for folder, summary in benches:
            _show_bench(folder, summary)
        return
    summary = read_json(path)
    if not isinstance(summary, dict):
        fail(f"results: {path} is not a pinnbo summary (expected a JSON object; it is unreadable, or "
             f"{type(summary).__name__ if summary is not None else 'not JSON'})")
    if as_json:
        typer.echo(json.dumps(summary, indent=2, sort_keys=True))
        return
    if is_bench_summary(summary):
        _show_bench(results, summary)
        return
    table = Table(title=escape(str(results)), show_header=False)
    table.add_column(overflow="fold")
    table.add_column(overflow="fold")
    for label, value in summary_rows(summary):
        table.add_row(escape(label), escape(value))
    print_table(console, table)


def _show_bench(folder: Path, summary: dict) -> None:
    """The table ``pinnbo bench`` printed for this case folder, from its summary.json (``summary``)."""
    from pinnbo.bench.tables import rich_table
    from pinnbo.report.format import print_table

    try:
        table = rich_table(summary)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        fail(f"results: {folder / 'summary.json'} is not a pinnbo bench summary of this version (malformed)")
    print_table(console, table)
    console.print(f"notes, curves and figure: {folder / 'table.md'}, {folder / 'curves.csv'}, "
                  f"{folder / 'convergence.png'}", highlight=False, markup=False, soft_wrap=True)




@app.command()
def report(results: Path = typer.Argument(..., help="A run's results folder (results/heat_bc1), a bench case "
                                                    "folder or a bench root"),
           case: Optional[Path] = typer.Option(None, "--case", help="The run's case file, where its problem is "
                                               "a Python file (pinnbo never imports a file a results folder names)."),
           ) -> None:
    """Write RESULTS/report.html: one self-contained page of what the run knows (convergence, the
    surrogate and its uncertainty, the PDE residual, variable importance, constraints, timings), or
    of a bench's tables and curves."""
    from pinnbo.results import ResultsError, load_results

    try:
        loaded = load_results(results)
        if hasattr(loaded, "runs"):
            from pinnbo.bench.page import write_bench_report
            from pinnbo.report.show import is_bench_summary

            cases = [(loaded.case_folders[name], summary)
                     for name, summary in sorted(loaded.summaries.items()) if is_bench_summary(summary)]
            if not cases:
                raise ResultsError(f"results: {results} holds no finished bench (no summary.json with its table)")
            path = write_bench_report(results, cases)
        else:
            from pinnbo.report.page import write_run_report

            path = write_run_report(results, run_problem(loaded.case, case))
    except RunStopped as exc:
        fail(f"{exc}; give a folder that can be written", code=1)
    except UserError as exc:
        fail(str(exc))
    console.print(f"report: {path}", highlight=False, markup=False, soft_wrap=True)


def run_problem(stored: dict, case: Path | None):
    """The problem of a run, rebuilt from its case.json, or from ``case`` (the user's case file)."""
    from pinnbo.runner.build import build_problem
    from pinnbo.runner.case import case_from_dict, load_case

    if case is not None:
        loaded = load_case(case, {})
        if loaded.problem != stored.get("problem"):
            raise UserError(f"--case: {case} is a case of problem {loaded.problem!r}, the run's is "
                            f"{stored.get('problem')!r}")
        return build_problem(loaded)
    problem = str(stored.get("problem", ""))
    if ":" in problem and problem.split(":", 1)[0].endswith(".py"):
        raise UserError(f"case.json: the run's problem is the Python file {problem.split(':', 1)[0]}; pinnbo imports "
                        "no file a results folder names: give the case with --case CASE.yaml")
    return build_problem(case_from_dict({k: v for k, v in stored.items() if k != "variables"}))


@app.command()
def export(results: Path = typer.Argument(..., help="A run's results folder, a bench case folder or a bench root"),
           csv: Optional[Path] = typer.Option(None, "--csv", help="Write the table here as CSV."),
           parquet: Optional[Path] = typer.Option(None, "--parquet", help="Write the table here as Parquet "
                                                  "(keeps the types: integers, choices as categories)."),
           ) -> None:
    """Write every evaluation as a table, one row each (a bench: one row per run and evaluation);
    the same table as pinnbo.load_results(RESULTS).to_pandas()."""
    import os

    from pinnbo.files import write_bytes
    from pinnbo.results import load_results

    if csv is None and parquet is None:
        fail("export: give --csv FILE, --parquet FILE or both")
    try:
        frame = load_results(results).to_pandas()
        if csv is not None:
            write_bytes(csv, frame.to_csv(index=False).encode())
        if parquet is not None:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise UserError("--parquet: pyarrow is not installed (pip install 'pinnbo[data]')") from None
            import io

            buffer = io.BytesIO()
            frame.to_parquet(buffer, index=False)
            write_bytes(parquet, buffer.getvalue())
    except RunStopped as exc:
        fail(f"{exc}", code=1)
    except UserError as exc:
        fail(str(exc))
    written = ", ".join(os.fspath(p) for p in (csv, parquet) if p is not None)
    console.print(f"{len(frame)} rows, {len(frame.columns)} columns: {written}", highlight=False, markup=False,
                  soft_wrap=True)
