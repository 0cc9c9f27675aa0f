"""The deep-recursion program of the battery's crash cases (tests/reliability/hostile.py)
and of tests/trace/test_deep_recursion.py."""

#: A program recursing (untraced with ``plain``) through ``perflab.trace`` under a raised recursion limit:
#: ``deep.py MODE DEPTH`` exits 0 having printed the depth (or ``RecursionError``, what
#: plain Python raises past the limit) and the dropped count; it segfaulted (139).
DEEP_PROGRAM = """
import asyncio, contextvars, sys
import perflab, perflab.trace
sys.setrecursionlimit(100_000)
mode, depth = sys.argv[1], int(sys.argv[2])

def plain(k):
    return 0 if k == 0 else 1 + plain(k - 1)

@perflab.trace
def traced(k):
    return 0 if k == 0 else 1 + traced(k - 1)

@perflab.trace
def method_like(k, *, step=1):
    return 0 if k <= 0 else 1 + method_like(k - step, step=step)

@perflab.trace
async def awaits(k):
    return 0 if k == 0 else 1 + await awaits(k - 1)

def blocks(k):
    if k == 0:
        return 0
    with perflab.span("block"):
        return 1 + blocks(k - 1)

def by_hand(k):
    s = perflab.span("by hand")
    for _ in range(k):
        s.__enter__()
    return k

try:
    if mode == "by_hand":
        print(contextvars.copy_context().run(by_hand, depth))
    elif mode == "async":
        print(asyncio.run(awaits(depth)))
    else:
        print({"plain": plain, "traced": traced, "kwargs": method_like, "blocks": blocks}[mode](depth))
except RecursionError:
    print("RecursionError")
print(perflab.trace.dropped()[1])
"""
