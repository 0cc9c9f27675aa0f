"""Contention: a shared stack and a producer/consumer hand-off under 1–12 threads.

perflab's threads mode calls each benchmark from N threads at once for a
fixed time per process and reports total throughput, per-op latency,
fairness between threads and CPU time beside wall time (JMH @Threads style).

Group "stack": every call pushes one item on a shared stack and pops one.
    lock        a list guarded by threading.Lock (waiters sleep in the kernel)
    deque       collections.deque append/pop, atomic without a lock
    lifoqueue   queue.LifoQueue put/get (a lock plus condition variables)
    spin        a list guarded by a spin-on-flag lock: waiters loop on a
                non-blocking acquire, burning CPU (and, under the GIL, the
                interpreter) until the flag is free

Group "handoff": every call waits 200 µs (a stand-in for I/O) and hands one
item to a consumer thread started by the setup.
    blocking    the consumer sleeps in queue.Queue.get while there is no work
    spinning    the consumer polls a deque in a loop: it burns a core while
                idle, which shows in CPU/wall, and under the GIL it delays
                every producer that wakes up

A short run (about two minutes on two cores):

    perflab run examples/contention.py --min-processes 3 --max-processes 3 \\
        --process-time 50ms --json contention.json
    perflab fit contention.json --model usl --series lock --chart usl.png
"""

from __future__ import annotations

import collections
import queue
import threading
import time

import perflab

STACK_THREADS = [1, 2, 4, 8, 12]
HANDOFF_THREADS = [1, 2, 4, 8]
IO_WAIT_S = 200e-6


class SpinLock:
    """A lock whose waiters spin on a flag (a non-blocking acquire) instead of sleeping."""

    def __init__(self) -> None:
        self._flag = threading.Lock()

    def __enter__(self) -> None:
        while not self._flag.acquire(blocking=False):
            pass

    def __exit__(self, *exc: object) -> None:
        self._flag.release()


def _guarded_stack(guard):
    """(stack, guard) for the push-pop benchmarks; setup runs once per process."""
    return [], guard


def push_pop(state):
    """Push one item and pop one, each under the guard (two acquisitions per call)."""
    stack, guard = state
    with guard:
        stack.append(1)
    with guard:
        stack.pop()


perflab.bench(
    push_pop,
    name="lock",
    group="stack",
    threads=STACK_THREADS,
    baseline=True,
    setup=lambda: _guarded_stack(threading.Lock()),
)
perflab.bench(
    push_pop,
    name="spin",
    group="stack",
    threads=STACK_THREADS,
    setup=lambda: _guarded_stack(SpinLock()),
)


@perflab.bench(group="stack", threads=STACK_THREADS, setup=lambda: collections.deque())
def deque(stack):
    stack.append(1)
    stack.pop()


@perflab.bench(group="stack", threads=STACK_THREADS, setup=lambda: queue.LifoQueue())
def lifoqueue(stack):
    stack.put(1)
    stack.get()


def _blocking_consumer() -> queue.Queue:
    """A daemon consumer that sleeps in get() until an item arrives."""
    inbox: queue.Queue = queue.Queue()

    def consume() -> None:
        while True:
            inbox.get()

    threading.Thread(target=consume, daemon=True, name="consumer").start()
    return inbox


def _spinning_consumer() -> collections.deque:
    """A daemon consumer that polls a deque in a tight loop, idle or not."""
    inbox: collections.deque = collections.deque()

    def consume() -> None:
        while True:
            if inbox:
                inbox.popleft()

    threading.Thread(target=consume, daemon=True, name="consumer").start()
    return inbox


@perflab.bench(group="handoff", threads=HANDOFF_THREADS, baseline=True, setup=_blocking_consumer)
def blocking(inbox):
    time.sleep(IO_WAIT_S)
    inbox.put(1)


@perflab.bench(group="handoff", threads=HANDOFF_THREADS, setup=_spinning_consumer)
def spinning(inbox):
    time.sleep(IO_WAIT_S)
    inbox.append(1)
