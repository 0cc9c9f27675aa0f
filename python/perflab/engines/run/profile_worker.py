"""The profile worker: a fresh process that calls one benchmark case over and over while
py-spy samples it from outside (``run --profile``; :mod:`perflab.engines.run.profile`).

Started as ``py-spy record … -- python -P -m perflab.engines.run.profile_worker PLAN``,
after the case's timed processes have all ended: no timed sample is ever taken in a
profiled process. Sequence: import → benchmark file import → setup → warm-up calls (the
interpreter's specializations settle, as in a timed worker) → the measured calls inside
:func:`perflab_profiled_calls`, whose frame marks what the profile keeps → a small JSON
report (pid, calls, seconds) written to the plan's ``report`` file.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

#: the function whose frame marks the measured calls in every sampled stack
MARKER = "perflab_profiled_calls"


def perflab_profiled_calls(call: Callable[[], Any], seconds: float) -> int:
    """Call ``call`` back to back for ``seconds`` (at least once). Returns the calls made.
    Every stack the profile keeps runs under this frame."""
    deadline = time.perf_counter() + seconds
    calls = 0
    while True:
        call()
        calls += 1
        if time.perf_counter() >= deadline:
            return calls


def _warm(call: Callable[[], Any], seconds: float) -> None:
    """Call ``call`` for ``seconds`` (at least twice), outside the marked frame."""
    deadline = time.perf_counter() + seconds
    for i in range(1 << 62):
        call()
        if i >= 1 and time.perf_counter() >= deadline:
            return


def run(plan: dict[str, Any]) -> dict[str, Any]:
    """Set up the case of ``plan`` and call it under the marker.

    Args:
        plan: ``file``, ``index``, ``params`` (as a timed worker's plan), ``seconds``
            (time under the marker), ``warmup_s``, ``event_loop``.

    Returns:
        The report: ``pid``, ``calls``, ``seconds`` (under the marker).
    """
    from perflab.engines.run.suite import call_setup, load_file

    spec = load_file(plan["file"]).benches[plan["index"]]
    params = plan["params"]
    return profile_call(spec.func, call_setup(spec, params), params, plan)


def profile_call(
    func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], plan: dict[str, Any]
) -> dict[str, Any]:
    """Warm ``func(*args, **kwargs)`` up, then call it under the marker for the plan's
    ``seconds`` (``async def`` functions on one event loop). Returns the report (``pid``,
    ``calls``, ``seconds``). Used by :func:`run` and by ``perflab.measure(profile=True)``'s
    fresh processes (:mod:`perflab.api.child`)."""
    from perflab.engines.run import aio
    from perflab.engines.run.empty import empty_like

    params = kwargs
    loop = None
    if aio.is_async(func):
        loop = aio.new_loop(plan.get("event_loop", "asyncio"))
        func, _ = aio.on_loop(func, loop, empty_like)
    call = functools.partial(func, *args, **params) if (args or params) else func
    try:
        _warm(call, plan.get("warmup_s", 0.05))
        t0 = time.perf_counter()
        calls = perflab_profiled_calls(call, plan["seconds"])
        return {"pid": os.getpid(), "calls": calls, "seconds": time.perf_counter() - t0}
    finally:
        if loop is not None:
            loop.close()


def main(work: Callable[[dict[str, Any]], dict[str, Any]] = run) -> int:
    """Entry point: ``profile_worker PLAN_FILE``; ``work(plan)`` (:func:`run`) makes the
    report (or an ``error``), written to the plan's ``report`` file. Exit 0, or 3 when the
    benchmark raised."""
    with open(sys.argv[-1]) as f:
        plan = json.load(f)
    try:
        report = work(plan)
        code = 0
    except BaseException as exc:  # noqa: BLE001 - the benchmark may raise anything
        report = {"pid": os.getpid(), "error": "".join(traceback.format_exception(exc))[-4000:]}
        code = 3
    with open(plan["report"], "w") as f:
        json.dump(report, f)
    return code


if __name__ == "__main__":
    sys.exit(main())
