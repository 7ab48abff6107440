"""The case file's JSON Schema (``pinnbo schema``) and the field table of docs/guide/case-files.md,
both from the declaration of :class:`~pinnbo.runner.case.Case` and the methods' settings."""

from __future__ import annotations

import json

from pinnbo.optimizers import AUTO, METHODS
from pinnbo.runner.case import RESUMABLE_KEYS, Case
from pinnbo.settings import settings_schema


def case_schema() -> dict:
    """The case file's JSON Schema (``pinnbo schema``), for editors that validate and complete:
    the fields of :class:`Case` and, per method, the settings ``method_params`` takes."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **Case.model_json_schema()}
    schema["allOf"] = [{"if": {"properties": {"method": {"const": name}}, "required": ["method"]},
                        "then": {"properties": {"method_params": settings_schema(cls.Settings)}}}
                       for name, cls in sorted(METHODS.items())]
    # auto, the default, chooses the method, so no setting is written for it
    schema["allOf"].append({"if": {"anyOf": [{"properties": {"method": {"const": AUTO}}, "required": ["method"]},
                                             {"not": {"required": ["method"]}}]},
                            "then": {"properties": {"method_params": {"maxProperties": 0}}}})
    return schema


def _schema_type(entry: dict) -> str:
    if "enum" in entry:
        return " \\| ".join(f"`{v}`" for v in entry["enum"])
    if "anyOf" in entry:
        return " or ".join(_schema_type(e) for e in entry["anyOf"] if e.get("type") != "null")
    if "$ref" in entry:
        return "mapping"
    kind = entry.get("type", "")
    names = {"integer": "integer", "number": "number", "string": "text", "boolean": "true/false",
             "object": "mapping", "array": "list"}
    text = names.get(kind, kind)
    low, high = entry.get("minimum", entry.get("exclusiveMinimum")), entry.get("maximum")
    if low is not None:
        text += f" {'≥' if 'minimum' in entry else '>'} {low}"
    if high is not None:
        text += f", ≤ {high}"
    return text


def field_table() -> str:
    """The Markdown table of the case file's fields (docs/guide/case-files.md), from the declaration."""
    schema = Case.model_json_schema()
    lines = ["| field | takes | default | what |", "|---|---|---|---|"]
    for name, entry in schema["properties"].items():
        if name in schema.get("required", ()):
            default = "required"
        else:
            value = entry.get("default")
            default = "none" if value is None else f"`{json.dumps(value)}`"
        resumable = " A resumed run may change it." if name in RESUMABLE_KEYS else ""
        lines.append(f"| `{name}` | {_schema_type(entry)} | {default} | {entry.get('description', '')}.{resumable} |")
    return "\n".join(lines) + "\n"
