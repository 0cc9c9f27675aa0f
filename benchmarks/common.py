"""Shared helpers of the benchmark scripts: machine description, timing of commands, output."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PYTHON = sys.executable
#: 1-minute load average when the benchmark script started (how busy the machine was)
LOAD_AT_START = os.getloadavg()[0]


def machine() -> str:
    """One line: CPU model, cores, kernel, Python, date, load average at the start."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} cores, Linux {platform.release()}, "
            f"Python {platform.python_version()}, {dt.date.today().isoformat()}, "
            f"load average {LOAD_AT_START:.2f} when the script started")


def timed(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``cmd``; return (wall seconds, completed process). Raises on failure."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, **kw)
    return time.monotonic() - t0, proc


def median_wall(cmd: list[str], runs: int) -> float:
    """Median wall seconds of ``runs`` runs of ``cmd``."""
    return statistics.median(timed(cmd)[0] for _ in range(runs))


def write_section(name: str, text: str) -> Path:
    """Write benchmarks/results/NAME.md and echo it."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(text.rstrip() + "\n")
    print(text)
    return path
