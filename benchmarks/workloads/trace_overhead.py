"""Workloads of benchmarks/trace.py: the cost of one span, perflab.trace beside OpenTelemetry.

Every case times the same call, ``call(f)`` → ``f()``, where ``f`` is an empty
function: plain, or wrapped by one tracer's decorator. A span's overhead is a
case's median less the plain call's. The ``block`` cases time ``with
make(name): pass`` the same way against a C-level context manager (an
uncontended lock fetched by ``dict.get``), in a plain function; the
``async-block`` cases time the same block inside a coroutine (run by one
``send``): its body cannot suspend, so perflab.trace keeps the span on the
thread's stack as in a plain function; the ``async-await`` cases time a block
whose body awaits (an already-done future, so one ``send`` still runs it to its
end), where perflab.trace must keep the span in a ContextVar. Recording on or off
is set per worker process by the setup (untimed).

    perflab run benchmarks/workloads/trace_overhead.py
"""

from __future__ import annotations

import threading

import perflab

GROUP = "trace"
#: The blocks' baseline: ``with _LOCKS.get(None): pass``, a C call returning a C context
#: manager (an uncontended lock): the with statement's own cost, nearly nothing else.
_LOCKS = {None: threading.Lock()}


def empty():
    """The traced function: does nothing, so all that is timed is the wrapper."""


def call(f):
    """The timed body of every decorator case."""
    return f()


def block(spec):
    """The timed body of every context-manager case: ``with make(name): pass``, the
    way each library is written in application code."""
    make, name = spec
    with make(name):
        pass


async def _in_coroutine(make, name):
    with make(name):
        pass


async def _awaiting(make, name, done):
    with make(name):
        await done


def async_block(spec):
    """The timed body of the async-block cases: the same block in a coroutine, run to
    its end by one ``send`` (no event loop: its cost is not the span's)."""
    make, name = spec
    try:
        _in_coroutine(make, name).send(None)
    except StopIteration:
        pass


def async_await_block(spec):
    """The timed body of the async-await-block cases: a block whose body awaits an
    already-done asyncio future (the await returns at once, so one ``send`` still runs
    the coroutine to its end), which perflab.trace must keep in a ContextVar."""
    make, name, done = spec
    try:
        _awaiting(make, name, done).send(None)
    except StopIteration:
        pass


def _done_future():
    """An asyncio future already done (made on a loop closed at once: awaiting a done
    future never touches its loop)."""
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        done = loop.create_future()
        done.set_result(None)
    finally:
        loop.close()
    return done


def _awaiting_case(block_setup):
    """An async-await-block case's setup: a block case's spec and a done future."""
    return lambda: (*block_setup(), _done_future())


def _perflab(on: bool):
    import perflab.trace

    perflab.trace.enable(on)
    return perflab.trace("overhead")(empty)


def _perflab_block(on: bool):
    import perflab.trace

    perflab.trace.enable(on)
    return perflab.trace.span, "overhead.block"


class _NullExporter:
    """A SpanExporter that drops every span (no I/O: only the SDK's own cost remains)."""

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=30000):
        return True


def _otel_tracer(processor: str):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    if processor == "batch":
        provider.add_span_processor(BatchSpanProcessor(_NullExporter()))
    else:
        from perflab.trace import PerflabSpanProcessor

        provider.add_span_processor(PerflabSpanProcessor())
    return provider.get_tracer("bench")


def _otel(processor: str):
    return _otel_tracer(processor).start_as_current_span("overhead")(empty)


def _noop_tracer():
    from opentelemetry.trace import NoOpTracer

    return NoOpTracer()


def _otel_noop():
    return _noop_tracer().start_as_current_span("overhead")(empty)


CASES = {
    "plain call": lambda: empty,
    "perflab.trace on": lambda: _perflab(True),
    "perflab.trace off": lambda: _perflab(False),
    "otel sdk batch": lambda: _otel("batch"),
    "otel no-op tracer": _otel_noop,
    "otel sdk + perflab bridge": lambda: _otel("perflab"),
}
BLOCKS = {
    "c lock": lambda: (_LOCKS.get, None),
    "perflab span on": lambda: _perflab_block(True),
    "perflab span off": lambda: _perflab_block(False),
    "otel span batch": lambda: (_otel_tracer("batch").start_as_current_span, "overhead.block"),
    "otel no-op span": lambda: (_noop_tracer().start_as_current_span, "overhead.block"),
}

ASYNC_BLOCKS = {name: BLOCKS[name] for name in ("c lock", "perflab span on")}
AWAIT_BLOCKS = {name: _awaiting_case(setup) for name, setup in ASYNC_BLOCKS.items()}
#: group → (timed body, its cases, the baseline case): what benchmarks/trace.py times.
GROUPS = {
    GROUP: (call, CASES, "plain call"),
    GROUP + "-block": (block, BLOCKS, "c lock"),
    GROUP + "-async-block": (async_block, ASYNC_BLOCKS, "c lock"),
    GROUP + "-async-await": (async_await_block, AWAIT_BLOCKS, "c lock"),
}

for _group, (_body, _cases, _baseline) in GROUPS.items():
    for _name, _setup in _cases.items():
        perflab.bench(_body, name=_name, group=_group, setup=_setup, baseline=_name == _baseline)
