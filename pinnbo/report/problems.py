"""What ``pinnbo problems`` prints: the registered problems, one problem's parameters, the shipped
cases. Text tables that fold to the terminal's width (unlike the tables of numbers, which are
printed whole: :func:`pinnbo.report.format.print_table`); every cell escaped, so a docstring's
``[lower, upper]`` is text, not markup."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Callable, Iterable, Sequence

from rich.markup import escape
from rich.table import Table

from pinnbo.runner.build import ProblemParameter, first_sentence


def problems_table(factories: dict[str, Callable]) -> Table:
    table = Table(title="problems (pinnbo problems NAME: its parameters and an example case)")
    table.add_column("name", overflow="fold")
    table.add_column("description", overflow="fold")
    for name, factory in sorted(factories.items()):
        doc = inspect.getdoc(factory) or ""
        table.add_row(escape(name), escape(first_sentence(doc.split("\n\n", 1)[0])))
    return table


def parameters_table(parameters: Sequence[ProblemParameter]) -> Table:
    table = Table(title="params (case file) = keyword arguments (Python)", title_justify="left")
    for column in ("parameter", "type", "default", "meaning"):
        table.add_column(column, overflow="fold")
    for p in parameters:
        table.add_row(*(escape(v) for v in (p.name, p.type, p.default, p.meaning)))
    return table


def cases_table(cases: Iterable[tuple[Path, dict]]) -> Table:
    table = Table(title="cases")
    for column in ("case", "problem", "method", "budget"):
        table.add_column(column, overflow="fold")
    for path, data in cases:
        # Outside the project the bare name is what to type: `pinnbo run heat_bc1.yaml` finds a shipped case.
        table.add_row(escape(str(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path.name)),
                      escape(str(data.get("problem", ""))), escape(str(data.get("method", "pinn-bo"))),
                      escape(str(data.get("budget", ""))))
    return table
