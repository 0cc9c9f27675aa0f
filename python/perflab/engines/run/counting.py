"""The counted sequence of a worker process: instructions instead of seconds.

Run inside a process started under Callgrind with instrumentation off
(:func:`perflab.engines.callgrind.valgrind_command`), by
:func:`perflab.engines.run.worker.measure_call` when the plan says ``count``. Valgrind
client requests from perflab's Rust core (``perflab._core``: start/stop
instrumentation, zero and dump the counters; no-ops outside Valgrind) bracket exactly
the measured calls, so interpreter start-up, imports and setup are never counted:

1. the first call, counted alone: the **cold** count (imports, caches, the adaptive
   interpreter's specialization: first-call costs, reported apart);
2. uncounted warm-up calls (instrumentation off) for samples of the calls the cold
   count gives (enough calls for :data:`TARGET_IR_PER_SAMPLE` instructions, rounded
   down to 1-2-5 steps so that a count a few instructions off does not change it);
3. a first counted sample of that many calls, which chooses the calls per sample ``n``
   the same way from its warm count; when ``n`` is the cold count's, it is kept as the
   first sample (no separate calibration call: under Callgrind each counted call of a
   10 ms benchmark costs about half a second), else more warm-up for ``n`` follows;
4. ``samples`` counted samples of ``n`` back-to-back calls in all, each its own dump,
   each after an uncounted full collection (:func:`counted_loop`: the automatic
   collections then fall at the same calls in every sample);
5. ``empty_samples`` counted samples of ``n`` calls of an empty callable of the same
   shape, through the same loop and the same bracket: their count is the **fixed
   cost** (loop, call and client-request overhead) that is subtracted per op.

Each dump carries a reason (``perflab:cold``, ``perflab:sample:3``,
``perflab:empty:0``); the parent reads the totals from Callgrind's files.

Each counted sample starts from the same interpreter state as far as it can be reset
without instructions in the sample: a full collection, then CPython's type attribute
cache emptied (``sys._clear_type_cache()``, :data:`CLEAR_TYPE_CACHE`), both outside the
bracket. What the cache held before (the warm-up's, the empty callable's, perflab's own
lookups) then never decides which lookups of the sample hit it. A hand count that does
the same before each counted call reproduces perflab's figure (docs/count.md).

This module imports only the standard library modules a counted worker needs before its
samples (:mod:`perflab.engines.run.counted_worker`: no :mod:`re`, no dataclasses, no
parsing of Callgrind's files beyond the header of its own dump).
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
import os
import sys
from collections.abc import Callable
from typing import Any

#: the prefix of perflab's dump reasons (the same as
#: :data:`perflab.engines.callgrind.DUMP_PREFIX`, which a test checks; not imported from
#: there, which loads re, subprocess and dataclasses, before the samples)
DUMP_PREFIX = "perflab:"
#: empty CPython's type attribute cache before each counted sample (uncounted): the
#: sample's lookups then hit or miss by what the sample itself looked up, not by what
#: the process did before (module doc)
CLEAR_TYPE_CACHE = hasattr(sys, "_clear_type_cache")
#: bytes of a dump file read for its header (reason, events, summary: the first ~20 lines)
HEADER_BYTES = 8192

#: instructions one sample aims for (about 3–10 ms of Python on the real CPU, a second
#: or less under Callgrind): enough calls that a per-call wobble (a collection, a
#: resize) averages out, few enough that a slow call is counted once per sample
TARGET_IR_PER_SAMPLE = 20_000_000
#: most calls one sample makes
MAX_CALLS_PER_SAMPLE = 1_000_000
#: uncounted warm-up calls before the counted samples (at least; also ≥ 2 samples' worth
#: of calls, up to WARMUP_MAX_CALLS)
WARMUP_MIN_CALLS = 10
WARMUP_MAX_CALLS = 100_000


class NotUnderValgrind(RuntimeError):
    """The counted sequence ran outside Valgrind: there is nothing to count with."""


def _core() -> Any:
    """perflab's native core (its client requests)."""
    from perflab import _core

    return _core


def calls_for(ir_per_call: float, target: float = TARGET_IR_PER_SAMPLE) -> int:
    """Calls per sample for ``target`` instructions, rounded down to 1, 2, 5, 10, 20, …

    Args:
        ir_per_call: instructions of one warm call (> 0; ≤ 0 is treated as 1).
        target: instructions one sample aims for.

    Returns:
        n in [1, :data:`MAX_CALLS_PER_SAMPLE`].
    """
    raw = target / max(ir_per_call, 1.0)
    if raw < 1:
        return 1
    decade = 10 ** math.floor(math.log10(raw))
    step = max(s for s in (1, 2, 5) if s * decade <= raw)
    return int(min(step * decade, MAX_CALLS_PER_SAMPLE))


def counted_loop(call: Callable[[], Any], n: int, reason: str) -> None:
    """``n`` back-to-back calls of ``call`` between a zeroing and a dump of Callgrind's
    counters (the dump's reason is ``perflab:<reason>``). The same loop, bracket for
    bracket, counts the benchmark and the empty callable, so their difference is the
    benchmark's own instructions.

    A full collection runs first, outside the bracket: it sets the collector's
    allocation counts to zero, so the automatic collections inside the sample fall at
    the same calls in every sample and every process. Without it they fall wherever
    the allocations made before the sample left the counts (the worker's own event
    lines, its pid-named files), and a sample holds one collection more or less (the
    suspected cause of an allocation-heavy JSON round trip moving 0.055% between runs).
    Then, with :data:`CLEAR_TYPE_CACHE`, the type attribute cache is emptied, also
    outside the bracket (module doc)."""
    core = _core()
    loop = itertools.repeat(None, n)
    zero, dump = core.callgrind_zero_stats, core.callgrind_dump_stats
    label = DUMP_PREFIX + reason
    gc.collect()
    if CLEAR_TYPE_CACHE:
        sys._clear_type_cache()
    zero()
    for _ in loop:
        call()
    dump(label)


def header_ir(header: bytes, reason: str) -> int | None:
    """Ir of a Callgrind file whose header (its first bytes: ``desc: Trigger:``,
    ``events:``, ``summary:`` lines) says it is perflab's dump ``reason``, else None.

    The parent reads whole files with :func:`perflab.engines.callgrind.parse_dump`; a
    counted worker reads only its own dumps' headers, before its samples, with as few
    allocations as it can (module doc)."""
    lines = header.split(b"\n")
    trigger = b"desc: Trigger: Client Request: " + (DUMP_PREFIX + reason).encode()
    if trigger not in lines:
        return None
    names = next((ln.split()[1:] for ln in lines if ln.startswith(b"events:")), [])
    values = next((ln.split()[1:] for ln in lines if ln.startswith(b"summary:")), [])
    if b"Ir" not in names or len(values) <= names.index(b"Ir"):
        return None
    return int(values[names.index(b"Ir")])


def _own_dump_ir(out_dir: str, reason: str, part: int) -> int | None:
    """Ir of this process's dump named ``reason``, the ``part``-th it made (Callgrind
    numbers them from 1), read back from the header of Callgrind's file
    (``callgrind.out.<pid>.<part>``, written synchronously at the dump), or None when it
    is not there. The file is opened by its name, not found by listing the folder: the
    listing's order (by the names, i.e. the pid) would change which files are read, and
    so what the process allocates, before its samples."""
    name = os.path.join(out_dir, f"callgrind.out.{os.getpid()}.{part}")
    try:
        with open(name, "rb") as handle:
            return header_ir(handle.read(HEADER_BYTES), reason)
    except OSError:
        return None


def _warm_up(call: Callable[[], Any], empty: Callable[[], Any], n: int, done: int) -> int:
    """Uncounted warm-up calls for samples of ``n`` calls: up to
    max(:data:`WARMUP_MIN_CALLS`, 2n) calls in all (at most :data:`WARMUP_MAX_CALLS`, or
    n), ``done`` of them made before; and ``n`` calls of the empty callable (its own
    first calls). Returns the warm-up calls made in all."""
    warm = min(max(WARMUP_MIN_CALLS, 2 * n), max(WARMUP_MAX_CALLS, n))
    for _ in itertools.repeat(None, max(0, warm - done)):
        call()
    for _ in itertools.repeat(None, n):
        empty()
    return max(warm, done)


def count_call(
    call: Callable[[], Any],
    empty: Callable[[], Any],
    plan: dict[str, Any],
    emit: Callable[..., None],
) -> None:
    """The counted sequence (module doc) for ``call``, its first call included.

    Args:
        call: the benchmark bound to its arguments (zero-argument).
        empty: an empty callable of the same shape, bound the same way.
        plan: ``count`` (a dict: ``dir``, the folder Callgrind writes into;
            ``samples``; ``empty_samples``; ``iterations``, calls per sample or None
            to choose), and the run's ``iterations`` (used when set).
        emit: the worker's event sink. Events: ``count_start`` (valgrind nesting
            level, the GC state, PYTHONHASHSEED, ``type_cache_cleared``), ``cold`` (ns=None, metrics),
            ``calibrated``, ``warmup``, ``counted`` (calls per sample, samples and
            ``sample_reasons``, the dump reasons that hold them, empty samples,
            collections during the counted samples).

    Returns:
        The first call's result (for the benchmark's metrics).

    Raises:
        NotUnderValgrind: the process does not run under Valgrind.
    """
    core = _core()
    level = core.valgrind_running()
    if not level:
        raise NotUnderValgrind(
            "count mode runs its processes under valgrind --tool=callgrind; this one is not"
        )
    spec = plan["count"]
    emit(
        "count_start",
        valgrind=level,
        gc_enabled=gc.isenabled(),
        gc_threshold=list(gc.get_threshold()),
        hash_seed=os.environ.get("PYTHONHASHSEED"),
        type_cache_cleared=CLEAR_TYPE_CACHE,
    )
    core.callgrind_start_instrumentation()
    core.callgrind_zero_stats()
    result = call()
    core.callgrind_dump_stats(DUMP_PREFIX + "cold")
    core.callgrind_stop_instrumentation()
    n = spec.get("iterations") or plan.get("iterations")
    guess = n or calls_for(_own_dump_ir(spec["dir"], "cold", 1) or 1)
    warmed = _warm_up(call, empty, guess, 0)
    collections0 = sum(s["collections"] for s in gc.get_stats())
    core.callgrind_start_instrumentation()
    reasons: list[str] = []
    if not n:  # a first sample of the cold count's n, after the warm-up, calibrates
        counted_loop(call, guess, "calibrate")
        # read uncounted: functions entered while counting, still on the stack at the
        # next zeroing, would put their costs in the next dump's per-function totals
        core.callgrind_stop_instrumentation()
        n = calls_for((_own_dump_ir(spec["dir"], "calibrate", 2) or guess) / guess)
        if n == guess:  # it is a sample like the others: kept as the first
            reasons.append("calibrate")
        else:  # another n: warm up to it (uncounted) and count every sample anew
            warmed = _warm_up(call, empty, n, warmed)
            collections0 = sum(s["collections"] for s in gc.get_stats())
        core.callgrind_start_instrumentation()
    for i in range(spec["samples"] - len(reasons)):
        counted_loop(call, n, f"sample:{i}")
        reasons.append(f"sample:{i}")
    for i in range(spec["empty_samples"]):
        counted_loop(empty, n, f"empty:{i}")
    core.callgrind_stop_instrumentation()
    emit("calibrated", iterations=n)  # the events after the samples: none between them
    emit("warmup", samples=warmed, converged=True)
    emit(
        "counted",
        iterations=n,
        samples=len(reasons),
        sample_reasons=reasons,
        empty_samples=spec["empty_samples"],
        gc_collections=sum(s["collections"] for s in gc.get_stats()) - collections0,
    )
    return result


def count_function(
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    plan: dict[str, Any],
    emit: Callable[..., None],
    empty: Callable[..., Any] | None = None,
) -> Any:
    """:func:`count_call` of ``func(*args, **kwargs)``, with the empty callable of its
    shape (``empty``, or :func:`perflab.engines.run.empty.empty_like` of ``func``) bound
    to the same arguments. The one counted sequence of the counted worker
    (:mod:`perflab.engines.run.counted_worker`) and of the in-process harness
    (:func:`perflab.engines.run.worker.measure_call`).

    Returns:
        The first call's result.

    Raises:
        NotUnderValgrind: as :func:`count_call`; whatever ``func`` raises.
    """
    from perflab.engines.run.empty import empty_like

    call = functools.partial(func, *args, **kwargs) if (args or kwargs) else func
    empty_fn = empty or empty_like(func)
    empty_call = functools.partial(empty_fn, *args, **kwargs) if (args or kwargs) else empty_fn
    return count_call(call, empty_call, plan, emit)
