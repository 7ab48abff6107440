"""The case file's one declaration: the JSON Schema ``pinnbo schema`` prints accepts every shipped
case and refuses what the loader refuses, its field table in docs/guide/case-files.md is current,
and the method settings it lists are the user's (no internal size, ``auto`` where the dimension
decides)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import jsonschema
import pytest
import yaml

from pinnbo.errors import UserError
from pinnbo.runner.build import build_optimizer, build_problem
from pinnbo.runner.case import FIELDS, RESUMABLE_KEYS, Case, case_from_dict, list_cases
from pinnbo.runner.schema import case_schema, field_table
from tests.survival import ROOT

VALIDATOR = jsonschema.Draft202012Validator(case_schema())


def test_pinnbo_schema_prints_a_valid_draft_2020_12_schema():
    out = subprocess.run([sys.executable, "-m", "pinnbo.cli", "schema"], capture_output=True, text=True, cwd=ROOT,
                         check=True).stdout
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == json.loads(json.dumps(case_schema()))
    assert list(schema["properties"]) == list(FIELDS) and schema["required"] == ["name", "problem"]


def test_every_shipped_case_is_valid_under_the_schema():
    cases = list_cases()
    assert len(cases) >= 20
    for path, data in cases:
        errors = [e.message for e in VALIDATOR.iter_errors(data)]
        assert not errors, (path.name, errors)


@pytest.mark.parametrize("change, field", [
    ({"budget": "ten"}, "budget"), ({"budget": 0}, "budget"), ({"seed": -1}, "seed"), ({"colour": "red"}, None),
    ({"method": "bayes"}, "method"), ({"batch": "yes"}, "batch"), ({"timeout": -5}, "timeout"),
    ({"oracle": {"parse": "json"}}, "oracle"), ({"constraint_noise": -0.1}, "constraint_noise"),
    ({"method": "pinn-bo", "method_params": {"hidden": [], "dtype": "half"}}, "method_params"),
    ({"method_params": {"thompson_draws": 0}}, "method_params"),
    ({"method": "pde-gp", "method_params": {"collocation_points": "many"}}, "method_params"),
])
def test_what_the_loader_refuses_the_schema_refuses(change, field):
    data = {"name": "t", "problem": "dropwave", "budget": 6, "initial_points": 3, **change}
    with pytest.raises(UserError) as raised:    # the case's CaseError, or the method's MethodError when built
        case = case_from_dict(data)
        build_optimizer(case, build_problem(case))
    assert str(raised.value).startswith(field or "colour")
    assert list(VALIDATOR.iter_errors(data)), change


def test_auto_settings_take_auto_or_a_number_and_internal_sizes_are_not_listed():
    pinn = case_schema()["allOf"]
    by_method = {}
    for rule in pinn:
        condition = rule["if"]
        const = (condition.get("properties") or condition["anyOf"][0]["properties"])["method"]["const"]
        by_method[const] = rule["then"]["properties"]["method_params"].get("properties", {})
    assert by_method["pinn-bo"]["thompson_draws"]["default"] == "auto"
    assert {"const": "auto"} in by_method["pinn-bo"]["thompson_draws"]["anyOf"]
    assert by_method["pde-gp"]["collocation_points"]["default"] == "auto"
    for internal in ("n_pool", "top_k", "refine_iterations", "misfit_tolerance", "noise_variance", "collocation_batch"):
        assert internal not in by_method["pinn-bo"]
    ok = {"name": "t", "problem": "dropwave", "method": "pinn-bo",
          "method_params": {"thompson_draws": "auto", "exploration_scale": 2.5}}
    assert not list(VALIDATOR.iter_errors(ok))
    # method auto (the default) chooses the method, so an editor flags settings written for it
    assert by_method["auto"] == {}
    for chosen in ({"method": "auto"}, {}):
        assert list(VALIDATOR.iter_errors({"name": "t", "problem": "dropwave", **chosen,
                                           "method_params": {"thompson_draws": 2}}))
        assert not list(VALIDATOR.iter_errors({"name": "t", "problem": "dropwave", **chosen}))


def test_the_field_table_in_the_docs_is_current():
    text = (ROOT / "docs" / "guide" / "case-files.md").read_text()
    found = re.search(r"-->\n(\| field \|.*?)<!-- end of generated table -->", text, re.S)
    assert found and found.group(1) == field_table(), "regenerate with pinnbo.runner.schema.field_table()"


def test_what_a_resume_may_change_and_what_case_json_stores_come_from_the_declaration():
    assert RESUMABLE_KEYS == {"budget", "output", "device", "smoke", "timeout", "target", "max_time", "workers",
                              "scheduler", "batch", "report"}
    case = case_from_dict({"name": "t", "problem": "dropwave", "noise": 0})
    stored = case.to_dict()
    assert list(stored) == ["name", "problem", "params", "method", "method_params", "budget", "initial_points",
                            "seed", "output", "device", "noise", "timeout", "oracle", "smoke"]
    assert stored["noise"] == 0.0 and isinstance(stored["noise"], float)
    assert isinstance(case, Case) and yaml.safe_dump(stored)
