"""What ``pinnbo run`` prints at the end of a run (:func:`run_outcome`) and what ``pinnbo show``
prints of a finished one (:func:`summary_rows`, its summary.json read defensively).

A summary.json is a file in a results folder, so it may have been edited, truncated or copied
from another version: every value is checked for the type it should have, and a missing or
malformed one is shown as ``—`` rather than ending the command with a traceback. Values are
plain text here; the caller prints them without rich markup, so a case name like ``a[/]`` is
shown as it is.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.text import Text

from pinnbo.files import loads
from pinnbo.report.format import fmt


def _number(value: Any, digits: int = 6) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    if isinstance(value, int):
        return str(value)
    return fmt(value, digits) if math.isfinite(value) else "—"


def _design(x: Any, names: Any) -> str:
    if not isinstance(x, list) or not x:
        return "—"
    values = [v[:40] if isinstance(v, str) else _number(v) for v in x]   # a choice is its name
    if isinstance(names, list) and len(names) == len(values) and all(isinstance(n, str) for n in names):
        return ", ".join(f"{n} = {v}" for n, v in zip(names, values))
    return "(" + ", ".join(values) + ")"


def _seconds(value: Any) -> str:
    text = _number(value, 3)
    return text if text == "—" else f"{text} s"


def summary_rows(summary: dict) -> list[tuple[str, str]]:
    """(label, value) rows of a run's ``summary``, labels in words, numbers to 6 significant
    digits; anything missing or of the wrong type shown as ``—``."""
    case = summary.get("case") if isinstance(summary.get("case"), dict) else {}
    names = summary.get("variables")
    constrained = "n_feasible" in summary
    best = summary.get("best") if isinstance(summary.get("best"), dict) else {}
    rows = [
        ("case", str(case.get("name", "—"))),
        ("problem", str(summary.get("problem", "—"))),
        ("method", str(case.get("method", "—"))),
        ("seed", _number(case.get("seed"))),
        ("sense", str(summary.get("sense", "—"))),
        ("evaluations", _number(summary.get("evaluations"))),
        ("failed evaluations", _number(summary.get("failed"))),
    ]
    if not isinstance(summary.get("objectives"), dict):   # one objective: its best
        rows += [("best feasible value" if constrained else "best value", _number(summary.get("best_value"))),
                 ("best design", _design(best.get("x"), names))]
    recommended = summary.get("recommended") if isinstance(summary.get("recommended"), dict) else {}
    if recommended and recommended.get("predicted_sd") != 0:   # noisy: the posterior mean's choice
        rows.append(("recommended design", f"{_design(recommended.get('x'), names)} (predicted "
                                           f"{_number(recommended.get('predicted'))} ± "
                                           f"{_number(recommended.get('predicted_sd'), 3)}, observed "
                                           f"{_number(recommended.get('observed'))})"))
        if recommended.get("true") is not None:
            rows.append(("recommended true value", _number(recommended.get("true"))))
    objectives = summary.get("objectives") if isinstance(summary.get("objectives"), dict) else {}
    if objectives:
        front = summary.get("pareto_front") if isinstance(summary.get("pareto_front"), list) else []
        reference = summary.get("reference") if isinstance(summary.get("reference"), dict) else {}
        rows.append(("objectives", ", ".join(f"{n} ({s})" for n, s in objectives.items())))
        rows.append(("hypervolume", f"{_number(summary.get('hypervolume'))} (reference "
                                    + ", ".join(f"{n} = {_number(v)}" for n, v in reference.items())
                                    + (", inferred" if summary.get("reference_inferred") else "") + ")"))
        rows.append(("Pareto front", f"{len(front)} designs"))
        if isinstance(summary.get("hypervolume_note"), str):
            rows.append(("note", summary["hypervolume_note"][:300]))
        for entry in front[:10]:
            if isinstance(entry, dict) and isinstance(entry.get("values"), dict):
                values = ", ".join(f"{n} = {_number(v)}" for n, v in entry["values"].items())
                rows.append((f"  evaluation {_number(entry.get('index'))}", f"{values} at {_design(entry.get('x'), names)}"))
    if summary.get("optimum") is not None:
        rows.append(("optimum f*", _number(summary.get("optimum"))))
        rows.append(("simple regret", _number(summary.get("simple_regret"))))
    for key in sorted(k for k in summary if isinstance(k, str) and k.startswith("best_value_without_")):
        phase = key[len("best_value_without_"):]     # a method's own phase (GP-UCB+'s exploration)
        left_out = _number(summary.get(f"{phase}_evaluations"))
        rows.append((f"best value without {phase}", f"{_number(summary[key])} ({left_out} {phase} evaluations "
                                                    "left out)"))
        if summary.get(f"simple_regret_without_{phase}") is not None:
            rows.append((f"simple regret without {phase}", _number(summary[f"simple_regret_without_{phase}"])))
    if constrained:
        evaluations, failed = summary.get("evaluations"), summary.get("failed")
        successful = evaluations - failed if all(isinstance(v, int) and not isinstance(v, bool)
                                                 for v in (evaluations, failed)) else None
        fraction = summary.get("feasible_fraction")
        share = f" ({fraction:.0%})" if isinstance(fraction, (int, float)) and not isinstance(fraction, bool) \
            and math.isfinite(fraction) else ""
        rows.append(("feasible", f"{_number(summary.get('n_feasible'))} of {_number(successful)} successful "
                                 f"evaluations{share}"))
        violation = summary.get("cumulative_violation") if isinstance(summary.get("cumulative_violation"), dict) else {}
        per = violation.get("per_constraint") if isinstance(violation.get("per_constraint"), dict) else {}
        detail = ", ".join(f"{name} {_number(v, 4)}" for name, v in per.items())
        rows.append(("cumulative violation", _number(violation.get("total"), 4) + (f" ({detail})" if detail else "")))
        closest = summary.get("least_violation")
        if not best and isinstance(closest, dict):
            rows.append(("closest to feasible", f"{_design(closest.get('x'), names)} (violation "
                                                f"{_number(closest.get('violation'), 4)})"))
    stopped = summary.get("stopped")
    if isinstance(stopped, dict) and stopped.get("rule") == "target":
        index = stopped.get("evaluation")
        rows.append(("stopped", f"target {_number(stopped.get('target'))} reached by evaluation "
                                f"{_number(index + 1 if isinstance(index, int) else None)}"))
    elif isinstance(stopped, dict) and stopped.get("rule") == "max_time":
        rows.append(("stopped", f"after the time limit of {_seconds(stopped.get('max_time'))}"))
    rows.append(("time per iteration", _seconds(summary.get("seconds_per_iteration"))))
    rows.append(("time per evaluation", _seconds(summary.get("oracle_seconds_per_evaluation"))))
    return rows


def run_outcome(summary: dict, name: str, output: Path, budget: int, recorded: int) -> list[Text]:
    """The lines ``pinnbo run`` ends with: the best (feasible) design, the optimum and regret where
    known, failures, the stopping rule, where the results are. Rich ``Text`` built from parts, so a
    name or a path is never read as markup."""
    constrained = "n_feasible" in summary
    lines = []
    if recorded >= budget:
        lines.append(Text(f"nothing to run: {recorded} evaluations already recorded in {output}/ (budget {budget}; "
                          "a larger --budget extends the run)"))
    if summary.get("objectives"):
        front = summary.get("pareto_front") or []
        regret = "" if summary["optimum"] is None or summary.get("hypervolume") is None else \
            f" (largest {fmt(summary['optimum'])})"
        lines.append(Text.assemble((name, "bold"), f": hypervolume {fmt(summary.get('hypervolume'))}{regret}, "
                                   f"{len(front)} designs on the Pareto front"))
    elif summary["best"]:
        lines.append(Text.assemble((name, "bold"), f": best{' feasible' if constrained else ''} "
                                   f"{fmt(summary['best_value'])} at {_design(summary['best']['x'], None)}"))
    elif constrained and summary["least_violation"] is not None:
        closest = summary["least_violation"]
        lines.append(Text.assemble((name, "bold"), ": ", ("no feasible evaluation", "yellow"),
                                   f"; closest to feasible: {_design(closest['x'], None)} with violation "
                                   f"{fmt(closest['violation'], 4)}"))
    else:
        lines.append(Text.assemble((name, "bold"), ": no successful evaluation"))
    if constrained:
        successful = summary["evaluations"] - summary["failed"]
        lines.append(Text(f"{summary['n_feasible']} feasible of {successful} successful evaluations; cumulative "
                          f"violation {fmt(summary['cumulative_violation']['total'], 4)}"))
    if summary["optimum"] is not None and summary["simple_regret"] is not None:
        lines.append(Text(f"optimum f* = {fmt(summary['optimum'])}, simple regret {fmt(summary['simple_regret'], 4)}"))
    if summary["failed"]:
        lines.append(Text.assemble((f"{summary['failed']} failed evaluation(s)", "yellow"), " (see summary.json)"))
    stopped = summary.get("stopped")
    if stopped is not None and stopped["rule"] == "target":
        lines.append(Text(f"stopped: the target {fmt(stopped['target'])} was reached by evaluation "
                          f"{stopped['evaluation'] + 1} (index {stopped['evaluation']} in evaluations.jsonl)"))
    elif stopped is not None:
        lines.append(Text(f"stopped: --max-time {fmt(stopped['max_time'])} s passed after {stopped['evaluations']} "
                          "evaluations (--resume continues)"))
    lines.append(Text(f"{summary['evaluations']} evaluations, {fmt(summary['seconds_per_iteration'], 3)} s per "
                      f"iteration; results in {output}/"))
    return lines


def read_json(path: Path):
    """The JSON in ``path``, or None where it cannot be read (any way: see pinnbo.files.loads)."""
    try:
        return loads(path.read_text(), str(path))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def is_bench_summary(summary) -> bool:
    """Whether ``summary`` is a bench case's summary.json rather than a run's."""
    return isinstance(summary, dict) and {"methods", "results", "seeds"} <= summary.keys()
