"""Schema versions of results files and the migrations that bring an older file to the
current one (:func:`migrate`), one function a version step."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from perflab.errors import ResultsFileError

SCHEMA_VERSION = 4
#: Short history of schema versions; older files load through ``_MIGRATIONS``.
SCHEMA_HISTORY = {
    1: "first version: python, command and http benchmarks",
    2: "http steps: ok_responses counts responses completed inside the recorded window "
    "only; drained, ok_from_warmup and drain_s added",
    3: "instruction counts: a process's counts (run --count instructions) and a "
    "benchmark's counted runs (cmd --count instructions)",
    4: "a process's counts record type_cache_cleared (each counted sample started with "
    "CPython's type attribute cache emptied)",
}
#: The engine starts load this long after a step begins (pre-opening connections).
_HTTP_START_DELAY_S = 0.03


def _http_accounting_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 1 → 2. A version-1 http step's ``ok_responses`` also counted the responses
    that came while the step drained, which can no longer be told apart: ``drained`` and
    ``ok_from_warmup`` become None (unknown), and ``drain_s`` is estimated from the wall
    time (``wall_s`` − ``duration_s`` − the 30 ms start delay; thread start-up makes it a
    few ms high), so that a step that drained long is still seen as saturated."""

    def items(value: Any, key: str) -> list[Any]:
        found = value.get(key) if isinstance(value, dict) else None
        return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []

    for bench in items(data, "benchmarks"):
        for step in items(bench, "steps"):
            step.setdefault("drained", None)
            step.setdefault("ok_from_warmup", None)
            wall, duration = step.get("wall_s"), step.get("duration_s")
            if "drain_s" not in step and all(
                isinstance(v, (int, float)) and math.isfinite(v) for v in (wall, duration)
            ):
                step["drain_s"] = max(0.0, wall - duration - _HTTP_START_DELAY_S)
    return {**data, "schema_version": 2}


def _v3(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 → 3: only fields were added, each absent meaning "not measured": a
    sample's ``counters`` and a process's ``software_note`` and ``hardware_note``
    (per-sample perf counters; None: unknown, never zeros), the count records of
    ``--count instructions`` (none: every process timed), and a process's ``pair``
    and the results' measured ``baseline`` (none: unpaired). So nothing changes but the
    version."""
    return {**data, "schema_version": 3}


def _v4(data: dict[str, Any]) -> dict[str, Any]:
    """Schema 3 → 4: a process's counts gained ``type_cache_cleared``; absent (None) in
    a version-3 file means unknown (those counted samples started with the type cache
    the process left). So nothing changes but the version."""
    return {**data, "schema_version": 4}


_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _http_accounting_v2,
    2: _v3,
    3: _v4,
}


def migrate(data: Any) -> dict[str, Any]:
    """Check a loaded JSON document and migrate it to :data:`SCHEMA_VERSION`.

    Raises:
        ResultsFileError: not a perflab results object, or a newer version.
    """
    if (
        isinstance(data, dict)
        and data.get("tool") == "perflab"
        and data.get("kind") in ("doctor", "compare", "fit")
    ):
        raise ResultsFileError(
            f"is a perflab {data['kind']} document, not a results file; "
            "pass a file written by perflab run, cmd or http --json"
        )
    if not isinstance(data, dict) or data.get("tool") != "perflab" or "schema_version" not in data:
        raise ResultsFileError(
            "is not a perflab results file (no 'tool: perflab' and "
            "'schema_version'); pass a file written by perflab --json"
        )
    version = data["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResultsFileError(
            f"has schema_version {version!r}, which is not a version "
            "number (a whole number from 1); the file was edited or damaged"
        )
    if version > SCHEMA_VERSION:
        raise ResultsFileError(
            f"has schema_version {version!r}, newer than this perflab "
            f"knows ({SCHEMA_VERSION}); upgrade perflab to read it"
        )
    while version < SCHEMA_VERSION:
        data = _MIGRATIONS[version](data)
        version = data["schema_version"]
    return data
