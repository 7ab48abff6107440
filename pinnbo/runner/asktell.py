"""Ask/tell from outside: ``pinnbo ask CASE`` prints the next design, a person or a scheduler
measures it, ``pinnbo tell CASE --x ... --y ...`` records the value. Each command is its own
process; the state lives in the results folder, next to a normal run's:

- ``evaluations.jsonl``, ``checkpoint.pt``, ``case.json``: as for ``pinnbo run`` (the same folder
  can be continued by ``pinnbo run --resume`` and the other way round);
- ``pending.json``: the design asked and not yet told, ``{"index", "x": {name: value}, "phase",
  "ask_seconds", "asked_at"}``; asking again while it is pending prints it again;

With black-box constraints (c_i <= 0 feasible) the measurement is the objective *and* every such
constraint (``--constraint name=value``, or ``"constraints": {name: value}`` in ``--json``); the
known constraints of the problem or the case are computed by pinnbo at the asked design.
- ``pending.pt``: the optimiser's state right after that ask, which is the checkpoint the run loop
  would write after telling it (see :mod:`pinnbo.runner.loop`), so ``tell`` needs no training: it appends
  the record and promotes pending.pt to checkpoint.pt.

``ask`` rebuilds the optimiser with :func:`pinnbo.runner.steps.restore`, exactly as a resumed run does, and
asks the initial design first, so driving a case by ask/tell with the oracle's values gives the
evaluations.jsonl of ``pinnbo run`` with the same seed, each told value recorded as what it is, a
measurement (observed, with no true value).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pinnbo.errors import HistoryError, shown
from pinnbo.files import loads, write_json
from pinnbo.problem import Box, Problem
from pinnbo.runner.build import build_optimizer, build_problem, run_settings
from pinnbo.runner.case import Case
from pinnbo.runner.folder import ASKS, locked
from pinnbo.runner.history import Evaluation, History
from pinnbo.runner.evaluation import observation
from pinnbo.runner.steps import (checkpoint, commit, next_design, read_checkpoint, record_imported, recorded_design,
                                 restore)
from pinnbo.runner.state import CHECKPOINT, PENDING_STATE, load_state, run_identity
from pinnbo.streams import initial_design

PENDING = "pending.json"
#: A told design matches the pending one within this fraction of each variable's range by default:
#: ask prints full precision. ``tell --tolerance`` widens it for a lab that sets a design to the
#: resolution of its instruments; two proposals are never closer than duplicate_tol (1e-4) in the
#: unit box, so a tolerance below that never matches the wrong one.
X_TOLERANCE = 1e-6
#: Widest tolerance ``tell`` accepts (a fraction of each range).
MAX_TOLERANCE = 0.05


class TellError(HistoryError):
    """A tell that cannot be recorded (one-line message naming the option)."""


def ask(case: Case, n: int = 1) -> list[dict]:
    """The next design of ``case``'s run, recorded as pending: ``[{"index": k, "x": {name: value},
    "phase": ...}]``. The pending design again if one is waiting for its tell. ``n`` > 1, or a
    folder that already has several: up to ``n`` designs pending at once (:func:`ask_several`)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise HistoryError(f"--n: expected a positive number of designs, got {shown(n)}")
    if n > 1 or (case.output_dir / ASKS).exists():
        return ask_several(case, n)
    problem = build_problem(case)
    optimizer = build_optimizer(case, problem)
    settings = run_settings(case, problem, resume=True)
    folder = case.output_dir
    with locked(folder):
        history = History.read(folder, case.to_dict(), problem.sense, problem.optimum, resume=True, overwrite=False,
                               constraints=problem.constraint_names, variables=problem.domain.names,
                               labels=case.labels, budget=settings.budget)
        k = len(history)
        pending = read_pending(folder, problem)
        if pending is not None and pending["index"] == k:
            return [{key: value for key, value in pending.items() if key != "design"}]
        if max(k, len(settings.imported)) >= settings.budget:
            raise HistoryError(f"budget: all {settings.budget} evaluations are recorded; pass --budget to ask for more")
        saved = read_checkpoint(history, optimizer.device)   # before anything is written
        history.begin(case.to_dict())
        if pending is not None:
            # Stale: evaluation k was recorded since (a tell cut off before its cleanup, or
            # `pinnbo run --resume` went on); the design it holds is in the log.
            discard_pending(folder)
        restore(history, optimizer, settings.first_proposal, saved)
        record_imported(history, optimizer, problem, settings)
        k = len(history)
        x, phase, ask_seconds = next_design(k, settings, initial_design(problem.domain, case.initial_points,
                                                                        case.seed), optimizer)
        if k + 1 >= settings.first_proposal:
            checkpoint(history, optimizer, PENDING_STATE, n_told=k + 1)
        pending = {**asked(problem, k, x, phase), "ask_seconds": round(ask_seconds, 6), "asked_at": time.time()}
        write_json(folder / PENDING, pending)  # last: pending.json is what marks a design as asked
    return [pending]


def ask_several(case: Case, n: int) -> list[dict]:
    """Up to ``n`` designs pending at once, as an asynchronous run keeps them
    (:mod:`pinnbo.runner.asynchronous`): each new one proposed knowing the others, appended to
    ``asks.jsonl`` (fsynced) before it is printed; those already pending are printed again first.
    ``tell`` takes them in any order; ``pinnbo run --resume`` can take over and evaluate them."""
    from pinnbo.runner.asynchronous import next_ask, open_asks, record_ask

    problem = build_problem(case)
    optimizer = build_optimizer(case, problem)
    settings = run_settings(case, problem, resume=True)
    folder = case.output_dir
    with locked(folder):
        if (folder / PENDING).exists():
            raise HistoryError(f"--n: {folder} has a design pending from a single ask ({PENDING}); tell it first")
        history = History.read(folder, case.to_dict(), problem.sense, problem.optimum, resume=True, overwrite=False,
                               constraints=problem.constraint_names, variables=problem.domain.names,
                               labels=case.labels, budget=settings.budget)
        pending, next_index = open_asks(history, len(settings.imported), domain=problem.domain)
        room = settings.budget - max(len(history), len(settings.imported)) - len(pending)
        if len(pending) < n and room <= 0 and not pending:
            raise HistoryError(f"budget: all {settings.budget} evaluations are recorded; pass --budget to ask for more")
        if len(pending) < n and room > 0:
            saved = read_checkpoint(history, optimizer.device)   # before anything is written
            history.begin(case.to_dict())
            restore(history, optimizer, settings.first_proposal, saved, asynchronous=True)
            record_imported(history, optimizer, problem, settings)   # indices below next_index
            design = initial_design(problem.domain, case.initial_points, case.seed)
            while len(pending) < n and len(history) + len(pending) < settings.budget:
                pending[next_index], _ = next_ask(next_index, settings, design, optimizer, pending)
                record_ask(folder, pending[next_index], problem.domain)
                next_index += 1
            if len(history) >= settings.first_proposal:
                checkpoint(history, optimizer)   # the asks' training: the next ask starts from it
    return [asked(problem, ask.index, ask.x, ask.phase) for ask in list(pending.values())[:max(n, 1)]]


def asked(problem: Problem, index: int, x: Sequence[float], phase: str) -> dict:
    """What ``ask`` hands out for evaluation ``index`` at ``x``: the design by variable name, its
    phase, and the constraints the measurement must report besides the objective."""
    item = {"index": index, "x": dict(zip(problem.domain.names, problem.domain.values(x))), "phase": phase}
    if problem.oracle_constraints:
        item["constraints"] = [c.name for c in problem.oracle_constraints]
    return item


def tell(case: Case, x: str | Sequence[float] | dict | None, y: float | None = None, failed: str | None = None,
         constraints: dict | Sequence[str] | None = None, tolerance: float = X_TOLERANCE, sd: float | None = None
         ) -> tuple[Evaluation, History, Problem]:
    """Record the measurement of the pending design: ``x`` (d values), {name: value} or "1.2,3.4" must
    match it within ``tolerance`` of each variable's range (the asked design is what is recorded);
    ``y`` the value in the problem's sense, or ``failed`` the reason there is none; ``sd`` the
    measurement's noise standard deviation where it is known; ``constraints``
    the measured black-box constraint values, {name: value} or ["name=value", ...] (every one, with
    ``y``; none with ``failed``)."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 < tolerance <= MAX_TOLERANCE:
        raise TellError(f"--tolerance: expected a fraction of each variable's range in (0, {MAX_TOLERANCE}], "
                        f"got {shown(tolerance)}")

    problem = build_problem(case)
    folder = case.output_dir
    told = _design(parse_x(x, problem.domain) if isinstance(x, str) else x, problem)
    if y is None and failed is None:
        raise TellError("tell: give the measured value (--y) or the reason it failed (--failed)")
    if y is not None and failed is not None:
        raise TellError("tell: give the measured value (--y) or the reason it failed (--failed), not both")
    if problem.objectives:
        y = _objective_values(y, problem)
    elif y is not None and (isinstance(y, bool) or not isinstance(y, (int, float)) or not math.isfinite(y)):
        raise TellError(f"--y: expected a finite number, got {shown(y)}; a measurement without a value is --failed \"reason\"")
    measured = measured_constraints(constraints, problem, failed=failed is not None)
    if sd is not None and (isinstance(sd, bool) or not isinstance(sd, (int, float)) or not math.isfinite(sd) or sd <= 0):
        raise TellError(f"--sd: expected a standard deviation > 0 (the objective's units), got {shown(sd)}")
    if sd is not None and failed is not None:
        raise TellError("--sd: a failed measurement has no value to give a noise to; give --y with --sd")
    if not (folder / "case.json").exists():
        raise TellError(f"tell: design {_show(told, problem)} was never asked: {folder} holds no run (pinnbo ask first)")
    with locked(folder):
        history = History.read(folder, case.to_dict(), problem.sense, problem.optimum, resume=True, overwrite=False,
                               constraints=problem.constraint_names, variables=problem.domain.names,
                               labels=case.labels)
        if (folder / ASKS).exists():
            return (_tell_one_of_several(case, problem, history, told, y, failed, measured, tolerance, sd), history,
                    problem)
        k = len(history)
        pending = read_pending(folder, problem)
        pending_matches = pending is not None and pending["index"] == k and _same(
            told, pending["design"], problem, tolerance)
        recorded = next((r for r in history.evaluations
                         if _same(told, recorded_design(problem.domain, r), problem, tolerance)), None)
        if recorded is not None and not pending_matches:
            raise TellError(f"tell: design {_show(told, problem)} is already recorded, as evaluation {recorded.index}; "
                            "pinnbo ask for the next design")
        if pending is None or pending["index"] > k:
            raise TellError(f"tell: design {_show(told, problem)} was never asked; nothing is pending (pinnbo ask first)")
        if pending["index"] < k:
            raise TellError(f"tell: design {_show(told, problem)} was never asked; evaluation {pending['index']} is "
                            "already recorded (pinnbo ask for the next design)")
        asked = pending["design"]
        if not _same(told, asked, problem, tolerance):
            raise TellError(f"tell: design {_show(told, problem)} was never asked; the pending design {k} is "
                            f"{_show(asked, problem)}")
        # The ask's saved state, checked before anything is written: a file that is not this run's
        # state is refused, one that is this run's but of another step is dropped after the record.
        state = folder / PENDING_STATE
        promote = False
        if os.path.lexists(state):
            saved = load_state(state, run_identity(history.case))
            promote = saved is not None and saved["n_told"] == k + 1
        history.begin(case.to_dict())
        error = None if failed is None else (failed.strip() or "failed (no reason given)")
        # The asked design is recorded (not the typed digits), so the log matches a `pinnbo run`.
        record = observation(problem, asked, k, case.seed, pending["phase"], _told(y),
                             error, measured=True, constraints=measured, given=list(pending["x"].values()),
                             sd=None if sd is None else float(sd))
        asked_at = pending.get("asked_at")
        timing = {"ask_seconds": pending.get("ask_seconds")}
        if isinstance(asked_at, (int, float)):
            timing["oracle_seconds"] = round(max(time.time() - asked_at, 0.0), 3)  # the measurement, seen from here
        commit(history, None, record, timing, case.initial_points)
        if promote:
            os.replace(state, folder / CHECKPOINT)
        else:  # not this ask's step: the next ask replays from checkpoint.pt and the log
            state.unlink(missing_ok=True)
        (folder / PENDING).unlink(missing_ok=True)
    return record, history, problem


def _tell_one_of_several(case: Case, problem: Problem, history: History, told: np.ndarray, y: float | None,
                         failed: str | None, measured: dict, tolerance: float, sd: float | None = None) -> Evaluation:
    """Record the measurement of one of several pending designs (:func:`ask_several`), in any order."""
    from pinnbo.runner.asynchronous import open_asks

    pending, _ = open_asks(history, domain=problem.domain)
    ask = next((a for a in pending.values() if _same(told, np.asarray(a.x), problem, tolerance)), None)
    if ask is None:
        recorded = next((r for r in history.evaluations
                         if _same(told, recorded_design(problem.domain, r), problem, tolerance)), None)
        if recorded is not None:
            raise TellError(f"tell: design {_show(told, problem)} is already recorded, as evaluation {recorded.index}")
        listed = "; ".join(f"{a.index}: {_show(a.x, problem)}" for a in pending.values()) or "none"
        raise TellError(f"tell: design {_show(told, problem)} was never asked; the pending designs are {listed}")
    history.begin(case.to_dict())
    error = None if failed is None else (failed.strip() or "failed (no reason given)")
    record = observation(problem, np.asarray(ask.x), ask.index, case.seed, ask.phase,
                         _told(y), error, measured=True, constraints=measured,
                         sd=None if sd is None else float(sd))
    commit(history, None, record, {}, case.initial_points)
    return record


def _same(told: np.ndarray, design: np.ndarray, problem: Problem, tolerance: float = X_TOLERANCE) -> bool:
    """Whether ``told`` is ``design`` (both (d,), encoded) within ``tolerance`` of each range; an
    integer or a choice must be the same."""
    domain = problem.domain
    if design.shape != told.shape:
        return False
    gap = np.abs(told - design) / domain.widths
    discrete = list(domain.dims("integer", "choice"))
    return bool(np.all(gap <= tolerance) and np.all(told[discrete] == design[discrete]))


def read_pending(folder: Path, problem: Problem) -> dict | None:
    """The pending design of ``folder``, checked against the problem's variables; None if none."""
    path = Path(folder) / PENDING
    if not path.exists():
        return None
    try:
        data = loads(path.read_text(), str(path))
        index, x = data["index"], data["x"]
        if isinstance(index, bool) or not isinstance(index, int) or not isinstance(x, dict) \
                or sorted(x) != sorted(problem.domain.names) or not isinstance(data.get("phase"), str):
            raise ValueError
        data["design"] = problem.domain.encode([x[name] for name in problem.domain.names])
    except (OSError, ValueError, KeyError, TypeError):
        raise HistoryError(f"{path}: corrupted pending design; delete it and pinnbo ask again") from None
    # pending.json is written with sorted keys; an ask repeated from it must print the variables in
    # the box's order, the order --x takes them in.
    data["x"] = {name: x[name] for name in problem.domain.names}
    return data


def discard_pending(folder: Path) -> None:
    for name in (PENDING, PENDING_STATE):
        (Path(folder) / name).unlink(missing_ok=True)


def parse_x(text: str, domain: Box) -> list[float | str]:
    """``--x 1.2,3.4`` (in the order of the variables) or ``--x y=3.4,x=1.2`` → [1.2, 3.4]; a choice
    variable's value is its name."""
    names = domain.names
    parts = [p.strip() for p in text.split(",")]
    expected = f"{len(names)} comma-separated values ({', '.join(names)}) or name=value pairs"
    if domain.plain:
        expected = f"{len(names)} comma-separated numbers ({', '.join(names)}) or name=value pairs"
    if all("=" in p for p in parts):
        pairs = dict(p.split("=", 1) for p in parts)
        pairs = {k.strip(): v for k, v in pairs.items()}
        if sorted(pairs) != sorted(names) or len(pairs) != len(parts):
            raise TellError(f"--x: expected {expected}, got {shown(text)}")
        parts = [pairs[n] for n in names]
    if len(parts) != len(names):
        raise TellError(f"--x: expected {expected}, got {shown(text)}")
    values: list[float | str] = []
    for part, variable in zip(parts, domain.variables):
        if variable.kind == "choice":
            values.append(part.strip())
            continue
        try:
            values.append(float(part))
        except ValueError:
            raise TellError(f"--x: expected {expected}, got {shown(text)}") from None
    return values


def _told(y: float | dict | None) -> float | dict:
    """The told value as :func:`~pinnbo.runner.evaluation.observation` takes it (NaN: failed)."""
    return float("nan") if y is None else (y if isinstance(y, dict) else float(y))


def _objective_values(y: Any, problem: Problem) -> dict | None:
    """Several objectives: the told values {name: value}, every objective a finite number."""
    names = list(problem.objectives)
    example = "{\"x\": [...], \"objectives\": {" + ", ".join(f'\"{n}\": ...' for n in names) + "}}"
    if y is None:
        return None
    if not isinstance(y, dict):
        raise TellError(f"tell: several objectives ({', '.join(names)}): give them with --json '{example}'")
    if sorted(y) != sorted(names):
        raise TellError(f"--json: \"objectives\" must give {', '.join(names)}, got {shown(sorted(y))}")
    for name, value in y.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise TellError(f"--json: objective {name}: expected a finite number, got {shown(value)}")
    return {name: float(y[name]) for name in names}


def parse_sd(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TellError(f"--sd: expected a standard deviation > 0, got {shown(text)}") from None
    if not math.isfinite(value) or value <= 0:
        raise TellError(f"--sd: expected a standard deviation > 0 (the objective's units), got {shown(text)}")
    return value


def parse_y(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise TellError(f"--y: expected a number, got {shown(text)}") from None
    if not math.isfinite(value):
        raise TellError(f"--y: expected a finite number, got {shown(text)}; a measurement without a value is --failed \"reason\"")
    return value


def measured_constraints(given: dict | Sequence[str] | None, problem: Problem, failed: bool = False
                         ) -> dict[str, float]:
    """The black-box constraint values of a tell, {name: value} in the problem's order, from
    {name: value} or ["name=value", ...] (``--constraint``); every black-box constraint is needed
    with a value, none with a failure, and a known constraint is pinnbo's to compute."""
    blackbox = [c.name for c in problem.oracle_constraints]
    known = [c.name for c in problem.constraints if c.known]
    if given is None or (not isinstance(given, dict) and not given):
        given = {}
    elif not isinstance(given, dict):
        pairs = {}
        for item in given:
            name, sep, value = str(item).partition("=")
            name = name.strip()
            if not sep or not name:
                raise TellError(f"--constraint: expected name=value, got {shown(item)}")
            if name in pairs:
                raise TellError(f"--constraint {name}: given twice")
            try:
                pairs[name] = float(value)
            except ValueError:
                raise TellError(f"--constraint {name}: expected a number, got {shown(value.strip())}") from None
        given = pairs
    expected = ", ".join(blackbox) if blackbox else "none: the problem has no measured constraints"
    for name, value in given.items():
        if name in known:
            raise TellError(f"--constraint {name}: a known constraint, computed by pinnbo at the design; do not give it")
        if name not in blackbox:
            raise TellError(f"--constraint: unknown constraint {shown(name)}; expected {expected}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise TellError(f"--constraint {name}: expected a finite number, got {shown(value)}")
    if failed:
        if given:
            raise TellError("--constraint: a failed measurement records no values; give --y with the constraints, "
                            "or --failed alone")
        return {}
    missing = [n for n in blackbox if n not in given]
    if missing:
        raise TellError(f"--constraint: no value for {', '.join(missing)}; a measurement gives every measured "
                        f"constraint ({expected}) as --constraint name=value")
    return {n: float(given[n]) for n in blackbox}


def parse_json(text: str) -> dict:
    """``--json '{"x": [..] or {name: value}, "y": value, "constraints": {name: value}}'`` (or
    ``"failed": "reason"``)."""
    try:
        data = loads(text, "--json")
    except ValueError as exc:
        raise TellError(str(exc)) from None
    if not isinstance(data, dict):
        raise TellError("--json: expected an object {\"x\": [...], \"y\": value} or {\"x\": [...], \"failed\": \"reason\"}")
    for key in data:
        if key not in ("x", "y", "objectives", "failed", "constraints", "sd"):
            raise TellError(f"--json: unknown key {shown(key)}; expected x, y (or objectives), constraints, sd, failed")
    if data.get("constraints") is not None and not isinstance(data["constraints"], dict):
        raise TellError(f"--json: \"constraints\" must be an object {{name: value}}, got {shown(data['constraints'])}")
    if "x" not in data:
        raise TellError("--json: the design \"x\" is missing")
    if data.get("y") is not None and (isinstance(data["y"], bool) or not isinstance(data["y"], (int, float))):
        raise TellError(f"--json: \"y\" must be a number, got {shown(data['y'])}")
    if data.get("failed") is not None and not isinstance(data["failed"], str):
        raise TellError(f"--json: \"failed\" must be a string (the reason), got {shown(data['failed'])}")
    return data


def _design(x: Any, problem: Problem) -> np.ndarray:
    """The told design, encoded (:mod:`pinnbo.space`), or a TellError naming what was expected."""
    names = problem.domain.names
    if x is None:
        raise TellError("tell: the measured design is missing; give --x (as printed by pinnbo ask) or --json")
    if isinstance(x, dict):
        unknown = [k for k in x if k not in names]
        if unknown or len(x) != len(names):
            raise TellError(f"tell: design {shown(x)} must give every variable ({', '.join(names)}) and no other")
        x = [x[n] for n in names]
    if not isinstance(x, (list, tuple, np.ndarray)) or len(x) != len(names):
        raise TellError(f"tell: design {shown(x)} must be {len(names)} values ({', '.join(names)})")
    try:
        return problem.domain.encode(list(x))
    except ValueError as exc:
        raise TellError(f"tell: design {shown(x)}: {exc}") from None


def _show(x: Sequence[float], problem: Problem) -> str:
    return "(" + ", ".join(repr(v) for v in problem.domain.values(np.asarray(x, dtype=np.float64))) + ")"
