"""Which ``with perflab.span(...)`` statements in a coroutine or generator cannot be
suspended before they end: the native core asks once per call site (and caches the
answer per thread), so that such a block can keep its frame on the thread's stack of
sync spans, as one in a plain function does, instead of the slower ContextVar.

A block can be interleaved with another task's only if its frame suspends while the
block is open, and a frame suspends only at a ``YIELD_VALUE`` (what ``await``,
``yield``, ``yield from``, ``async for`` and ``async with`` compile to). The block is
open while the ``__exit__`` that ``BEFORE_WITH`` pushed is on the value stack, so the
walk follows every path from the statement, normal and exceptional (the code's
exception table), with the stack depth each instruction leaves (``dis.stack_effect``),
until that slot is popped. Where it meets an instruction that suspends, or anything it
does not understand (another interpreter's bytecode, an unknown opcode, a depth that
does not add up), the answer is False: the block then takes the ContextVar, slower
and never wrong. Erring that way is the rule: the walk keeps a path open a little
past ``__exit__`` (while its result or a ``return`` value still sits in the slot), so
an ``await`` in a ``finally`` that a ``return`` inside the block runs counts as inside.
"""

from __future__ import annotations

import dis
import types
from typing import Any

#: Instructions that suspend a frame, or start or end an await, an async iteration
#: or an async with: any of them inside the block means it may be interleaved.
_SUSPENDING = frozenset(
    {
        "YIELD_VALUE",
        "INSTRUMENTED_YIELD_VALUE",
        "SEND",
        "GET_AWAITABLE",
        "GET_AITER",
        "GET_ANEXT",
        "END_ASYNC_FOR",
        "BEFORE_ASYNC_WITH",
        "GET_YIELD_FROM_ITER",
        "CLEANUP_THROW",
        "ASYNC_GEN_WRAP",
        "RETURN_GENERATOR",
    }
)
#: Instructions after which control does not fall through to the next one.
_NO_FALLTHROUGH = frozenset(
    {
        "RETURN_VALUE",
        "RETURN_CONST",
        "RERAISE",
        "RAISE_VARARGS",
        "JUMP_FORWARD",
        "JUMP_BACKWARD",
        "JUMP_BACKWARD_NO_INTERRUPT",
        "JUMP_ABSOLUTE",
        "JUMP",
        "JUMP_NO_INTERRUPT",
    }
)
_JUMPS = frozenset(dis.hasjrel) | frozenset(dis.hasjabs)
#: Most (offset, depth) states one walk visits before it gives up (answer False).
_MAX_STATES = 20_000
#: Code objects whose answers are kept; the cache starts again when full.
_MAX_CODES = 4096
_cache: dict[types.CodeType, dict[int, bool]] = {}


def with_body_cannot_suspend(code: types.CodeType, offset: int) -> bool:
    """True when the ``with`` statement whose ``BEFORE_WITH`` is at byte ``offset`` of
    ``code`` cannot suspend its frame before the block ends (see the module doc).

    Args:
        code: a code object (any kind; meant for coroutines and generators).
        offset: a byte offset into ``code.co_code`` (``PyFrame_GetLasti``'s).

    Returns:
        True only when every path from the statement reaches the end of the block
        without an instruction that could suspend; False otherwise, and for any
        offset that is not a ``BEFORE_WITH`` or any bytecode this walk cannot read.
        Never raises. The first question about a code object answers for all its
        ``with`` statements at once (a few ms for a long function); the answers are
        kept for at most 4096 code objects.
    """
    answers = _cache.get(code)
    if answers is None:
        try:
            answers = _answers(code)
        except Exception:  # noqa: BLE001 - any doubt: the ContextVar path
            answers = {}
        if len(_cache) >= _MAX_CODES:
            _cache.clear()
        _cache[code] = answers
    return answers.get(offset, False)


def _answers(code: types.CodeType) -> dict[int, bool]:
    """``{offset of each BEFORE_WITH: the answer}`` for ``code`` (may raise on
    bytecode it cannot read)."""
    bytecode = dis.Bytecode(code)
    instructions = list(bytecode)
    index = {ins.offset: i for i, ins in enumerate(instructions)}
    handlers = {}
    for e in bytecode.exception_entries:
        for ins in instructions[index[e.start] : index.get(e.end, len(instructions))]:
            handlers.setdefault(ins.offset, e)  # entries do not overlap
    answers = {}
    for i, ins in enumerate(instructions):
        if ins.opname == "BEFORE_WITH":
            try:
                answers[ins.offset] = _walk(instructions, index, handlers, i)
            except (IndexError, KeyError, ValueError):
                answers[ins.offset] = False
    return answers


def _walk(
    instructions: list[dis.Instruction], index: dict[int, int], handlers: dict[int, Any], start: int
) -> bool:
    """The walk of the module doc from the ``BEFORE_WITH`` at ``instructions[start]``
    (``index``: offset → position; ``handlers``: offset → exception table entry)."""
    after = instructions[start + 1].offset
    # The block's own handler covers the instruction after BEFORE_WITH and keeps its
    # __exit__ (at index `base`) on the stack: its depth is base + 1.
    own = handlers.get(after)
    if own is None or not _is_with_cleanup(instructions, index, own.target):
        return False
    base = own.depth - 1
    todo = [(after, base + 2)]  # BEFORE_WITH left __exit__ and __enter__'s result
    seen = set(todo)
    while todo:
        at, depth = todo.pop()
        if len(seen) > _MAX_STATES:
            return False
        ins = instructions[index[at]]
        if ins.opname in _SUSPENDING:
            return False
        nexts = []
        entry = handlers.get(at)
        if entry is not None and entry.depth > base:  # unwinding keeps __exit__
            nexts.append((entry.target, entry.depth + int(entry.lasti) + 1))
        arg = ins.arg if ins.opcode >= dis.HAVE_ARGUMENT else None
        if ins.opcode in _JUMPS:
            nexts.append((ins.argval, depth + dis.stack_effect(ins.opcode, arg, jump=True)))
            if ins.opname not in _NO_FALLTHROUGH:
                nexts.append(
                    (
                        instructions[index[at] + 1].offset,
                        depth + dis.stack_effect(ins.opcode, arg, jump=False),
                    )
                )
        elif ins.opname not in _NO_FALLTHROUGH:
            nexts.append(
                (instructions[index[at] + 1].offset, depth + dis.stack_effect(ins.opcode, arg))
            )
        for state in nexts:
            if state[0] not in index or state[1] < 0:
                return False
            if state[1] > base and state not in seen:  # else __exit__ is gone
                seen.add(state)
                todo.append(state)
    return True


def _is_with_cleanup(
    instructions: list[dis.Instruction], index: dict[int, int], target: int
) -> bool:
    """True when the handler at ``target`` is a with statement's: PUSH_EXC_INFO, then
    WITH_EXCEPT_START."""
    i = index.get(target)
    return (
        i is not None
        and i + 1 < len(instructions)
        and instructions[i].opname == "PUSH_EXC_INFO"
        and instructions[i + 1].opname == "WITH_EXCEPT_START"
    )
