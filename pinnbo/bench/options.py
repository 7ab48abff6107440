"""``pinnbo bench``'s options: the cases, methods, seeds, budget, parallel jobs, per-method
parameters and the reference method, each checked with a one-line error naming the option."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from pinnbo.errors import CaseError, MethodError, shown
from pinnbo.files import refusal, unique_keys
from pinnbo.optimizers import AUTO, METHODS
from pinnbo.runner.case import MAX_BUDGET, MAX_INITIAL_POINTS, MAX_SEED, scheduler_address

REFERENCE = "pinn-bo"       # the method tested against every other one
MAX_SEEDS = 10_000          # seeds in one bench
MAX_JOBS = 256              # parallel runs
CONSTRAINED_REFERENCE = "neural-cbo"   # ... on a constrained case
MULTI_OBJECTIVE_REFERENCE = "gp-ehvi"  # ... with several objectives


class BenchError(CaseError):
    """A user mistake in the bench's options (one-line message naming the option)."""


@dataclass
class BenchSettings:
    cases: list[Path]
    methods: list[str] | None           # None: each case's default (default_methods)
    seeds: tuple[int, ...] = tuple(range(10))   # parse_seeds' result
    budget: int | None = None
    initial_points: int | None = None
    jobs: int = 1
    scheduler: str | None = None        # an existing Dask scheduler's address; jobs caps the runs on it
    output: Path = Path("bench-results")
    params: dict[str, dict] = field(default_factory=dict)   # per-method overrides of the defaults
    reference: str | None = None        # None: each case's default (default_reference)
    device: str | None = None
    smoke: bool = False

    @classmethod
    def from_options(cls, cases: Sequence[str | Path], methods: str | Sequence[str] | None, seeds: int | str,
                     budget: int | None = None, initial_points: int | None = None, jobs: int = 1, output: str | Path | None = None,
                     scheduler: str | None = None, params: str | dict | None = None, reference: str | None = None,
                     device: str | None = None, smoke: bool = False) -> "BenchSettings":
        """Validate command-line style options; every mistake is a BenchError naming the option."""
        if not cases:
            raise BenchError("cases: give at least one case file")
        method_list = None if methods is None else parse_methods(methods)
        seeds = parse_seeds(seeds)
        if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= MAX_JOBS:
            raise BenchError(f"--jobs: expected an integer from 1 to {MAX_JOBS}, got {shown(jobs)}")
        try:
            scheduler = scheduler_address(scheduler, "--scheduler")
        except CaseError as exc:
            raise BenchError(str(exc)) from None
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                                   or not 2 <= budget <= MAX_BUDGET):
            raise BenchError(f"--budget: expected an integer from 2 to {MAX_BUDGET}, got {shown(budget)}")
        if initial_points is not None and (isinstance(initial_points, bool) or not isinstance(initial_points, int)
                                           or not 1 <= initial_points <= MAX_INITIAL_POINTS):
            raise BenchError(f"--initial-points: expected an integer from 1 to {MAX_INITIAL_POINTS}, "
                             f"got {shown(initial_points)}")
        if reference is not None and reference not in METHODS and reference != AUTO:
            raise BenchError(f"--reference: unknown method {shown(reference)}; expected auto or one of "
                             f"{', '.join(sorted(METHODS))}")
        if reference is not None and method_list is not None and reference not in method_list:
            # the tests would silently vanish from every table
            raise BenchError(f"--reference: {shown(reference)} is not among --methods ({', '.join(method_list)}); "
                             "add it there or leave --reference out")
        return cls(cases=[Path(c) for c in cases], methods=method_list, seeds=seeds, budget=budget,
                   initial_points=initial_points, jobs=jobs, scheduler=scheduler,
                   output=Path(output) if output is not None else Path("bench-results"),
                   params=parse_params(params, method_list if method_list is not None else sorted(METHODS)),
                   reference=reference, device=device, smoke=smoke)


def parse_seeds(seeds: int | str | Sequence[int]) -> tuple[int, ...]:
    """``--seeds``: N (seeds 0..N-1), a range ``5-9`` (inclusive), a list ``0,3,7``, or ranges and
    seeds mixed (``0-2,7``); so one grid can be split over machines and its folders merged."""
    expected = (f"N (seeds 0..N-1, 1 <= N <= {MAX_SEEDS}), a range a-b or a list a,b,c of at most {MAX_SEEDS} "
                f"seeds from 0 to {MAX_SEED}")
    if isinstance(seeds, bool):
        raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
    if isinstance(seeds, int):
        if not 1 <= seeds <= MAX_SEEDS:
            raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
        return tuple(range(seeds))
    if not isinstance(seeds, str):
        out = tuple(seeds)
        if not out or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in out):
            raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
    else:
        text = seeds.strip()
        if re.fullmatch(r"\d+", text):
            return parse_seeds(int(text))
        out = []
        for part in text.split(","):
            match = re.fullmatch(r"\s*(\d{1,20})\s*(?:-\s*(\d{1,20})\s*)?", part)
            if match is None or (match[2] is not None and int(match[2]) < int(match[1])) \
                    or len(out) + int(match[2] or match[1]) - int(match[1]) + 1 > MAX_SEEDS:
                raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
            out += range(int(match[1]), int(match[2] or match[1]) + 1)
        out = tuple(out)
    if len(out) > MAX_SEEDS or any(k > MAX_SEED for k in out):
        raise BenchError(f"--seeds: expected {expected}, got {shown(seeds)}")
    if len(set(out)) != len(out):
        raise BenchError(f"--seeds: seed {next(k for k in out if out.count(k) > 1)} is given twice in {shown(seeds)}")
    return tuple(sorted(out))


def seeds_text(seeds: Sequence[int]) -> str:
    """0..9 for a contiguous run of seeds, else the list."""
    seeds = list(seeds)
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(k) for k in seeds)


def default_reference(constrained: bool) -> str:
    """The method tested against the others: PINN-BO, or Neural-CBO on a constrained case."""
    return CONSTRAINED_REFERENCE if constrained else REFERENCE


def default_methods(constrained: bool, reference: str | None = None, *, several: bool = False,
                    kinds: Sequence[str] = ("real",)) -> list[str]:
    """Every registered method for its kind of case (those that handle constraints for a constrained
    case; the unconstrained ones otherwise; those that take several objectives, or one, and the
    case's kinds of variables) whose optional dependencies are installed, the reference first."""
    reference = reference or default_reference(constrained)
    names = sorted(m for m, cls in METHODS.items()
                   if (cls.handles_constraints if constrained else not cls.constrained_method)
                   and (cls.multi_objective if several else not cls.several_objectives_only)
                   and set(kinds) <= set(cls.variable_kinds) and cls.installed())
    return ([reference] if reference in names else []) + [m for m in names if m != reference]


def parse_methods(methods: str | Sequence[str] | None) -> list[str]:
    """``"pinn-bo,random"`` → ``["pinn-bo", "random"]`` (duplicates dropped); None → every registered
    method, the reference first."""
    if methods is None:
        return default_methods(False)
    items = methods.split(",") if isinstance(methods, str) else list(methods)
    out: list[str] = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        if item not in METHODS and item != AUTO:
            hint = difflib.get_close_matches(item, METHODS, n=1)
            raise BenchError(f"--methods: unknown method {shown(item)}" + (f" (did you mean '{hint[0]}'?)" if hint else "")
                             + f"; expected auto or one of {', '.join(sorted(METHODS))}")
        if item not in out:
            out.append(item)
    if not out:
        raise BenchError("--methods: give at least one method, e.g. --methods pinn-bo,random")
    return out


def parse_params(params: str | dict | None, methods: Sequence[str]) -> dict[str, dict]:
    """``--params '{"pinn-bo": {"pde_weight": 0.5}}'`` (JSON text, or a path to a JSON file) →
    per-method overrides, each checked against that method's documented parameters."""
    if params is None or params == "":
        return {}
    if isinstance(params, str):
        text = params
        if not text.lstrip().startswith("{"):
            if not Path(text).is_file():
                raise BenchError(f"--params: {shown(text)} is neither a JSON object nor a JSON file; expected e.g. "
                                 "'{\"pinn-bo\": {\"pde_weight\": 0.5}}' or params.json")
            text = Path(text).read_text()
        try:
            params = json.loads(text, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as exc:
            raise BenchError(f"--params: invalid JSON ({exc.msg} at column {exc.colno}); expected "
                             "e.g. '{\"pinn-bo\": {\"pde_weight\": 0.5}}'") from None
        except (ValueError, RecursionError) as exc:   # a key twice, a 4300-digit integer, deep nesting
            raise BenchError(f"--params: not JSON pinnbo reads ({refusal(exc)})") from None
    if not isinstance(params, dict):
        raise BenchError("--params: expected a JSON object of methods, e.g. '{\"pinn-bo\": {\"pde_weight\": 0.5}}'")
    out = {}
    for method, overrides in params.items():
        if method not in methods:
            raise BenchError(f"--params: {shown(method)} is not one of --methods ({', '.join(methods)})")
        if not isinstance(overrides, dict):
            raise BenchError(f"--params: {method}: expected an object of parameters, got {type(overrides).__name__}")
        if method == AUTO:
            raise BenchError("--params: auto chooses the method, so it takes no settings; give them to the method "
                             "it chooses")
        try:
            METHODS[method].Settings.from_params(overrides, method)
        except MethodError as exc:
            raise BenchError(f"--params: {method}: {exc}") from None
        out[method] = dict(overrides)
    return out
