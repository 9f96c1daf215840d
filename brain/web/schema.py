"""Request and response shapes, written once as OpenAPI 3.0 schemas, and the check of a request.

A shape is a plain dict in the OpenAPI 3.0 dialect of JSON Schema. A `Schema` gives one a name:
the OpenAPI document (brain/web/openapi.py) lists it under `components` and points at it with a
`$ref`, and `check` follows it in place. The same dict therefore says what the document promises
and what a request is held to, so the two cannot drift apart.

`check` knows the keywords Brain's shapes use (type, nullable, enum, oneOf, anyOf, properties,
required, additionalProperties: false, items, uniqueItems, minItems, maxItems, minimum, maximum,
minLength, maxLength, pattern) and refuses with `invalid_request`, naming the field the way a
client wrote it (`transcript[1].role: must be one of ...`). Keys starting with `x-` are notes
for the document generator (`x-refusal`: what a value that fits no `anyOf` alternative is told);
`check` ignores them otherwise. Falcon's `jsonschema` validator was not used:
it reads `req.media` (not Brain's bounded, journal-safe body reader), raises Falcon's own error
with jsonschema's wording, and re-checks the schema itself on every request.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from brain.errors import InvalidRequest

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,),
}  # fmt: skip


@dataclass(frozen=True, eq=False)
class Schema:
    """A named shape: `name` is its component name, `noun` how refusals speak of one."""

    name: str
    spec: dict[str, Any]
    noun: str = "object"


def nullable(spec: dict[str, Any] | Schema) -> dict[str, Any]:
    """`spec`, or null. For a named shape this is a `$ref` with `nullable`, as before 3.1."""
    if isinstance(spec, Schema):
        return {"$ref": spec, "nullable": True}
    return {**spec, "nullable": True}


def optional(spec: dict[str, Any]) -> dict[str, Any]:
    """A field that may be null (= absent); an enum must then list null too."""
    if "enum" in spec:
        spec = {**spec, "enum": [*spec["enum"], None]}
    return nullable(spec)


def check(spec: dict[str, Any] | Schema, value: Any, path: str = "") -> None:
    """Raise InvalidRequest naming the first place where `value` does not fit `spec`."""
    problem = _problem(spec, value, path)
    if problem is not None:
        raise InvalidRequest(problem)


def describe(spec: dict[str, Any] | Schema) -> str:
    """What a value of `spec` is, with its article: "a string", "a list of content blocks"."""
    if isinstance(spec, dict) and "oneOf" in spec:
        return " or ".join(describe(alternative) for alternative in spec["oneOf"])
    if isinstance(spec, dict) and "$ref" in spec:
        return describe(spec["$ref"])
    noun = _noun(spec)
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _noun(spec: dict[str, Any] | Schema) -> str:
    if isinstance(spec, Schema):
        return spec.noun
    if "$ref" in spec:
        return _noun(spec["$ref"])
    kind = spec.get("type", "value")
    if kind == "array" and "items" in spec:
        return f"list of {_noun(spec['items'])}s"
    return {"array": "list"}.get(kind, kind)


def _at(path: str, problem: str) -> str:
    return f"{path}: {problem}" if path else problem


def _problem(spec: dict[str, Any] | Schema, value: Any, path: str) -> str | None:
    """The first refusal for `value`, or None; the order is unknown field, required, fields."""
    named = spec
    if isinstance(spec, Schema):
        spec = spec.spec
    if value is None and spec.get("nullable"):
        return None
    if "$ref" in spec:
        return _problem(spec["$ref"], value, path)
    if "oneOf" in spec:
        if all(_problem(alt, value, path) is not None for alt in spec["oneOf"]):
            return _at(path, f"expected {describe(spec)}")
        return None
    kind = spec.get("type")
    if kind is not None and not _is_a(kind, value):
        return _at(path, f"expected {describe(named)}")
    if "enum" in spec and not any(_same(value, option) for option in spec["enum"]):
        return _at(path, "must be one of " + ", ".join(str(o) for o in spec["enum"]))
    problem = _kind_problem(spec, value, path)
    if problem is None and "anyOf" in spec \
            and all(_problem(alt, value, path) is not None for alt in spec["anyOf"]):
        problem = _at(path, spec.get("x-refusal") or f"expected {describe(named)}")
    return problem


def _kind_problem(spec: dict[str, Any], value: Any, path: str) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _number_problem(spec, value, path)
    if isinstance(value, str):
        return _string_problem(spec, value, path)
    if isinstance(value, list):
        return _list_problem(spec, value, path)
    if isinstance(value, dict):
        return _object_problem(spec, value, path)
    return None


def _is_a(kind: str, value: Any) -> bool:
    if isinstance(value, bool) and kind != "boolean":
        return False
    return isinstance(value, JSON_TYPES[kind])


def _same(value: Any, option: Any) -> bool:
    """JSON equality: `True` is not `1`, as Python's `==` would have it."""
    return type(value) is type(option) and value == option


def _number_problem(spec: dict[str, Any], value: float, path: str) -> str | None:
    low, high = spec.get("minimum"), spec.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        if low is not None and high is not None:
            return _at(path, f"must be between {_figure(low)} and {_figure(high)}")
        return _at(path, f"must be at least {_figure(low)}" if low is not None
                   else f"must be at most {_figure(high)}")
    return None


def _figure(number: float) -> str:
    """A bound as a client wrote it: 30 rather than 30.0, every digit of 2**53 - 1."""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def _string_problem(spec: dict[str, Any], value: str, path: str) -> str | None:
    if len(value) < spec.get("minLength", 0):
        return _at(path, f"must be at least {spec['minLength']} characters")
    if "maxLength" in spec and len(value) > spec["maxLength"]:
        return _at(path, f"must be at most {spec['maxLength']} characters")
    if "pattern" in spec and not _compiled(spec["pattern"]).search(value):
        return _at(path, f"must match {spec['pattern']}")
    return None


def _list_problem(spec: dict[str, Any], value: list, path: str) -> str | None:
    if "maxItems" in spec and len(value) > spec["maxItems"]:
        return _at(path, f"at most {spec['maxItems']} items")
    if len(value) < spec.get("minItems", 0):
        return _at(path, f"at least {spec['minItems']} items")
    if spec.get("uniqueItems"):
        seen = {json.dumps(item, sort_keys=True) for item in value}
        if len(seen) != len(value):
            return _at(path, "items must not repeat")
    items = spec.get("items")
    if items is not None:
        for index, item in enumerate(value):
            problem = _problem(items, item, f"{path}[{index}]")
            if problem is not None:
                return problem
    return None


def _object_problem(spec: dict[str, Any], value: dict, path: str) -> str | None:
    properties = spec.get("properties", {})
    if spec.get("additionalProperties") is False:
        for name in value:
            if name not in properties:
                return _at(path, f"unknown field: {name}")
    for name in spec.get("required", ()):
        if name not in value:
            return _at(_field(path, name), "required")
    for name, field_spec in properties.items():
        if name in value:
            problem = _problem(field_spec, value[name], _field(path, name))
            if problem is not None:
                return problem
    return None


def _field(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


@lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)
