"""The YAML that case files are written in, read as YAML 1.2 reads it (:class:`CaseLoader`): the
scalars of its core schema, no key twice in a mapping. Safe loading only: no tag constructs an
object."""

from __future__ import annotations

import re

import yaml

from pinnbo.errors import shown


class DuplicateKey(yaml.constructor.ConstructorError):
    """A mapping of a case file gives the same key twice (PyYAML would keep the last silently)."""


class CaseLoader(yaml.SafeLoader):
    """PyYAML's safe loader, reading plain scalars as YAML 1.2 does and refusing duplicate keys.

    PyYAML follows YAML 1.1, which reads ``budget: 014`` as 12 (octal), ``1:20`` as 80 (base 60),
    ``1e-3`` as the text '1e-3', ``yes``/``off`` as booleans and ``YYYY-MM-DD`` as a date; YAML 1.2,
    every other tool and every user read 14, the text '1:20', 0.001 and texts. The resolvers below are
    YAML 1.2's core schema (decimal, ``0o`` octal and ``0x`` hexadecimal integers; floats with an
    optional dot; ``true``/``false``), so no number in a case is silently reinterpreted. A key given
    twice in one mapping is an error: which of two budgets the user meant is not ours to guess.
    """

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers
                if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                               "tag:yaml.org,2002:timestamp")]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base constructor says so
                continue
            if duplicate:
                raise DuplicateKey(None, None, f"duplicate key {shown(key)}", key_node.start_mark)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        text = self.construct_scalar(node)
        sign = -1 if text.startswith("-") else 1
        digits = text.lstrip("+-")
        if digits.startswith("0o"):
            return sign * int(digits[2:], 8)
        if digits.startswith("0x"):
            return sign * int(digits[2:], 16)
        return sign * int(digits, 10)


CaseLoader.add_constructor("tag:yaml.org,2002:int", CaseLoader.construct_yaml_int)
CaseLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))
CaseLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                 list("-+0123456789"))
CaseLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))
