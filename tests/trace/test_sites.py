"""perflab.trace.sites: which ``with`` statements in coroutines and generators cannot
be suspended before their block ends (those may keep their span on the thread's
stack). Every construct that suspends a frame, anywhere on a path through the block,
normal or exceptional, must answer False; a block with none of them, True."""

from __future__ import annotations

import dis

import pytest

from perflab.trace.sites import with_body_cannot_suspend


def answers(func) -> list[bool]:
    """The answer for each ``with`` statement of ``func``, in source order."""
    code = func.__code__
    return [
        with_body_cannot_suspend(code, ins.offset)
        for ins in dis.get_instructions(code)
        if ins.opname == "BEFORE_WITH"
    ]


def test_blocks_without_a_suspension_point_are_found_in_coroutines():
    async def handler(s, g, items):
        with s("a") as x:  # calls, try/except with a return, a loop with break
            try:
                y = g(x)
            except KeyError:
                return 3
            for i in items:
                if i:
                    break
        with s("b"):  # the await comes after the block
            g(y)
        await g()
        with s("c"):
            with s("d"):  # nested, no await in either
                pass
        try:
            with s("e"):  # the await is in a finally after the block
                g()
        finally:
            await g()
        return y

    assert answers(handler) == [True, True, True, True, True]


def test_every_way_a_block_can_suspend_is_found():
    async def handler(s, g, items):
        with s("await"):
            await g()
        with s("outer"):
            with s("inner"):
                pass
            await g()  # after the inner block: only the outer one spans it
        with s("async for"):
            async for _ in g():
                pass
        with s("async with"):
            async with g():
                pass
        with s("comprehension"):
            return [await x for x in items]

    async def in_handler(s, g):
        with s("except"):
            try:
                g()
            except KeyError:
                await g()  # only on the exceptional path
        with s("loop"):
            for x in g():
                if x:
                    continue
                await x

    assert answers(handler) == [False, False, True, False, False, False]
    assert answers(in_handler) == [False, False]


def test_generators_and_async_generators():
    def gen(s):
        with s("yield"):
            yield 1
        with s("none"):
            x = 1
        with s("yield from"):
            yield from range(x)

    async def agen(s, g):
        with s("none"):
            g()
        with s("yield"):
            yield 1

    assert answers(gen) == [False, True, False]
    assert answers(agen) == [True, False]


def test_a_return_that_runs_a_finally_with_an_await_counts_as_inside():
    """Erring on the safe side: after a return's call of __exit__, the return value
    sits in the block's slot while the finally (with its await) runs."""

    async def handler(s, g):
        try:
            with s("f"):
                return g()
        finally:
            await g()

    assert answers(handler) == [False]


@pytest.mark.parametrize("offset", [0, 1, 2, 10_000, -2])
def test_any_offset_that_is_not_a_with_statement_is_false(offset):
    async def handler(s):
        with s("x"):
            pass

    assert with_body_cannot_suspend(handler.__code__, offset) is False


def test_plain_functions_answer_as_well():
    def plain(s, g):
        with s("x"):
            g()

    assert answers(plain) == [True]
