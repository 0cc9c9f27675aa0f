"""https: the engine (rustls) against a TLS server on 127.0.0.1 (Python's ssl module and
a self-signed certificate made with ``openssl req``), and HTTP/2 over TLS (ALPN h2)
against nginx with the same certificate. Skipped without openssl (and nginx)."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

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
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fresh self-signed certificate for 127.0.0.1: (key, cert) PEM files."""
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
    return key, cert


@pytest.fixture(scope="module")
def tls_server(certificate: tuple[Path, Path]) -> Iterator[str]:
    """An HTTP/1.1 https server on 127.0.0.1 (no ALPN); yields its URL."""
    key, cert = certificate
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


NGINX_H2 = """
worker_processes 1; daemon off; master_process off; pid {dir}/nginx.pid;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl http2;
    ssl_certificate {cert}; ssl_certificate_key {key};
    location / {{ return 200 "hello over h2"; }}
  }}
}}
"""


@pytest.fixture(scope="module")
def nginx_h2(certificate: tuple[Path, Path]) -> Iterator[str]:
    """A private nginx speaking HTTP/2 over TLS (ALPN h2) on 127.0.0.1; yields its URL."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        pytest.skip("needs nginx: make test installs it (as root)")
    key, cert = certificate
    folder = key.parent
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = folder / "nginx.conf"
    conf.write_text(NGINX_H2.format(dir=folder, port=port, cert=cert, key=key))
    proc = subprocess.Popen(
        [nginx, "-c", str(conf), "-p", str(folder), "-e", str(folder / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        assert proc.poll() is None, (folder / "error.log").read_text()
        yield f"https://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run(url: str, insecure: bool, **extra: object) -> mh.SweepOutcome:
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
            **extra,
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


def test_http2_over_tls_negotiates_h2_and_times_the_handshake(nginx_h2: str) -> None:
    (step,) = run(nginx_h2, insecure=True, protocol="http2", streams=4, warmup_s=0.0).steps
    assert step.failures == 0 and step.ok_responses > 0
    assert (step.protocol, step.streams) == ("h2", 4)
    # 50/s with four streams a connection: one connection, opened by a recorded request
    # (no warmup) or before the first one; when recorded, its TLS handshake is timed.
    assert step.connections_opened == step.connections_closed <= 2
    assert step.tls_handshake.count == step.connect.count <= step.connections_opened
    assert step.bytes_in == step.body_time.count * len(b"hello over h2")


def test_http2_to_a_tls_server_without_h2_is_a_protocol_error(tls_server: str) -> None:
    (step,) = run(tls_server, insecure=True, protocol="http2").steps
    assert step.ok_responses == 0 and step.failures > 0
    assert step.errors == {"protocol": step.failures}
    assert step.connect_failures > 0 and step.connections_opened == 0
