"""Validation of the JSON documents perflab reads, against the published JSON Schemas.

The schemas live in ``perflab/schemas/`` (documented in docs/results-format.md)
and are checked with fastjsonschema, which generates Python code from a schema
(compiled once and kept in perflab's cache: :mod:`perflab.schema_cache`). A failure is reported as one line naming the JSON path, e.g.
``benchmarks[0].processes[1].samples[3].wall_ns: must be a non-negative integer``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEMA_DIR = Path(__file__).with_name("schemas")
_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "an object",
    "array": "a list",
    "boolean": "true or false",
    "null": "null",
}


def schema(name: str) -> dict[str, Any]:
    """The published schema ``name`` (e.g. "results") as a dict."""
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())


@functools.cache
def _validator(name: str) -> Callable[[Any], Any]:
    """The compiled validator of schema ``name``: fastjsonschema's generated code, loaded
    from :mod:`perflab.schema_cache` when a previous process compiled the same schema."""
    from perflab import schema_cache

    return schema_cache.validator((SCHEMA_DIR / f"{name}.schema.json").read_bytes())


def json_path(name: str) -> str:
    """fastjsonschema's ``data.benchmarks[0].name`` → ``benchmarks[0].name`` ("" for the root)."""
    return name.removeprefix("data").removeprefix(".")


def _expected(definition: dict[str, Any]) -> str:
    """What a schema definition asks for, in words: "a non-negative integer"."""
    types = definition.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    words = [_TYPE_WORDS.get(t, t) for t in types if t != "null"]
    if definition.get("minimum") == 0 and words in (["an integer"], ["a number"]):
        words = [
            w.replace("an integer", "a non-negative integer").replace(
                "a number", "a non-negative number"
            )
            for w in words
        ]
    text = " or ".join(words) if words else "null"
    return text + (" (or null)" if "null" in types and words else "")


def problem(exc: Any, document: Any) -> str:
    """One line for a fastjsonschema error: the JSON path and what it must be."""
    path = json_path(exc.name)
    rule, definition, value = exc.rule, exc.rule_definition, exc.value
    if rule == "required":
        present = value if isinstance(value, dict) else {}
        missing = [k for k in definition if k not in present]
        where = f"{path}: " if path else ""
        return f"{where}missing key {', '.join(repr(k) for k in missing)}"
    if rule == "type" or rule in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        full = exc.definition
        limit = ""
        if rule in ("maximum", "exclusiveMaximum"):
            limit = f" at most {definition:g}" if rule == "maximum" else f" below {definition:g}"
        elif rule == "exclusiveMinimum":
            limit = f" above {definition:g}"
        elif rule == "minimum" and definition != 0:
            limit = f" of at least {definition:g}"
        return f"{path}: must be {_expected(full)}{limit}, not {_shown(value)}"
    if rule in ("enum", "const"):
        allowed = definition if rule == "enum" else [definition]
        return f"{path}: must be one of {', '.join(repr(a) for a in allowed)}, not {_shown(value)}"
    if rule == "maxLength":
        return f"{path}: is too long (more than {definition:,} characters)"
    if rule == "pattern":
        what = (
            "base64 text"
            if path.endswith("encoded")
            else "a status list like 200-299,304"
            if path.endswith(".ok")
            else "in the expected form"
        )
        return f"{path}: is not {what}"
    if rule == "propertyNames":
        return f"{path}: its keys must be HTTP status codes (100-599)"
    return f"{path}: {exc.message.removeprefix('data.' + path).strip()}"


def _shown(value: Any) -> str:
    text = json.dumps(value)[:40] if not isinstance(value, (dict, list)) else type(value).__name__
    return {"dict": "an object", "list": "a list"}.get(text, text)


def validate(document: Any, name: str = "results") -> str | None:
    """Check ``document`` against the schema ``name``.

    Returns:
        None when valid, else one line naming the JSON path and the problem.
    """
    import fastjsonschema

    try:
        _validator(name)(document)
    except fastjsonschema.JsonSchemaValueException as exc:
        return problem(exc, document)
    return None


def fit(document: Any, name: str = "results") -> tuple[Any, list[str]]:
    """``document`` cut to the bounds of schema ``name``, so that what perflab writes it
    can always read back: strings longer than ``maxLength`` are shortened (ending in
    "…"), numbers beyond ``minimum``/``maximum`` clamped, lists past ``maxItems`` and
    objects past ``maxProperties`` cut, over-long property names shortened.

    Args:
        document: a JSON-shaped value (dicts, lists, str, int, float, bool, None).
        name: the schema.

    Returns:
        (the bounded copy, the JSON paths that were cut: empty when nothing was).
    """
    root = schema(name)
    cuts: list[str] = []

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = root["definitions"][node["$ref"].rsplit("/", 1)[-1]]
        return node

    def walk(value: Any, node: dict[str, Any], path: str) -> Any:
        node = resolve(node)
        for option in node.get("anyOf", node.get("oneOf", [])):
            option = resolve(option)
            kind = option.get("type")
            if kind is None or _is(value, kind):
                node = {**node, **option}
                break
        if isinstance(value, str) and len(value) > node.get("maxLength", len(value)):
            cuts.append(path)
            return value[: max(0, node["maxLength"] - 1)] + "…"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            low, high = node.get("minimum"), node.get("maximum")
            if high is not None and value > high:
                cuts.append(path)
                return type(value)(high) if isinstance(value, int) else float(high)
            if low is not None and value < low:
                cuts.append(path)
                return type(value)(low) if isinstance(value, int) else float(low)
            return value
        if isinstance(value, list):
            limit = node.get("maxItems", len(value))
            if len(value) > limit:
                cuts.append(path)
            items = node.get("items", {})
            return [walk(v, items, f"{path}[{i}]") for i, v in enumerate(value[:limit])]
        if isinstance(value, dict):
            props, extra = node.get("properties", {}), node.get("additionalProperties", {})
            key_limit = node.get("propertyNames", {}).get("maxLength")
            out: dict[str, Any] = {}
            for key, item in value.items():
                if len(out) >= node.get("maxProperties", len(value)):
                    cuts.append(path)
                    break
                shown = key
                if key_limit is not None and len(key) > key_limit and key not in props:
                    shown = key[: key_limit - 1] + "…"
                    cuts.append(f"{path}.{shown}")
                sub = props.get(key, extra if isinstance(extra, dict) else {})
                out[shown] = walk(item, sub, f"{path}.{key}" if path else key)
            return out
        return value

    return walk(document, root, ""), cuts


def _is(value: Any, kind: str | list[str]) -> bool:
    """True when ``value`` has the JSON Schema ``type`` ``kind`` (or one of a list)."""
    kinds = [kind] if isinstance(kind, str) else kind
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    return any(checks.get(k, lambda v: True)(value) for k in kinds)
