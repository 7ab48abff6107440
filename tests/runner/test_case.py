"""Case-file validation: every mistake is one line that names the field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from pinnbo.errors import MethodError
from pinnbo.problem import ProblemError
from pinnbo.runner.build import build_optimizer, build_problem, check_params
from pinnbo.runner.case import CaseError, case_from_dict, load_case

CASES = Path(__file__).resolve().parents[2] / "cases"
HEAT = {"name": "t", "problem": "heat_plate", "params": {"boundary": {
    "left": "0", "right": "0", "bottom": "x", "top": "0"}, "grid": 16}}


def base(**changes):
    data = {"name": "t", "problem": "dropwave", "budget": 6, "initial_points": 3}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not ...}


BAD_CASES = [
    (base(colour="red"), "colour"),
    (base(budgt=5), "did you mean 'budget'"),
    (base(name=...), "name"),
    (base(problem=...), "problem"),
    (base(budget="ten"), "budget"),
    (base(budget=3), "budget"),
    (base(budget=2.5), "budget"),
    (base(initial_points=0), "initial_points"),
    (base(initial_points=True), "initial_points"),
    (base(seed=-1), "seed"),
    (base(method="pinnbo"), "method"),
    (base(method=3), "method"),
    (base(params=[1, 2]), "params"),
    (base(method_params="fast"), "method_params"),
    (base(noise=float("nan")), "noise"),
    (base(noise=-0.1), "noise"),
    (base(device="gpu"), "device"),
    (base(name="a b/c"), "name"),
    ([1, 2, 3], "mapping"),
]


@pytest.mark.parametrize("data, needle", BAD_CASES)
def test_bad_case_fields_are_named(data, needle):
    with pytest.raises(CaseError) as info:
        case_from_dict(data)
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


BAD_BUILDS = [
    (base(problem="heat_plat"), CaseError, "did you mean 'heat_plate'"),
    (base(params={"dimension": 3}), CaseError, "params.dimension"),
    ({**HEAT, "params": {"grid": 16}}, CaseError, "params.boundary"),
    ({**HEAT, "params": {**HEAT["params"], "boundary": {**HEAT["params"]["boundary"], "left": "sin("}}},
     ProblemError, "params.boundary.left"),
    ({**HEAT, "params": {**HEAT["params"], "boundary": {**HEAT["params"]["boundary"], "top": "z*x"}}},
     ProblemError, "params.boundary.top"),
    ({**HEAT, "params": {**HEAT["params"], "bounds": [[1, 0], [0, 1]]}}, ProblemError, "params.bounds"),
    (base(params={"dim": 0}), ProblemError, "params.dim"),
    (base(problem="nowhere.py:f"), CaseError, "nowhere.py"),
]


@pytest.mark.parametrize("data, error, needle", BAD_BUILDS)
def test_bad_problems_are_named(data, error, needle):
    data = {"budget": 6, "initial_points": 3, **data}
    with pytest.raises(error) as info:
        build_problem(case_from_dict(data))
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("params, needle", [
    ({"hidden": "big"}, "method_params.hidden"),
    ({"learning_rate": -1.0}, "method_params.learning_rate"),
    ({"epochs": 3}, "method_params.epochs"),
    ({"dtype": "float16"}, "method_params.dtype"),
    ({"thompson": "yes"}, "method_params.thompson"),
])
def test_bad_method_params_are_named(params, needle):
    case = case_from_dict(base(method="pinn-bo", method_params=params))
    with pytest.raises(MethodError) as info:
        build_optimizer(case, build_problem(case))
    assert needle in str(info.value)


def test_yaml_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nproblem: [heat\nbudget: 5\n")
    with pytest.raises(CaseError, match=r"broken.yaml: YAML syntax error at line \d+"):
        load_case(path)


def test_missing_file():
    with pytest.raises(CaseError, match="no such file"):
        load_case("cases/does_not_exist.yaml")


def test_overrides_and_smoke():
    case = load_case(CASES / "heat_bc1.yaml", {"seed": 7, "budget": 50, "smoke": True})
    assert case.seed == 7
    assert case.initial_points == 4 and case.budget == 6
    assert case.output_dir == Path("results/heat_bc1-smoke")   # never the real run's folder


def test_problem_from_a_user_file(tmp_path):
    (tmp_path / "my_problem.py").write_text(textwrap.dedent('''
        import sympy as sp
        from pinnbo import PDE, Box, Problem

        def bowl(shift: float = 0.5):
            x, y = sp.symbols("x y")
            u = sp.Function("u")(x, y)
            return Problem("bowl", Box((0, 0), (1, 1), ("x", "y")),
                           lambda p: (p[0] - shift) ** 2 + (p[1] - shift) ** 2,
                           pde=PDE(u.diff(x, 2) + u.diff(y, 2), rhs=4), optimum=0.0)
    '''))
    (tmp_path / "bowl.yaml").write_text("name: bowl\nproblem: my_problem.py:bowl\nparams: {shift: 0.25}\n"
                                        "budget: 6\ninitial_points: 3\n")
    case = load_case(tmp_path / "bowl.yaml")
    problem = build_problem(case)
    assert problem.objective([0.25, 0.25]) == 0.0


def test_exponents_without_a_dot_are_numbers(tmp_path):
    # YAML 1.1 (PyYAML's default) reads 1e-3 as text; a case file reads it as 0.001.
    (tmp_path / "c.yaml").write_text("name: c\nproblem: dropwave\nmethod: pinn-bo\nbudget: 1e1\n"
                                     "method_params: {learning_rate: 1e-3, pde_weight: 2E+0}\nnoise: 5e-2\n"
                                     "params: {dim: 2}\ninitial_points: 4\nseed: 0\n")
    with pytest.raises(CaseError, match=r"^budget: expected an integer"):
        load_case(tmp_path / "c.yaml")
    (tmp_path / "c.yaml").write_text((tmp_path / "c.yaml").read_text().replace("budget: 1e1", "budget: 10"))
    case = load_case(tmp_path / "c.yaml")
    assert case.method_params == {"learning_rate": 0.001, "pde_weight": 2.0}
    assert case.noise == 0.05


def _annotated(scale: float = 1.0, n: int = 3, label: str | None = None, table: dict | None = None,
               anything=None, mode: bool = False):
    return None


@pytest.mark.parametrize("params, expected", [
    ({"scale": 2, "n": 4, "label": "a", "table": {"k": 1}, "anything": object, "mode": True}, None),
    ({"n": 5.0}, {"n": 5}),
    ({"n": np.int64(7), "scale": np.float32(0.5)}, None),
    ({"label": None, "table": None}, None),
    ({"mode": np.bool_(True)}, None),
])
def test_params_match_the_factory_annotations(params, expected):
    checked = check_params(_annotated, params, "f")
    assert checked == (params if expected is None else expected)
    assert all(type(checked[k]) is type(v) for k, v in (expected or {}).items())


@pytest.mark.parametrize("params, message", [
    ({"scale": "abc"}, "params.scale: expected a number, got 'abc'"),
    ({"scale": "1e-3"}, "params.scale: expected a number, got '1e-3'"),   # quoted in YAML: text
    ({"scale": True}, "params.scale: expected a number, got True"),
    ({"n": 2.5}, "params.n: expected an integer, got 2.5"),
    ({"n": "3"}, "params.n: expected an integer, got '3'"),
    ({"label": 3}, "params.label: expected a string or null, got 3"),
    ({"table": [1]}, "params.table: expected a mapping or null, got [1]"),
    ({"mode": "yes"}, "params.mode: expected true or false, got 'yes'"),
])
def test_params_against_the_annotations_name_the_field(params, message):
    with pytest.raises(CaseError) as error:
        check_params(_annotated, params, "f")
    assert str(error.value) == message


@pytest.mark.parametrize("path", sorted(CASES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_case_validates(path):
    case = load_case(path)
    assert case.budget > case.initial_points


def test_noise_is_a_fraction_of_the_objective_std():
    from pinnbo.runner.build import output_std

    quiet = build_problem(case_from_dict(base()))
    noisy = build_problem(case_from_dict(base(noise=0.1)))
    assert quiet.noise_std == 0.0
    assert noisy.noise_std == pytest.approx(0.1 * output_std(quiet)[0])
    assert 0.01 < noisy.noise_std < 0.1   # DropWave values lie in [-1, 0]


def test_a_broken_file_in_problems_is_named_and_does_not_stop_the_others(tmp_path, monkeypatch):
    import problems
    from pinnbo.runner import build

    (tmp_path / "zz_broken_plate.py").write_text("def plate(:\n    pass\n")
    monkeypatch.setattr(problems, "__path__", [*problems.__path__, str(tmp_path)])
    monkeypatch.setattr(build, "PROBLEM_IMPORT_ERRORS", {})
    factories = build.registered_problems()
    assert "dropwave" in factories
    assert build.PROBLEM_IMPORT_ERRORS == {"zz_broken_plate": "SyntaxError: invalid syntax (line 1)"}
    with pytest.raises(CaseError) as error:
        build.resolve_problem("plate", tmp_path)
    assert str(error.value).endswith("; problems/zz_broken_plate.py did not import (SyntaxError: invalid syntax (line 1))")
