"""Count records in results files: saved, validated against the schema and loaded back;
a version-2 file (before counts) still loads."""

from __future__ import annotations

import json
from pathlib import Path

from perflab import model
from perflab.model import Benchmark, CommandCounts, Counts, Process, Results


def test_counts_round_trip_through_a_file(tmp_path: Path) -> None:
    proc = Process(index=0, pid=7, started_s=0.0, layout={"hash_seed": 3})
    proc.counts = Counts(
        events=["Ir"],
        iterations=20,
        cold=[123_456],
        samples=[[1_000_000]] * 5,
        empty=[[1_500]] * 3,
        gc_enabled=True,
        gc_threshold=[700, 10, 10],
        gc_collections=0,
        type_cache_cleared=True,
        aslr_off=True,
        valgrind="3.19.0",
    )
    python = Benchmark(name="f", processes=[proc])
    command = Benchmark(
        name="sh -c true",
        kind="command",
        counts=[CommandCounts(["Ir"], [99_000], 2, {"hash_seed": 1})],
    )
    for kind, bench in (("run", python), ("cmd", command)):
        results = Results(
            kind,
            ["perflab"],
            "2026-01-01T00:00:00+00:00",
            "0.1.0",
            settings={"count": "instructions"},
            benchmarks=[bench],
        )
        path = tmp_path / f"{kind}.json"
        model.save(results, path)
        assert json.loads(path.read_text())["schema_version"] == model.SCHEMA_VERSION
        [back] = model.load(path).benchmarks
        if kind == "run":
            assert back.processes[0].counts == proc.counts
        else:
            assert back.counts == command.counts


def test_a_version_2_file_has_no_counts(tmp_path: Path) -> None:
    data = {
        "schema_version": 2,
        "tool": "perflab",
        "kind": "run",
        "command_line": [],
        "created": "2026-01-01T00:00:00+00:00",
        "perflab_version": "0.1.0",
        "benchmarks": [{"name": "f", "processes": [{"index": 0, "pid": 1, "started_s": 0.0}]}],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    loaded = model.load(path)
    assert loaded.schema_version == model.SCHEMA_VERSION
    assert loaded.benchmarks[0].processes[0].counts is None
    assert loaded.benchmarks[0].counts == []
