"""A private nginx for the HTTP tests: started from a config, ready when its port answers."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def running_nginx(nginx: str, folder: Path, conf: str, port: int) -> Iterator[None]:
    """Run ``nginx`` with the config text ``conf`` written to ``folder/nginx.conf`` (its
    prefix and error log in ``folder``) until the block ends; wait up to 20 s for
    127.0.0.1:``port`` to accept connections.

    Raises:
        AssertionError: nginx exited while starting (the message is its error log).
    """
    (folder / "nginx.conf").write_text(conf)
    proc = subprocess.Popen(
        [
            nginx,
            "-c",
            str(folder / "nginx.conf"),
            "-p",
            str(folder),
            "-e",
            str(folder / "error.log"),
        ],
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
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)
