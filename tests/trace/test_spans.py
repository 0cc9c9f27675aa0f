"""perflab.trace: decorators, spans, nesting and self time, threads, asyncio, limits."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import threading
import warnings

import pytest

import perflab
import perflab.trace
from perflab import _core
from tests.trace.concurrency import busy, interleaved


def test_decorator_counts_calls_and_keeps_the_function_shape():
    @perflab.trace("t.add")
    def add(a, b=1):
        """Add."""
        return a + b

    assert [add(1), add(1, b=5), add(a=2)] == [2, 6, 3]
    assert add.__name__ == "add" and add.__doc__ == "Add." and add.span_name == "t.add"
    assert add.__wrapped__(1) == 2
    snap = perflab.trace.snapshot()
    assert snap["t.add"]["count"] == 3
    hist = snap["t.add"]["duration"]
    assert hist["count"] == 3 and 0 < hist["min_ns"] <= hist["p50_ns"] <= hist["max_ns"]
    assert hist["encoded_b64"].startswith("HISTF")


def test_bare_decorator_uses_the_qualname_and_methods_bind():
    class Shop:
        def __init__(self):
            self.calls = 0

        @perflab.trace
        def order(self, n):
            self.calls += 1
            return n * 2

    shop = Shop()
    assert shop.order(4) == 8 and Shop.order(shop, 1) == 2 and shop.calls == 2
    name = Shop.order.span_name
    assert name.endswith("Shop.order")
    assert perflab.trace.snapshot()[name]["count"] == 2


def test_exceptions_propagate_and_the_span_is_still_recorded():
    @perflab.trace("t.fails")
    def fails():
        raise KeyError("x")

    with pytest.raises(KeyError):
        fails()
    with pytest.raises(ValueError), perflab.span("t.block_fails"):
        raise ValueError
    snap = perflab.trace.snapshot()
    assert snap["t.fails"]["count"] == 1 and snap["t.block_fails"]["count"] == 1


def test_nesting_gives_self_time_without_the_children():
    @perflab.trace("t.child")
    def child():
        busy(0.004)

    @perflab.trace("t.parent")
    def parent():
        busy(0.002)
        child()
        with perflab.span("t.block"):
            busy(0.003)

    parent()
    snap = perflab.trace.snapshot()
    p, c, b = snap["t.parent"], snap["t.child"], snap["t.block"]
    assert p["total_ns"] >= c["total_ns"] + b["total_ns"]
    # Self time is the duration less the children's, exactly (same clock readings).
    assert p["self_total_ns"] == p["total_ns"] - c["total_ns"] - b["total_ns"]
    assert c["self_total_ns"] == c["total_ns"] and c["total_ns"] >= 4_000_000
    assert p["self_total_ns"] >= 2_000_000


def test_the_same_span_object_nests_and_is_reused():
    outer = perflab.span("t.rec")
    assert perflab.span("t.rec") is outer
    with outer:
        with outer:
            busy(0.001)
    snap = perflab.trace.snapshot()["t.rec"]
    assert snap["count"] == 2
    # outer's self time excludes inner: the self total is outer's duration alone.
    assert snap["self_total_ns"] < snap["total_ns"]
    assert snap["self_total_ns"] >= snap["duration"]["max_ns"] * 0.99


def test_async_spans_follow_each_task():
    @perflab.trace("t.io")
    async def io(delay):
        await asyncio.sleep(delay)
        return delay

    @perflab.trace("t.handler")
    async def handler(delay):
        with perflab.span("t.inner"):
            return await io(delay)

    async def main():
        return await asyncio.gather(*(handler(0.02) for _ in range(5)))

    assert asyncio.run(main()) == [0.02] * 5
    snap = perflab.trace.snapshot()
    assert snap["t.handler"]["count"] == snap["t.io"]["count"] == snap["t.inner"]["count"] == 5
    # Each task's handler has only its own inner as child: concurrent tasks don't mix.
    assert (
        snap["t.handler"]["self_total_ns"]
        == snap["t.handler"]["total_ns"] - snap["t.inner"]["total_ns"]
    )
    assert (
        snap["t.inner"]["self_total_ns"] == snap["t.inner"]["total_ns"] - snap["t.io"]["total_ns"]
    )
    # Five sleeps of 20 ms overlapped: each span ≥ 20 ms, all well under 5 × 20 ms each.
    assert snap["t.io"]["duration"]["min_ns"] >= 19_000_000


def test_sync_calls_and_tasks_interleaved_inside_a_sync_span_keep_their_parents():
    """Sync calls keep their frames on a per-thread stack, not in the ContextVar: an
    event loop run inside a sync span, whose tasks interleave blocks and sync calls, must
    still give each span the right parent."""

    @perflab.trace("m.leaf")
    def leaf():
        busy(0.001)

    @perflab.trace("m.direct")
    def direct():
        busy(0.001)

    async def task():
        with perflab.span("m.block"):
            leaf()
            await asyncio.sleep(0.005)  # the other tasks run here
            leaf()

    @perflab.trace("m.outer")
    def outer():
        direct()
        interleaved(task)

    outer()
    snap = perflab.trace.snapshot()
    o, d, b, leaf_ = snap["m.outer"], snap["m.direct"], snap["m.block"], snap["m.leaf"]
    assert (o["count"], d["count"], b["count"], leaf_["count"]) == (1, 1, 3, 6)
    # Each block's children are its own two leaves, whatever ran in between.
    assert b["self_total_ns"] == b["total_ns"] - leaf_["total_ns"]
    assert d["self_total_ns"] == d["total_ns"] and leaf_["self_total_ns"] == leaf_["total_ns"]
    # outer's children: direct and the three blocks (which overlap, so its self time
    # saturates at 0 rather than going negative).
    assert o["self_total_ns"] == max(0, o["total_ns"] - d["total_ns"] - b["total_ns"])


def test_threads_record_in_parallel_and_merge_on_read():
    @perflab.trace("t.threaded")
    def work():
        return 1

    def run():
        for _ in range(2000):
            work()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    mid = perflab.trace.snapshot().get("t.threaded", {"count": 0})["count"]
    for t in threads:
        t.join()
    assert 0 <= mid <= 8000
    assert perflab.trace.snapshot()["t.threaded"]["count"] == 8000


def test_disabled_recording_keeps_decorators_working():
    @perflab.trace("t.off")
    def f(x):
        return x + 1

    assert perflab.trace.enable(False) is True
    assert not perflab.trace.enabled()
    with perflab.span("t.off_block"):
        assert f(1) == 2
    assert perflab.trace.snapshot() == {}
    perflab.trace.enable(True)
    f(1)
    assert perflab.trace.snapshot()["t.off"]["count"] == 1


def test_reset_starts_from_zero():
    with perflab.span("t.reset"):
        pass
    perflab.trace.reset()
    assert "t.reset" not in perflab.trace.snapshot()
    with perflab.span("t.reset"):
        pass
    assert perflab.trace.snapshot()["t.reset"]["count"] == 1


def test_a_span_called_by_hand_checks_its_arguments_like_a_context_manager():
    """__enter__ and __exit__ are C methods: called directly, they take what a with
    statement passes and say so otherwise."""
    s = perflab.span("t.by_hand")
    assert s.__enter__() is s
    with pytest.raises(TypeError, match="3 arguments"):
        s.__exit__()
    assert s.__exit__(None, None, None) is False
    with pytest.raises(TypeError):
        type(s).__enter__(object())  # not a span
    assert perflab.trace.snapshot()["t.by_hand"]["count"] == 1


def test_bad_names_are_clear_errors_at_decoration_and_warnings_in_spans():
    with pytest.raises(TypeError, match="must be a str"):
        perflab.trace(42)
    with pytest.raises(TypeError, match="generator function"):

        @perflab.trace("t.gen")
        def gen():
            yield 1

    with pytest.warns(RuntimeWarning, match="must be a str"):
        with perflab.span(3.5):
            pass
    assert perflab.trace.snapshot()["3.5"]["count"] == 1


def test_the_name_cap_counts_overflow_under_one_name_with_one_warning(tmp_path):
    script = """
import warnings, perflab.trace
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for i in range(10):
        with perflab.span(f"n{i}"):
            pass
snap = perflab.trace.snapshot()
print(sorted(snap), snap["(other spans)"]["count"], perflab.trace.limits(), len(caught))
"""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PERFLAB_TRACE_MAX_NAMES": "3", "PATH": "/usr/bin:/bin"},
        check=True,
        timeout=60,
    ).stdout
    assert out.split() == [
        "['(other",
        "spans)',",
        "'n0',",
        "'n1',",
        "'n2']",
        "7",
        "(3,",
        "7)",
        "1",
    ], out


def test_perflab_trace_0_disables_at_import():
    script = (
        "import perflab\ndef g(): return 7\nf = perflab.trace('x')(g)\n"
        "with perflab.span('b'): pass\n"
        "print(f(), f is g, perflab.trace.enabled(), perflab.trace.snapshot())"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PERFLAB_TRACE": "0", "PATH": "/usr/bin:/bin"},
        check=True,
        timeout=60,
    ).stdout
    # Off at start: the decorator returns the function itself (no cost at all).
    assert out.strip() == "7 True False {}"


def test_spans_closed_in_another_context_do_not_corrupt_nesting():
    span = perflab.span("t.leak")
    gen_started = threading.Event()

    def gen():
        with span:
            gen_started.set()
            yield 1

    g = gen()
    next(g)  # the span is entered in the generator, left open
    with perflab.span("t.after"):
        pass
    g.close()
    snap = perflab.trace.snapshot()
    assert snap["t.after"]["count"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with perflab.span("t.after"):
            pass
    assert perflab.trace.snapshot()["t.after"]["count"] == 2
    assert _core.trace_enabled()


def test_context_span_frames_are_reused_only_when_nothing_holds_them():
    """A block spanning an ``await`` keeps a frame in the ContextVar; perflab remakes
    a thread's old frames once nothing else refers to them. Remade frames must carry
    their new links (nesting stays exact over many spans), and a frame still held
    (here by a context copied while its block was open) must never be remade: spans
    run in that copy later have no parent, so they are not the running block's
    child time."""

    async def hold():
        with perflab.span("k.held"):
            await asyncio.sleep(0)
            return contextvars.copy_context()

    held = asyncio.run(hold())

    def elsewhere():
        with perflab.span("k.elsewhere"):
            busy(0.002)

    async def nested():
        for _ in range(50):
            with perflab.span("k.outer"):
                await asyncio.sleep(0)
                with perflab.span("k.inner"):
                    await asyncio.sleep(0)
        with perflab.span("k.running"):
            await asyncio.sleep(0)
            held.run(elsewhere)  # another context: not k.running's child

    asyncio.run(nested())
    snap = perflab.trace.snapshot()
    outer, inner, running = snap["k.outer"], snap["k.inner"], snap["k.running"]
    assert outer["count"] == inner["count"] == 50
    assert outer["self_total_ns"] == outer["total_ns"] - inner["total_ns"]
    assert inner["self_total_ns"] == inner["total_ns"]
    assert snap["k.elsewhere"]["count"] == 1
    assert running["self_total_ns"] == running["total_ns"] >= 1_900_000
