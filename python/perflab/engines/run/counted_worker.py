"""The counted worker: one fresh process counting one benchmark case under Callgrind.

Started by :class:`perflab.engines.run.backend.SubprocessBackend` as ``python -P -m
perflab.engines.run.counted_worker`` when the plan says ``count`` (``perflab run --count
instructions``; :mod:`perflab.engines.run.counted` puts Callgrind in front). It reads the
same plan as the timed worker (:mod:`perflab.engines.run.worker`) and sends the same
events, on the same pipe.

Why a worker of its own: a call's instruction count depends on the process's history.
Whether glibc's ``realloc`` extends a growing list in place or moves it with a
``memcpy`` depends on the free chunks of the C heap, i.e. on everything the process
allocated before; which type attribute lookups collide in CPython's type cache depends
on the order types got their version tags, i.e. on which types the process looked up
before. The timed worker imports some 130 modules before a benchmark's file (sampling,
the clock monitor, per-sample counters, pairing, statistics, …) that a counted process
never uses. This one carries as little history of its own as it can, so that its count
is what the function costs in a plain program that imports the benchmark file and
calls it (benchmarks/count.py checks the agreement with such a program counted by hand):

    plan (``json``) → the layout's heap padding (only when it has some) → the
    benchmark file, through perflab's loader (:func:`perflab.engines.run.suite.load_file`:
    the file's own ``import perflab`` / ``perflab.bench`` load it anyway) → setup →
    the counted sequence (:func:`perflab.engines.run.counting.count_function`) →
    only then perflab's worker module (metrics, error reports) and the events, which
    were kept in memory: written to the pipe after the last counted sample.

Before the last sample it imports only :data:`BEFORE_SAMPLES` of perflab (and what
they import of the standard library); a test checks that the timed worker's modules
are not among them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

#: perflab's modules a counted worker imports before its samples (besides the benchmark
#: file's own imports): the loader, the counted sequence, the empty callable, the async
#: adapter and the native core (its Valgrind client requests)
BEFORE_SAMPLES = (
    "perflab.engines.run.suite",
    "perflab.engines.run.counting",
    "perflab.engines.run.empty",
    "perflab.engines.run.aio",
    "perflab._core",
)
#: the descriptor a counted worker holds its code's root folder on, and the path it sees
#: that folder at: the same string in every counted worker of every run
#: (:func:`perflab.engines.run.counted.alias_paths`)
ALIAS_FD = 250
ALIAS = f"/proc/self/fd/{ALIAS_FD}"
#: the small objects of the process's layout randomization, alive until it exits
_HEAP_PADDING: list[Any] = []


class _Failed(Exception):
    """A step of the counted worker raised: ``phase`` names it, ``exc`` is what it raised."""

    def __init__(self, phase: str, exc: BaseException) -> None:
        super().__init__(phase)
        self.phase, self.exc = phase, exc


def _step(phase: str, fn: Any) -> Any:
    """``fn()``; what it raises (``sys.exit()`` included) becomes :class:`_Failed`."""
    try:
        return fn()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the benchmark may raise anything
        raise _Failed(phase, exc) from exc


def take_root(plan: dict[str, Any]) -> None:
    """The code's root folder (``plan["root_fd"]``, when the plan has one) moved to
    :data:`ALIAS_FD`, where :data:`ALIAS` finds it. Raises OSError when the descriptor
    is not open."""
    fd = plan.get("root_fd")
    if plan.get("fd") == ALIAS_FD:  # the event pipe got that number: moved out of the way
        plan["fd"] = os.dup(ALIAS_FD)
    if fd is not None and fd != ALIAS_FD:
        os.dup2(fd, ALIAS_FD, inheritable=False)
        os.close(fd)


def count_case(plan: dict[str, Any], emit: Any) -> tuple[Any, Any]:
    """Load the plan's benchmark, set it up and count it (the module doc's sequence up
    to the last counted sample).

    Args:
        plan: the worker's plan (``file``, ``index``, ``params``, ``layout``,
            ``redirect``, ``count``, …: :meth:`perflab.engines.run.runner.Runner._plan`).
        emit: ``emit(event, **fields)``: the counted sequence's events.

    Returns:
        (the first call's result, the benchmark's metric specs).

    Raises:
        _Failed: a step raised (``load``, ``setup``, ``event loop``, ``counting``).
    """
    _step("load", lambda: take_root(plan))
    heap_objects = plan.get("layout", {}).get("heap_objects", 0)
    if heap_objects:  # the layout's padding is history on purpose
        from perflab.engines.layout import heap_padding

        _HEAP_PADDING.extend(heap_padding(heap_objects))
    if plan.get("redirect"):  # a counted baseline's twin: its checkout's folders
        from perflab.engines.run import pairing

        from_root, to_root = plan["redirect"]
        sys.path[:] = [pairing.redirect(p, from_root, to_root) for p in sys.path]
    from perflab.engines.run.suite import call_setup, load_file

    bench_file = _step("load", lambda: load_file(plan["file"], resolve=False))
    spec = bench_file.benches[plan["index"]]
    params = plan["params"]
    args = _step("setup", lambda: call_setup(spec, params))
    if plan.get("threads") is not None:
        raise _Failed(
            "count", ValueError("threads mode is timed: drop threads= or --count instructions")
        )
    from perflab.engines.run import aio
    from perflab.engines.run.counting import count_function

    func, empty, loop = spec.func, None, None
    if aio.is_async(func):  # every call runs to completion on one loop (engines/run/aio.py)
        from perflab.engines.run.empty import empty_like

        loop = _step("event loop", lambda: aio.new_loop(plan.get("event_loop", "asyncio")))
        func, empty = aio.on_loop(func, loop, empty_like)
    emit("start", pid=os.getpid())
    try:
        result = _step("counting", lambda: count_function(func, args, params, plan, emit, empty))
    finally:
        if loop is not None:
            loop.close()
    return result, bench_file.metrics_for(spec)


def _real_paths(plan: dict[str, Any], phase: str, exc: BaseException) -> dict[str, str]:
    """The ``error`` event's fields for ``exc``, the plan's ``alias`` (a symlink of fixed
    length to the code's root: :func:`perflab.engines.run.counted.alias_paths`) replaced
    by the real root in its messages: the user sees their own files' paths."""
    from perflab.engines.run.worker import error_fields

    fields = error_fields(phase, exc)
    alias, real = plan.get("alias") or (None, None)
    if not alias:
        return fields
    return {k: v.replace(alias, real) for k, v in fields.items()}


def main() -> int:
    """Entry point: the plan on stdin; the events, after the samples, on the plan's
    ``fd``. Exit 0, or 3 when the benchmark (or its file) raised."""
    plan = json.loads(sys.stdin.read())
    events: list[dict[str, Any]] = []

    def emit(event: str, **fields: Any) -> None:
        events.append({"event": event, **fields})

    code = 0
    try:
        result, metric_specs = count_case(plan, emit)
        from perflab.engines.run.worker import PhaseError, _metrics

        try:
            emit("cold", ns=None, metrics=_metrics(metric_specs, result))
            emit("done")
        except PhaseError as err:
            raise _Failed(err.phase, err.exc) from err
    except _Failed as err:
        emit("error", **_real_paths(plan, err.phase, err.exc))
        code = 3
    except Exception as exc:  # noqa: BLE001 - report, don't crash silently
        emit("error", **_real_paths(plan, "load", exc))
        code = 3
    with os.fdopen(plan["fd"], "w") as out:
        out.writelines(json.dumps(event) + "\n" for event in events)
    return code


if __name__ == "__main__":
    sys.exit(main())
