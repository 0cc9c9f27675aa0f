"""pyperf JSON in: ``python bench.py -o FILE``, ``pyperf timeit -o``, ``compare_to`` inputs.

pyperf's documented layout (pyperf docs, "JSON format"): ``{"version": "1.0", "metadata":
{…common…}, "benchmarks": [{"metadata": {…}, "runs": [{"metadata": {…}, "warmups":
[[loops, value], …], "values": [value, …]}]}]}``. Metadata is inherited: a run's keys
override its benchmark's, which override the file's common ones; ``name`` and ``loops``
may sit at any of the three levels. Each run is one worker process; each value is the
time of one loop iteration in seconds, averaged over ``loops × inner_loops`` calls.
Calibration runs (warmups only, no values) are skipped.
"""

from __future__ import annotations

from typing import Any

from perflab.errors import ResultsFileError

NOTES = [
    "each pyperf run is a fresh process and its values are samples: perflab's own "
    "statistics (process first, bootstrap CI) are computed from them",
    "pyperf keeps no CPU time, GC, cold call, loop overhead or allocations per "
    "sample: those columns show –",
]


def read(document: dict[str, Any], where: str, created: str) -> Any:
    """Results (kind "run") from a schema-checked pyperf document.

    Raises:
        ResultsFileError: a benchmark whose unit is not seconds, or no run with values.
    """
    from perflab.model.results import Benchmark, Process, Results, Sample

    common = document.get("metadata", {})
    benchmarks = []
    for i, raw in enumerate(document["benchmarks"]):
        meta = {**common, **raw.get("metadata", {})}
        name = str(meta.get("name") or f"benchmark {i}")
        unit = meta.get("unit", "second")
        if unit != "second":
            raise ResultsFileError(
                f"{where}: benchmarks[{i}] ({name}) measures {unit!r}, not "
                "time; perflab imports pyperf time benchmarks only"
            )
        processes = []
        for run in raw["runs"]:
            if not run.get("values"):
                continue  # a calibration run
            run_meta = {**meta, **run.get("metadata", {})}
            calls = int(run_meta.get("loops", 1)) * int(run_meta.get("inner_loops", 1))
            processes.append(
                Process(
                    index=len(processes),
                    pid=0,
                    started_s=0.0,
                    iterations=calls,
                    warmup_samples=len(run.get("warmups", [])),
                    samples=[
                        Sample(iterations=calls, wall_ns=max(1, round(v * calls * 1e9)), cpu_ns=0)
                        for v in run["values"]
                    ],
                )
            )
        if processes:
            benchmarks.append(Benchmark(name=name, processes=processes, stop_reason="done"))
    if not benchmarks:
        raise ResultsFileError(
            f"{where}: this pyperf file has no run with values (only "
            "calibration runs?); pass a file of a finished pyperf run"
        )
    first_run = next((r.get("metadata", {}) for b in document["benchmarks"] for r in b["runs"]), {})
    when = common.get("date") or first_run.get("date") or created
    return Results(
        kind="run",
        command_line=[],
        created=str(when),
        perflab_version="",
        environment={},
        settings={
            "imported": {
                "format": "pyperf",
                "file": where,
                "notes": list(NOTES),
                "version": document.get("version"),
            }
        },
        benchmarks=benchmarks,
    )
