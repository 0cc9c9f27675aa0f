"""The SELECT N+1 pattern, traced: a page of 40 orders that asks the "database" once for
the list and then once per row for its customer (41 queries for one page), beside the
same page with one batched query (2 queries).

Served on loopback with perflab.trace's Server-Timing middleware, ``perflab http`` shows
``db`` with 41 spans per request and flags it::

    python examples/n_plus_one.py &          # prints its URL; stops after 60 s
    perflab http http://127.0.0.1:PORT/n1 -H "X-Perflab-Token: n1-demo" --rate 50

    Server-Timing: … db  41  …
    • 50/s: N+1: db ran 41 times in one request (median 41 per request, over 10) …

``/batched`` is the fix: ``db`` twice per request. The server is a stdlib HTTP/1.1
server bound to 127.0.0.1, handing each request to the WSGI app.
"""

from __future__ import annotations

import http.server
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import perflab
from perflab.trace import ServerTimingMiddleware

TOKEN = "n1-demo"
ORDERS = [(i, 100 + i % 7) for i in range(40)]  # (order id, customer id)
CUSTOMERS = {c: f"customer {c}" for c in range(100, 107)}


@perflab.trace("db")
def select_orders() -> list[tuple[int, int]]:
    """SELECT id, customer_id FROM orders LIMIT 40."""
    return list(ORDERS)


@perflab.trace("db")
def select_customer(customer_id: int) -> str:
    """SELECT name FROM customers WHERE id = ?: one row."""
    return CUSTOMERS[customer_id]


@perflab.trace("db")
def select_customers(ids: set[int]) -> dict[int, str]:
    """SELECT id, name FROM customers WHERE id IN (…): every row at once."""
    return {c: CUSTOMERS[c] for c in ids}


def page_n_plus_one() -> bytes:
    """One query for the orders, then one per order for its customer: 41 queries."""
    rows = [(o, select_customer(c)) for o, c in select_orders()]
    return "".join(f"{o}: {name}\n" for o, name in rows).encode()


def page_batched() -> bytes:
    """One query for the orders, one for all their customers: 2 queries."""
    orders = select_orders()
    names = select_customers({c for _, c in orders})
    return "".join(f"{o}: {names[c]}\n" for o, c in orders).encode()


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The WSGI app: ``/n1`` and ``/batched``."""
    page = page_batched if environ.get("PATH_INFO") == "/batched" else page_n_plus_one
    body = page()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]


TRACED = ServerTimingMiddleware(app, token=TOKEN)


class Handler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 (keep-alive) in front of the WSGI app."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # head and body are two writes: no 40 ms delayed-ACK wait

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": self.path.split("?")[0]}
        if token := self.headers.get("X-Perflab-Token"):
            environ["HTTP_X_PERFLAB_TOKEN"] = token
        head: list[Any] = []
        body = b"".join(TRACED(environ, lambda status, headers: head.extend([status, headers])))
        self.send_response(int(head[0].split()[0]))
        for name, value in head[1]:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


def serve(seconds: float = 60.0) -> http.server.ThreadingHTTPServer:
    """Start the server on 127.0.0.1 (a free port) in a thread; it stops after
    ``seconds``. Returns it (``server_address`` has the port)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = threading.Timer(seconds, server.shutdown)
    stop.daemon = True  # a bound, never a reason for the process to stay alive
    stop.start()
    return server


if __name__ == "__main__":
    running = serve(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
    print(f"http://127.0.0.1:{running.server_address[1]}/n1", flush=True)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
