"""A traced async recursion never overflows the C stack (CPython 3.11 resumes each awaited
coroutine on it, and a traced coroutine adds a level): the native ``Resume`` goes on in a
new stack segment near its end. Checked in a child process, which would die of SIGSEGV."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = """
import asyncio, sys, threading
import perflab, perflab.trace
sys.setrecursionlimit(200_000)
depth, stack = int(sys.argv[1]), int(sys.argv[2])

@perflab.trace
async def traced(k):
    return 0 if k == 0 else 1 + await traced(k - 1)

def main():
    try:
        print(asyncio.run(traced(depth)))
    except RecursionError:
        print("RecursionError")

if stack:
    threading.stack_size(stack)
    t = threading.Thread(target=main)
    t.start()
    t.join()
else:
    main()
"""


@pytest.mark.parametrize(
    ("depth", "stack", "printed"),
    [
        (50, 0, "50"),
        (20_000, 0, "20000"),  # was: SIGSEGV (plain asyncio runs to about 20,000)
        (3_000, 1 << 20, "3000"),  # a thread with a 1 MiB stack
    ],
)
def test_a_traced_await_chain_never_overflows_the_c_stack(
    depth: int, stack: int, printed: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(depth), str(stack)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.strip() == printed
