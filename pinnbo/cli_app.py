"""The ``pinnbo`` command's application, its consoles and its one way to refuse a user's mistake,
shared by the modules that register commands (:mod:`pinnbo.cli`, :mod:`pinnbo.cli_results`)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape


# Plain help and errors (rich_markup_mode None): typer's rich panels print a flag as "--resume
# <bool>", which reads as if it took a value, and box a usage error over several lines.
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Physics-informed Bayesian optimisation of expensive designs.")
console = Console()
err_console = Console(stderr=True)


def _print_version(value: bool) -> None:
    if not value:
        return
    from pinnbo.report.summary import versions

    found = versions()
    others = ", ".join(f"{name} {found[name]}" for name in ("torch", "botorch", "py-pde", "sympy", "numpy")
                       if name in found)
    console.print(f"pinnbo {found.get('pinnbo', '?')} (python {found['python']}; {others})",
                  highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                       help="Print the versions of pinnbo and the libraries it runs on.")) -> None:
    """Physics-informed Bayesian optimisation of expensive designs."""


def fail(message: str, code: int = 2) -> None:
    """One line ``error: message`` on stderr and exit ``code`` (2: a user mistake; 1: the run could
    not go on, e.g. a full disk)."""
    # escape: messages quote the user's text, and "[lower, upper]" must not be read as a rich tag.
    err_console.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True, highlight=False, soft_wrap=True)
    raise typer.Exit(code)


