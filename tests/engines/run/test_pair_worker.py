"""The paired worker: two cases in one process, alternately; two checkouts side by side."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from perflab.engines.run.backend import SubprocessBackend

PAIR_WORKER = [sys.executable, "-P", "-m", "perflab.engines.run.pair_worker"]
BENCH = """
import perflab
import lib

@perflab.metric
def value(result):
    return result

@perflab.bench(baseline=True)
def a():
    return lib.VALUE

@perflab.bench
def b():
    return lib.VALUE + 10
"""


def _plan(file_a: Path, file_b: Path, **pair: object) -> dict:
    return {
        "file": str(file_a),
        "index": 0,
        "params": {},
        "iterations": None,
        "pair": {"file": str(file_b), "index": 1, "params": {}, "iterations": None, **pair},
        "sample_target_ns": 50_000,
        "warmup_max_s": 0.05,
        "sample_seconds": 0.02,
        "min_samples": 6,
        "max_samples": 50,
        "allocations": False,
        "layout": {},
        "reference": True,
        "pair_seed": 7,
    }


def _checkout(root: Path, value: int) -> Path:
    (root / "bench").mkdir(parents=True)
    (root / "bench" / "lib.py").write_text(f"VALUE = {value}\n")
    (root / "bench" / "run.py").write_text(BENCH)
    return root / "bench" / "run.py"


def test_both_cases_alternate_in_one_process(tmp_path: Path) -> None:
    file = _checkout(tmp_path, 1)
    events: list[dict] = []
    plan = {**_plan(file, file), "allocations": True}
    outcome = SubprocessBackend(PAIR_WORKER).run(plan, 60, events.append)
    assert outcome.returncode == 0, outcome.stderr
    kinds = Counter((e["event"], e.get("side")) for e in events)
    assert kinds[("sample", "a")] == kinds[("sample", "b")] >= 6
    for step in ("cold", "calibrated", "warmup", "overhead", "alloc"):
        assert kinds[(step, "a")] == kinds[(step, "b")] == 1
    [counters] = [e for e in events if e["event"] == "counters"]  # one, for both sides
    assert counters.get("side") is None and "names" in counters
    assert all("counters" in e for e in events if e["event"] == "sample")
    for alloc in (e for e in events if e["event"] == "alloc"):  # the worker's fields
        assert {"peak_bytes", "blocks", "total_bytes", "total_blocks"} <= set(alloc)
    assert kinds[("start", None)] == kinds[("done", None)] == 1
    samples = [e for e in events if e["event"] == "sample"]
    pairs = [(samples[i], samples[i + 1]) for i in range(0, len(samples), 2)]
    assert all(x["pair"] == y["pair"] == k for k, (x, y) in enumerate(pairs))
    assert all(x["first"] != y["first"] for x, y in pairs)  # one of the two led
    leads = [x["first"] for x, _ in pairs]
    assert all(leads[i] != leads[i + 1] for i in range(0, len(leads) - 1, 2))  # balanced
    colds = {e["side"]: e["metrics"]["value"] for e in events if e["event"] == "cold"}
    assert colds == {"a": 1, "b": 11}


def test_two_checkouts_load_side_by_side_as_distinct_modules(tmp_path: Path) -> None:
    # the baseline's lib says 1, this checkout's says 2: each side must see its own
    file_a = _checkout(tmp_path / "baseline", 1)
    file_b = _checkout(tmp_path / "current", 2)
    plan = _plan(
        file_a, file_b, a_root=str(tmp_path / "baseline"), b_root=str(tmp_path / "current")
    )
    plan["pair"]["index"] = 0  # the same benchmark in both checkouts
    events: list[dict] = []
    outcome = SubprocessBackend(PAIR_WORKER).run(plan, 60, events.append)
    assert outcome.returncode == 0, outcome.stderr
    colds = {e["side"]: e["metrics"]["value"] for e in events if e["event"] == "cold"}
    assert colds == {"a": 1, "b": 2}


def test_a_failing_side_is_reported_with_its_phase(tmp_path: Path) -> None:
    file = _checkout(tmp_path, 1)
    file.write_text(file.read_text().replace("return lib.VALUE + 10", "raise KeyError('boom')"))
    events: list[dict] = []
    outcome = SubprocessBackend(PAIR_WORKER).run(_plan(file, file), 60, events.append)
    errors = [e for e in events if e["event"] == "error"]
    assert outcome.returncode == 3 and errors[0]["phase"] == "first call"
    assert errors[0]["type"] == "KeyError"


def test_the_allocation_pass_reports_each_sides_totals(tmp_path: Path) -> None:
    # The allocation pass returns a dict of figures (peak, live blocks, totals): a paired
    # worker that unpacked it as a pair failed every paired case with allocations on.
    file = _checkout(tmp_path, 1)
    events: list[dict] = []
    plan = {**_plan(file, file), "allocations": True}
    outcome = SubprocessBackend(PAIR_WORKER).run(plan, 60, events.append)
    assert outcome.returncode == 0, outcome.stderr
    assert not [e for e in events if e["event"] == "error"]
    allocs = {e["side"]: e for e in events if e["event"] == "alloc"}
    assert set(allocs) == {"a", "b"}
    for alloc in allocs.values():
        assert {"peak_bytes", "blocks", "total_bytes", "total_blocks"} <= set(alloc)


class _FakeSide:
    """A side whose call takes ``call_ns`` on a fake clock; with ``preempt_ns``, every
    sample of more than 4 calls is preempted that long in 2 rounds of 3 (a loaded
    machine deschedules long samples most)."""

    def __init__(
        self, name: str, clock: list[int], call_ns: int, iterations: int, preempt_ns: int = 0
    ) -> None:
        self.name, self.clock, self.call_ns, self.iterations = name, clock, call_ns, iterations
        self.preempt_ns, self.calls = preempt_ns, 0

    def call(self) -> None:
        self.calls += 1
        self.clock[0] += self.call_ns
        sample = (self.calls - 1) // self.iterations
        if self.calls % self.iterations == 0 and self.iterations > 4 and sample % 3:
            self.clock[0] += self.preempt_ns


def test_balance_gives_both_sides_samples_of_the_target_length(monkeypatch) -> None:
    from perflab.engines.run import pair_worker, worker
    from perflab.engines.run.sampling import GcMonitor

    clock = [0]
    monkeypatch.setattr(worker, "_perf_ns", lambda: clock[0])
    # A/A: both 35 µs a call; A's calibration was cut short by a preemption (1 call),
    # B's overshot (6 calls): their samples would last 35 µs and 210 µs
    a = _FakeSide("a", clock, 35_000, 1)
    b = _FakeSide("b", clock, 35_000, 6)
    pair_worker.balance((a, b), 100_000, GcMonitor())
    assert a.iterations == b.iterations == 3
    # within the tolerance nothing moves (the runner's known counts stay)
    a.iterations, b.iterations = 3, 4
    pair_worker.balance((a, b), 100_000, GcMonitor())
    assert (a.iterations, b.iterations) == (3, 4)
    # a call longer than the target: one call a sample
    slow = _FakeSide("b", clock, 5_000_000, 2)
    pair_worker.balance((a, slow), 100_000, GcMonitor())
    assert slow.iterations == 1 and a.iterations == 3
    # under load: 13-call samples (455 µs for a 450 µs target) mostly preempted for
    # 10 ms; their fastest timing still says 35 µs a call, so 13 calls stay (the
    # median said 800 µs a call and cut the side to 1 call, the other keeping 13)
    long_a = _FakeSide("a", clock, 35_000, 13, preempt_ns=10_000_000)
    long_b = _FakeSide("b", clock, 35_000, 13)
    pair_worker.balance((long_a, long_b), 450_000, GcMonitor())
    assert long_a.iterations == long_b.iterations == 13
    # one side of a lock-step pair balances alone, always to the balanced count: 2 and
    # 4 calls of 35 µs are each within 1.5× of 3, but 2× apart from each other
    for start in (2, 4, 6):
        alone = _FakeSide("", clock, 35_000, start)
        worker.balance((alone,), 100_000, GcMonitor(), tolerance=1.0)
        assert alone.iterations == 3
