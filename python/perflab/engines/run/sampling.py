"""Pieces every sampling mode of a worker process shares (normal and threads mode).

* :data:`MONITOR`: the per-sample clock cross-check of this process
  (:mod:`perflab.engines.integrity`), created at import so that its TSC
  calibration spans all the work done before sampling;
* :class:`GcMonitor`: counts garbage collections and their duration;
* :func:`allocations`: the allocation pass (totals, then tracemalloc), after timing;
* :func:`steal_ns`: the machine's CPU steal time;
* :func:`emit_done`: the event that ends a process's measurement.

This module imports only the standard library (and the clock monitor): workers
must start fast.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from perflab.engines.integrity import Monitor

_perf_ns = time.perf_counter_ns
#: The clock cross-check of every sample of this process.
MONITOR = Monitor()


class GcMonitor:
    """Counts garbage collections and their duration via ``gc.callbacks``.

    Attributes:
        count: collections completed so far.
        ns: time spent inside them so far, ns (``perf_counter_ns``).
    """

    def __init__(self) -> None:
        self.count = 0
        self.ns = 0
        self._start = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = _perf_ns()
        else:
            self.count += 1
            self.ns += _perf_ns() - self._start


def allocations(call: Callable[[], Any], calls: int = 3) -> dict[str, float | None]:
    """The allocation pass, after timing: what one call allocates, in total and at peak.

    Two passes, never overlapping (each puts back the allocator it found):

    * **totals** (:func:`allocated_totals`): every block and byte the call asked
      of Python's allocators, freed again or not — what BenchmarkDotNet's
      "Allocated" and pytest-memray count — from the native core's counting hook
      (``_core.alloc_count_*``, PEP 445); None when the core is not built;
    * **peak and live blocks** (tracemalloc): the peak traced memory growth during
      the call, and the blocks still allocated after it (the result, caches it
      fills); blocks allocated and freed inside the call are not seen here.

    Each is net of the same reading around an empty call: reading the counters
    makes objects of its own (the ints and the tuple ``get_traced_memory`` and
    ``getallocatedblocks`` return, 28–84 B), which once showed as "28 B" for
    ``return 1 + 1``. Medians of ``calls`` calls. Run after timing so that neither
    hook (tracemalloc slows allocation several-fold) touches a timed sample.

    Returns:
        ``peak_bytes`` and ``blocks`` (live blocks left), and ``total_bytes`` and
        ``total_blocks`` (allocated in all; None without the native core), per call.

    Raises:
        Whatever ``call`` raises.
    """
    total_bytes, total_blocks = allocated_totals(call, calls)
    tracemalloc.start()
    try:
        floor_peak, floor_blocks = _traced_growth(lambda: None, calls)
        peak, blocks = _traced_growth(call, calls)
    finally:
        tracemalloc.stop()
    return {
        "peak_bytes": max(0.0, peak - floor_peak),
        "blocks": max(0.0, blocks - floor_blocks),
        "total_bytes": total_bytes,
        "total_blocks": total_blocks,
    }


def allocated_totals(call: Callable[[], Any], calls: int = 3) -> tuple[float | None, float | None]:
    """(bytes, blocks) one call asks of Python's allocators in all, net of an empty
    call; medians of ``calls`` calls; (None, None) without the native core (or while
    tracemalloc traces). Raises whatever ``call`` raises."""
    from perflab.engines.integrity import load_core

    core = load_core()
    if core is None or not hasattr(core, "alloc_count_start") or tracemalloc.is_tracing():
        return None, None
    core.alloc_count_start()
    try:
        floor = _counted(core, lambda: None, calls)
        used = _counted(core, call, calls)
    finally:
        core.alloc_count_stop()
    return max(0.0, used[0] - floor[0]), max(0.0, used[1] - floor[1])


def _counted(core: Any, call: Callable[[], Any], calls: int) -> tuple[float, float]:
    """Median (bytes, blocks) allocated by ``calls`` calls, while the core counts."""
    nbytes, blocks = [], []
    for _ in range(calls):
        gc.collect()
        b0, y0 = core.alloc_count_read()
        result = call()
        b1, y1 = core.alloc_count_read()
        del result
        nbytes.append(y1 - y0)
        blocks.append(b1 - b0)
    return float(sorted(nbytes)[calls // 2]), float(sorted(blocks)[calls // 2])


def _traced_growth(call: Callable[[], Any], calls: int) -> tuple[float, float]:
    """Median (peak traced bytes growth, allocated blocks growth) of ``calls`` calls, under
    a running tracemalloc. Raises whatever ``call`` raises."""
    peaks, blocks = [], []
    for _ in range(calls):
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        before = sys.getallocatedblocks()
        result = call()
        blocks.append(sys.getallocatedblocks() - before)
        peaks.append(tracemalloc.get_traced_memory()[1] - base)
        del result
    return float(sorted(peaks)[calls // 2]), float(sorted(blocks)[calls // 2])


def steal_ns() -> int | None:
    """Machine-wide CPU steal time so far, ns, from /proc/stat (None if unavailable)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def emit_done(
    emit: Callable[..., None], steal0: int | None, span: tuple[int | None, str | None]
) -> None:
    """Emit the ``done`` event: involuntary context switches, machine steal time since
    ``steal0`` (ns), and the clock cross-check over the whole sampling phase (``span``:
    skew ns and flag, from :meth:`perflab.engines.integrity.Monitor.span`)."""
    steal1 = steal_ns()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    emit(
        "done",
        involuntary_switches=usage.ru_nivcsw,
        steal_ns=None if steal0 is None or steal1 is None else steal1 - steal0,
        clock_skew=span[0],
        clock_flag=span[1],
    )


def spans_per_call(call: Callable[[], Any], calls: int = 1) -> dict[str, float]:
    """The span pass, after timing: how many ``perflab.trace`` spans of each name one
    call runs (the N+1 check: a name repeated once per row), from the recorder's counts
    before and after ``calls`` untimed calls; {} when the benchmark's code imported no
    ``perflab.trace`` or recorded no span. Keys are ``"NAME spans"``.

    Raises:
        Whatever ``call`` raises.
    """
    import sys

    trace = sys.modules.get("perflab.trace")
    if trace is None or not trace.enabled():
        return {}
    before = {name: entry["count"] for name, entry in trace.snapshot().items()}
    for _ in range(calls):
        call()
    after = {name: entry["count"] for name, entry in trace.snapshot().items()}
    return {
        f"{name} spans": (count - before.get(name, 0)) / calls
        for name, count in sorted(after.items())
        if count > before.get(name, 0)
    }
