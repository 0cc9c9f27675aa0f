"""pytest-benchmark JSON in: ``--benchmark-json FILE`` and ``--benchmark-autosave`` files.

pytest-benchmark's documented layout (its docs, "Usage: --benchmark-json"):
``{"machine_info", "commit_info", "datetime", "version", "benchmarks": [{"group", "name",
"fullname", "params", "param", "extra_info", "options", "stats": {"min", "max", "mean",
"stddev", "rounds", "median", "iqr", "q1", "q3", "ops", "total", "iterations", "data":
[s, …]}}]}``. ``stats.data`` holds one value per round: the round's time divided by its
``iterations``, seconds; ``--benchmark-json`` writes it, autosave files only with
``--benchmark-save-data``. Every round ran in the one pytest process.
"""

from __future__ import annotations

import re
from typing import Any

from perflab.errors import ResultsFileError

NOTES = [
    "every pytest-benchmark round ran in one process: its rounds are the samples of one "
    "process, so the CI is the within-process bootstrap and leaves out between-process "
    "variation (re-measure with --perflab-processes N for a CI comparable with perflab "
    "run's)",
    "pytest-benchmark keeps no CPU time, GC, cold call, loop overhead or allocations per "
    "round: those columns show –",
]
#: What ``show`` says of a file without raw data.
STATS_ONLY = (
    "this pytest-benchmark file has summary statistics only (autosave without "
    "--benchmark-save-data): no CI can be computed"
)


def _scalar(value: Any) -> Any:
    """A parameter value as a JSON scalar (pytest ids can be any object's repr)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)[:200]


def name_and_params(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``test_sum[10]`` with params {"n": 10} → ("test_sum", {"n": 10}): the parameters
    are perflab's params, so the id is not doubled. The pytest plugin names its own
    parametrized tests the same way (from ``item.callspec.params``, which is what
    pytest-benchmark saves as ``params``), so ids match across the two tools' files."""
    name = str(raw["name"])
    params = {str(k): _scalar(v) for k, v in (raw.get("params") or {}).items()}
    if params:
        name = re.sub(r"\[[^\[\]]*\]$", "", name) or name
    return name, params


def has_raw_data(document: dict[str, Any]) -> bool:
    """True when every benchmark of a schema-checked document keeps its rounds."""
    return all(b["stats"].get("data") for b in document["benchmarks"])


def read(document: dict[str, Any], where: str, created: str) -> Any:
    """Results (kind "run", one process per benchmark) from a schema-checked document.

    Raises:
        ResultsFileError: a file without raw data (stats only).
    """
    from perflab.model.results import Benchmark, Process, Results, Sample

    if not has_raw_data(document):
        raise ResultsFileError(
            f"{where}: {STATS_ONLY}; perflab show prints its statistics, "
            "but compare and fit need the rounds: re-run pytest with "
            "--benchmark-json FILE or --benchmark-save-data"
        )
    benchmarks = []
    for raw in document["benchmarks"]:
        stats = raw["stats"]
        calls = int(stats.get("iterations", 1))
        name, params = name_and_params(raw)
        proc = Process(
            index=0,
            pid=0,
            started_s=0.0,
            iterations=calls,
            samples=[
                Sample(iterations=calls, wall_ns=max(1, round(v * calls * 1e9)), cpu_ns=0)
                for v in stats["data"]
            ],
        )
        benchmarks.append(
            Benchmark(
                name=name,
                group=str(raw.get("group") or ""),
                params=params,
                processes=[proc],
                stop_reason="done",
            )
        )
    return Results(
        kind="run",
        command_line=[],
        created=str(document.get("datetime") or created),
        perflab_version="",
        environment={},
        settings={
            "imported": {
                "format": "pytest-benchmark",
                "file": where,
                "notes": list(NOTES),
                "version": document.get("version"),
            },
            "modes": {b.id: "in-process" for b in benchmarks},
        },
        benchmarks=benchmarks,
    )
