"""A Ray head on loopback for the distributed-load tests, in its own temp dir and
session, stopped through its process group."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import free_port

#: Longest wait for the module's Ray head to come up, s (≈ 20 s on a loaded 2-core box).
HEAD_START_S = 150


@contextlib.contextmanager
def running_ray_head() -> Iterator[dict[str, str]]:
    """A Ray head for the tests: `ray start --head --block` on 127.0.0.1 with
    a Ray Client server, in its own temp dir and session; yields {"gcs": HOST:PORT,
    "client": ray://HOST:PORT, "temp": its temp dir}. Stopped by signalling its process group (never `ray
    stop`, which stops every Ray instance of the user on this machine)."""
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's sockets live there
    gcs, client = free_port(), free_port()
    log = Path(temp) / "head.log"
    with log.open("w") as out:
        head = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "ray"),
                "start",
                "--head",
                "--block",
                "--node-ip-address=127.0.0.1",
                f"--port={gcs}",
                f"--ray-client-server-port={client}",
                "--num-cpus=4",
                "--include-dashboard=false",
                f"--temp-dir={temp}",
                f"--object-store-memory={100 * 2**20}",
                "--disable-usage-stats",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # a busy head as docs/distributed.md says: its Ray Client proxy waits up to
            # 120 s (not 30) for a driver's server to start, so a ray:// join under load
            # succeeds at once rather than after a refused attempt and its ≈ 30 s grace
            # (the retry itself is tested in test_parts)
            env={
                **os.environ,
                "RAY_USAGE_STATS_ENABLED": "0",
                "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": "120",
            },
        )
    try:
        deadline = time.monotonic() + HEAD_START_S
        while "block forever" not in log.read_text(errors="replace"):
            assert head.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield {"gcs": f"127.0.0.1:{gcs}", "client": f"ray://127.0.0.1:{client}", "temp": temp}
    finally:
        head.terminate()  # `ray start --block` stops the processes it started
        try:
            head.wait(timeout=30)
        finally:
            with contextlib.suppress(ProcessLookupError):  # stragglers of its group
                os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=10)
            shutil.rmtree(temp, ignore_errors=True)
