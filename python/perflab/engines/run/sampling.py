"""Pieces every sampling mode of a worker process shares (normal and threads mode).

* :data:`MONITOR`: the per-sample clock cross-check of this process
  (:mod:`perflab.engines.integrity`), created at import so that its TSC
  calibration spans all the work done before sampling;
* :class:`GcMonitor`: counts garbage collections and their duration;
* :func:`empty_like`: an empty function with a benchmark's signature (what the
  loop costs around it);
* :func:`allocations`: the tracemalloc pass, after timing;
* :func:`steal_ns`: the machine's CPU steal time;
* :func:`emit_done`: the event that ends a process's measurement.

This module imports only the standard library (and the clock monitor): workers
must start fast.
"""

from __future__ import annotations

import gc
import inspect
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


def _empty(*args: Any, **kwargs: Any) -> None:
    """The empty callable whose cost is the harness loop's own overhead."""


def empty_like(func: Callable[..., Any]) -> Callable[..., Any]:
    """An empty function with ``func``'s parameter list (defaults become None).

    Calling it costs what calling ``func`` costs before its body runs, so the
    loop overhead is measured with the same argument binding as the benchmark
    (BenchmarkDotNet's "overhead" method follows the same idea). A callable
    without a readable signature (some builtins) gets ``(*args, **kwargs)``.
    """
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return _empty
    params = list(sig.parameters.values())
    parts, star_seen = [], False
    for i, p in enumerate(params):
        if p.kind is p.VAR_POSITIONAL:
            parts.append(f"*{p.name}")
            star_seen = True
        elif p.kind is p.VAR_KEYWORD:
            parts.append(f"**{p.name}")
        else:
            if p.kind is p.KEYWORD_ONLY and not star_seen:
                parts.append("*")
                star_seen = True
            parts.append(p.name + ("=None" if p.default is not p.empty else ""))
            if p.kind is p.POSITIONAL_ONLY and all(
                q.kind is not q.POSITIONAL_ONLY for q in params[i + 1 :]
            ):
                parts.append("/")
    namespace: dict[str, Any] = {}
    exec(f"def _empty_like({', '.join(parts)}):\n    pass", namespace)  # noqa: S102
    return namespace["_empty_like"]


def allocations(call: Callable[[], Any], calls: int = 3) -> tuple[float, float]:
    """tracemalloc pass: (peak traced bytes growth per call, live blocks left per call).

    Run after timing so tracing (which slows allocation several-fold) never
    touches a timed sample. Blocks count what survives the call (including the
    result); blocks allocated and freed inside the call are not countable
    with tracemalloc. Both are net of the same reading around an empty call:
    reading the counters makes objects of its own (the ints and the tuple that
    ``get_traced_memory`` and ``getallocatedblocks`` return, 28–84 B), which
    once showed as "28 B" for ``return 1 + 1`` (folded to the constant 2, a
    preallocated small int: it allocates nothing). Medians of ``calls`` calls.
    Raises whatever ``call`` raises.
    """
    tracemalloc.start()
    try:
        floor_peak, floor_blocks = _traced_growth(lambda: None, calls)
        peak, blocks = _traced_growth(call, calls)
    finally:
        tracemalloc.stop()
    return max(0.0, peak - floor_peak), max(0.0, blocks - floor_blocks)


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
