"""How numbers and tables read on a terminal, shared by runs, benches and ``pinnbo show``."""

from __future__ import annotations

import math

from rich.console import Console
from rich.live import Live
from rich.segment import Segments
from rich.table import Table


def fmt(value: float | int | str | None, digits: int = 6) -> str:
    """A value for a person: ``digits`` significant digits; an int and a name (a design's integer
    and choice variables) as they are."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    return f"{value:.{digits}g}"


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def stop_live(live: Live) -> None:
    """Stop a rich Live display. Off a terminal (a CI log, `2>&1 | tee`) rich prints the last frame
    without a final newline, and what follows on stdout would continue its last line: end it."""
    live.stop()
    if not live.console.is_terminal:
        live.console.line()


def print_table(console: Console, table: Table) -> None:
    """Print ``table`` at its natural width even where the terminal is narrower: rich would
    otherwise squeeze and crop its columns, and a cut number (``1.0266e-…``) reads as a wrong one.
    The terminal then wraps the long lines; every digit is printed."""
    natural = console.measure(table, options=console.options.update(width=100_000)).maximum
    if natural <= console.width:
        console.print(table)
    else:  # rendered at its own width, printed uncropped (Console.print caps any width at its own)
        console.print(Segments(console.render(table, console.options.update_width(natural))), crop=False)
