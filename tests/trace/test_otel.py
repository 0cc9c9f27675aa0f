"""The OpenTelemetry bridge: SDK spans land in perflab.trace's histograms."""

from __future__ import annotations

import pytest

import perflab.trace
from tests.trace.concurrency import in_threads

sdk_trace = pytest.importorskip(
    "opentelemetry.sdk.trace",
    reason="opentelemetry-sdk is a test extra that `make test` installs; run make test",
)


def tracer():
    from perflab.trace import PerflabSpanProcessor

    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(PerflabSpanProcessor())
    return provider.get_tracer("test")


def test_otel_spans_are_recorded_with_self_time():
    t = tracer()
    with t.start_as_current_span("otel.parent"):
        with t.start_as_current_span("otel.child"):
            pass
        with t.start_as_current_span("otel.child"):
            pass
    snap = perflab.trace.snapshot()
    parent, child = snap["otel.parent"], snap["otel.child"]
    assert parent["count"] == 1 and child["count"] == 2
    assert parent["self_total_ns"] == parent["total_ns"] - child["total_ns"]
    assert child["self_total_ns"] == child["total_ns"]


def test_otel_spans_join_the_server_timing_of_the_request():
    from perflab.trace.middleware import ServerTimingMiddleware

    t = tracer()

    def app(environ, start_response):
        with t.start_as_current_span("otel.db"):
            pass
        start_response("200 OK", [])
        return [b""]

    headers = {}
    ServerTimingMiddleware(app, token="k")(
        {"HTTP_X_PERFLAB_TOKEN": "k"}, lambda s, h: headers.update(h)
    )
    assert headers["Server-Timing"].startswith("otel.db;dur=")


def test_otel_bridge_from_many_threads_and_bad_spans_never_raise():
    from perflab.trace import PerflabSpanProcessor

    t = tracer()

    def work():
        for _ in range(200):
            with t.start_as_current_span("otel.threaded"):
                pass

    in_threads(work)
    assert perflab.trace.snapshot()["otel.threaded"]["count"] == 800

    class Odd:
        name, start_time, end_time, context, parent = 5, 1, 2, None, None

    PerflabSpanProcessor().on_end(Odd())  # a name that isn't a str: skipped
    PerflabSpanProcessor().on_end(object())  # not a span at all: skipped
    assert PerflabSpanProcessor().force_flush() is True


def test_disabled_tracing_skips_otel_spans():
    t = tracer()
    perflab.trace.enable(False)
    with t.start_as_current_span("otel.off"):
        pass
    assert perflab.trace.snapshot() == {}
