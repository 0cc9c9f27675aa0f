"""Running perflab as a user's terminal shows it: stderr on a pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time


def perflab_on_a_terminal(*argv: str, timeout: float = 180) -> tuple[int, str]:
    """``perflab ARGV`` with its stderr on a pseudo-terminal 200 columns wide, as in
    a user's terminal, where live progress is drawn; returns (exit code, what the
    terminal showed, escape sequences removed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "perflab", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env={**os.environ, "TERM": "xterm"},
    )
    os.close(slave)
    shown, deadline = bytearray(), time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:  # EIO: every writer closed the terminal
                    chunk = b""
                shown += chunk
                if not chunk:
                    break
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    code = proc.wait(timeout=30)
    return code, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode(errors="replace"))
