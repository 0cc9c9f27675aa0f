"""A WSGI app with fixed delays for the gunicorn tests (``gunicorn tests.trace.fixed_wsgi:app``).

``/`` runs two traced spans, ``db`` (sleeps 4 ms) and ``render`` (2 ms), under
:class:`perflab.trace.ServerTimingMiddleware` with the token in ``PERFLAB_TEST_TOKEN``;
``/raw`` answers with a fixed, partly malformed ``Server-Timing`` header of its own
(as a server that writes the header by hand would), untouched by the middleware.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import perflab
from perflab.trace import ServerTimingMiddleware

#: What ``/raw`` sends: ``ok`` is well formed, ``bad``'s dur is not a number.
RAW_HEADER = "ok;dur=1.5, bad;dur=soon, total;dur=3"


@perflab.trace("db")
def query() -> list[int]:
    """The app's "database": 4 ms."""
    time.sleep(0.004)
    return [1, 2, 3]


def render(rows: list[int]) -> bytes:
    """The app's "template": 2 ms."""
    with perflab.span("render"):
        time.sleep(0.002)
        return b"<ul>" + b"".join(b"<li>%d</li>" % r for r in rows) + b"</ul>"


def traced(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """``/``: the traced page."""
    body = render(query())
    start_response("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))])
    return [body]


_traced = ServerTimingMiddleware(traced, token=os.environ.get("PERFLAB_TEST_TOKEN"))


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Route ``/raw`` to the hand-written header, everything else to the traced page."""
    if environ.get("PATH_INFO") == "/raw":
        start_response("200 OK", [("Content-Length", "2"), ("Server-Timing", RAW_HEADER)])
        return [b"ok"]
    return _traced(environ, start_response)
