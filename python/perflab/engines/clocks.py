"""Timer figures the harness calibrates against: read cost and resolution.

The native read cost comes from the Rust core (``perflab._core``), measured
in a tight loop as clockperf does; the Python-level cost of
``time.perf_counter_ns()`` is measured here, because that is the call that
brackets every sample. What the figures allow (the timer-error rule) is
:mod:`perflab.analyze.timer`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from perflab.analyze.timer import TimerInfo


def _loop_ns(func: Callable[..., Any] | None, arg: Any, loop: range) -> int:
    """Wall ns of one loop calling ``func()`` / ``func(arg)``, or of the bare loop (None)."""
    clock = time.perf_counter_ns
    t0 = clock()
    if func is None:
        for _ in loop:
            pass
    elif arg is None:
        for _ in loop:
            func()
    else:
        for _ in loop:
            func(arg)
    return clock() - t0


def python_call_cost_ns(
    func: Callable[..., Any], arg: Any = None, calls: int = 200_000, repeat: int = 5
) -> float:
    """Cost of one call from Python: the fastest of ``repeat`` loops minus the fastest bare
    loop, per call (timeit's best-of-N, so a preemption during one loop doesn't count).
    O(calls).

    Args:
        func: what to call, e.g. ``time.perf_counter_ns`` or ``time.clock_gettime_ns``.
        arg: its one argument (e.g. a clock id), or None to call it without one.
        calls: calls in all, split over the ``repeat`` loops.
        repeat: loops (each followed by a bare loop of the same length).

    Returns:
        ns per call (≥ 0).
    """
    loop = range(max(calls // repeat, 1))
    rounds = [(_loop_ns(func, arg, loop), _loop_ns(None, None, loop)) for _ in range(repeat)]
    return max(min(w for w, _ in rounds) - min(b for _, b in rounds), 0) / len(loop)


def python_read_cost_ns(reads: int = 200_000) -> float:
    """Mean ns per ``time.perf_counter_ns()`` call from Python, minus the bare loop. O(reads)."""
    return python_call_cost_ns(time.perf_counter_ns, calls=reads)


def measure_timer() -> TimerInfo:
    """Measure the timer figures once (about 20 ms). Falls back to Python-only figures
    when the native core is not built (e.g. a source checkout without maturin)."""
    native_cost, resolution = None, None
    try:
        from perflab import _core

        native_cost = _core.clock_read_cost_ns("monotonic", 200_000)
        res = _core.clock_resolution("monotonic", 200_000)
        resolution = float(res[0]) if res else None
    except ImportError:
        pass
    if resolution is None:
        resolution = time.get_clock_info("perf_counter").resolution * 1e9
    return TimerInfo("monotonic", native_cost, python_read_cost_ns(), resolution)
