"""A simulator that is a program: ``oracle: {command: ..., parse: ...}`` in a case file.

The command is a template such as ``./simulate --width {x} --height {y:.6f}``: split like a shell
line but run without a shell, each placeholder a design variable (``{x}`` full precision, ``{x:.3f}``
any float format), run in the case file's folder in a process group of its own that dies with the
runner (:mod:`pinnbo.oracles.isolation`). Its stdout is the value: the last line (``parse: float``)
or JSON (``parse: json``: a number, ``{"value": f}`` or ``{"objective": f, "constraints": {...}}``).
A non-zero exit, unparsable output or a timeout is a failed evaluation with that reason.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import string
import subprocess
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np

from pinnbo.errors import CaseError, shown
from pinnbo.files import loads
from pinnbo.interrupts import held_interrupts
from pinnbo.oracles.isolation import OracleFailure, ProcessGroup, exit_reason


class OracleConfigError(CaseError):
    """A mistake in an external command's declaration (one-line message naming the field)."""


PARSERS = ("float", "json")


class _Value:
    """A design value in a command template: ``{x}`` is repr(float) (round-trips exactly), an
    integer variable's int, a choice's name; ``{x:.3f}`` any format of the value's type."""

    def __init__(self, value: float | int | str) -> None:
        self.value = value if isinstance(value, (int, str)) and not isinstance(value, bool) else float(value)

    def __format__(self, spec: str) -> str:
        if not spec:
            return self.value if isinstance(self.value, str) else repr(self.value)
        return format(self.value, spec)


@dataclass
class CommandOracle:
    """``objective(x)`` = run ``command`` with the design substituted, parse its stdout.

    Attributes:
        command: template such as ``./simulate {x} {y}``; split like a shell line (no shell runs:
            write ``sh -c '...'`` for pipes), each placeholder is a design variable's name.
        names: the design variables, in the order of ``x``'s (d,) coordinates.
        objectives: several objectives' names (``parse: json``): stdout is
            ``{"objectives": {name: value}, "constraints": {...}}`` or ``{name: value, ...}``; the call
            returns the mapping (with constraints, ``(mapping, {name: c})``).
        sample: a design by value (``Box.values``) whose formatting checks the placeholders' formats
            (a float format on a choice's name is refused before any run); zeros when left out.
        parse: ``float`` (the last non-empty line of stdout is the value) or ``json`` (stdout, or
            its last line, is a number, ``{"value": number}`` or ``{"objective": number}``).
        cwd: working directory of the command (the case file's folder).
        constraints: names of the black-box constraints the program reports (``parse: json``, as
            ``{"objective": f, "constraints": {name: c, ...}}``); the call then returns
            ``(f, {name: c})``, the shape :meth:`pinnbo.problem.Problem.split_outcome` reads.
        outputs: 0 for one value; M > 0 for a forward model of M outputs (a calibration): stdout's
            last line holds M numbers (``parse: float``: separated by spaces or commas; ``parse:
            json``: a list, or ``{"value": [...]}``) and the call returns them as an array.
    """

    command: str
    names: tuple[str, ...]
    parse: str = "float"
    cwd: Path | None = None
    constraints: tuple[str, ...] = ()
    outputs: int = 0
    sample: tuple = ()
    objectives: tuple[str, ...] = ()
    runs_a_program = True    # pinnbo.oracles.isolation.call_oracle: it isolates itself

    def __post_init__(self) -> None:
        self.names = tuple(self.names)
        self.constraints = tuple(self.constraints)
        if self.parse not in PARSERS:
            raise OracleConfigError(f"oracle.parse: expected one of {', '.join(PARSERS)}, got {shown(self.parse)}")
        self.objectives = tuple(self.objectives)
        if self.objectives and self.parse != "json":
            raise OracleConfigError(f"oracle.parse: the problem has several objectives ({', '.join(self.objectives)}) "
                                    "that the command must report; use parse: json with {\"objectives\": {name: value}}")
        if self.constraints and self.parse != "json":
            raise OracleConfigError(
                f"oracle.parse: the problem has black-box constraints ({', '.join(self.constraints)}) that the "
                "command must report; use parse: json with {\"objective\": f, \"constraints\": {name: value}}")
        try:
            self._tokens = shlex.split(self.command)
        except ValueError as exc:
            raise OracleConfigError(f"oracle.command: cannot split {shown(self.command)} ({exc})") from None
        if not self._tokens:
            raise OracleConfigError("oracle.command: expected a program and its arguments, got an empty command")
        used: set[str] = set()
        for token in self._tokens:
            try:
                parsed = [(f, spec, conversion) for _, f, spec, conversion in string.Formatter().parse(token)
                          if f is not None]
            except ValueError as exc:
                raise OracleConfigError(f"oracle.command: bad placeholder in {shown(token)} ({exc}); "
                                        "write {{ and }} for literal braces") from None
            for name, spec, conversion in parsed:
                # {shown(x)} would send an object's repr, {x:{y}} fails on every call: both are refused here.
                if conversion is not None:
                    raise OracleConfigError(f"oracle.command: {{{name}!{conversion}}}: conversions are not supported; "
                                            f"write {{{name}}} (full precision) or a float format such as {{{name}:.6f}}")
                if spec and ("{" in spec or "}" in spec):
                    raise OracleConfigError(f"oracle.command: {{{name}:{spec}}}: a placeholder inside a format is not "
                                            f"supported; write a float format such as {{{name}:.6f}}")
            fields = [f for f, _, _ in parsed]
            for name in fields:
                if name not in self.names:
                    raise OracleConfigError(f"oracle.command: unknown placeholder {{{name}}}; expected "
                                            f"{', '.join('{' + n + '}' for n in self.names)}")
                used.add(name)
        missing = [n for n in self.names if n not in used]
        if missing:
            raise OracleConfigError(f"oracle.command: placeholder {{{missing[0]}}} is missing; every design "
                                    f"variable ({', '.join(self.names)}) must reach the command")
        try:
            self.argv(self.sample or np.zeros(len(self.names)))
        except (ValueError, TypeError) as exc:
            raise OracleConfigError(f"oracle.command: bad format in {shown(self.command)} ({exc})") from None
        program = self._tokens[0]
        if "{" not in program:
            where = Path(program) if os.sep in program else None
            if where is not None and not where.is_absolute() and self.cwd is not None:
                where = self.cwd / where
            found = (where is not None and where.is_file() and os.access(where, os.X_OK)) or \
                    (where is None and shutil.which(program) is not None)
            if not found:
                raise OracleConfigError(f"oracle.command: program {shown(program)} not found or not executable"
                                        + (f" (relative to {self.cwd})" if where is not None and self.cwd else ""))

    def argv(self, x: Sequence[float] | Mapping[str, Any]) -> list[str]:
        """The command line for design ``x``: (d,) numbers, or a mapping name -> value."""
        if isinstance(x, Mapping):
            x = [x[name] for name in self.names]
        values = {name: _Value(v) for name, v in zip(self.names, x)}
        return [token.format(**values) for token in self._tokens]

    def __call__(self, x: Sequence[float] | Mapping[str, Any], timeout: float | None = None) -> float | tuple[float, dict]:
        argv = self.argv(x)
        # A process group of its own that dies with the runner (module docstring): a timeout, Ctrl-C
        # or kill -9 of the runner stops the simulation's whole process tree.
        group = ProcessGroup()
        try:
            try:
                with held_interrupts():
                    process = subprocess.Popen(argv, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True, errors="replace",
                                               process_group=group.id)
            except OSError as exc:
                raise OracleFailure(f"command {shown(argv[0])} could not start: {exc.strerror or exc}") from None
            try:
                stdout, stderr = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                with held_interrupts():
                    group.close()
                    process.communicate()
                raise OracleFailure(f"timeout: no value after {timeout:g} s (the command was stopped)") from None
            except BaseException:  # Ctrl-C: stop the simulation, then let the runner stop cleanly
                with held_interrupts():
                    group.close()
                    process.communicate()
                raise
        finally:
            group.close()
        if process.returncode == -signal.SIGINT:
            raise KeyboardInterrupt
        if process.returncode != 0:
            reason = ("exited with code " + str(process.returncode) if process.returncode > 0
                      else exit_reason(process.returncode))
            raise OracleFailure(f"command {reason}" + (f": {_tail(stderr)}" if stderr.strip() else ""))
        return self._parse(stdout)

    def _parse(self, stdout: str) -> float | tuple[float, dict[str, float]]:
        lines = [line.strip() for line in stdout.splitlines() if line.strip()]
        if not lines:
            raise OracleFailure("command printed nothing on stdout; expected the value")
        if self.outputs:
            return self._parse_outputs(stdout, lines[-1])
        if self.objectives:
            return self._parse_objectives(stdout, lines[-1])
        if self.parse == "float":
            try:
                return float(lines[-1])
            except ValueError:
                raise OracleFailure(f"unparsable output: expected a number on the last line of stdout, "
                                    f"got {shown(_clip(lines[-1]))}") from None
        expected = ("{\"objective\": ..., \"constraints\": {...}}" if self.constraints
                    else "a number or {\"value\": ...}")
        try:
            data = _load_json(stdout, lines[-1])
        except ValueError:
            raise OracleFailure(f"unparsable output: expected JSON ({expected}) as stdout "
                                f"or its last line, got {shown(_clip(lines[-1]))}") from None
        if self.constraints and not isinstance(data, dict):
            raise OracleFailure(f"unparsable output: expected JSON {expected} (the problem has constraints "
                                f"{', '.join(self.constraints)}), got {shown(_clip(json.dumps(data)))}")
        reported = None
        if isinstance(data, dict):
            key = next((k for k in ("value", "objective") if k in data), None)
            if key is None:
                raise OracleFailure(f"unparsable output: JSON without a \"value\" (or \"objective\") key: "
                                    f"{shown(_clip(stdout.strip()))}")
            reported = data.get("constraints")
            data = data[key]
        if data is None:
            raise OracleFailure("command reported no value (\"value\": null)")
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise OracleFailure(f"unparsable output: \"value\" must be a number, got {shown(_clip(json.dumps(data)))}")
        if not self.constraints:
            return float(data)
        return float(data), self._constraint_values(reported)

    def _parse_objectives(self, stdout: str, last: str) -> dict | tuple[dict, dict]:
        """Several objectives: ``{"objectives": {name: value}, "constraints": {...}}`` or ``{name: value}``.
        A missing or unknown objective is left to :meth:`pinnbo.problem.Problem.split_outcome`,
        which names it in the failed evaluation's reason."""
        shape = ", ".join(f'"{n}": ...' for n in self.objectives)
        try:
            data = _load_json(stdout, last)
        except ValueError:
            raise OracleFailure(f"unparsable output: expected JSON {{\"objectives\": {{{shape}}}}}, got "
                                f"{shown(_clip(last))}") from None
        if not isinstance(data, dict):
            raise OracleFailure(f"unparsable output: expected JSON {{\"objectives\": {{{shape}}}}}, got "
                                f"{shown(_clip(json.dumps(data)))}")
        values = data.get("objectives", {k: v for k, v in data.items() if k != "constraints"})
        if not isinstance(values, dict) or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                               for v in values.values()):
            raise OracleFailure(f"unparsable output: the objectives must be numbers, got {shown(_clip(json.dumps(values)))}")
        if not self.constraints:
            return values
        return values, self._constraint_values(data.get("constraints"))

    def _parse_outputs(self, stdout: str, last: str) -> np.ndarray:
        """The M outputs of a forward model (``outputs``)."""
        expected = f"{self.outputs} numbers" + (" as a JSON list" if self.parse == "json" else " on the last line")
        try:
            if self.parse == "json":
                data = _load_json(stdout, last)
                if isinstance(data, dict):
                    data = data.get("value", data.get("outputs"))
                if not isinstance(data, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in data):
                    raise ValueError
                values = np.asarray(data, dtype=np.float64)
            else:
                values = np.asarray([float(v) for v in last.replace(",", " ").split()], dtype=np.float64)
        except ValueError:
            raise OracleFailure(f"unparsable output: expected {expected}, got {shown(_clip(last))}") from None
        if values.size != self.outputs:
            raise OracleFailure(f"unparsable output: expected {expected}, got {values.size}")
        return values

    def _constraint_values(self, reported: Any) -> dict[str, float]:
        """``{"constraints": {name: value}}`` of the JSON output, checked against the declared names."""
        if not isinstance(reported, dict):
            shape = ", ".join(f'"{n}": ...' for n in self.constraints)
            raise OracleFailure(f"unparsable output: expected \"constraints\": {{{shape}}} in the JSON, got "
                                f"{shown(_clip(json.dumps(reported)))}")
        missing = [n for n in self.constraints if n not in reported]
        unexpected = [str(k) for k in reported if k not in self.constraints]
        if missing or unexpected:
            problems = ([f"misses {', '.join(missing)}"] if missing else []) + \
                       ([f"has unknown {', '.join(unexpected)}"] if unexpected else [])
            raise OracleFailure(f"unparsable output: \"constraints\" {'; '.join(problems)}; "
                                f"expected {', '.join(self.constraints)}")
        values = {}
        for name in self.constraints:
            v = reported[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise OracleFailure(f"unparsable output: constraint {name} must be a number, got "
                                    f"{shown(_clip(json.dumps(v)))}")
            values[name] = float(v)
        return values


def _load_json(stdout: str, last: str) -> Any:
    """The JSON of a command's stdout, or of its last line when chatter comes before the result;
    ValueError when neither parses (:func:`pinnbo.files.loads`: a key given twice, a huge integer
    or deep nesting are refused too)."""
    try:
        return loads(stdout, "stdout")
    except ValueError:
        return loads(last, "stdout")


def _clip(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _tail(stderr: str, n: int = 300) -> str:
    """The end of stderr on one line: where a simulator says why it failed."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    text = " | ".join(lines[-5:])
    return text if len(text) <= n else "..." + text[-(n - 3):]

