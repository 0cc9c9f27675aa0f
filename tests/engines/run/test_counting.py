"""The counted sequence's pieces: calls per sample, and the client requests really
bracketing a loop when the process runs under Callgrind (skipped without Valgrind)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perflab.engines import callgrind
from perflab.engines.run.counting import MAX_CALLS_PER_SAMPLE, calls_for

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("ir", "target", "n"),
    [
        (1e9, 2e7, 1),
        (2e7, 2e7, 1),
        (1e7, 2e7, 2),
        (4.5e6, 2e7, 2),
        (3.9e6, 2e7, 5),
        (1000, 2e7, 20000),
        (999, 2e7, 20000),
        (1, 2e7, MAX_CALLS_PER_SAMPLE),
        (0, 2e7, MAX_CALLS_PER_SAMPLE),
    ],
)
def test_calls_per_sample_steps_1_2_5(ir: float, target: float, n: int) -> None:
    assert calls_for(ir, target) == n


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="Valgrind is not installed")
def test_client_requests_bracket_exactly_the_loop(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        from perflab import _core
        from perflab.engines.run.counting import counted_loop
        def work():
            return sum(i * i for i in range(200))
        def empty():
            pass
        assert _core.valgrind_running() == 1
        work(); empty()
        _core.callgrind_start_instrumentation()
        counted_loop(work, 10, "sample:0")
        counted_loop(work, 20, "sample:1")
        counted_loop(empty, 10, "empty:0")
        _core.callgrind_stop_instrumentation()
        sum(range(10**5))  # after the bracket: never counted
        """
    )
    out = tmp_path / "out"
    out.mkdir()
    argv = [*callgrind.valgrind_command(out), sys.executable, "-c", script]
    env = {"PYTHONPATH": str(REPO / "python"), "PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    dumps = callgrind.dumps_by_reason(callgrind.read_dumps(out))
    assert set(dumps) == {"sample:0", "sample:1", "empty:0"}
    ten, twenty, empty = (dumps[k].events["Ir"] for k in ("sample:0", "sample:1", "empty:0"))
    per_call = (ten - empty) / 10
    assert per_call > 2000  # a 200-step generator sum: thousands of instructions
    # twice the calls, twice the instructions, to well within a percent
    assert (twenty - empty) / 20 == pytest.approx(per_call, rel=0.01)
    assert empty < 0.1 * ten


def test_each_counted_sample_starts_with_the_collector_at_zero() -> None:
    """Whatever was allocated before (here 500 containers, over the 700 of a
    collection), the sample's calls start with the collector's counts at zero, so its
    automatic collections fall at the same calls in every sample and process (the
    client requests are no-ops outside Valgrind)."""
    import gc

    from perflab.engines.run.counting import counted_loop

    seen: list[tuple[int, int, int]] = []
    kept = [[] for _ in range(500)]
    counted_loop(lambda: seen.append(gc.get_count()), 1, "sample:0")
    kept += [[] for _ in range(150)]
    counted_loop(lambda: seen.append(gc.get_count()), 1, "sample:1")
    assert len(kept) == 650 and len(seen) == 2
    for young, middle, old in seen:
        assert young <= 5 and middle == old == 0  # a few of the loop's own objects at most


class FakeCore:
    """Client requests outside Valgrind, recorded; each dump's Ir is what ``ir_of`` says
    for its reason and calls (calls since the last zeroing)."""

    def __init__(self, ir_per_call: dict[str, float]) -> None:
        self.ir_per_call, self.calls, self.dumps = ir_per_call, 0, {}

    def valgrind_running(self) -> int:
        return 1

    def callgrind_start_instrumentation(self) -> None: ...

    def callgrind_stop_instrumentation(self) -> None: ...

    def callgrind_zero_stats(self) -> None:
        self.calls = 0

    def callgrind_dump_stats(self, label: str) -> None:
        reason = label.removeprefix("perflab:")
        per_call = self.ir_per_call["cold" if reason == "cold" else "warm"]
        self.dumps[reason] = int(per_call * max(self.calls, 1))


def _count(monkeypatch: pytest.MonkeyPatch, cold: float, warm: float) -> tuple[dict, FakeCore]:
    from perflab.engines.run import counting

    core = FakeCore({"cold": cold, "warm": warm})
    monkeypatch.setattr(counting, "_core", lambda: core)
    monkeypatch.setattr(
        counting, "_own_dump_ir", lambda _dir, reason, _part: core.dumps.get(reason)
    )

    def call() -> None:
        core.calls += 1

    events: dict = {}
    plan = {"count": {"dir": "", "samples": 3, "empty_samples": 1, "iterations": None}}
    counting.count_call(call, lambda: None, plan, lambda e, **f: events.__setitem__(e, f))
    return events, core


def test_the_calibrating_sample_is_kept_when_it_confirms_the_cold_counts_n(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events, core = _count(monkeypatch, cold=120e6, warm=110e6)  # a 10 ms call: n = 1
    done = events["counted"]
    assert done["iterations"] == 1 and done["samples"] == 3
    assert done["sample_reasons"] == ["calibrate", "sample:0", "sample:1"]  # 3 counted calls
    assert "sample:2" not in core.dumps
    assert events["warmup"]["samples"] == 10


def test_a_calibrating_sample_that_changes_n_is_set_aside(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events, core = _count(monkeypatch, cold=30e6, warm=1e6)  # a first call 30× dearer
    done = events["counted"]
    assert done["iterations"] == 20  # from the warm count, not the cold one (1)
    assert done["sample_reasons"] == ["sample:0", "sample:1", "sample:2"]
    assert events["warmup"]["samples"] == 40  # two samples' worth of the new n
