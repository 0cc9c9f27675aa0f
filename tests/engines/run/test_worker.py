"""Worker pieces with a fake clock: calibration, warmup, loop overhead shape."""

from __future__ import annotations

import math

import pytest

from perflab.engines.run import sampling, worker
from perflab.engines.run.empty import empty_like


class FakeClock:
    """perf_counter_ns that advances only when the benchmark 'works'."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(worker, "_perf_ns", fake)
    monkeypatch.setattr(worker, "_cpu_ns", fake)
    monkeypatch.setattr(sampling, "_perf_ns", fake)
    return fake


def test_calibration_reaches_the_target_with_few_extra_iterations(clock: FakeClock) -> None:
    def op() -> None:
        clock.now += 1_000  # 1 µs per call

    n = worker.calibrate(op, target_ns=2_000_000, gcmon=sampling.GcMonitor())
    assert 2_000 <= n <= 2_000 * 1.3  # at least the target, at most 30% above


def test_calibration_of_a_slow_call_is_one_iteration(clock: FakeClock) -> None:
    def op() -> None:
        clock.now += 50_000_000

    assert worker.calibrate(op, target_ns=2_000_000, gcmon=sampling.GcMonitor()) == 1


def test_warmup_stops_when_timings_stop_drifting(clock: FakeClock) -> None:
    calls = {"n": 0}

    def op() -> None:  # caches warming up: 5 µs decaying to 1 µs
        calls["n"] += 1
        clock.now += int(1_000 + 4_000 * math.exp(-calls["n"] / 10))

    count, converged = worker.warmup(op, 1, sampling.GcMonitor(), max_s=10.0)
    # Windows of 5 differ by < 2% once 1574·e^(-k/10) < 20 ns, i.e. k ≈ 44.
    assert converged and 40 <= count <= 60


def test_warmup_is_bounded_in_time(clock: FakeClock) -> None:
    calls = {"n": 0}

    def op() -> None:  # keeps getting slower: never converges
        calls["n"] += 1
        clock.now += 1_000 * calls["n"]

    count, converged = worker.warmup(op, 1, sampling.GcMonitor(), max_s=0.01)
    assert not converged and count < 200


def test_time_loop_counts_gc_collections(clock: FakeClock) -> None:
    monitor = sampling.GcMonitor()

    def op() -> None:
        clock.now += 10
        monitor("start", {})
        clock.now += 90
        monitor("stop", {})

    wall, _, gcs, gc_ns = worker.time_loop(op, 5, monitor)
    assert (wall, gcs, gc_ns) == (500, 5, 450)


@pytest.mark.parametrize(
    "source",
    [
        "def f(a, b=2, *args, c, d=4, **kw): pass",
        "def f(a, /, b): pass",
        "def f(*, n): pass",
        "def f(): pass",
    ],
)
def test_empty_like_accepts_the_same_calls(source: str) -> None:
    namespace: dict[str, object] = {}
    exec(source, namespace)
    empty = empty_like(namespace["f"])  # type: ignore[arg-type]
    import inspect

    original = inspect.signature(namespace["f"])  # type: ignore[arg-type]
    assert [p.kind for p in inspect.signature(empty).parameters.values()] == [
        p.kind for p in original.parameters.values()
    ]


def test_warmup_of_long_samples_needs_fewer_of_them(clock: FakeClock) -> None:
    """A window need not span more than WARMUP_WINDOW_NS: 20 ms samples that do not drift
    converge after 2 windows of 2, not 2 of 5 (more processes then fit the budget)."""

    def op() -> None:
        clock.now += 20_000_000

    count, converged = worker.warmup(op, 1, sampling.GcMonitor(), max_s=10.0)
    assert converged and count == 4

    def fast() -> None:
        clock.now += 1_000

    assert worker.warmup(fast, 1, sampling.GcMonitor(), max_s=10.0) == (10, True)


def test_the_reference_is_timed_between_samples_within_its_share(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before each of the first REFERENCE_MIN samples, then only while the reference took at
    most REFERENCE_SHARE of the sampled time: a 1 ms reference beside 10 ms samples."""

    def reference() -> int:
        clock.now += 1_000_000
        return 1_000_000

    def op() -> None:
        clock.now += 10_000_000

    monkeypatch.setattr(worker, "time_reference", reference)
    events: list[tuple[str, dict]] = []
    plan = {"sample_seconds": 1.0, "min_samples": 3, "max_samples": 1000, "reference": True}
    worker._sample(op, 1, sampling.GcMonitor(), plan, lambda e, **f: events.append((e, f)))
    assert events[0][0] == "counters"  # the per-sample counters' names, once, first
    kinds = [e for e, _ in events[1:]]
    assert kinds[:6] == ["reference", "sample"] * 3
    references = kinds.count("reference")
    sampled_ms = 10 * kinds.count("sample")
    assert references <= worker.REFERENCE_SHARE * sampled_ms + worker.REFERENCE_MIN
    assert references >= worker.REFERENCE_SHARE * sampled_ms - 1  # spread over the process
    assert kinds[-1] == "sample"  # never inside or after the last sample

    events.clear()
    worker._sample(
        op,
        1,
        sampling.GcMonitor(),
        {**plan, "reference": False},
        lambda e, **f: events.append((e, f)),
    )
    assert "reference" not in [e for e, _ in events]


def test_the_reference_workload_is_deterministic_work() -> None:
    assert worker.reference_workload() == worker.reference_workload()
    assert worker.time_reference() > 0
