"""The Python heap over calls: ``perflab run --memory``'s heap pass, in the worker.

After the timed samples (and the allocation pass of :mod:`perflab.engines.run.sampling`),
a worker run with ``--memory`` calls the benchmark again under :mod:`tracemalloc`
for a short while and reads the traced memory (``tracemalloc.get_traced_memory``:
the bytes of every block Python allocated since tracing started and still holds, and
the peak since the last reading) as calls go by. RSS moves in pages and allocator
steps, so a leak of a few hundred bytes per call needs thousands of calls to show in
it; tracemalloc counts bytes, so the same leak shows after a few calls, as memray's
and tracemalloc's snapshot diffs show it (but as a rate per call, with no snapshot).

What it sees and what it does not: allocations made through Python's allocators
(objects, buffers of bytes/bytearray/list/dict…, and C extensions that use
``PyMem_*``); not memory a C library takes with ``malloc`` directly (numpy's data
buffers are traced; most C libraries' own heaps are not), which RSS still shows.
Tracing slows allocation several-fold, which is why this runs after timing and never
inside a timed sample.

Memory that existed before tracing started is untraced, and tracemalloc counts a
resized block as a new one: when a dict, list or buffer made before the pass grows (or
is rebuilt) under tracing, its whole new block is counted at once, and the old one is
never subtracted. The pass therefore calls the benchmark under tracing for a while
before its baseline (a warmup of :data:`WARMUP_SHARE` of the time after it, at least one call),
so that structures the benchmark resizes again and again are traced by then; a container
that keeps growing (a leak) can still show one such step, which makes the leak read
larger than the bytes each call adds: the figure is exact for what calls keep, a
leak's rate an upper estimate.

The readings are kept in preallocated ``array`` buffers so that recording them
allocates nothing that would be traced; when the buffers fill, every other point is
dropped (the peak of each dropped interval is folded into its neighbour) and readings
are taken half as often, so a pass of any length keeps between :data:`POINTS` and
2 × :data:`POINTS` points spread over all its calls.

This module imports only the standard library: workers must start fast.
"""

from __future__ import annotations

import array
import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

#: points kept per pass: between this and twice this, plus the last
POINTS = 64
#: calls after the baseline a pass makes at least (growth needs two readings)
MIN_CALLS = 2
#: calls a pass makes at most
MAX_CALLS = 1_000_000
#: the pass's calls after the baseline take this share of the process's sampling time
#: (``--process-time``) ...
SHARE = 0.5
#: ... and at least this long, s (on a busy machine 10 ms may hold only a few calls)
MIN_SECONDS = 0.02
#: the traced warmup before the baseline lasts this share of the time after it
WARMUP_SHARE = 0.5
#: "no peak carried over from a thinned interval" (below any traced difference)
_NO_PEAK = -(1 << 62)
#: the pass's counters, kept in an ``array`` (ints kept in variables would be traced
#: objects alive at the last reading but not at the baseline): calls made, readings
#: kept, calls between readings, the peak of a thinned-away interval not yet folded into
#: a reading, the baseline's traced bytes, its clock, and the deadline (ns)
_STATE = _N, _KEPT, _STRIDE, _CARRY, _BASE, _T0, _DEADLINE = range(7)


def pass_seconds(sample_seconds: float) -> float:
    """How long a heap pass calls after its baseline, s, for a process that sampled for
    ``sample_seconds``: :data:`SHARE` of it, at least :data:`MIN_SECONDS`."""
    return max(sample_seconds * SHARE, MIN_SECONDS)


def heap_timeline(
    call: Callable[[], Any],
    seconds: float,
    max_calls: int = MAX_CALLS,
    points: int = POINTS,
    warmup_share: float = WARMUP_SHARE,
) -> dict[str, list[float]]:
    """Traced Python memory over calls of ``call``, relative to a baseline.

    Calls are made under tracing for ``seconds × warmup_share`` first, at least one (a
    lazily built cache or import is not growth; see the module for why), then a full
    garbage collection and the baseline reading; then calls for ``seconds`` (at least
    :data:`MIN_CALLS`, at most ``max_calls``), reading the traced memory every
    ``stride`` calls (1, doubling whenever ``2 × points`` readings are kept); last, a
    full collection and a final reading, so that the first and last points both count
    only what survives a collection (the growth).

    Args:
        call: the benchmark bound to its arguments (zero-argument).
        seconds: how long the pass calls after its baseline, s (the minimum count of
            calls is made however long it takes; the collections are not counted).
        max_calls: most calls after the baseline.
        points: the buffers hold ``2 × points`` readings.
        warmup_share: the share of ``seconds`` called before the baseline.

    Returns:
        ``{"calls": [...], "t_s": [...], "traced_bytes": [...], "peak_bytes": [...]}``:
        per reading, the calls made since the baseline, seconds since the baseline, the
        traced bytes minus the baseline's, and the highest traced bytes (minus the
        baseline's) since the reading before. The first reading is (0, 0, 0, 0). The
        readings between the first and the last also count garbage not yet collected and
        objects parked in the interpreter's free lists (a full collection empties them):
        a call that keeps nothing reads 0 at both ends and up to ~1 kB between.

    Raises:
        Whatever ``call`` raises (tracing is stopped first).
    """
    size = 2 * points
    calls_at, t_ns, traced, peaks = (array.array("q", bytes(8 * size)) for _ in range(4))
    st = array.array("q", bytes(8 * len(_STATE)))  # the pass's counters: see _STATE
    st[_KEPT], st[_STRIDE], st[_CARRY] = 1, 1, _NO_PEAK
    clock = time.perf_counter_ns
    tracemalloc.start()
    try:
        warm_until = clock() + int(seconds * warmup_share * 1e9)
        while True:  # traced warmup: at least one call
            result = call()
            del result
            if clock() >= warm_until:
                break
        del warm_until
        gc.collect()
        st[_BASE] = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        st[_T0] = clock()
        st[_DEADLINE] = st[_T0] + int(seconds * 1e9)
        while st[_N] < max_calls and (st[_N] < MIN_CALLS or clock() < st[_DEADLINE]):
            result = call()
            del result
            st[_N] += 1
            if st[_N] % st[_STRIDE] == 0:
                _read(st, size, calls_at, t_ns, traced, peaks, clock)
        gc.collect()
        end_traced, end_peak = tracemalloc.get_traced_memory()
        t_end = clock() - st[_T0]
    finally:
        tracemalloc.stop()
    kept, n, base = st[_KEPT], st[_N], st[_BASE]
    last_peak = max(end_peak - base, end_traced - base, st[_CARRY])
    if calls_at[kept - 1] == n:  # the last call was read: the collected reading replaces it
        kept -= 1
        last_peak = max(last_peak, peaks[kept])
    return {
        "calls": [*calls_at[:kept], n],
        "t_s": [round(t / 1e9, 6) for t in t_ns[:kept]] + [round(t_end / 1e9, 6)],
        "traced_bytes": [*traced[:kept], end_traced - base],
        "peak_bytes": [*peaks[:kept], last_peak],
    }


def _read(
    st: array.array[int],
    size: int,
    calls_at: array.array[int],
    t_ns: array.array[int],
    traced: array.array[int],
    peaks: array.array[int],
    clock: Callable[[], int],
) -> None:
    """Keep one reading of the traced memory (thinning the buffers first when full, after
    which it may wait for the next call at the doubled stride). Every value goes straight
    into the arrays: no int made here outlives the call, so the readings count only what
    the benchmark keeps."""
    if st[_KEPT] == size:  # thin: keep every other point, each with its pair's peak
        points = size // 2
        for i in range(1, points):
            calls_at[i], t_ns[i], traced[i] = calls_at[2 * i], t_ns[2 * i], traced[2 * i]
            peaks[i] = max(peaks[2 * i - 1], peaks[2 * i])
        st[_KEPT], st[_CARRY] = points, peaks[size - 1]
        st[_STRIDE] *= 2
        if st[_N] % st[_STRIDE]:
            return
    k = st[_KEPT]
    traced[k], peaks[k] = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    calls_at[k], t_ns[k] = st[_N], clock() - st[_T0]
    traced[k] -= st[_BASE]
    peaks[k] = max(peaks[k] - st[_BASE], st[_CARRY])
    st[_KEPT], st[_CARRY] = k + 1, _NO_PEAK
