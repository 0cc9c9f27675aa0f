"""Server-Timing for WSGI and ASGI apps, shown only to whoever holds a secret.

``ServerTimingMiddleware(app, token=...)`` times every request as a span (named
``app`` unless told otherwise) and, **only** when the request carries the
configured secret in ``X-Perflab-Token`` (compared in constant time with
``hmac.compare_digest``), adds a ``Server-Timing`` header (W3C Server Timing,
https://www.w3.org/TR/server-timing/) listing the spans recorded while the app
handled that request, summed by name, then the app's own total::

    Server-Timing: db;dur=12.3, render;dur=4.1, app;dur=17

Durations are ms. Without a configured token the header is never added; a
request without the right token gets the app's response unchanged, byte for
byte. The middleware never breaks the app it wraps: any failure of perflab's own
code (the recorder, the header) is swallowed and the app's response passes as it
is. Only spans recorded before the response starts can be in the header (the
header goes out first); for WSGI, the request ends when the app returns its body
iterable.
"""

from __future__ import annotations

import hmac
import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any

from perflab import _core

#: The request header that carries the secret.
TOKEN_HEADER = "X-Perflab-Token"
_WSGI_TOKEN_KEY = "HTTP_X_PERFLAB_TOKEN"
_ASGI_TOKEN_KEY = b"x-perflab-token"
#: Characters outside an RFC 9110 token, replaced by "_" in metric names.
_NOT_TOKEN = re.compile(r"[^!#$%&'*+\-.^_`|~0-9A-Za-z]")
#: Characters kept in a ``desc`` quoted-string (printable ASCII but " and \).
_NOT_QDTEXT = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
#: Longest metric name and description written, characters.
_MAX_NAME = 64


def metric_entry(name: str, dur_ns: int, count: int = 1) -> str:
    """One Server-Timing metric: ``name;dur=ms`` (3 decimals at most), then
    ``;count=N`` when the request ran N > 1 spans of that name (an extension parameter:
    browsers ignore it, ``perflab http`` counts it per request, the N+1 check).

    A name that isn't an RFC 9110 token is written with its non-token characters as
    ``_`` and the original (printable ASCII only, quotes dropped) in ``desc``; both
    are cut to 64 characters.

    Args:
        name: the span name.
        dur_ns: the summed duration, ns.
        count: spans of that name in the request.
    """
    token = _NOT_TOKEN.sub("_", name)[:_MAX_NAME] or "_"
    entry = f"{token};dur={dur_ns / 1e6:.3f}".rstrip("0").rstrip(".")
    if count > 1:
        entry += f";count={count}"
    if token != name[:_MAX_NAME]:
        entry += f';desc="{_NOT_QDTEXT.sub("", name)[:_MAX_NAME]}"'
    return entry


def header_value(timing: Iterable[tuple[str | None, int, int]], app_name: str) -> str:
    """The Server-Timing value from a request's sums.

    Args:
        timing: ``(span name, total ns, count)`` in first-seen order, the request's own
            elapsed time last with name None (``_core.Request.timing``).
        app_name: the metric name of that total.
    """
    entries = []
    for name, ns, count in timing:
        if name is None:
            entries.append(metric_entry(app_name, ns))
        elif name != app_name:
            entries.append(metric_entry(name, ns, count))
    return ", ".join(entries)


def _is_asgi(app: Any) -> bool:
    """True for an ASGI app (a coroutine function, or an object whose __call__ is one)."""
    return inspect.iscoroutinefunction(app) or inspect.iscoroutinefunction(
        getattr(app, "__call__", None)  # noqa: B004 (the method, not callability)
    )


class ServerTimingMiddleware:
    """Wrap a WSGI or ASGI app: time each request, add Server-Timing for the token holder.

    Args:
        app: the WSGI callable ``app(environ, start_response)`` or the ASGI
            ``async app(scope, receive, send)``.
        token: the secret; None or "" means the header is never added.
        name: the span name of a whole request (default "app").
        interface: "wsgi", "asgi" or None to tell from ``app`` (an async callable is
            ASGI).

    Raises:
        TypeError: ``token`` or ``name`` is not a str, or ``app`` is not callable.
        ValueError: ``interface`` is not "wsgi", "asgi" or None.
    """

    def __new__(
        cls,
        app: Callable[..., Any],
        token: str | None = None,
        name: str = "app",
        interface: str | None = None,
    ) -> ServerTimingMiddleware:
        """An instance of the WSGI or the ASGI form (servers tell ASGI 3 apps by an
        ``async def __call__``, so each form has its own)."""
        if cls is ServerTimingMiddleware:
            asgi = _is_asgi(app) if interface is None else interface == "asgi"
            cls = _AsgiServerTiming if asgi else _WsgiServerTiming
        return super().__new__(cls)

    def __init__(
        self,
        app: Callable[..., Any],
        token: str | None = None,
        name: str = "app",
        interface: str | None = None,
    ) -> None:
        if not callable(app):
            raise TypeError(f"ServerTimingMiddleware: app {app!r} is not callable")
        if token is not None and not isinstance(token, str):
            raise TypeError("ServerTimingMiddleware: token must be a str or None")
        if not isinstance(name, str):
            raise TypeError("ServerTimingMiddleware: name must be a str")
        if interface not in (None, "wsgi", "asgi"):
            raise ValueError(
                f"ServerTimingMiddleware: interface {interface!r} is not 'wsgi', 'asgi' or None"
            )
        self.app, self.name = app, name
        self._token = token.encode() if token else None
        self._id = _core.trace_register(name)[0]

    def _allowed(self, given: bytes | str | None) -> bool:
        """True when ``given`` is the configured secret (constant-time compare)."""
        if self._token is None or given is None:
            return False
        if isinstance(given, str):
            given = given.encode("latin-1", "replace")
        return hmac.compare_digest(given.strip(), self._token)

    def _begin(self, collect: bool) -> Any:
        """A ``_core.Request`` or None when the recorder fails."""
        try:
            return _core.Request(self._id, collect)
        except Exception:  # noqa: BLE001 - the app runs even if perflab can't
            return None

    def _header(self, request: Any) -> str | None:
        """The Server-Timing value of ``request``, or None on any failure."""
        try:
            return header_value(request.timing(), self.name) or None
        except Exception:  # noqa: BLE001
            return None

    @staticmethod
    def _end(request: Any) -> None:
        if request is not None:
            try:
                request.end()
            except Exception:  # noqa: BLE001
                pass

    def _wsgi_call(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """Serve one WSGI request."""
        allowed = self._allowed(environ.get(_WSGI_TOKEN_KEY))
        request = self._begin(allowed)
        if not allowed or request is None:
            try:
                return self.app(environ, start_response)
            finally:
                self._end(request)

        def start_with_timing(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            value = self._header(request)
            if value is not None:
                headers = [*headers, ("Server-Timing", value)]
            if exc_info is None:
                return start_response(status, headers)
            return start_response(status, headers, exc_info)

        try:
            return self.app(environ, start_with_timing)
        finally:
            self._end(request)

    async def _asgi_call(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        """Serve one ASGI connection scope (only "http" scopes are timed)."""
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        given = None
        for key, value in scope.get("headers") or ():
            if key.lower() == _ASGI_TOKEN_KEY:
                given = value
                break
        allowed = self._allowed(given)
        request = self._begin(allowed)
        if not allowed or request is None:
            try:
                await self.app(scope, receive, send)
            finally:
                self._end(request)
            return

        async def send_with_timing(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                value = self._header(request)
                if value is not None:
                    message = {
                        **message,
                        "headers": [
                            *message.get("headers", ()),
                            (b"server-timing", value.encode()),
                        ],
                    }
            await send(message)

        try:
            await self.app(scope, receive, send_with_timing)
        finally:
            self._end(request)


class _WsgiServerTiming(ServerTimingMiddleware):
    """The WSGI form of :class:`ServerTimingMiddleware`."""

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        """Serve one WSGI request."""
        return self._wsgi_call(environ, start_response)


class _AsgiServerTiming(ServerTimingMiddleware):
    """The ASGI 3 form of :class:`ServerTimingMiddleware`."""

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        """Serve one ASGI connection scope."""
        await self._asgi_call(scope, receive, send)
