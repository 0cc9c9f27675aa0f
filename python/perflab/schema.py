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
