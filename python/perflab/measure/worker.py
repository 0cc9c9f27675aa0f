"""The worker: one fresh process measuring one benchmark case.

Started by :mod:`perflab.measure.runner` as ``python -m perflab.measure.worker``;
reads its plan as JSON on stdin and streams JSON-line events on a dedicated
pipe (fd given in the plan), so whatever the benchmark prints can't corrupt
the protocol and samples measured before a hang or crash are not lost.

Sequence in each process (pyperf and JMH use the same outline):
    import → setup (untimed) → first call (the cold time) → metrics →
    calibration (first process of a case only) → warmup until the timings stop
    drifting (bounded) → loop overhead with an empty callable → samples →
    allocation pass with tracemalloc (separate, after timing).

This module imports only the standard library so that start-up stays fast.
"""

from __future__ import annotations

import functools
import gc
import inspect
import itertools
import json
import os
import resource
import sys
import time
import traceback
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from perflab.measure import aio
from perflab.measure.integrity import Monitor

_perf_ns = time.perf_counter_ns
_cpu_ns = time.process_time_ns
#: The clock cross-check of every sample; created at import so that its TSC
#: calibration spans all the work done before sampling.
_MONITOR = Monitor()


class GcMonitor:
    """Counts garbage collections and their duration via ``gc.callbacks``."""

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


class Emitter:
    """Writes one JSON object per line to the event pipe."""

    def __init__(self, fd: int) -> None:
        self._out = os.fdopen(fd, "w", buffering=1)

    def __call__(self, event: str, **fields: Any) -> None:
        self._out.write(json.dumps({"event": event, **fields}) + "\n")


class PhaseError(Exception):
    """A benchmark raised during ``phase``; carries the original exception."""

    def __init__(self, phase: str, exc: BaseException) -> None:
        super().__init__(phase)
        self.phase = phase
        self.exc = exc


def _empty(*args: Any, **kwargs: Any) -> None:
    """The empty callable whose cost is the harness loop's own overhead."""


def time_loop(call: Callable[[], Any], n: int, gcmon: GcMonitor) -> tuple[int, int, int, int]:
    """Time ``n`` back-to-back calls. Returns (wall_ns, cpu_ns, gc_count, gc_ns).

    The CPU-clock reads sit outside the wall bracket so their cost (a system
    call) never inflates the wall time.
    """
    loop = itertools.repeat(None, n)
    gc0, gcns0 = gcmon.count, gcmon.ns
    c0 = _cpu_ns()
    t0 = _perf_ns()
    for _ in loop:
        call()
    t1 = _perf_ns()
    c1 = _cpu_ns()
    return t1 - t0, c1 - c0, gcmon.count - gc0, gcmon.ns - gcns0


def calibrate(call: Callable[[], Any], target_ns: float, gcmon: GcMonitor,
              max_iterations: int = 1 << 40) -> int:
    """Smallest-ish iteration count whose sample lasts at least ``target_ns``.

    Grows n geometrically (at most ×10 a step, extrapolating from the last
    sample), as pyperf's and criterion's calibrations do, then confirms.
    """
    n = 1
    while n < max_iterations:
        wall = time_loop(call, n, gcmon)[0]
        if wall >= target_ns:
            return n
        guess = int(n * target_ns * 1.2 / max(wall, 1)) + 1
        n = min(max(guess, n * 2), n * 10, max_iterations)
    return max_iterations


def warmup(call: Callable[[], Any], n: int, gcmon: GcMonitor, max_s: float,
           window: int = 5, tolerance: float = 0.02) -> tuple[int, bool]:
    """Run samples until the median of the last ``window`` is within ``tolerance``
    of the window before it (the timings stopped drifting), or ``max_s`` passed.

    Returns:
        (warmup samples run, converged?).
    """
    deadline = _perf_ns() + max_s * 1e9
    walls: list[int] = []
    while True:
        walls.append(time_loop(call, n, gcmon)[0])
        if len(walls) >= 2 * window:
            last = sorted(walls[-window:])[window // 2]
            prev = sorted(walls[-2 * window:-window])[window // 2]
            if abs(last - prev) <= tolerance * last:
                return len(walls), True
        if _perf_ns() >= deadline:
            return len(walls), False


def empty_like(func: Callable[..., Any]) -> Callable[..., Any]:
    """An empty function with ``func``'s parameter list (defaults become None).

    Calling it costs what calling ``func`` costs before its body runs, so the
    loop overhead is measured with the same argument binding as the benchmark
    (BenchmarkDotNet's "overhead" method follows the same idea).
    """
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        return _empty
    parts, star_seen = [], False
    for p in sig.parameters.values():
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
                    q.kind is not q.POSITIONAL_ONLY for q in list(sig.parameters.values())[
                        list(sig.parameters).index(p.name) + 1:]):
                parts.append("/")
    namespace: dict[str, Any] = {}
    exec(f"def _empty_like({', '.join(parts)}):\n    pass", namespace)  # noqa: S102
    return namespace["_empty_like"]


def loop_overhead(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                  n: int, gcmon: GcMonitor, samples: int = 7,
                  empty: Callable[..., Any] | None = None) -> float:
    """Median ns per op of the harness loop around an empty callable of the same shape
    (``empty``, or :func:`empty_like` of ``func``)."""
    empty_fn = empty or empty_like(func)
    empty = functools.partial(empty_fn, *args, **kwargs) if (args or kwargs) else empty_fn
    walls = sorted(time_loop(empty, n, gcmon)[0] for _ in range(samples))
    return walls[samples // 2] / n


def allocations(call: Callable[[], Any], calls: int = 3) -> tuple[float, float]:
    """tracemalloc pass: (peak traced bytes growth per call, live blocks left per call).

    Run after timing so tracing (which slows allocation several-fold) never
    touches a timed sample. Blocks count what survives the call (including the
    result); blocks allocated and freed inside the call are not countable
    with tracemalloc.
    """
    tracemalloc.start()
    try:
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
    finally:
        tracemalloc.stop()
    return float(sorted(peaks)[calls // 2]), float(max(0, sorted(blocks)[calls // 2]))


def _steal_ns() -> int | None:
    """Machine-wide CPU steal time so far, ns, from /proc/stat (None if unavailable)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _phase(name: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn``; wrap anything it raises as PhaseError(name)."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the benchmark may raise anything
        raise PhaseError(name, exc) from exc


def measure(plan: dict[str, Any], emit: Emitter) -> None:
    """Measure the case described by ``plan`` and emit events. Raises PhaseError."""
    from perflab.measure.suite import call_setup, load_file

    steal0 = _steal_ns()
    bench_file = load_file(plan["file"])
    spec = bench_file.benches[plan["index"]]
    params = plan["params"]
    args = _phase("setup", lambda: call_setup(spec, params))
    measure_call(spec.func, args, params, plan, emit, bench_file.metrics_for(spec), steal0)


def measure_call(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                 plan: dict[str, Any], emit: Callable[..., None], metrics: Sequence[Any] = (),
                 steal0: int | None = None) -> None:
    """Measure ``func(*args, **kwargs)`` in this process: the worker's whole sequence
    from the first call (cold time) to the ``done`` event.

    The one measuring sequence of perflab's Python harness: :func:`measure` calls it in a
    fresh worker, the pytest plugin and the Python API call it in their own process.

    Args:
        func, args, kwargs: the callable and its bound arguments.
        plan: ``iterations`` (None: calibrate to ``sample_target_ns``), ``warmup_max_s``,
            ``sample_seconds``, ``min_samples``, ``max_samples``, ``allocations``,
            ``threads`` (see :meth:`perflab.measure.runner.Runner._plan`); optional
            ``warmup_samples`` (a fixed warmup count instead of warmup until stable) and
            ``before_sample`` (a callable run untimed before each sample, returning the
            zero-argument call that sample times: pedantic setups).
        emit: ``emit(event, **fields)`` (an :class:`Emitter`, or any callable).
        metrics: :class:`perflab.measure.suite.MetricSpec` applied to the first result.
        steal0: CPU steal time at the start, ns (None: read it now).

    Raises:
        PhaseError: the benchmark raised; ``phase`` says where.
    """
    steal0 = _steal_ns() if steal0 is None else steal0
    loop, empty = None, None
    if aio.is_async(func):  # every call runs to completion on one loop (measure/aio.py)
        if plan.get("threads") is not None:
            raise PhaseError("threads", ValueError(
                "threads mode runs plain functions; an async def benchmark shares one event "
                "loop per process: drop threads=, or run the coroutines with asyncio.gather"))
        loop = _phase("event loop", lambda: aio.new_loop(plan.get("event_loop", "asyncio")))
        func, empty = aio.on_loop(func, loop, empty_like)
    call = functools.partial(func, *args, **kwargs) if (args or kwargs) else func
    gcmon = GcMonitor()
    gc.callbacks.append(gcmon)
    try:
        _measure_call(call, func, args, kwargs, plan, emit, metrics, steal0, gcmon, empty)
    finally:
        gc.callbacks.remove(gcmon)
        if loop is not None:
            loop.close()


def _measure_call(call: Callable[[], Any], func: Callable[..., Any], args: tuple[Any, ...],
                  params: dict[str, Any], plan: dict[str, Any], emit: Callable[..., None],
                  metric_specs: Any, steal0: int | None, gcmon: GcMonitor,
                  empty: Callable[..., Any] | None) -> None:
    """The body of :func:`measure_call` (``call`` is func bound to its arguments;
    ``empty``: the loop overhead's empty callable, None for one like ``func``)."""
    emit("start", pid=os.getpid())
    t0 = _perf_ns()
    result = _phase("first call", call)
    cold = _perf_ns() - t0
    metrics = {}
    for m in metric_specs:
        value = _phase(f"metric {m.name!r}", functools.partial(m.func, result))
        if value is not None:
            metrics[m.name] = float(value)
    del result
    emit("cold", ns=cold, metrics=metrics)
    if plan.get("threads") is not None:  # threads mode: N threads, fixed time per process
        from perflab.measure import threads

        return _phase("threads", lambda: threads.measure(
            call, func, args, params, gcmon, plan, emit, steal0))
    n = plan.get("iterations") or _phase(
        "calibration", lambda: calibrate(call, plan["sample_target_ns"], gcmon))
    emit("calibrated", iterations=n)
    if plan.get("warmup_samples") is not None:
        for _ in range(plan["warmup_samples"]):
            _phase("warmup", lambda: time_loop(_next_call(call, plan), n, gcmon))
        emit("warmup", samples=plan["warmup_samples"], converged=True)
    else:
        count, converged = _phase("warmup", lambda: warmup(call, n, gcmon, plan["warmup_max_s"]))
        emit("warmup", samples=count, converged=converged)
    emit("overhead", ns_per_op=loop_overhead(func, args, params, n, gcmon, empty=empty))
    _phase("sampling", lambda: _sample(call, n, gcmon, plan, emit))
    if plan.get("allocations", True):
        peak, blocks = _phase("allocation pass", lambda: allocations(_next_call(call, plan)))
        emit("alloc", peak_bytes=peak, blocks=blocks)
    steal1 = _steal_ns()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    emit("done", involuntary_switches=usage.ru_nivcsw,
         steal_ns=None if steal0 is None or steal1 is None else steal1 - steal0)


def _next_call(call: Callable[[], Any], plan: dict[str, Any]) -> Callable[[], Any]:
    """The call the next sample times: ``call``, or a fresh one from the plan's
    ``before_sample`` hook (run here, untimed)."""
    hook = plan.get("before_sample")
    return call if hook is None else hook()


def _sample(call: Callable[[], Any], n: int, gcmon: GcMonitor, plan: dict[str, Any],
            emit: Callable[..., None]) -> None:
    """Timed samples until the process's time slice is spent (and a minimum count is met).

    Each sample is bracketed by the clock cross-check (:mod:`perflab.measure.integrity`);
    its skew and flag travel with the sample event.
    """
    _MONITOR.ready()
    deadline = _perf_ns() + plan["sample_seconds"] * 1e9
    count = 0
    while count < plan["max_samples"] and (count < plan["min_samples"] or _perf_ns() < deadline):
        timed = _next_call(call, plan)
        _MONITOR.start()
        wall, cpu, gcs, gcns = time_loop(timed, n, gcmon)
        skew, flag = _MONITOR.stop()
        emit("sample", n=n, wall=wall, cpu=cpu, gc=gcs, gc_ns=gcns, skew=skew, flag=flag)
        count += 1


def error_fields(phase: str, exc: BaseException) -> dict[str, str]:
    """The fields of the ``error`` event for ``exc`` raised in ``phase``."""
    return {"phase": phase, "type": type(exc).__name__, "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))}


def main() -> int:
    """Entry point: read the plan on stdin, measure, report. Exit 0, or 3 on a benchmark error."""
    plan = json.loads(sys.stdin.read())
    emit = Emitter(plan["fd"])
    try:
        measure(plan, emit)
    except PhaseError as err:
        emit("error", **error_fields(err.phase, err.exc))
        return 3
    except Exception as exc:  # noqa: BLE001 - report, don't crash silently
        emit("error", **error_fields("load", exc))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
