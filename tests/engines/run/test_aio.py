"""Async benchmarks: the worker sequence on ``async def`` functions (in this process,
through :func:`perflab.engines.run.worker.measure_call`) and through ``perflab run``.

Real awaits: ``asyncio.sleep(0)`` and an in-process queue. No speed is asserted, only
that each call ran to completion on one loop and that the loop overhead was measured on
an empty coroutine (so it is larger than a plain call's, and the figures are complete).
"""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest

from perflab.engines.run import aio
from perflab.engines.run.worker import PhaseError, empty_like, measure_call

PLAN = {
    "iterations": None,
    "sample_target_ns": 2e6,
    "warmup_max_s": 0.05,
    "sample_seconds": 0.02,
    "min_samples": 3,
    "max_samples": 50,
    "allocations": True,
}


def _events(func, *args, **plan):
    events = []
    measure_call(func, args, {}, {**PLAN, **plan}, lambda ev, **f: events.append((ev, f)))
    return events


def test_async_calls_run_to_completion_on_one_loop():
    loops, results = set(), []

    async def pingpong(n):
        queue: asyncio.Queue[int] = asyncio.Queue()
        loops.add(id(asyncio.get_running_loop()))
        for i in range(n):
            await queue.put(i)
            await asyncio.sleep(0)
            results.append(await queue.get())
        return n

    events = _events(pingpong, 3)
    kinds = [ev for ev, _ in events]
    assert kinds[:2] == ["start", "cold"] and kinds[-1] == "done"
    samples = [f for ev, f in events if ev == "sample"]
    assert len(samples) >= 3 and all(s["wall"] > 0 for s in samples)
    assert len(loops) == 1  # one loop for the whole sequence
    assert results[:3] == [0, 1, 2]  # every call's awaits ran


def test_the_async_overhead_is_measured_on_an_empty_coroutine(monkeypatch):
    # Which callable the overhead loop timed, not how fast it was (a speed comparison
    # of two separate runs is a benchmark's business): every empty coroutine the
    # worker makes is counted as it runs, with the loop it ran on.
    ran, real = [], aio.empty_async_like

    def counting(func, empty_like):
        empty = real(func, empty_like)

        async def counted(*args, **kwargs):
            ran.append(id(asyncio.get_running_loop()))
            return await empty(*args, **kwargs)

        return counted

    monkeypatch.setattr(aio, "empty_async_like", counting)

    async def noop(x, y=1):
        await asyncio.sleep(0)

    events = dict(_events(noop, 1))
    # timed loops of the calibrated count of empty coroutines, each run to completion
    assert events["overhead"]["ns_per_op"] > 0
    assert len(ran) >= events["calibrated"]["iterations"] >= 1
    assert len(set(ran)) == 1  # on the benchmark's one loop
    ran.clear()
    assert dict(_events(lambda x, y=1: None, 1))["overhead"]["ns_per_op"] > 0
    assert ran == []  # a plain function's overhead: a plain empty call


def test_the_empty_coroutine_keeps_the_signature():
    async def f(a, /, b, *args, c=3, **kw):
        pass

    empty = aio.empty_async_like(f, empty_like)
    assert asyncio.iscoroutinefunction(empty)
    assert str(__import__("inspect").signature(empty)) == "(a, /, b, *args, c=None, **kw)"


def test_an_unknown_loop_is_a_phase_error():
    async def f():
        pass

    with pytest.raises(PhaseError) as err:
        _events(f, event_loop="trio")
    assert err.value.phase == "event loop"


def test_perflab_run_measures_an_async_bench(tmp_path, perflab_cli):
    bench = tmp_path / "abench.py"
    bench.write_text(
        textwrap.dedent("""
        import asyncio
        import perflab

        @perflab.bench
        async def hop():
            await asyncio.sleep(0)
            return 1
    """)
    )
    out = tmp_path / "r.json"
    result = perflab_cli(
        "run",
        str(bench),
        "--json",
        str(out),
        "--budget",
        "0.5s",
        "--min-processes",
        "2",
        "--process-time",
        "20ms",
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    [b] = json.loads(out.read_text())["benchmarks"]
    assert not b["error"] and b["processes"][0]["samples"]
    assert b["processes"][0]["loop_overhead_ns"] > 1000  # the loop's trip, not a bare call


def test_threads_mode_refuses_async_functions():
    async def f():
        pass

    with pytest.raises(PhaseError) as err:
        _events(f, threads=2)
    assert err.value.phase == "threads" and "async def" in str(err.value.exc)


def test_uvloop_runs_the_calls_when_asked():
    import uvloop  # installed by the Makefile (a test dependency)

    kinds = set()

    async def hop():
        kinds.add(type(asyncio.get_running_loop()))
        await asyncio.sleep(0)

    events = _events(hop, event_loop="uvloop")
    assert kinds == {uvloop.Loop}
    assert [ev for ev, _ in events][-1] == "done"
    assert dict(events)["overhead"]["ns_per_op"] > 0


def test_perflab_run_event_loop_uvloop(tmp_path, perflab_cli):
    bench = tmp_path / "ubench.py"
    bench.write_text(
        textwrap.dedent("""
        import asyncio
        import perflab
        import uvloop

        @perflab.bench
        async def hop():
            assert isinstance(asyncio.get_running_loop(), uvloop.Loop)
            await asyncio.sleep(0)
    """)
    )
    out = tmp_path / "r.json"
    result = perflab_cli(
        "run",
        str(bench),
        "--event-loop",
        "uvloop",
        "--json",
        str(out),
        "--budget",
        "0.5s",
        "--min-processes",
        "2",
        "--process-time",
        "20ms",
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    [b] = data["benchmarks"]
    assert not b["error"] and b["processes"][0]["samples"]
    assert data["settings"]["event_loop"] == "uvloop"
