"""A bench's report.html: for each case its table (with the tests and notes ``pinnbo bench``
prints) and its curves, self-contained as a run's report is (:mod:`pinnbo.report.page`)."""

from __future__ import annotations

import html
from pathlib import Path

from pinnbo.bench.tables import _caption, bench_convergence_figure, table_notes, table_rows
from pinnbo.files import make_folder, write_text
from pinnbo.report.page import FIGURES, REPORT, Page, document


def bench_report_html(cases: list[tuple[Path, dict]], folder: Path | None) -> str:
    """The page for the bench case folders ``cases`` (each with its summary.json)."""
    page = Page(folder)
    title = "bench: " + ", ".join(summary["case"] for _, summary in cases)
    page.sections.append(f"<h1>{html.escape(title)}</h1>")
    for case_folder, summary in cases:
        header, rows = table_rows(summary)
        cells = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>" + "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in table_notes(summary))
        name = f"convergence-{summary['case']}" if len(cases) > 1 else "convergence"
        figure = page.figure(name, bench_convergence_figure(summary),
                             "Mean best value so far ± standard error per method; right, where f* is known, the "
                             "median normalised regret over the seeds with its interquartile band.")
        page.section(_caption(summary), f"<table>{cells}</table>\n<ul class=\"note\">{notes}</ul>\n{figure}"
                     f'<p class="note">runs: {html.escape(str(case_folder / "runs"))}; each has its own '
                     "<code>pinnbo report</code></p>")
    return document(title, "\n".join(page.sections), live=False)


def write_bench_report(folder: Path, cases: list[tuple[Path, dict]]) -> Path:
    """Write ``folder``/report.html for ``cases``; its path."""
    make_folder(folder / FIGURES)
    write_text(folder / REPORT, bench_report_html(cases, folder))
    return folder / REPORT
