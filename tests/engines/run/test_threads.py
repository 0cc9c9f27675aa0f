"""Threads mode: the crew of timed threads, window accounting, events, folding and the table.

Most tests count operations rather than time them. The few that depend on
real timing use sleeping benchmarks (sleep releases the GIL, so N sleepers
overlap) and bounds several times wider than the effect, because the test
machine is shared and noisy.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import settings

from perflab.engines.run import threads
from perflab.engines.run.sampling import GcMonitor
from perflab.model import Benchmark, Process, Sample

PROPERTY = settings(max_examples=30, deadline=None, derandomize=True)


class Counter:
    """A benchmark that counts its calls under a lock (the truth the crew must match)."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()
        self.per_thread: dict[int, int] = {}

    def __call__(self) -> None:
        with self._lock:
            self.calls += 1
            ident = threading.get_ident()
            self.per_thread[ident] = self.per_thread.get(ident, 0) + 1


def plan(n: int, **extra: Any) -> dict[str, Any]:
    """A small worker plan: 20 ms of timed windows after at most 30 ms of warmup."""
    return {
        "threads": n,
        "sample_target_ns": 2_000_000,
        "sample_seconds": 0.02,
        "min_samples": 3,
        "max_samples": 50,
        "warmup_max_s": 0.03,
        "allocations": False,
        **extra,
    }


def run_measure(call: Any, n: int, **extra: Any) -> list[dict[str, Any]]:
    """threads.measure in this process; the events it emitted, in order."""
    events: list[dict[str, Any]] = []

    def emit(event: str, **fields: Any) -> None:
        events.append({"event": event, **fields})

    threads.measure(call, call, (), {}, GcMonitor(), plan(n, **extra), emit, None)
    return events


# ---------------------------------------------------------------------------
# pure helpers


def test_latency_percentiles_are_nearest_rank() -> None:
    values = list(range(1000, 0, -1))  # 1..1000, unsorted
    out = threads.latency_percentiles(values)
    assert out == {
        "p50": 500.0,
        "p90": 900.0,
        "p99": 990.0,
        "p99.9": 999.0,
        "max": 1000.0,
        "mean": 500.5,
    }
    assert threads.latency_percentiles([]) == {}


def test_gil_flag_follows_the_interpreter() -> None:
    expected = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    assert threads.gil_enabled() is expected


def test_window_length_fits_min_samples_into_the_process_slice() -> None:
    assert threads.window_ns(plan(1)) == 6_666_666  # 20 ms / 3 windows
    assert threads.window_ns(plan(1, sample_seconds=1.0)) == threads.MIN_WINDOW_NS
    assert threads.window_ns(plan(1, sample_target_ns=50_000_000)) == 50_000_000


# ---------------------------------------------------------------------------
# the crew


def _wait_until(done: Any, within_s: float = 60.0) -> None:
    """Poll ``done()`` until true: events, not sleeps of a guessed length; bounded."""
    deadline = time.monotonic() + within_s
    while not done():
        assert time.monotonic() < deadline, f"not done within {within_s:g} s"
        time.sleep(0.001)


@pytest.mark.parametrize("n", [1, 3, 8])
def test_crew_counts_every_call_and_samples_latencies_in_every_thread(n: int) -> None:
    counter = Counter()
    crew = threads.Crew(counter, n)
    crew.start()
    _wait_until(lambda: counter.calls >= 1000)  # an event, not a time
    crew.stop()
    assert sum(crew.ops()) == counter.calls >= 1000
    # A thread may not have got the GIL at all; the others' counts must match exactly.
    assert sorted(c for c in crew.ops() if c) == sorted(counter.per_thread.values())
    for ops, lat in zip(crew.ops(), crew.latencies):
        assert (ops == 0) == (len(lat) == 0) and len(lat) <= ops
        assert all(v >= 0 for v in lat)


def test_crew_samples_latency_sparsely_for_fast_calls() -> None:
    """Fast calls run in untimed batches: far fewer timed calls than calls."""
    counter = Counter()
    crew = threads.Crew(counter, 1)
    crew.start()
    _wait_until(lambda: counter.calls >= 200_000)  # batches doubled many times by then
    crew.stop()
    (ops,), (sampled,) = crew.ops(), crew.sampled()
    assert ops > 50 * sampled


def test_crew_releases_threads_together() -> None:
    started: list[float] = []

    def first_call_time() -> None:
        if len(started) < 4:
            started.append(time.perf_counter())
        time.sleep(0.001)

    crew = threads.Crew(first_call_time, 4)
    time.sleep(0.05)  # threads exist but wait at the barrier: nothing may have run yet
    assert started == []
    crew.start()
    _wait_until(lambda: len(started) == 4)  # every thread released, however busy the box
    crew.stop()
    assert len(started) == 4


def test_crew_reraises_what_a_thread_raised_and_stops_the_others() -> None:
    calls = Counter()

    def fails_on_the_tenth_call() -> None:
        calls()
        if calls.calls == 10:
            raise KeyError("boom")

    crew = threads.Crew(fails_on_the_tenth_call, 3)
    crew.start()
    _wait_until(lambda: not crew.running[0])
    assert not crew.running[0]
    with pytest.raises(KeyError, match="boom"):
        crew.stop()


# ---------------------------------------------------------------------------
# measure: events


def test_events_come_in_order_and_windows_account_for_every_op() -> None:
    counter = Counter()
    events = run_measure(counter, 3)
    kinds = [e["event"] for e in events]
    assert kinds[:3] == ["overhead", "calibrated", "warmup"]
    assert kinds[-2:] == ["threads", "done"]
    samples = [e for e in events if e["event"] == "sample"]
    report = events[-2]
    assert len(samples) >= 3 and all(s["n"] > 0 and s["wall"] > 0 for s in samples)
    # windows are contiguous: ops per thread over the timed phase = ops in the samples
    assert sum(report["ops"]) == sum(s["n"] for s in samples)
    assert len(report["ops"]) == report["threads"] == 3
    assert set(report["latency_ns"]) == {"p50", "p90", "p99", "p99.9", "max", "mean"}
    assert report["gil_enabled"] is threads.gil_enabled()
    assert counter.calls >= sum(report["ops"])


def test_a_failing_benchmark_keeps_the_windows_already_emitted() -> None:
    events: list[dict[str, Any]] = []

    def fails_once_a_window_is_out() -> None:
        # An event, not a time: it fails once a window has been emitted. Were windows
        # held back until the end, it would never fail and measure() would return.
        time.sleep(0.001)
        if any(e["event"] == "sample" for e in events):
            raise RuntimeError("target died")

    with pytest.raises(RuntimeError, match="target died"):
        threads.measure(
            fails_once_a_window_is_out,
            fails_once_a_window_is_out,
            (),
            {},
            GcMonitor(),
            plan(2, sample_seconds=5.0, warmup_max_s=0.0),
            lambda event, **f: events.append({"event": event, **f}),
            None,
        )
    assert any(e["event"] == "sample" for e in events)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_thread_counts_must_be_whole_numbers_of_at_least_one(bad: Any) -> None:
    with pytest.raises(ValueError, match="whole numbers ≥ 1"):
        run_measure(lambda: None, bad)


def test_sleepers_overlap_so_throughput_grows_with_threads() -> None:
    # Overlap is shown by the calls in flight at once, not by a throughput ratio (which
    # a busy machine's wake-up delays move): 4 threads that release the GIL while they
    # sleep have 4 sleeps in flight together; a crew that serialised them would have 1.
    in_flight, peak, lock = [0], [0], threading.Lock()

    def io_wait() -> None:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.002)
        with lock:
            in_flight[0] -= 1

    def cpu_share(n: int) -> float:
        peak[0] = 0
        samples = [e for e in run_measure(io_wait, n, sample_seconds=0.1) if e["event"] == "sample"]
        return sum(s["cpu"] for s in samples) / sum(s["wall"] for s in samples)

    cpu_one = cpu_share(1)
    assert peak[0] == 1
    cpu_share(4)
    assert peak[0] == 4
    # A sleeping benchmark barely uses the CPU (the bound leaves room for timer wake-ups).
    assert cpu_one < 0.5


# ---------------------------------------------------------------------------
# folding and the table


def threaded_bench(
    name: str, n: int, per_op_s: float, ops: list[int], gil: bool = True
) -> Benchmark:
    """A threads-mode benchmark with 3 processes of 5 windows each at ``per_op_s``."""
    procs = []
    for i in range(3):
        samples = [Sample(1000, int(per_op_s * 1000 * 1e9 * (1 + 0.01 * k)), 1) for k in range(5)]
        procs.append(
            Process(
                i,
                100 + i,
                float(i),
                iterations=1000,
                samples=samples,
                thread_ops=list(ops),
                gil_enabled=gil,
                loop_overhead_ns=200.0,
                latency_ns={"p50": 1000.0 * (i + 1), "p99": 5000.0, "p99.9": 9000.0},
            )
        )
    return Benchmark(name=name, group="g", threads=n, processes=procs)
