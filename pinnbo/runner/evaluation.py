"""One evaluation, from the oracle call to its record: the isolated call under the case's timeout
(:mod:`pinnbo.oracles.isolation`), the outcome's shape checked, noise drawn from the evaluation's
own stream, the known constraints computed in the runner. What the sequential loop, the
asynchronous loop's workers and ask/tell share."""

from __future__ import annotations

import math
import time

import numpy as np

from pinnbo.errors import shown
from pinnbo.oracles.isolation import OracleFailure, call_oracle
from pinnbo.problem import Problem, read_outcome
from pinnbo.runner.history import Evaluation
from pinnbo.streams import numpy_rng


def evaluate(problem: Problem, x: np.ndarray, index: int, seed: int, phase: str,
             timeout: float | None = None) -> tuple[Evaluation, float]:
    """Call the oracle once at ``x`` (d,). Returns the record and the oracle's wall time.

    The oracle's result is one number, or ``(f, c)`` for a problem with black-box constraints
    (:meth:`pinnbo.problem.Problem.split_outcome`). Noise as in :func:`observation`.
    KeyboardInterrupt propagates (the evaluation did not happen); every other way of not
    producing finite values is a failed evaluation with its reason.
    """
    start = time.perf_counter()
    outcome, error = oracle_outcome(problem.objective, x, timeout)
    seconds = time.perf_counter() - start
    return outcome_record(problem, x, index, seed, phase, outcome, error), seconds


def oracle_outcome(objective, x: np.ndarray, timeout: float | None = None) -> tuple[object, str | None]:
    """One isolated oracle call at ``x`` (d,): (its result, None), or (None, the reason it produced
    none). KeyboardInterrupt propagates. What an asynchronous run's workers execute."""
    try:
        return call_oracle(objective, np.array(x, dtype=np.float64), timeout), None
    except KeyboardInterrupt:
        raise
    except OracleFailure as exc:
        return None, str(exc)
    except SystemExit as exc:  # an oracle wrapping a script must not end the run
        return None, f"oracle called sys.exit({shown(exc.code)})"
    except Exception as exc:  # any oracle failure is data, not a crash
        return None, f"{type(exc).__name__}: {exc}".strip()


def outcome_record(problem: Problem, x: np.ndarray, index: int, seed: int, phase: str, outcome: object,
                   error: str | None) -> Evaluation:
    """The record of evaluation ``index`` from the oracle's ``outcome`` (or ``error``): its shape
    checked, noise added and the known constraints computed here, in the runner."""
    value, blackbox = float("nan"), {}
    if error is None:
        value, blackbox, error = read_outcome(problem, outcome)
    return observation(problem, x, index, seed, phase, value, error, constraints=blackbox)


def observation(problem: Problem, x: np.ndarray, index: int, seed: int, phase: str, value: float | dict,
                error: str | None, measured: bool = False, constraints: dict[str, float] | None = None,
                given: list | None = None, sd: float | None = None) -> Evaluation:
    """The record of evaluation ``index`` at ``x`` (d,): ``value`` the oracle's true value (problem's
    sense; several objectives: {name: value}, recorded without synthetic noise) and ``constraints`` its black-box constraint values {name: c}, or ``error`` the reason it
    failed. The known constraints are computed here, exactly.

    ``measured``: the value was measured outside pinnbo (told, imported): recorded as observed, with
    no true value and no noise added; so is a problem's whose oracle measures (``problem.measured``,
    a program). ``sd``: the measurement's own noise standard deviation, where it was given.

    Synthetic noise (not measured): the objective gets ε ~ N(0, noise_std²) from the stream (seed, "noise", k),
    each black-box constraint c_i its own ε_i ~ N(0, noise_std_i²) from (seed, "noise", name_i, k),
    so the same evaluation index always gets the same draws, whichever method proposed it, and
    adding a constraint shifts neither the objective's noise nor another constraint's.
    A non-finite objective or constraint value fails the evaluation. ``given``: the design by value
    as it was told or imported (default: ``x`` decoded).
    """
    # By value (pinnbo.space); a design told or imported is recorded as it was given, not as its
    # encoding decodes (exp(log(0.01)) is not 0.01).
    x_list = problem.domain.values(x) if given is None else \
        [float(v) if var.kind in ("real", "log") else v for v, var in zip(given, problem.domain.variables)]
    true_c: dict[str, float] = {}
    several = isinstance(value, dict)   # several objectives: {name: value}
    if error is None and several:
        bad = next((n for n, v in value.items() if not math.isfinite(v)), None)
        error = None if bad is None else f"objective {bad} is {value[bad]}"
    elif error is None and not math.isfinite(value):
        error = f"oracle returned {value}"
    if error is None and problem.constraints:
        true_c, error = constraint_values(problem, np.asarray(x, dtype=np.float64), constraints or {})
    if error is not None:
        return Evaluation(index, x_list, None, None, "failed", error[:500], phase)
    observed = value
    add_noise = not measured
    known = not (measured or problem.measured)
    if add_noise and problem.noise_std > 0:
        observed = value + problem.noise_std * float(numpy_rng(seed, "noise", index).standard_normal())
    observed_c = dict(true_c)
    for c in problem.constraints:
        if add_noise and not c.known and c.noise_std > 0:
            observed_c[c.name] += c.noise_std * float(numpy_rng(seed, "noise", c.name, index).standard_normal())
    feasible = all(v <= 0 for v in true_c.values()) if problem.constraints else None
    if several:
        return Evaluation(index, x_list, None, None, "ok", None, phase, observed_c, true_c, feasible, sd,
                          objectives=dict(value), objectives_true=dict(value) if known else {})
    return Evaluation(index, x_list, observed, value if known else None, "ok", None, phase, observed_c, true_c,
                      feasible, sd)


def constraint_values(problem: Problem, x: np.ndarray, blackbox: dict[str, float]
                      ) -> tuple[dict[str, float], str | None]:
    """Every constraint's true value at ``x`` (d,), in the problem's order: the black-box ones
    from the oracle's ``blackbox``, the known ones computed. ({}, reason) if one is missing,
    fails or is not finite."""
    values: dict[str, float] = {}
    for c in problem.constraints:
        if c.known:
            try:
                v = float(np.asarray(c.function(x.reshape(1, -1)), dtype=np.float64).reshape(-1)[0])
            except Exception as exc:  # a user's formula or function: its failure is this evaluation's
                return {}, f"constraint {c.name}: {type(exc).__name__}: {exc}".strip()
        elif c.name in blackbox:
            v = float(blackbox[c.name])
        else:
            return {}, f"no value for constraint {c.name}"
        if not math.isfinite(v):
            return {}, f"constraint {c.name} is {v}"
        values[c.name] = v
    extra = [k for k in blackbox if k not in values]
    if extra:
        return {}, f"unexpected constraint value(s) {extra}; the problem's constraints are {list(values)}"
    return values, None
