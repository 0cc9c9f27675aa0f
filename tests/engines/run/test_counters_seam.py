"""Per-sample counters through seams: the runner fed injected worker events, and the
summary and table fed injected counter readings (no kernel, no timing).

The real-kernel side is tests/measure/test_counters_run.py (a preempted sample made
certain) and rust/engine/src/counters/tests.rs (the reader)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perflab.analyze.run.groups import run_groups
from perflab.analyze.run.ratios import summarize_benchmarks, summarize_group
from perflab.analyze.run.summary import summarize
from perflab.engines.run.backend import Outcome
from perflab.engines.run.counters import SampleCounters, by_name
from perflab.engines.run.runner import Runner, Settings
from perflab.engines.run.suite import BenchFile, BenchSpec, expand
from perflab.report.run_table import group_table, run_tables
from tests.conftest import make_bench
from tests.engines.run.test_runner import worker_start

NAMES = ["task_clock_ns", "page_faults", "voluntary_switches", "involuntary_switches"]
NOTE = "perf_event_open refused the hardware events: not supported"


def _noop() -> None:
    """A benchmark body (never called by the fake backend)."""


class CountingBackend:
    """A worker that sends a ``counters`` event, then samples of 1 ms, the ones whose
    index is in ``preempted`` with an involuntary switch and 10× the wall time."""

    def __init__(self, preempted: set[int], samples: int = 10) -> None:
        self.preempted, self.samples = preempted, samples

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[dict[str, Any]], None]
    ) -> Outcome:
        events = worker_start()
        events.append(
            {"event": "counters", "names": NAMES, "software_note": None, "hardware_note": NOTE}
        )
        for k in range(self.samples):
            hit = k in self.preempted
            wall = 10_000_000 if hit else 1_000_000 + k
            sample = {"event": "sample", "n": 10, "wall": wall, "cpu": 1_000_000, "gc": 0}
            sample |= {"gc_ns": 0, "counters": [1_000_000, 0, 0, int(hit)]}
            events.append(sample)
        events.append({"event": "done"})
        for ev in events:
            on_event(ev)
        return Outcome(events=events, returncode=0, wall_s=0.1)


def _run(backend: CountingBackend) -> Any:
    cases = expand(BenchFile(__file__, [BenchSpec(_noop, "b", "g")], []))  # type: ignore[arg-type]
    settings = Settings(seed=1, min_processes=1, max_processes=1)
    [bench] = Runner(__file__, cases, settings, 2e6, 50.0, backend=backend).run()
    return bench


def test_the_runner_names_preempted_samples_and_leaves_them_out() -> None:
    bench = _run(CountingBackend(preempted={2, 5}))
    samples = bench.processes[0].samples
    assert [s.flagged for s in samples].count("preempted") == 2
    assert samples[2].counters == dict(zip(NAMES, [1_000_000, 0, 0, 1], strict=True))
    assert bench.processes[0].hardware_note == NOTE
    summary = summarize(bench)
    assert (summary.preempted, summary.preempted_excluded, summary.samples) == (2, 2, 8)
    assert summary.median_s < 2e-4  # the 10 ms samples did not reach the median
    assert [c.figure for c in summary.warnings if c.kind == "preempted samples excluded"] == [
        "2 of 10"
    ]


def test_a_process_preempted_throughout_keeps_its_samples_and_says_so() -> None:
    bench = _run(CountingBackend(preempted=set(range(9))))  # 1 clean sample of 10
    assert not any(s.flagged for s in bench.processes[0].samples)
    summary = summarize(bench)
    assert (summary.preempted, summary.preempted_excluded) == (9, 0)
    kinds = {c.kind: c.figure for c in summary.warnings}
    assert kinds["preempted samples kept"] == "9 of 10" and "busy machine" not in kinds


def test_an_older_file_without_counters_keeps_the_cpu_wall_rule() -> None:
    bench = make_bench("b", [[1e-6] * 20])
    bench.processes[0].samples[0].cpu_ns //= 2  # CPU/wall 0.5 in a CPU-bound benchmark
    summary = summarize(bench)
    assert not summary.counted and summary.preempted == 1
    assert not any("preempted samples" in c.kind for c in summary.warnings)


def _hardware_bench(instructions: int | None) -> Any:
    bench = make_bench("b", [[1e-6] * 5, [1e-6] * 5])
    for proc in bench.processes:
        proc.hardware_note = None if instructions else NOTE
        for s in proc.samples:
            s.counters = {"task_clock_ns": s.wall_ns, "involuntary_switches": 0}
            if instructions:
                s.counters |= {"instructions": instructions, "cycles": instructions // 2}
    return bench


def test_the_table_shows_instructions_per_op_and_ipc_where_hardware_counted() -> None:
    [s] = summarize_group([_hardware_bench(instructions=250_000)])
    assert s.instructions_per_op == 2_500 and s.ipc == 2.0
    table = group_table("g", [s])
    row = table.rows[0]
    assert row[table.columns.index("instr/op")] == "2,500"
    assert row[table.columns.index("IPC")] == "2.00"


def test_without_hardware_the_columns_are_absent_and_one_line_says_why() -> None:
    summaries = summarize_group([_hardware_bench(instructions=None)])
    assert summaries[0].instructions_per_op is None
    benches = [_hardware_bench(None), _hardware_bench(None)]
    benches[1].group = "h"  # two groups: two tables, one line
    tables = run_tables(run_groups(benches, summarize_benchmarks(benches)))
    assert not any("instr/op" in t.columns or "IPC" in t.columns for t in tables)
    lines = [f for t in tables for f in t.footnotes if f.startswith("hardware counters")]
    assert lines == [
        f"hardware counters unavailable: {NOTE}; no instr/op or IPC columns (software "
        "counters only: task clock, page faults, context switches)"
    ]


def test_sample_counters_without_a_native_core_are_none() -> None:
    counters = SampleCounters(core=None)
    counters.start()
    assert counters.stop() is None and counters.names == ()
    assert by_name(NAMES, None) is None
    assert by_name(NAMES, [1, 2]) is None  # a damaged event: lengths differ
    assert by_name(["a", "b"], [1, None]) == {"a": 1}


def test_the_worker_sends_the_names_once_and_the_values_with_every_sample() -> None:
    from perflab.engines.run import sampling, worker

    events: list[tuple[str, dict[str, Any]]] = []
    plan = {"sample_seconds": 0.0, "min_samples": 3, "max_samples": 3}
    worker._sample(
        lambda: None, 1, sampling.GcMonitor(), plan, lambda e, **f: events.append((e, f))
    )
    assert [e for e, _ in events] == ["counters", "sample", "sample", "sample"]
    names = events[0][1]["names"]
    assert "involuntary_switches" in names and "task_clock_ns" in names
    assert all(len(f["counters"]) == len(names) for e, f in events[1:])


def test_csv_records_carry_the_counter_figures_only_where_they_exist() -> None:
    from perflab.report.run_table import summary_records

    [with_hw] = summary_records({"g": summarize_group([_hardware_bench(instructions=250_000)])})
    assert with_hw["instructions_per_op"] == 2_500 and with_hw["ipc"] == 2.0
    assert (with_hw["preempted"], with_hw["preempted_excluded"]) == (0, 0)
    [without] = summary_records({"g": summarize_group([_hardware_bench(instructions=None)])})
    assert "instructions_per_op" not in without and "ipc" not in without


def test_a_schema_2_run_file_loads_without_counters_and_saves_as_current(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from perflab import model

    sample = {"iterations": 10, "wall_ns": 1_000_000, "cpu_ns": 1_000_000, "flagged": None}
    process = {"index": 0, "pid": 1, "started_s": 0.0, "samples": [sample] * 5}
    data = {
        "schema_version": 2,
        "tool": "perflab",
        "kind": "run",
        "command_line": [],
        "created": "2026-01-01T00:00:00+00:00",
        "perflab_version": "0.1.0",
        "benchmarks": [{"name": "b", "processes": [process]}],
    }
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(data))
    loaded = model.load(path)
    proc = loaded.benchmarks[0].processes[0]
    assert proc.samples[0].counters is None and proc.hardware_note is None
    summary = summarize(loaded.benchmarks[0])
    assert not summary.counted and summary.samples == 5
    again = json.loads(model.save(loaded, tmp_path / "v3.json").read_text())
    assert again["schema_version"] == model.SCHEMA_VERSION >= 3
    assert again["benchmarks"][0]["processes"][0]["samples"][0]["counters"] is None
