"""Bad input, everywhere: every malformed case, option, tell or results folder ends through the
real CLI with one line `error: <field>: ...`, exit code 2, no traceback, and nothing changed on
disk (the whole test folder, with a finished run in it, is hashed before and after)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from typer.testing import CliRunner

from pinnbo.cli import app
from tests.survival import ROOT, environment, folder_digest

runner = CliRunner()

BASE = """name: t
problem: dropwave
params: {dim: 2}
method: random
budget: 5
initial_points: 3
seed: 0
output: __OUT__
"""


def case(**replace: str) -> str:
    """BASE with some lines replaced (value None drops the field) or added."""
    lines = dict(line.split(": ", 1) for line in BASE.strip().splitlines())
    for key, value in replace.items():
        if value is None:
            lines.pop(key, None)
        else:
            lines[key] = value
    return "".join(f"{k}: {v}\n" for k, v in lines.items())


def external(**params: str) -> str:
    fields = {"bounds": "{x: [0, 1], y: [0, 2]}", **params}
    return case(problem="external", params="{" + ", ".join(f"{k}: {v}" for k, v in fields.items()) + "}")


def variables(spec: str, pde: str | None = None, **fields: str) -> str:
    """An external problem declared with ``params.variables`` (and a PDE), other case fields replaced."""
    params = f"{{variables: {spec}" + (f", pde: {pde}" if pde else "") + "}"
    return case(problem="external", params=params, **fields)


def oracle(command: str, extra: str = "") -> str:
    return case(oracle="{command: '" + command + "'" + extra + "}")


TYPED_FILE = """from pinnbo import Box, Problem

def bowl(scale: float = 1.0):
    return Problem("bowl", Box((0, 0), (1, 1), ("x", "y")), lambda p: scale * (p[0] ** 2 + p[1] ** 2))
"""

BAD_PDE_FILE = """import sympy as sp
from pinnbo import PDE, Box, Problem

def plate():
    x, y, k = sp.symbols("x y k")
    u = sp.Function("u")(x, y)
    return Problem("plate", Box((0, 0), (1, 1), ("x", "y")), lambda p: 0.0, pde=PDE(u.diff(x, 2) + k * u, rhs=0))
"""


def corrupt_line(out: Path, tmp: Path) -> None:
    lines = (out / "evaluations.jsonl").read_text().splitlines()
    lines[1] = lines[1][:25] + "#garbage"
    (out / "evaluations.jsonl").write_text("\n".join(lines) + "\n")


def foreign_folder(out: Path, tmp: Path) -> None:
    shutil.rmtree(out)
    out.mkdir()
    (out / "thesis.tex").write_text("precious")


@dataclass
class Bad:
    id: str
    yaml: str
    needle: str
    command: list[str] = field(default_factory=lambda: ["run", "--quiet"])
    prepare: Callable[[Path, Path], None] | None = None


TELL = ["tell", "--x", "0.1,0.2"]
# A "billion laughs": 9^9 values through aliases, in a few hundred bytes.
BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi"))


def box_params(setting: str) -> str:
    """A heat box's params: ``setting`` beside valid faces, on a small grid."""
    return "{grid: 16, " + setting + ", boundary: {x-: '0', x+: '1', y-: x, y+: '0', z-: '0', z+: '0'}}"


TABLE = [
    # -- the case file ---------------------------------------------------------------------------
    Bad("yaml-syntax", "name: t\nproblem: [dropwave\n", "case.yaml: YAML syntax error at line 3"),
    Bad("yaml-not-a-mapping", "- name: t\n- problem: dropwave\n", "case: expected a mapping"),
    Bad("unknown-key", case(colour="red"), "colour: unknown field"),
    Bad("misspelled-key", case(budgt="5"), "budgt: unknown field (did you mean 'budget'?)"),
    Bad("missing-name", case(name=None), "name: required field is missing"),
    Bad("missing-problem", case(problem=None), "problem: required field is missing"),
    Bad("budget-not-integer", case(budget="ten"), "budget: expected an integer, got 'ten'"),
    Bad("budget-float", case(budget="7.5"), "budget: expected an integer, got 7.5"),
    Bad("budget-not-above-initial", case(budget="3"), "budget: must exceed initial_points (3), got 3"),
    Bad("initial-points-zero", case(initial_points="0"), "initial_points: expected an integer >= 1"),
    Bad("seed-negative", case(seed="-1"), "seed: expected an integer >= 0"),
    Bad("name-with-slash", case(name="a/b"), "name: expected letters"),
    Bad("noise-nan", case(noise=".nan"), "noise: expected a finite number"),
    Bad("device-unknown", case(device="gpu"), "device: expected cpu, cuda"),
    Bad("timeout-negative", case(timeout="-5"), "timeout: expected a number of seconds > 0, got -5"),
    Bad("timeout-text", case(timeout="soon"), "timeout: expected a number of seconds > 0, got 'soon'"),
    Bad("workers-zero", case(workers="0"), "workers: expected an integer >= 1, got 0"),
    Bad("scheduler-in-a-case-file", case(scheduler="tcp://127.0.0.1:8786"),
        "scheduler: a case file cannot name a Dask scheduler"),
    Bad("scheduler-not-an-address", BASE, "--scheduler: expected a Dask scheduler address such as tcp://host:8786, got "
        "'head node'", command=["run", "--scheduler", "head node", "--quiet"]),
    Bad("batch-not-a-flag", case(batch="sometimes"), "batch: expected true or false, got 'sometimes'"),
    # -- problem and method ----------------------------------------------------------------------
    Bad("unknown-problem", case(problem="dropwav"), "problem: unknown problem 'dropwav' (did you mean 'dropwave'?)"),
    Bad("problem-file-missing", case(problem="nowhere.py:f"), "problem: no such file 'nowhere.py'"),
    Bad("problem-file-no-function", case(problem="badpde.py:nothing"), "problem: 'badpde.py' defines no function 'nothing'",
        prepare=lambda out, tmp: (tmp / "badpde.py").write_text(BAD_PDE_FILE)),
    Bad("params-not-mapping", case(params="[1, 2]"), "params: expected a mapping, got list"),
    Bad("unknown-problem-parameter", case(params="{dim: 2, dimension: 3}"), "params.dimension: unknown parameter"),
    Bad("problem-parameter-out-of-range", case(params="{dim: -2}"), "params.dim"),
    Bad("unknown-method", case(method="bayes"), "method: unknown method 'bayes'"),
    Bad("unknown-method-parameter", case(method="pinn-bo", method_params="{epochs: 3}"), "method_params.epochs: unknown parameter"),
    Bad("method-parameter-type", case(method="pinn-bo", method_params="{hidden: big}"), "method_params.hidden: expected a list of integers"),
    Bad("method-parameter-sign", case(method="pinn-bo", method_params="{learning_rate: 0}"), "method_params.learning_rate: expected a positive number"),
    Bad("method-parameter-negative", case(method="pinn-bo", method_params="{exploration_scale: -1}"), "method_params.exploration_scale: expected a number >= 0"),
    Bad("method-parameter-zero-no-longer-automatic", case(method="pinn-bo", method_params="{thompson_draws: 0}"),
        "method_params.thompson_draws: expected auto or a number > 0, got 0 (0 no longer means automatic"),
    Bad("method-parameter-auto-misspelt", case(method="pinn-bo", method_params="{exploration_scale: automatic}"),
        "method_params.exploration_scale: expected auto or a number, got 'automatic'"),
    Bad("boundary-does-not-parse", case(problem="heat_plate", params="{grid: 16, boundary: {left: 'sin(', right: '0', bottom: x, top: '0'}}"),
        "params.boundary.left: cannot parse formula 'sin('"),
    Bad("boundary-unknown-symbol", case(problem="heat_plate", params="{grid: 16, boundary: {left: '0', right: '0', bottom: x, top: 'z*x'}}"),
        "params.boundary.top: unknown symbol 'z' in 'z*x'"),
    Bad("conductivity-not-positive", case(problem="heat_plate", params="{grid: 16, conductivity: [1, -2], boundary: {left: '0', right: '0', bottom: x, top: '0'}}"),
        "params.conductivity: expected two positive numbers [k_x, k_y] or a symmetric positive-definite matrix "
        "[[k_xx, k_xy], [k_xy, k_yy]] of numbers or formulas of x and y, or a formula of x and y, got [1, -2]"),
    Bad("conductivity-formula-not-positive", case(problem="heat_plate", params="{grid: 16, conductivity: 'x - 1', boundary: {left: '0', right: '0', bottom: x, top: '0'}}"),
        "params.conductivity: 'x - 1' is -1 at (x, y) = (0, 0); expected a formula of x and y, finite and positive on "
        "the whole closed plate"),
    Bad("velocity-not-numbers", case(problem="heat_plate", params="{grid: 16, velocity: [1, fast], boundary: {left: '0', right: '0', bottom: x, top: '0'}}"),
        "params.velocity: expected two numbers [v_x, v_y], got [1, 'fast']"),
    Bad("box-face-missing", case(problem="heat_box", params="{grid: 16, boundary: {x-: '0', x+: '1', y-: x, y+: '0', z-: '0'}}"),
        "params.boundary.z+: missing; every face needs Dirichlet data"),
    Bad("box-face-not-finite", case(problem="heat_box", params="{grid: 16, boundary: {x-: '0', x+: '1', y-: x, y+: 'log(z)', z-: '0', z+: '0'}}"),
        "params.boundary.y+: boundary data is not finite at (x, z) = (0, 0) (formula 'log(z)'); it must be real and "
        "finite on the whole closed face"),
    Bad("box-flow-too-strong", case(problem="heat_box", params=box_params("velocity: [30, 0, 15]")),
        "params.velocity: the flow across the box, |v_x| (x1 - x0) + |v_y| (y1 - y0) + |v_z| (z1 - z0), must be at most "
        "40, got 45"),
    Bad("box-tensor-not-definite", case(problem="heat_box", params=box_params("conductivity: [[1, 2, 0], [2, 1, 0], [0, 0, 1]]")),
        "params.conductivity: expected a formula of x, y and z or a symmetric positive-definite tensor [[k_xx, k_xy, "
        "k_xz], [k_xy, k_yy, k_yz], [k_xz, k_yz, k_zz]] of numbers or formulas of x, y and z, got [[1, 2, 0], [2, 1, "
        "0], [0, 0, 1]]"),
    Bad("box-graded-tensor-not-definite",
        case(problem="heat_box", params=box_params('conductivity: [["1 + x", "1 + x", 0], ["1 + x", 1, 0], [0, 0, 1]]')),
        "params.conductivity: [['1 + x', '1 + x', 0], ['1 + x', 1, 0], [0, 0, 1]] is not finite and positive-definite "
        "at (x, y, z) = (0, 0, 0)"),
    Bad("box-graded-tensor-asymmetric",
        case(problem="heat_box", params=box_params('conductivity: [[1, "x", 0], ["y", 1, 0], [0, 0, 1]]')),
        "params.conductivity: expected a symmetric tensor, got [0][1] = 'x' and [1][0] = 'y'"),
    Bad("problem-parameter-type", case(problem="typed.py:bowl", params="{scale: abc}"), "params.scale: expected a number, got 'abc'",
        prepare=lambda out, tmp: (tmp / "typed.py").write_text(TYPED_FILE)),
    Bad("pde-symbol-not-an-input", case(problem="badpde.py:plate", params=None), "symbol k is not an input of u(x, y)",
        prepare=lambda out, tmp: (tmp / "badpde.py").write_text(BAD_PDE_FILE)),
    # -- a problem declared in YAML and its external oracle ------------------------------------------
    Bad("bounds-inverted", external(bounds="{x: [1, 0]}"), "params.bounds.x: lower bound 1.0 must be below upper bound 0.0"),
    Bad("bounds-infinite", external(bounds="{x: [0, .inf]}"), "params.bounds.x: bounds must be finite"),
    Bad("bounds-not-a-pair", external(bounds="{x: [0, 1, 2]}"), "params.bounds.x: expected [lower, upper]"),
    Bad("bounds-missing", case(problem="external", params=None), "params.variables: required parameter of problem 'external'"),
    Bad("variables-and-bounds", external(variables="{x: [0, 1]}"), "params.bounds: the design variables are given twice"),
    Bad("choices-empty", variables("{m: {choices: []}}"), "params.variables.m.choices: expected a list of at least two names"),
    Bad("choices-repeated", variables("{m: {choices: [a, a]}}"), "variables.m: the choices must be different"),
    Bad("integer-bounds-not-integers", variables("{n: {integer: [1, 2.5]}}"),
        "params.variables.n.integer: expected integer bounds [lower, upper], got [1, 2.5]"),
    Bad("log-bounds-not-positive", variables("{r: {log: [0, 1]}}"), "params.variables.r.log: a log scale needs bounds > 0"),
    Bad("variable-kind-unknown", variables("{r: {ordinal: [0, 1]}}"), "params.variables.r: expected [lower, upper], {log:"),
    Bad("pde-names-a-choice", variables("{x: [0, 1], m: {choices: [a, b]}}", pde="'diff(u, x, 2) = 0'"),
        "params.pde: the PDE's variables are real; m is a choice"),
    Bad("pde-variables-not-a-variable", variables("{x: [0, 1], y: [0, 1]}", pde="'diff(u, x, 2) = 0', pde_variables: [x, t]"),
        "params.pde_variables[1]: 't' is not a design variable (x, y)"),
    Bad("pde-variables-without-pde", case(problem="external", params="{variables: {x: [0, 1]}, pde_variables: [x]}"),
        "params.pde_variables: names the PDE's own variables, and the case has no pde"),
    Bad("pde-variable-a-choice-with-hint", variables("{x: [0, 1], m: {choices: [a, b]}}", pde="'diff(u, x, 2) = 0'"),
        "(name the PDE's own variables with pde_variables: [x, y])"),
    Bad("pde-boundary-outside-the-box", external(pde="'diff(u, x, 2) + diff(u, y, 2) = 0'",
                                              pde_boundary="['u = 0 at x = 0', 'u = 0 at x = 3']"),
        "params.pde_boundary[1]: the plane x = 3 is outside the box's x range [0, 1]"),
    Bad("pde-boundary-nonlinear", external(pde="'diff(u, x, 2) + diff(u, y, 2) = 0'", pde_boundary="['u**2 = 1 at y = 0']"),
        "params.pde_boundary[0]: u(x, y)**2 = 1 is not linear in the unknown u(x, y)"),
    Bad("pde-boundary-without-at", external(pde="'diff(u, x, 2) + diff(u, y, 2) = 0'", pde_boundary="['u = 0']"),
        "params.pde_boundary[0]: expected \"condition at variable = value\""),
    Bad("pde-boundary-without-pde", external(pde_boundary="['u = 0 at x = 0']"),
        "params.pde_boundary: boundary conditions of a PDE, and the case has no pde"),
    Bad("pde-boundary-for-pinn-bo", external(pde="'diff(u, x, 2) + diff(u, y, 2) = 0'", pde_boundary="['u = 0 at x = 0']")
        .replace("method: random", "method: pinn-bo"),
        "method: 'pinn-bo' trains on the PDE's residual and does not take its boundary conditions"),
    Bad("method-refuses-integers", variables("{x: [0, 1], n: {integer: [1, 4]}}", method="neural-bo"),
        "method: 'neural-bo' takes real and log variables and n is an integer; use one of"),
    Bad("choice-placeholder-float-format", variables("{x: [0, 1], m: {choices: [a, b]}}",
                                                     oracle="{command: 'echo {x} {m:.3f}'}"),
        "oracle.command: bad format"),
    Bad("tell-choice-not-in-list", variables("{x: [0, 1], m: {choices: [a, b]}}"), "tell: design [0.1, 'c']: m: expected "
        "one of a, b, got 'c'", command=["tell", "--x", "0.1,c", "--y", "1"]),
    Bad("tell-integer-not-integer", variables("{x: [0, 1], n: {integer: [1, 4]}}"), "tell: design [0.1, 2.5]: n: "
        "expected an integer, got 2.5", command=["tell", "--x", "0.1,2.5", "--y", "1"]),
    Bad("sense-unknown", external(sense="sideways"), "params.sense: expected minimize or maximize"),
    Bad("yaml-pde-unknown-symbol", external(pde="'diff(u, x, 2) + k*u = 0'"), "params.pde: unknown symbol 'k'"),
    Bad("yaml-pde-does-not-parse", external(pde="'diff(u, x, 2 = 0'"), "params.pde: cannot parse"),
    Bad("no-oracle-to-run", external(), "oracle: problem 'external' is measured outside pinnbo"),
    Bad("oracle-not-a-mapping", case(oracle="./simulate"), "oracle: expected a mapping"),
    Bad("oracle-unknown-field", case(oracle="{command: 'echo {x1} {x2}', shell: true}"), "oracle.shell: unknown field"),
    Bad("oracle-missing-command", case(oracle="{parse: json}"), "oracle.command: required field is missing"),
    Bad("oracle-unknown-placeholder", oracle("echo {x1} {z}"), "oracle.command: unknown placeholder {z}; expected {x1}, {x2}"),
    Bad("oracle-missing-placeholder", oracle("echo {x1}"), "oracle.command: placeholder {x2} is missing"),
    Bad("oracle-unbalanced-quote", oracle('echo "{x1} {x2}'), "oracle.command: cannot split"),
    Bad("oracle-program-not-found", oracle("./no_such_simulator {x1} {x2}"), "oracle.command: program './no_such_simulator' not found"),
    Bad("oracle-parse-unknown", oracle("echo {x1} {x2}", ", parse: xml"), "oracle.parse: expected float or json, got 'xml'"),
    Bad("noise-with-oracle", oracle("echo {x1} {x2}", "").replace("oracle:", "noise: 0.1\noracle:"), "noise: synthetic noise"),
    # -- constraints ---------------------------------------------------------------------------------
    Bad("constraint-unknown-symbol", case(constraints="['x1 + z <= 1']"),
        "constraints[0]: unknown symbol 'z' in 'x1 + z <= 1'; expected a formula of x1, x2"),
    Bad("constraint-does-not-parse", case(constraints="['sin(x1 <= 1']"), "constraints[0]: cannot parse formula 'sin(x1 <= 1'"),
    Bad("constraint-equality", case(constraints="['x1 == 1']"), "constraints[0]: 'x1 == 1' is an equality"),
    Bad("constraint-chained", case(constraints="['0 <= x1 <= 1']"), "constraints[0]: '0 <= x1 <= 1' has 2 comparisons"),
    Bad("constraint-constant", case(constraints="['1 <= 2']"), "constraints[0]: '1 <= 2' does not depend on the design variables"),
    Bad("constraint-named-expr-unknown-symbol", case(constraints="[{name: edge, expr: 'w - 1'}]"),
        "constraints[0]: unknown symbol 'w' in 'w - 1'"),
    Bad("constraints-not-a-list", case(constraints="'x1 <= 1'"), "constraints: expected a list of inequalities"),
    Bad("constraint-unknown-field", case(constraints="[{name: a, formula: x1}]"), "constraints[0].formula: unknown field"),
    Bad("constraint-missing-expr", case(constraints="[{name: a}]"), "constraints[0].expr: required field is missing"),
    Bad("constraint-not-text", case(constraints="[3]"), "constraints[0]: expected an inequality"),
    Bad("constraint-name-twice", case(constraints="[{name: a, expr: x1}, {name: a, expr: x2}]"),
        "constraints[1]: the name 'a' is used twice"),
    Bad("constraint-name-of-the-problem", external(constraints="[c]").replace("params:", "constraints: [{name: c, expr: x}]\nparams:"),
        "constraints[0]: name 'c' is already a constraint of problem 'external'"),
    Bad("constraint-noise-negative", case(constraint_noise="-0.1"), "constraint_noise: expected a finite number >= 0"),
    Bad("constraint-noise-without-black-box", case(constraints="['x1 <= 1']", constraint_noise="0.1"),
        "constraint_noise: problem 'dropwave' has no black-box constraints"),
    Bad("constraint-noise-unknown-name", case(constraint_noise="{stress: 0.1}"), "constraint_noise.stress: unknown constraint"),
    Bad("constraint-with-a-blind-method", case(constraints="['x1 + x2 <= 1']", method="pinn-bo"),
        "method: 'pinn-bo' ignores constraints and this problem has x1 + x2 <= 1; use one of"),
    Bad("external-constraint-is-a-variable", external(constraints="[x]"), "params.constraints[0]: 'x' is a design variable"),
    Bad("external-constraints-need-json", external(constraints="[c]").replace("params:", "oracle: {command: 'echo {x} {y}'}\nparams:"),
        "oracle.parse: the problem has black-box constraints (c) that the command must report; use parse: json"),
    Bad("resume-other-constraints", case(constraints="['x1 <= 4']"), "constraints: __OUT__ was produced with a different constraints",
        command=["run", "--resume", "--quiet"]),
    # -- results folders ---------------------------------------------------------------------------
    Bad("rerun-without-overwrite", BASE, "output: __OUT__ is not empty; pass --resume to continue it or --overwrite"),
    Bad("resume-other-seed", case(seed="4"), "seed: __OUT__ was produced with a different seed (0, now 4)",
        command=["run", "--resume", "--quiet"]),
    Bad("resume-other-problem", case(problem="styblinski_tang"), "different problem ('dropwave', now 'styblinski_tang')",
        command=["run", "--resume", "--quiet"]),
    Bad("overwrite-foreign-folder", BASE, "--overwrite: __OUT__ holds no pinnbo run", command=["run", "--overwrite", "--quiet"],
        prepare=foreign_folder),
    Bad("output-is-a-file", case(output="__DIR__/notes.txt"), "output: __DIR__/notes.txt is a file",
        prepare=lambda out, tmp: (tmp / "notes.txt").write_text("notes")),
    Bad("corrupted-log-line", BASE, "evaluations.jsonl:2: corrupted record", command=["run", "--resume", "--quiet"],
        prepare=corrupt_line),
    # -- ask / tell --------------------------------------------------------------------------------
    Bad("tell-never-asked", BASE, "tell: design (0.1, 0.2) was never asked; nothing is pending", command=TELL + ["--y", "1"]),
    Bad("tell-wrong-design", case(budget="6"), "tell: design (0.1, 0.2) was never asked; the pending design 5 is (",
        command=TELL + ["--y", "1"], prepare=lambda out, tmp: _ask(out, tmp)),
    Bad("tell-no-pinnbo-folder", case(output="__DIR__/nothing"), "was never asked: __DIR__/nothing holds no run",
        command=TELL + ["--y", "1"]),
    Bad("tell-x-count", BASE, "--x: expected 2 comma-separated numbers (x1, x2)", command=["tell", "--x", "0.1", "--y", "1"]),
    Bad("tell-x-text", BASE, "--x: expected 2 comma-separated numbers", command=["tell", "--x", "a,b", "--y", "1"]),
    Bad("tell-y-nan", BASE, "--y: expected a finite number, got 'nan'", command=TELL + ["--y", "nan"]),
    Bad("tell-y-text", BASE, "--y: expected a number, got 'hot'", command=TELL + ["--y", "hot"]),
    Bad("tell-value-and-failure", BASE, "tell: give the measured value (--y) or the reason it failed (--failed), not both",
        command=TELL + ["--y", "1", "--failed", "broke"]),
    Bad("tell-no-value", BASE, "tell: give the measured value (--y) or the reason it failed (--failed)", command=TELL),
    Bad("tell-json-invalid", BASE, "--json: not valid JSON", command=["tell", "--json", "{x: 1"]),
    Bad("tell-json-unknown-key", BASE, "--json: unknown key 'value'", command=["tell", "--json", '{"x": [0, 0], "value": 1}']),
    Bad("tell-constraint-unknown", BASE, "--constraint: unknown constraint 'c'; expected none: the problem has no measured constraints",
        command=TELL + ["--y", "1", "--constraint", "c=0.5"]),
    Bad("tell-constraint-missing", external(constraints="[c]"), "--constraint: no value for c",
        command=["tell", "--x", "0.1,0.2", "--y", "1"]),
    Bad("tell-constraint-not-a-pair", external(constraints="[c]"), "--constraint: expected name=value, got 'c'",
        command=["tell", "--x", "0.1,0.2", "--y", "1", "--constraint", "c"]),
    Bad("ask-budget-spent", BASE, "budget: all 5 evaluations are recorded; pass --budget", command=["ask"]),
    Bad("ask-corrupted-pending", BASE, "pending.json: corrupted pending design", command=["ask"],
        prepare=lambda out, tmp: (out / "pending.json").write_text("{not json")),
    Bad("ask-other-seed-names-the-option", BASE, "--seed: __OUT__ was produced with a different seed (0, now 5)",
        command=["ask", "--seed", "5"]),
    # -- sizes: a mistake is an error now, not a run that never starts -----------------------------------
    Bad("dim-huge", case(params="{dim: 10000}"), "params.dim: expected an integer <= 1000, got 10000"),
    Bad("initial-points-huge", case(initial_points="100000000"), "initial_points: expected an integer <= 10000"),
    Bad("budget-huge", case(budget="1000000000"), "budget: expected an integer <= 100000, got 1000000000"),
    Bad("bench-seeds-huge", BASE, "--seeds: expected N (seeds 0..N-1, 1 <= N <= 10000)",
        command=["bench", "--seeds", "99999999999", "--quiet"]),
    Bad("bench-jobs-huge", BASE, "--jobs: expected an integer from 1 to 256, got 100000",
        command=["bench", "--jobs", "100000", "--quiet"]),
    Bad("budget-override-huge", BASE, "--budget: expected an integer <= 100000", command=["run", "--budget",
                                                                                        "1000000000", "--quiet"]),
    # -- the case file's YAML ------------------------------------------------------------------------
    Bad("yaml-duplicate-key", BASE + "budget: 7\n", "case.yaml: line 9: duplicate key 'budget'"),
    Bad("yaml-alias-bomb", BOMB + BASE, "case.yaml: expands to more than 100000 values (through YAML aliases?)"),
    Bad("long-value-quoted-briefly", case(method="'" + "x" * 5000 + "'"), "method: unknown method 'xxxx"),
    Bad("name-dot", case(name="."), "name: expected letters, digits"),
    Bad("name-dot-dot", case(name=".."), "name: expected letters, digits"),
    Bad("beam-without-its-bc", case(problem="beam", params="{EI: '1 + x'}"), "params.bc: missing; a beam other"),
    # -- what the trust round found: each one line, exit 2, nothing written -------------------------
    Bad("constraint-non-real-comparison", case(constraints="['Piecewise((x1, x1 < sqrt(-1)), (0, True)) <= 1']"),
        "constraints[0]: cannot parse formula 'Piecewise((x1, x1 < sqrt(-1)), (0, True)) <= 1' (the comparison "
        "'x1 < sqrt(-1)' is between non-real values)"),
    Bad("constraint-complex-side", case(constraints="['x1*sqrt(-1) <= 1']"),
        "constraints[0]: 'x1*sqrt(-1) <= 1' is not real-valued"),
    Bad("constraint-huge-exact-number", case(constraints="['sqrt(9999999999**1000+1) <= x1']"),
        "constraints[0]: cannot parse formula 'sqrt(9999999999**1000+1) <= x1' (an exact power with about 9934 digits"),
    Bad("constraint-product-of-huge-numbers", case(constraints="['10**300*10**300*x1 <= 1']"),
        "constraints[0]: cannot parse formula '10**300*10**300*x1 <= 1' (an exact number of more than 400 digits)"),
    Bad("constraint-huge-power", case(constraints="['x1**(10**8) <= 1']"), "the exponent '100000000' is larger than 1000"),
    Bad("constraint-call-of-an-expression", case(constraints="['sin(x1)(2) <= 1']"),
        "constraints[0]: cannot parse formula 'sin(x1)(2) <= 1' (calling the result of an expression"),
    Bad("yaml-pde-derivative-blows-up",
        external(pde="'diff(diff(diff(diff(tan(tan(tan(tan(x)))), x, 4), x, 4), x, 4), x, 4) + u = 0'"),
        "params.pde: cannot parse formula 'diff(diff(diff(diff(tan(tan(tan(tan(x)))), x, 4), x, 4), x, 4), x, 4) + u "
        "= 0' (diff: the derivative grows past 2000 operations"),
    Bad("yaml-pde-order-too-high", external(pde="'diff(u, x, 4, y, 4) = 0'"),
        "params.pde: cannot parse formula 'diff(u, x, 4, y, 4) = 0' (diff: a derivative of order 8; at most 4)"),
    Bad("yaml-base-60-number", case(budget="1:20"), "budget: expected an integer, got '1:20'"),
    Bad("yaml-1.1-boolean", case(batch="yes"), "batch: expected true or false, got 'yes'"),
    Bad("yaml-nested-too-deeply", "a: " + "[" * 20_000 + "]" * 20_000 + "\n",
        "case.yaml: nested too deeply; a case is a few levels of mappings and lists"),
    Bad("warm-start-without-objective", case(warm_start="w.csv"),
        "warm_start: w.csv: no objective column; name it y or value or objective",
        prepare=lambda out, tmp: (tmp / "w.csv").write_text("x1,x2\n0.1,0.2\n")),
    Bad("warm-start-column-twice", case(warm_start="w.csv"), "warm_start: w.csv: the column 'x1' is named twice",
        prepare=lambda out, tmp: (tmp / "w.csv").write_text("x1,x2,x1,y\n0.1,0.2,0.3,1\n")),
    Bad("warm-start-huge-integer", case(warm_start="w.jsonl"),
        "warm_start: w.jsonl:1: not JSON pinnbo reads (Exceeds the limit (4300 digits)",
        prepare=lambda out, tmp: (tmp / "w.jsonl").write_text('{"x": [0.1, 0.2], "y": ' + "9" * 5000 + "}\n")),
    Bad("warm-start-nested-too-deeply", case(warm_start="w.jsonl"),
        "warm_start: w.jsonl:1: not JSON pinnbo reads (nested too deeply)",
        prepare=lambda out, tmp: (tmp / "w.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")),
    Bad("warm-start-missing-names-the-case-folder", case(warm_start="nowhere.csv"),
        "warm_start.file: no such file 'nowhere.csv' (relative to the case file's folder __DIR__)"),
    Bad("record-with-a-huge-integer", BASE, "evaluations.jsonl:2: corrupted record (ValueError)",
        command=["run", "--resume", "--quiet"], prepare=lambda out, tmp: _replace_y(out, "9" * 5000)),
    Bad("record-nested-too-deeply", BASE, "evaluations.jsonl:2: corrupted record (RecursionError)",
        command=["run", "--resume", "--quiet"], prepare=lambda out, tmp: _replace_y(out, "[" * 100_000 + "]" * 100_000)),
    Bad("tell-json-huge-integer", BASE, "--json: not JSON pinnbo reads (Exceeds the limit",
        command=["tell", "--json", '{"x": [0, 0], "y": ' + "9" * 5000 + "}"]),
    Bad("tell-json-key-twice", BASE, "--json: not JSON pinnbo reads (the key 'y' is given twice",
        command=["tell", "--json", '{"x": [0, 0], "y": 1, "y": 2}']),
    Bad("tell-tolerance-too-wide", BASE, "--tolerance: expected a fraction of each variable's range in (0, 0.05]",
        command=TELL + ["--y", "1", "--tolerance", "0.5"]),
    Bad("bench-params-nested-too-deeply", BASE, "--params: not JSON pinnbo reads (nested too deeply)",
        command=["bench", "--params", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "--quiet"]),
    Bad("ask-n-zero", BASE, "--n: expected a positive number of designs, got 0", command=["ask", "--n", "0"]),
    Bad("ask-n-negative", BASE, "--n: expected a positive number of designs, got -3", command=["ask", "--n", "-3"]),
    Bad("asks-outside-the-box", BASE, "asks.jsonl:1: corrupted ask: x1 = 99.0 is outside the box",
        command=["run", "--resume", "--quiet", "--budget", "6"],
        prepare=lambda out, tmp: (out / "asks.jsonl").write_text('{"index": 5, "x": [99.0, 0.0], "phase": "optimizer"}\n')),
    Bad("asks-wrong-dimension", BASE, "asks.jsonl:1: corrupted ask: 3 values for the 2 design variables",
        command=["run", "--resume", "--quiet", "--budget", "6"],
        prepare=lambda out, tmp: (out / "asks.jsonl").write_text('{"index": 5, "x": [0, 0, 0], "phase": "optimizer"}\n')),
    Bad("budget-below-initial-points-names-the-option", BASE, "--budget: must exceed initial_points (3), got 2; lower "
        "--initial-points", command=["run", "--budget", "2", "--quiet"]),
    # -- results folders that are not what they should be -------------------------------------------------------
    Bad("record-with-nan", BASE, "evaluations.jsonl:2: corrupted record: 'y' must be a finite number or null",
        command=["run", "--resume", "--quiet"], prepare=lambda out, tmp: _replace_y(out, "NaN")),
    Bad("record-with-infinity", BASE, "evaluations.jsonl:2: corrupted record: 'y' must be a finite number or null",
        command=["run", "--resume", "--quiet"], prepare=lambda out, tmp: _replace_y(out, "Infinity")),
    Bad("log-is-a-directory", BASE, "evaluations.jsonl: corrupted evaluation log (a directory",
        command=["run", "--resume", "--quiet"], prepare=lambda out, tmp: _into_directory(out / "evaluations.jsonl")),
    Bad("log-is-a-symlink", BASE, "evaluations.jsonl: corrupted evaluation log (a symbolic link",
        command=["run", "--resume", "--quiet"], prepare=lambda out, tmp: _into_symlink(out / "evaluations.jsonl", tmp)),
    Bad("checkpoint-is-a-directory", BASE, "checkpoint.pt: corrupted state file (not a regular file)",
        command=["run", "--resume", "--quiet"], prepare=lambda out, tmp: _into_directory(out / "checkpoint.pt")),
    Bad("resume-and-overwrite", BASE, "--resume and --overwrite: give one of them",
        command=["run", "--resume", "--overwrite", "--quiet"]),
    Bad("resume-budget-below-the-log", BASE, "--budget: 4 is below the 5 evaluations already recorded",
        command=["run", "--resume", "--budget", "4", "--quiet"]),
]


def _replace_y(out: Path, literal: str) -> None:
    lines = (out / "evaluations.jsonl").read_text().splitlines()
    lines[1] = re.sub(r'"y": [^,]+,', f'"y": {literal},', lines[1])
    (out / "evaluations.jsonl").write_text("\n".join(lines) + "\n")


def _into_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _into_symlink(path: Path, tmp: Path) -> None:
    target = tmp / "elsewhere.jsonl"
    shutil.move(path, target)
    path.symlink_to(target)


def _ask(out: Path, tmp: Path) -> None:
    path = tmp / "ask.yaml"
    path.write_text(case(budget="6").replace("__OUT__", str(out)))
    assert runner.invoke(app, ["ask", str(path)]).exit_code == 0


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A finished run of BASE that every row's folder starts from."""
    folder = tmp_path_factory.mktemp("template")
    path = folder / "case.yaml"
    path.write_text(BASE.replace("__OUT__", str(folder / "out")))
    result = runner.invoke(app, ["run", str(path), "--quiet"])
    assert result.exit_code == 0, result.output
    return folder / "out"


def setup(bad: Bad, finished_run: Path, tmp_path: Path) -> tuple[Path, str]:
    out = tmp_path / "out"
    shutil.copytree(finished_run, out)
    if bad.prepare is not None:
        bad.prepare(out, tmp_path)
    path = tmp_path / "case.yaml"
    path.write_text(bad.yaml.replace("__OUT__", str(out)).replace("__DIR__", str(tmp_path)))
    return path, bad.needle.replace("__OUT__", str(out)).replace("__DIR__", str(tmp_path))


def check(exit_code: int, stderr: str, stdout: str, needle: str) -> None:
    assert exit_code == 2, stderr + stdout
    assert "Traceback" not in stderr + stdout
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert len(lines[0]) < 800, lines[0]   # a value is quoted in at most ~200 characters
    assert lines[0].startswith("error: ") and needle in lines[0], lines[0]
    assert stdout.strip() == ""


@pytest.mark.parametrize("bad", TABLE, ids=[b.id for b in TABLE])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(bad, finished_run, tmp_path):
    path, needle = setup(bad, finished_run, tmp_path)
    before = folder_digest(tmp_path)
    result = runner.invoke(app, [bad.command[0], str(path), *bad.command[1:]])
    assert isinstance(result.exception, SystemExit)  # typer's exit, not an escaped exception
    check(result.exit_code, result.stderr, result.stdout, needle)
    assert folder_digest(tmp_path) == before


def test_the_table_is_at_least_25_inputs():
    assert len(TABLE) >= 25 and len({b.id for b in TABLE}) == len(TABLE)


@pytest.mark.parametrize("bad", [b for b in TABLE if b.id in ("corrupted-log-line", "tell-wrong-design")],
                         ids=lambda b: b.id)
def test_the_installed_entry_point_behaves_the_same(bad, finished_run, tmp_path):
    """The same through `python -m pinnbo.cli` in a fresh process (real exit code and streams)."""
    path, needle = setup(bad, finished_run, tmp_path)
    before = folder_digest(tmp_path)
    result = subprocess.run([sys.executable, "-m", "pinnbo.cli", bad.command[0], str(path), *bad.command[1:]],
                            capture_output=True, text=True, cwd=ROOT, env=environment(COLUMNS="80"), timeout=120)
    check(result.returncode, result.stderr, result.stdout, needle)
    assert folder_digest(tmp_path) == before
