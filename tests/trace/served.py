"""Starting a real server for the trace tests: wait until it answers, or fail with its log."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path


def wait_until_up(
    url: str, expected: bytes, proc: subprocess.Popen, log: Path, stop, timeout_s: float = 60
) -> None:  # type: ignore[no-untyped-def]
    """Poll ``url`` until it answers ``expected``; on timeout or the server's exit, call
    ``stop()`` and fail with the server's log."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                assert r.read() == expected
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop()
                raise AssertionError(f"the server did not start: {log.read_text()}") from None
            time.sleep(0.1)
