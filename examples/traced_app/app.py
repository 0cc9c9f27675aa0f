"""A small traced web service: Northwind orders from SQLite, rendered as HTML, under uvicorn.

    python examples/traced_app/app.py --port 8000 --token s3cret
    curl -H 'X-Perflab-Token: s3cret' -i 'http://127.0.0.1:8000/orders?customer=ALFKI'
    perflab http 'http://127.0.0.1:8000/orders?customer=ALFKI' --rate 200 --duration 10s \\
        -H 'X-Perflab-Token: s3cret' --redact X-Perflab-Token

The app is plain ASGI (no framework) served by uvicorn, a standard server. Its
handler runs a traced SQL query (span ``db.orders``) and renders a template
(span ``render``); ``ServerTimingMiddleware`` times each request (span ``app``)
and, for requests carrying the token, adds ``Server-Timing: db.orders;dur=…,
render;dur=…, app;dur=…``. ``PERFLAB_TRACE=0`` runs it with tracing off;
``PERFLAB_TRACE_DUMP=trace.json,10s`` writes the span histograms as a trace file.
Routes: ``/orders?customer=ID`` (HTML), ``/health`` (``ok``). Loopback only.
"""

from __future__ import annotations

import argparse
import html
import os
import socket
import sqlite3
import string
import sys
from pathlib import Path
from urllib.parse import parse_qs

import perflab.trace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from northwind import _STATEMENT, DUMP  # noqa: E402

PAGE = string.Template("""<!doctype html>
<html><head><title>Orders of $customer</title></head>
<body><h1>Orders of $customer</h1>
<table><tr><th>order</th><th>date</th><th>ship to</th><th>lines</th><th>total</th></tr>
$rows
</table></body></html>
""")
ROW = string.Template(
    "<tr><td>$order_id</td><td>$order_date</td><td>$ship_city</td>"
    "<td>$lines</td><td>$total</td></tr>"
)
QUERY = """
SELECT o.order_id, o.order_date, o.ship_city, COUNT(*) AS lines,
       ROUND(SUM(d.unit_price * d.quantity * (1 - d.discount)), 2) AS total
FROM orders o JOIN order_details d ON d.order_id = o.order_id
WHERE o.customer_id = ? GROUP BY o.order_id ORDER BY o.order_date
"""


def connect() -> sqlite3.Connection:
    """An in-memory SQLite database of the Northwind dump (examples/data, Ms-PL)."""
    db = sqlite3.connect(":memory:", check_same_thread=False)
    db.row_factory = sqlite3.Row
    text = DUMP.read_text(encoding="utf-8")
    db.executescript("\n".join(m.group(1) for m in _STATEMENT.finditer(text)))
    return db


DB = connect()


@perflab.trace("db.orders")
def orders(customer: str) -> list[sqlite3.Row]:
    """The customer's orders with their line count and total."""
    return DB.execute(QUERY, (customer,)).fetchall()


def render(customer: str, rows: list[sqlite3.Row]) -> bytes:
    """The HTML page (every value escaped)."""
    with perflab.trace.span("render"):
        body = "\n".join(
            ROW.substitute({k: html.escape(str(r[k])) for k in r.keys()}) for r in rows
        )
        return PAGE.substitute(customer=html.escape(customer), rows=body).encode()


async def app(scope, receive, send):
    """The ASGI app: /orders?customer=ID and /health."""
    if scope["type"] != "http":
        return
    if scope["path"] == "/health":
        status, body = 200, b"ok"
    elif scope["path"] == "/orders":
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        customer = (query.get("customer") or ["ALFKI"])[0][:20]
        status, body = 200, render(customer, orders(customer))
    else:
        status, body = 404, b"not found"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def build(token: str | None) -> perflab.trace.ServerTimingMiddleware:
    """The served app: ``app`` wrapped in the Server-Timing middleware."""
    return perflab.trace.ServerTimingMiddleware(app, token=token)


def main(argv: list[str] | None = None) -> int:
    """Serve on 127.0.0.1 with uvicorn (one worker, no access log)."""
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--fd", type=int, help="serve on this already-listening socket")
    parser.add_argument(
        "--token",
        default=os.environ.get("TRACED_APP_TOKEN"),
        help="the Server-Timing secret (default $TRACED_APP_TOKEN; none: never send the header)",
    )
    args = parser.parse_args(argv)
    config = {"log_level": "warning", "access_log": False, "lifespan": "off"}
    if args.fd is not None:
        sock = socket.socket(fileno=args.fd)
        print(f"serving on http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
        uvicorn.Server(uvicorn.Config(build(args.token), **config)).run(sockets=[sock])
    else:
        print(f"serving on http://127.0.0.1:{args.port}/", flush=True)
        uvicorn.run(build(args.token), host="127.0.0.1", port=args.port, **config)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
