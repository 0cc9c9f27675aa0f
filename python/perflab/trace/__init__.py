"""perflab.trace: time the functions and blocks of a running program, cheaply.

    import perflab.trace

    @perflab.trace("db.query")          # or @perflab.trace: the function's qualname
    def query(sql): ...

    @perflab.trace("fetch")             # coroutine functions are timed to their end
    async def fetch(url): ...

    with perflab.trace.span("render"):  # a block
        ...

    perflab.trace.snapshot()            # {name: {count, total_ns, duration, …}}
    perflab.trace.dump("trace.json")    # a results file of kind "trace"

Every span's duration (wall clock, CLOCK_MONOTONIC, ns) and self time (the
duration less its direct child spans') go into one HdrHistogram per span name
in the native core (2 significant digits: 0.8% at worst, exact below 256 ns),
recorded per thread with no lock and merged when read. Memory is bounded:
about 1 KiB per power of two of durations per name and thread, and at most
``PERFLAB_TRACE_MAX_NAMES`` names (default 1000; later names are counted
under ``"(other spans)"`` after one RuntimeWarning). Nesting follows
``contextvars``, so it is right in threads and in asyncio tasks alike. A sync
decorated call, and a ``with span(...)`` statement that nothing can suspend before
its block ends (in a plain function, or in ``async def`` or a generator when the
block holds no ``await``, ``yield``, ``async for`` or ``async with``: see
:mod:`perflab.trace.sites`), which no task switch can interrupt, keep their frames
on a per-thread stack instead (setting a ContextVar costs more than the rest of a
span), and the spans they enclose still find them as their parent. Greenlets that switch stacks inside such
a span can misattribute self time (durations stay right).

Environment (read when this module is first imported):

* ``PERFLAB_TRACE=0`` turns recording off. Decorators stay in place and cost
  nothing: while it is set, :func:`trace` returns the function itself (so a later
  ``enable()`` records spans, blocks and functions decorated after it, not those).
  ``enable(False)`` at run time leaves the wrappers in place, each costing one flag
  check (figures in BENCHMARKS.md). While recording is off, ``span(name)`` returns
  one shared no-op context manager.
* ``PERFLAB_TRACE_DUMP=path,interval`` (e.g. ``trace.json,30s``) dumps every
  interval and at exit, from a daemon thread.
* ``PERFLAB_TRACE_MAX_NAMES=N`` caps distinct names (1..100000).

Nothing here raises into the traced code while it runs: a recorder failure
skips the recording. A span name that is not a str is a TypeError when a
function is decorated, and a RuntimeWarning (the name is ``str(name)``) in
``span(name)``, which runs inside served code.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perflab import _core

__all__ = [
    "trace",
    "span",
    "snapshot",
    "reset",
    "enable",
    "enabled",
    "dump",
    "dropped",
    "limits",
    "ServerTimingMiddleware",
    "PerflabSpanProcessor",
]


def trace(name: str | Callable[..., Any] | None = None) -> Any:
    """Decorate a function, method or coroutine function so each call is a span.

    ``@perflab.trace("name")``, ``@perflab.trace()`` or bare ``@perflab.trace``
    (the span is then named by the function's ``__qualname__``). Sync calls are
    timed by the native core with no Python frame of its own; a coroutine
    function's span runs from the first ``await`` of the call to its return,
    in the awaiting task's context. Put ``@perflab.trace`` under
    ``@staticmethod``/``@classmethod``, not above.

    Args:
        name: the span name (str, cut to 200 bytes), or the function itself.

    Returns:
        A decorator; or, given a function, the traced function. The wrapper keeps
        ``__name__``, ``__qualname__``, ``__doc__``, ``__module__`` and has
        ``__wrapped__`` and ``span_name``.

    Raises:
        TypeError: ``name`` is neither a str nor a callable; the decorated object is
            not callable, or is a generator function (time the work inside it with
            :func:`span`: a generator's lifetime is not one call).
    """
    if callable(name) and not isinstance(name, str):
        return _decorate(name, getattr(name, "__qualname__", None) or repr(name))
    if name is not None and not isinstance(name, str):
        raise TypeError(
            f"perflab.trace: a span name must be a str, not "
            f'{type(name).__name__}; write @perflab.trace("name")'
        )

    def decorator(func: Callable[..., Any]) -> Any:
        return _decorate(func, name or getattr(func, "__qualname__", None) or repr(func))

    return decorator


#: CPython 3.11 resumes every awaited coroutine recursively on the C stack, and a traced
#: one adds a level of its own: a traced async recursion 20,000 deep overflowed it
#: (SIGSEGV) where the untraced one ran. A traced coroutine that starts with less than
#: :data:`RESUME_BELOW` bytes of C stack left awaits the one it wraps through the native
#: ``Resume``, which resumes it on a new C stack segment near the end of the stack
#: (3.12+ resumes coroutines without C recursion, and never gets there). Above that, it
#: awaits it directly (``Resume`` costs a native call per resumption). Without
#: ``Resume`` (an older native module), one that would start with less than
#: :data:`ASYNC_STACK_RED_ZONE` bytes left raises RecursionError instead of crashing.
RESUME_BELOW = 1 << 20
ASYNC_STACK_RED_ZONE = 256 * 1024
_DEEP_AWAIT = (
    "perflab.trace: this await chain is about to overflow the C stack (CPython resumes "
    "each awaited coroutine on it); recurse less deeply, or run it in a thread with a "
    "larger stack (threading.stack_size)"
)
#: Bytes of C stack left on this thread (None where unknown): the native core's.
_stack_left: Callable[[], int | None] = getattr(_core, "trace_stack_left", lambda: None)
#: ``await Resume(coro)`` is ``await coro`` on a C stack with room (rust/core trace/resume.rs).
_Resume: Any = getattr(_core, "Resume", None)


def _decorate(func: Callable[..., Any], name: str) -> Any:
    """The traced wrapper of ``func`` under span ``name`` (see :func:`trace`)."""
    if not callable(func):
        raise TypeError(f"perflab.trace: {func!r} is not callable")
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise TypeError(
            f"perflab.trace: {name!r} is a generator function, whose calls "
            "return at once; time the work inside it with perflab.trace.span()"
        )
    if _OFF_AT_START:
        return func
    span_id, _ = _core.trace_register(name)
    if inspect.iscoroutinefunction(func):
        block = _core.Span(span_id, name)  # not span(name): the no-op while recording is off

        @functools.wraps(func)
        async def traced_async(*args: Any, **kwargs: Any) -> Any:
            left = _stack_left() or RESUME_BELOW
            if left < RESUME_BELOW and _Resume is None and left < ASYNC_STACK_RED_ZONE:
                raise RecursionError(_DEEP_AWAIT)
            with block:
                coro = func(*args, **kwargs)
                return await (_Resume(coro) if left < RESUME_BELOW and _Resume else coro)

        traced_async.span_name = name  # type: ignore[attr-defined]
        return traced_async
    wrapper = _core.traced(func, span_id, name)
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(func, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__dict__.update(getattr(func, "__dict__", {}))
    return wrapper


#: ``with span(name):`` times a block as a span: the native ``_core.span`` itself (no
#: Python frame in between), returning one reusable, stateless context manager per name
#: (cached), or while recording is off one shared no-op. Entering pushes a frame on
#: this thread's stack (a ``with`` statement whose block cannot be suspended) or on the
#: current context (a block that spans an ``await`` or ``yield``, or when ``__enter__``
#: is called by other code, such as a wrapper or ``ExitStack``); leaving records the
#: block's duration and self
#: time (ns), also when the block raises (the exception propagates). A name that is
#: not a str is used as ``str(name)`` after a RuntimeWarning: it never raises into the
#: traced code.
span = _core.span


def snapshot() -> dict[str, dict[str, Any]]:
    """Every span name recorded since start (or the last :func:`reset`), merged over
    threads; safe to call while others record.

    Returns:
        name → {count, total_ns, self_total_ns, duration, self_time}; ``duration`` and
        ``self_time`` are {count, min_ns, mean_ns, p50_ns, p90_ns, p99_ns, p999_ns,
        max_ns, encoded_b64} (HdrHistogram, V2-deflate base64, ns, 2 significant
        digits; percentiles are the bucket's highest equivalent value, as
        HdrHistogram reports). Totals are exact sums, not bucketed.
    """
    return {entry.pop("name"): entry for entry in _core.trace_snapshot()}


def reset() -> None:
    """Start the next snapshots from zero; names stay registered."""
    _core.trace_reset()


def enable(on: bool = True) -> bool:
    """Turn recording on (or off with ``on=False``); returns the previous state.

    Spans already open when the state changes are still closed properly.
    """
    return _core.trace_enable(bool(on))


def enabled() -> bool:
    """True while recording is on."""
    return _core.trace_enabled()


def limits() -> tuple[int, int]:
    """``(max_names, refused)``: the cap on distinct span names and how many new
    names were counted under ``"(other spans)"`` because of it."""
    return _core.trace_limits()


def dropped() -> tuple[int, int]:
    """``(max_depth, dropped)``: the most spans (decorated sync calls and ``with``
    blocks) open at once on one thread, and how many spans opened deeper than that (a
    recursion thousands of calls deep) ran unrecorded, since start or the last
    :func:`reset`. The traced code runs as it would untraced either way."""
    return _core.trace_dropped()


def dump(path: str | os.PathLike[str]) -> Path | None:
    """Write the current :func:`snapshot` as a perflab results file of kind ``trace``
    (read by ``perflab show``, ``compare`` and ``report``).

    The write is atomic (temp file, fsync, rename) and never replaces a file that
    perflab did not write. ``-`` writes to stdout.

    Returns:
        The path written (None for stdout).

    Raises:
        UsageError: the destination is unusable (a folder, a foreign file, …).
        SaveError: the write failed; the message names the rescue file.
    """
    from perflab.trace.results import dump as _dump

    return _dump(path)


def __getattr__(name: str) -> Any:
    """Lazy attributes: the middleware and the OpenTelemetry bridge."""
    if name == "ServerTimingMiddleware":
        from perflab.trace.middleware import ServerTimingMiddleware

        return ServerTimingMiddleware
    if name == "PerflabSpanProcessor":
        from perflab.trace.otel import PerflabSpanProcessor

        return PerflabSpanProcessor
    raise AttributeError(f"module 'perflab.trace' has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """This module's class: ``perflab.trace(...)`` is :func:`trace`."""

    def __call__(self, name: Any = None) -> Any:
        return trace(name)


#: PERFLAB_TRACE=0 (or false/off/no) when this module was imported.
_OFF_AT_START = os.environ.get("PERFLAB_TRACE", "").strip().lower() in ("0", "false", "off", "no")


def _configure_from_environment() -> None:
    """Apply PERFLAB_TRACE and PERFLAB_TRACE_DUMP; bad values warn, never raise."""
    if _OFF_AT_START:
        enable(False)
    spec = os.environ.get("PERFLAB_TRACE_DUMP", "").strip()
    if spec:
        from perflab.trace.results import start_periodic_dump

        try:
            start_periodic_dump(spec)
        except Exception as exc:  # noqa: BLE001 - a served app must start regardless
            warnings.warn(
                f"perflab.trace: PERFLAB_TRACE_DUMP={spec!r} ignored: {exc}",
                RuntimeWarning,
                stacklevel=2,
            )


sys.modules[__name__].__class__ = _CallableModule
_configure_from_environment()
