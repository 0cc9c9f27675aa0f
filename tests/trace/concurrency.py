"""What the perflab.trace tests run spans under: a busy wait, threads, and asyncio
tasks interleaved at their awaits."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any


def busy(seconds: float) -> None:
    """Spin (no sleep: its wake-up would add scheduler noise to the self time)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def in_threads(work: Callable[[], object], threads: int = 4) -> None:
    """Run ``work`` in ``threads`` threads at once; return when all have ended."""
    started = [threading.Thread(target=work) for _ in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join()


def interleaved(task: Callable[[], Coroutine[Any, Any, object]], tasks: int = 3) -> None:
    """Run ``tasks`` copies of ``task()`` as asyncio tasks of one new event loop (their
    awaits interleave them), at most 30 s."""

    async def main() -> None:
        await asyncio.wait_for(asyncio.gather(*(task() for _ in range(tasks))), 30)

    asyncio.run(main())
