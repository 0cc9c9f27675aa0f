"""Async benchmarks: each call of an ``async def`` function runs to completion on one
event loop, created once per worker process (or per in-process repetition).

:func:`on_loop` turns the coroutine function into a plain function the harness loop can
time (``loop.run_until_complete(func(*args, **kwargs))``), and builds the matching empty
callable for the loop-overhead measurement: an empty ``async def`` with the benchmark's
parameter list, run on the same loop. The time per call therefore includes creating the
coroutine and its trip through the loop's scheduler; the overhead (what that trip costs
with an empty body) is reported beside it, and the summary warns when it is a large
share, as for sync code. pyperf's ``bench_async_func`` also runs every call on one loop.

Standard library only, and asyncio only when a benchmark is async: every worker imports
this module and must start fast. uvloop is imported when asked for.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

#: the event loops a plan may ask for
LOOPS = ("asyncio", "uvloop")


def is_async(func: Callable[..., Any]) -> bool:
    """True for an ``async def`` function (or a callable whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 (the method, not callability)
    )


def call_once(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Call ``func(*args, **kwargs)`` once, untimed, and return its result (an ``async
    def`` function run to completion on a fresh event loop)."""
    if is_async(func):
        import asyncio

        return asyncio.run(func(*args, **kwargs))
    return func(*args, **kwargs)


def new_loop(name: str = "asyncio") -> asyncio.AbstractEventLoop:
    """A fresh event loop: ``asyncio``'s default, or ``uvloop``'s.

    Raises:
        ValueError: an unknown name, or uvloop asked for and not installed.
    """
    if name == "asyncio":
        import asyncio

        return asyncio.new_event_loop()
    if name == "uvloop":
        try:
            import uvloop  # type: ignore[import-not-found]
        except ImportError:
            raise ValueError(
                "event loop 'uvloop' asked for but uvloop is not installed; "
                "pip install uvloop, or use the default asyncio loop"
            ) from None
        return uvloop.new_event_loop()
    raise ValueError(f"event loop {name!r} is not one of {', '.join(LOOPS)}")


def empty_async_like(
    func: Callable[..., Any], empty_like: Callable[..., Any]
) -> Callable[..., Any]:
    """An empty ``async def`` with ``func``'s parameter list (defaults become None).

    ``empty_like`` is the harness's sync version (:func:`perflab.engines.run.worker.empty_like`);
    its signature (names and None defaults only) is written out again as ``async def``.
    """
    params = str(inspect.signature(empty_like(func)))
    namespace: dict[str, Any] = {}
    exec(f"async def _empty_async_like{params}:\n    pass", namespace)  # noqa: S102
    return namespace["_empty_async_like"]


def on_loop(
    func: Callable[..., Any], loop: asyncio.AbstractEventLoop, empty_like: Callable[..., Any]
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(timed function, empty function) running ``func`` and its empty twin on ``loop``.

    Both take ``func``'s arguments; the timed one returns what the coroutine returns.
    """
    empty = empty_async_like(func, empty_like)

    def run(*args: Any, **kwargs: Any) -> Any:
        return loop.run_until_complete(func(*args, **kwargs))

    def run_empty(*args: Any, **kwargs: Any) -> Any:
        return loop.run_until_complete(empty(*args, **kwargs))

    return run, run_empty
