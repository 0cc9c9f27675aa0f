"""ServerTimingMiddleware: the header for the token holder only, byte-identical
responses for everyone else, and an app that keeps working when perflab fails."""

from __future__ import annotations

import asyncio
import re

import pytest

import perflab.trace
from perflab import _core
from perflab.trace import middleware as mw
from perflab.trace.middleware import ServerTimingMiddleware, header_value, metric_entry

TOKEN = "s3cret-Tok"
#: RFC 9110 / W3C Server-Timing: metric *( OWS ";" OWS param ), params dur=number, desc=…
ENTRY = re.compile(r'^[!#$%&\'*+\-.^_`|~0-9A-Za-z]+;dur=\d+(\.\d{1,3})?(;desc="[^"\\]*")?$')


@perflab.trace("db")
def query():
    return [1, 2, 3]


def wsgi_app(environ, start_response):
    """A small WSGI app: a traced query, a rendering block."""
    rows = query()
    with perflab.trace.span("render page"):
        body = f"rows={len(rows)}".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


def call_wsgi(app, token=None):
    """(status, headers, body) of one GET."""
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/", "wsgi.input": None}
    if token is not None:
        environ["HTTP_X_PERFLAB_TOKEN"] = token
    seen = {}

    def start_response(status, headers, exc_info=None):
        seen["status"], seen["headers"] = status, list(headers)

    body = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], body


def timing_of(headers):
    found = [v for k, v in headers if k.lower() == "server-timing"]
    assert len(found) <= 1
    return found[0] if found else None


def test_wsgi_header_only_with_the_token():
    app = ServerTimingMiddleware(wsgi_app, token=TOKEN)
    status, headers, body = call_wsgi(app, TOKEN)
    assert status == "200 OK" and body == b"rows=3"
    value = timing_of(headers)
    entries = value.split(", ")
    assert [e.split(";")[0] for e in entries] == ["db", "render_page", "app"], value
    assert all(ENTRY.match(e) for e in entries), value
    assert 'desc="render page"' in value
    durs = {e.split(";")[0]: float(e.split("dur=")[1].split(";")[0]) for e in entries}
    assert durs["app"] >= durs["db"] and durs["app"] >= durs["render_page"]
    # The request's span and its children are in the histograms too.
    snap = perflab.trace.snapshot()
    assert snap["app"]["count"] == 1 and snap["db"]["count"] == 1


@pytest.mark.parametrize("token", [None, "", "wrong", TOKEN + "x", TOKEN[:-1], " "])
def test_wsgi_responses_without_the_token_are_byte_identical(token):
    plain = call_wsgi(wsgi_app, token)
    assert call_wsgi(ServerTimingMiddleware(wsgi_app, token=TOKEN), token) == plain
    # No token configured: never a header, whatever the request carries.
    assert call_wsgi(ServerTimingMiddleware(wsgi_app), TOKEN) == call_wsgi(wsgi_app, TOKEN)
    assert call_wsgi(ServerTimingMiddleware(wsgi_app, token=""), "") == plain


async def asgi_app(scope, receive, send):
    """A small ASGI app: a traced query and an awaited rendering."""
    rows = query()
    with perflab.trace.span("render"):
        await asyncio.sleep(0.001)
    body = f"rows={len(rows)}".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def call_asgi(app, token=None, scope_type="http"):
    headers = [(b"host", b"x")]
    if token is not None:
        headers.append((b"X-Perflab-Token", token.encode()))
    scope = {"type": scope_type, "method": "GET", "path": "/", "headers": headers}
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_asgi_header_only_with_the_token_and_concurrent_requests_do_not_mix():
    app = ServerTimingMiddleware(asgi_app, token=TOKEN)
    sent = call_asgi(app, TOKEN)
    value = dict(sent[0]["headers"])[b"server-timing"].decode()
    assert [e.split(";")[0] for e in value.split(", ")] == ["db", "render", "app"]
    assert float(value.split("render;dur=")[1].split(",")[0]) >= 1.0  # slept 1 ms
    assert call_asgi(app, "nope") == call_asgi(asgi_app, "nope")

    async def many():
        out = []

        async def one():
            scope = {"type": "http", "headers": [(b"x-perflab-token", TOKEN.encode())]}
            got = []

            async def send(m):
                got.append(m)

            await app(scope, None, send)
            out.append(dict(got[0]["headers"])[b"server-timing"].decode())

        await asyncio.gather(*(one() for _ in range(10)))
        return out

    for value in asyncio.run(many()):
        # Each request's header holds its own one query and one render only.
        assert value.count("db;") == 1 and value.count("render;") == 1


def test_each_form_has_the_call_signature_servers_look_for():
    import inspect

    asgi, wsgi = ServerTimingMiddleware(asgi_app), ServerTimingMiddleware(wsgi_app)
    assert inspect.iscoroutinefunction(asgi.__call__)  # how uvicorn tells ASGI 3 apps
    assert not inspect.iscoroutinefunction(wsgi.__call__)
    assert isinstance(asgi, ServerTimingMiddleware) and isinstance(wsgi, ServerTimingMiddleware)
    assert inspect.iscoroutinefunction(ServerTimingMiddleware(wsgi_app, interface="asgi").__call__)


def test_asgi_lifespan_and_websocket_pass_through():
    seen = []

    async def app(scope, receive, send):
        seen.append(scope["type"])

    asyncio.run(ServerTimingMiddleware(app, token=TOKEN)({"type": "lifespan"}, None, None))
    assert seen == ["lifespan"]


def test_recorder_failures_never_break_the_app(monkeypatch):
    class Broken:
        def __init__(self, *a):
            raise MemoryError("injected")

    monkeypatch.setattr(mw._core, "Request", Broken)
    app = ServerTimingMiddleware(wsgi_app, token=TOKEN)
    assert call_wsgi(app, TOKEN) == call_wsgi(wsgi_app, TOKEN)
    assert call_asgi(ServerTimingMiddleware(asgi_app, token=TOKEN), TOKEN) == call_asgi(
        asgi_app, TOKEN
    )

    class FailsLater:
        def __init__(self, *a):
            pass

        def timing(self):
            raise RuntimeError("injected")

        def end(self):
            raise RuntimeError("injected")

    monkeypatch.setattr(mw._core, "Request", FailsLater)
    assert call_wsgi(app, TOKEN) == call_wsgi(wsgi_app, TOKEN)
    assert call_asgi(ServerTimingMiddleware(asgi_app, token=TOKEN), TOKEN) == call_asgi(
        asgi_app, TOKEN
    )


def test_app_errors_propagate_and_the_context_is_restored():
    def failing(environ, start_response):
        with perflab.trace.span("before error"):
            pass
        raise ZeroDivisionError

    app = ServerTimingMiddleware(failing, token=TOKEN)
    with pytest.raises(ZeroDivisionError):
        call_wsgi(app, TOKEN)
    # The request's frame was popped: a span now is a root span again.
    with perflab.trace.span("later"):
        pass
    snap = perflab.trace.snapshot()
    assert snap["later"]["self_total_ns"] == snap["later"]["total_ns"]
    assert snap["app"]["count"] == 1


def test_disabled_tracing_still_answers_the_token_holder():
    perflab.trace.enable(False)
    _, headers, _ = call_wsgi(ServerTimingMiddleware(wsgi_app, token=TOKEN), TOKEN)
    assert re.fullmatch(r"app;dur=[\d.]+", timing_of(headers))
    assert perflab.trace.snapshot() == {}


def test_metric_entries_are_valid_tokens_and_escaped():
    assert metric_entry("db", 12_345_678) == "db;dur=12.346"
    assert metric_entry("x", 2_000_000) == "x;dur=2"
    assert metric_entry('a "b"\\\n\x1bé', 1) == 'a__b_____;dur=0;desc="a b"'
    assert metric_entry("", 0) == '_;dur=0;desc=""'
    assert ENTRY.match(metric_entry("a" * 500, 5))
    assert len(metric_entry("a" * 500, 5)) < 100
    assert header_value([("app", 5, 1), (None, 7_000_000, 1)], "app") == "app;dur=7"


def test_bad_arguments_are_clear_errors():
    with pytest.raises(TypeError, match="not callable"):
        ServerTimingMiddleware(42)
    with pytest.raises(TypeError, match="token"):
        ServerTimingMiddleware(wsgi_app, token=b"bytes")
    with pytest.raises(ValueError, match="interface"):
        ServerTimingMiddleware(wsgi_app, interface="cgi")
    assert isinstance(_core.trace_register("app")[0], int)
