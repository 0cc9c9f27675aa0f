"""``with perflab.span(...)`` blocks on the per-thread stack: taken only where nothing
can suspend the block, and right when they mix with decorated calls, coroutines,
generators, wrappers, threads and interleaved asyncio tasks.

A block entered by a ``with`` statement in a plain function, or in ``async def`` or a
generator when the block holds no ``await``/``yield`` (perflab.trace.sites), keeps its
frame on the thread's stack (cheap); one that spans an ``await`` or a ``yield``, or
whose ``__enter__`` is called by other code (a wrapper class, ``ExitStack``), keeps
the ContextVar. ``_core.trace_sync_depth()`` says which path a block took.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars

import perflab
import perflab.trace
from perflab import _core
from tests.trace.concurrency import busy, in_threads, interleaved


class Timed:
    """A wrapper context manager of the kind apps write: it calls the span's
    ``__enter__``/``__exit__`` itself, so an ``await`` of its user can suspend the span."""

    def __init__(self, name: str) -> None:
        self.span = perflab.span(name)

    def __enter__(self) -> Timed:
        self.span.__enter__()
        return self

    def __exit__(self, *exc: object) -> bool:
        return self.span.__exit__(*exc)


def test_a_with_statement_in_a_plain_function_uses_the_thread_stack():
    depths = []
    with perflab.span("k.plain"):
        depths.append(_core.trace_sync_depth())
        with perflab.span("k.inner"):
            depths.append(_core.trace_sync_depth())
    depths.append(_core.trace_sync_depth())

    async def coroutine():
        with perflab.span("k.async"):  # spans an await: the ContextVar
            depths.append(_core.trace_sync_depth())
            await asyncio.sleep(0)
        with perflab.span("k.async_sync"):  # no await inside: the thread's stack
            depths.append(_core.trace_sync_depth())
        await asyncio.sleep(0)

    def generator():
        with perflab.span("k.gen"):
            depths.append(_core.trace_sync_depth())
            yield
        with perflab.span("k.gen_sync"):
            depths.append(_core.trace_sync_depth())
        yield

    asyncio.run(coroutine())
    list(generator())
    with Timed("k.wrapped"):
        depths.append(_core.trace_sync_depth())
    with contextlib.ExitStack() as stack:
        stack.enter_context(perflab.span("k.exitstack"))
        depths.append(_core.trace_sync_depth())
    assert depths == [1, 2, 0, 0, 1, 0, 1, 0, 0]
    snap = perflab.trace.snapshot()
    assert {n: snap[n]["count"] for n in snap} == {
        "k.plain": 1,
        "k.inner": 1,
        "k.async": 1,
        "k.gen": 1,
        "k.wrapped": 1,
        "k.exitstack": 1,
        "k.async_sync": 1,
        "k.gen_sync": 1,
    }
    p, i = snap["k.plain"], snap["k.inner"]
    assert p["self_total_ns"] == p["total_ns"] - i["total_ns"]


def test_wrapped_and_exitstack_spans_held_across_awaits_keep_their_own_durations():
    """Task A opens at 0 ms and closes at 100 ms; task B opens at 50 ms and closes at
    250 ms. Were their frames on one LIFO stack, A's exit would close B's frame (50 ms)
    and B's exit A's (250 ms)."""

    async def hold(open_after_s: float, hold_s: float, enter) -> None:
        await asyncio.sleep(open_after_s)
        async with contextlib.AsyncExitStack() as stack:
            enter(stack)
            await asyncio.sleep(hold_s)
            leaf()

    @perflab.trace("x.leaf")
    def leaf():
        pass

    def wrapped(stack):
        stack.enter_context(Timed("x.wrapped"))

    def exitstack(stack):
        stack.enter_context(perflab.span("x.exitstack"))

    async def main():
        await asyncio.gather(
            hold(0, 0.1, wrapped),
            hold(0.05, 0.2, wrapped),
            hold(0, 0.1, exitstack),
            hold(0.05, 0.2, exitstack),
        )

    asyncio.run(main())
    snap = perflab.trace.snapshot()
    assert snap["x.leaf"]["count"] == 4
    for name in ("x.wrapped", "x.exitstack"):
        s = snap[name]
        assert s["count"] == 2
        # Sleeps never end early; the shorter span is A's 100 ms, not 50 ms.
        assert s["duration"]["min_ns"] >= 95_000_000, (name, s["duration"])
        assert s["duration"]["max_ns"] >= 195_000_000, (name, s["duration"])
    # Each span's only child is its own leaf: other tasks' spans never became children.
    both = snap["x.wrapped"]["self_total_ns"] + snap["x.exitstack"]["self_total_ns"]
    assert both == (
        snap["x.wrapped"]["total_ns"] + snap["x.exitstack"]["total_ns"] - snap["x.leaf"]["total_ns"]
    )


def test_stack_blocks_in_sync_helpers_of_interleaved_tasks_keep_their_parents():
    depths = set()

    def helper():
        with perflab.span("h.helper"):
            depths.add(_core.trace_sync_depth())
            busy(0.001)

    @perflab.trace("h.call")
    def call():
        helper()

    async def task():
        with perflab.span("h.task"):
            helper()
            await asyncio.sleep(0.005)  # the other tasks run here
            call()

    with perflab.span("h.outer"):  # a stack block around the event loop
        interleaved(task)
    snap = perflab.trace.snapshot()
    o, t, c, h = (snap[n] for n in ("h.outer", "h.task", "h.call", "h.helper"))
    assert depths == {2, 3}  # under h.outer: helper, or call and its helper
    assert (o["count"], t["count"], c["count"], h["count"]) == (1, 3, 3, 6)
    # Each task block's children: its own first helper and its call.
    helpers_in_calls = c["total_ns"] - c["self_total_ns"]
    assert t["self_total_ns"] == t["total_ns"] - (h["total_ns"] - helpers_in_calls) - c["total_ns"]
    assert helpers_in_calls <= h["total_ns"] and h["self_total_ns"] == h["total_ns"]
    # The loop's tasks (which overlap) are children of the outer block.
    assert o["self_total_ns"] == max(0, o["total_ns"] - t["total_ns"])
    assert _core.trace_sync_depth() == 0


def test_blocks_without_awaits_in_interleaved_tasks_use_the_stack_and_keep_parents():
    """A block in ``async def`` whose body cannot suspend takes the thread's stack; in
    three interleaved tasks each such block is its own task's child, never another's,
    and one that raises leaves the stack clean."""
    depths = set()

    async def task():
        with perflab.span("a.task"):  # spans awaits: the ContextVar
            with perflab.span("a.step"):  # no await: the thread's stack
                depths.add(_core.trace_sync_depth())
                busy(0.001)
            await asyncio.sleep(0.005)  # the other tasks run here
            try:
                with perflab.span("a.step"):
                    busy(0.001)
                    raise KeyError
            except KeyError:
                pass
            await asyncio.sleep(0)

    interleaved(task)
    snap = perflab.trace.snapshot()
    t, s = snap["a.task"], snap["a.step"]
    assert depths == {1} and _core.trace_sync_depth() == 0
    assert (t["count"], s["count"]) == (3, 6)
    # Each task block's children are its own two steps, whatever ran in between.
    assert t["self_total_ns"] == t["total_ns"] - s["total_ns"]
    assert s["self_total_ns"] == s["total_ns"]


def test_blocks_decorators_and_recursion_nest_with_exact_self_times():
    @perflab.trace("n.call")
    def call(n):
        with perflab.span("n.block"):
            busy(0.0002)
            if n:
                call(n - 1)

    def recurse(n):
        with perflab.span("n.rec"):
            if n:
                recurse(n - 1)

    call(3)
    recurse(4)
    snap = perflab.trace.snapshot()
    c, b, r = snap["n.call"], snap["n.block"], snap["n.rec"]
    assert (c["count"], b["count"], r["count"]) == (4, 4, 5)
    # Each call's only child is its block, whose only child is the next call.
    assert c["self_total_ns"] == c["total_ns"] - b["total_ns"]
    assert b["self_total_ns"] < b["total_ns"] - 3 * 150_000
    # Recursion: each level is its parent's only child, so the self times add up to
    # the outermost duration (the histogram's max, within its 1% buckets).
    assert abs(r["self_total_ns"] - r["duration"]["max_ns"]) <= r["duration"]["max_ns"] * 0.01
    assert _core.trace_sync_depth() == 0


def test_a_stack_block_and_a_generator_block_of_one_name_pair_up_right():
    def gen():
        with perflab.span("g.x"):
            yield
            busy(0.002)
            yield

    g = gen()
    next(g)  # the generator's block is open (in the ContextVar)
    with perflab.span("g.x"):  # a stack block of the same name, around the resume
        next(g)
    assert _core.trace_sync_depth() == 0
    g.close()
    snap = perflab.trace.snapshot()["g.x"]
    assert snap["count"] == 2
    # The stack block holds the generator's 2 ms of work; the generator's block is
    # open from the first next() to close(), around it.
    assert snap["duration"]["min_ns"] >= 1_900_000
    with perflab.span("g.after"):
        assert _core.trace_sync_depth() == 1


def test_context_spans_ended_out_of_order_or_in_another_context_leave_contexts_right():
    """A span in the ContextVar is marked ended, not reset: one ended out of order is
    recorded and leaves the later one current; one ended in another context than it
    was opened in (not recorded: its context is not the one running) leaves both
    contexts with no current span (no stray value set in either)."""

    def gen(name):
        with perflab.span(name):
            yield

    def child():
        with perflab.span("o.child"):
            busy(0.002)

    g1, g2 = gen("o.g1"), gen("o.g2")
    next(g1)
    next(g2)  # under g1
    g1.close()  # ended out of order: g2 stays the current span
    child()
    g2.close()
    snap = perflab.trace.snapshot()
    g2_children = snap["o.g2"]["total_ns"] - snap["o.g2"]["self_total_ns"]
    assert g2_children == snap["o.child"]["total_ns"] >= 1_900_000
    # g1 ended before g2 did: g2's time never became g1's child time.
    assert snap["o.g1"]["count"] == 1
    assert snap["o.g1"]["self_total_ns"] == snap["o.g1"]["total_ns"]

    elsewhere = contextvars.copy_context()
    g3 = gen("o.g3")
    elsewhere.run(next, g3)  # opened in `elsewhere`
    g3.close()  # ended here
    request = _core.Request(_core.trace_register("o.req")[0], True)
    elsewhere.run(child)
    asyncio.run(coroutine_block("o.async"))  # a context span in a copy of this context
    request.end()
    sums = {name for name, _, _ in request.timing()}
    # Only this context's spans are the request's; `elsewhere` has no current span.
    assert sums == {"o.req", "o.async", None}

    g4 = gen("o.g4")
    next(g4)  # opened here, with no parent
    copied = contextvars.copy_context()  # g4's span is current there too
    copied.run(g4.close)  # ended there: recorded, and `copied` is left with no span
    copied.run(asyncio.run, coroutine_block("o.after"))
    snap = perflab.trace.snapshot()
    assert snap["o.g4"]["count"] == snap["o.after"]["count"] == 1


async def coroutine_block(name: str) -> None:
    """A block that spans an await (so it takes the ContextVar)."""
    with perflab.span(name):
        await asyncio.sleep(0)


def test_threads_each_keep_their_own_stack():
    def run():
        for _ in range(2000):
            with perflab.span("th.outer"):
                with perflab.span("th.inner"):
                    pass

    in_threads(run)
    snap = perflab.trace.snapshot()
    o, i = snap["th.outer"], snap["th.inner"]
    assert o["count"] == i["count"] == 8000
    assert o["self_total_ns"] == o["total_ns"] - i["total_ns"]
    assert i["self_total_ns"] == i["total_ns"]


def test_exceptions_and_returns_leave_the_stack_clean():
    def fails():
        with perflab.span("e.fails"):
            raise KeyError

    def returns():
        with perflab.span("e.returns"):
            return 1

    for _ in range(3):
        try:
            fails()
        except KeyError:
            pass
        assert returns() == 1
    assert _core.trace_sync_depth() == 0
    snap = perflab.trace.snapshot()
    assert snap["e.fails"]["count"] == snap["e.returns"]["count"] == 3


def test_recording_off_gives_one_shared_no_op_and_toggles_inside_blocks_are_safe():
    perflab.trace.enable(False)
    off = perflab.span("o.a")
    assert off is perflab.span("o.b") and "recording off" in repr(off)
    with perflab.span("o.a"):
        perflab.trace.enable(True)  # turned on inside a block entered while off
        with perflab.span("o.inner"):
            pass
    assert _core.trace_sync_depth() == 0
    with perflab.span("o.c"):
        perflab.trace.enable(False)  # turned off inside a recording block
    perflab.trace.enable(True)
    assert _core.trace_sync_depth() == 0
    snap = perflab.trace.snapshot()
    assert sorted(snap) == ["o.c", "o.inner"]
    assert snap["o.inner"]["count"] == snap["o.c"]["count"] == 1


def test_a_coroutine_decorated_while_recording_is_off_records_once_it_is_on():
    perflab.trace.enable(False)

    @perflab.trace("o.coro")
    async def coro():
        return 5

    assert asyncio.run(coro()) == 5
    perflab.trace.enable(True)
    assert asyncio.run(coro()) == 5
    assert perflab.trace.snapshot()["o.coro"]["count"] == 1


def test_a_sync_span_adds_up_its_stack_and_context_children():
    """A decorated call's children: a block on the thread's stack, and a coroutine's
    block (in the ContextVar), which is given a frame of the call to add its time to."""

    async def in_coroutine():
        with perflab.span("m.coro"):
            busy(0.001)

    @perflab.trace("m.outer")
    def outer():
        with perflab.span("m.sync"):
            busy(0.001)
        coro = in_coroutine()
        try:
            coro.send(None)
        except StopIteration:
            pass
        with perflab.span("m.sync"):
            pass

    outer()
    outer()
    snap = perflab.trace.snapshot()
    o, s, c = snap["m.outer"], snap["m.sync"], snap["m.coro"]
    assert (o["count"], s["count"], c["count"]) == (2, 4, 2)
    assert o["self_total_ns"] == o["total_ns"] - s["total_ns"] - c["total_ns"]
    assert _core.trace_sync_depth() == 0
