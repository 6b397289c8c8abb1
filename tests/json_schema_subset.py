"""A validator for the subset of JSON Schema our schemas use (no dependency on jsonschema,
which this project does not install): type, enum, const, minimum, required, properties,
additionalProperties (false or a schema), items, anyOf.  Any other keyword is an error,
so a schema cannot silently ask for more than is checked.

    problems = validate(document, schema)     # [] when valid; else "path: what is wrong"
"""

from __future__ import annotations

from typing import Any

KEYWORDS = {"$schema", "title", "description", "type", "enum", "const", "minimum", "required", "properties",
            "additionalProperties", "items", "anyOf"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def validate(value: Any, schema: dict, path: str = "$") -> list[str]:
    unknown = set(schema) - KEYWORDS
    if unknown:
        raise ValueError(f"{path}: schema keywords not supported here: {sorted(unknown)}")
    if "anyOf" in schema:
        attempts = [validate(value, option, path) for option in schema["anyOf"]]
        if all(attempts):
            best = min(attempts, key=len)
            return [f"{path}: matches none of anyOf (closest: {best[0]})"]
    if "type" in schema and not TYPES[schema["type"]](value):
        return [f"{path}: expected {schema['type']}, got {type(value).__name__}"]
    problems: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} not in {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: {value!r} is not {schema['const']!r}")
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        problems.append(f"{path}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        problems += [f"{path}: missing {key!r}" for key in schema.get("required", ()) if key not in value]
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                problems += validate(item, properties[key], f"{path}.{key}")
            elif extra is False:
                problems.append(f"{path}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                problems += validate(item, extra, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for k, item in enumerate(value):
            problems += validate(item, schema["items"], f"{path}[{k}]")
    return problems
