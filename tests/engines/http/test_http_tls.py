"""https: the engine (rustls) against a TLS server on 127.0.0.1 (Python's ssl module and
a self-signed certificate made with ``openssl req``). Skipped without openssl."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from perflab.engines.http import engine as mh

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the engine expects

    def do_GET(self) -> None:
        body = b"hello over tls"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An https server on 127.0.0.1 with a fresh self-signed certificate; yields its URL."""
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def run(url: str, insecure: bool) -> mh.SweepOutcome:
    plan = mh.Plan(
        mh.parse_url(url),
        {
            "url": url,
            "duration_s": 0.6,
            "warmup_s": 0.1,
            "threads": 1,
            "insecure": insecure,
            "connect_timeout_s": 2.0,
            "read_timeout_s": 2.0,
        },
        rates=[50.0],
    )
    return mh.run_sweep(plan)


def test_https_with_insecure_reaches_a_self_signed_server(tls_server: str) -> None:
    (step,) = run(tls_server, insecure=True).steps
    # 0.5 s recorded at 50/s: ~25 requests, all answered over TLS with keep-alive.
    assert step.failures == 0 and 20 <= step.ok_responses <= 30
    # Statuses count the recorded requests' responses, the drained ones included.
    answered = step.ok_responses - step.ok_from_warmup + step.drained
    assert step.status_counts == {"200": answered}
    assert step.bytes_in >= answered * len(b"hello over tls")
    assert step.connections_opened < step.ok_responses  # connections were reused


def test_https_verifies_certificates_by_default(tls_server: str) -> None:
    (step,) = run(tls_server, insecure=False).steps
    assert step.ok_responses == 0 and step.failures > 0
    assert step.errors == {"tls": step.failures}
    assert step.connect_failures > 0 and step.connections_opened == 0
