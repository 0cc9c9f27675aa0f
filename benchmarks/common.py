"""Shared helpers of the benchmark scripts: machine description, timing of commands, output."""

from __future__ import annotations

import datetime as dt
import math
import os
import platform
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PYTHON = sys.executable
PERFLAB = [PYTHON, "-m", "perflab"]
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
    return (
        f"{model}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}, {dt.date.today().isoformat()}, "
        f"load average {LOAD_AT_START:.2f} when the script started"
    )


def timed(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``cmd``; return (wall seconds, completed process). Raises on failure."""
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True, **kw)
    return time.monotonic() - t0, proc


def median_wall(cmd: list[str], runs: int) -> float:
    """Median wall seconds of ``runs`` runs of ``cmd``."""
    return statistics.median(timed(cmd)[0] for _ in range(runs))


def untimed_head(title: str, command: str) -> list[str]:
    """The head of a section whose figures involve no timing (seeded synthetic studies):
    its title, the machine (said not to matter) and the command, as Markdown lines."""
    return [
        f"## {title}",
        f"Machine: {machine()} (the figures do not depend on it: no timing).",
        f"Command: `{command}`",
        "",
    ]


def write_section(name: str, text: str) -> Path:
    """Write benchmarks/results/NAME.md and echo it."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(text.rstrip() + "\n")
    print(text)
    return path


#: The rule every ratio target is judged by (quoted under each verdict list).
RATIO_RULE = (
    "a ratio perflab / peer with a 95% CI whose interval contains 1 is **tied** "
    "(no difference shown); otherwise the target is **met** when the whole CI lies "
    "in the target's range and **not met** when it does not"
)


def ratio_verdict(low: float, high: float, at_most: float = math.inf, at_least: float = 0.0) -> str:
    """The verdict of a ratio target by :data:`RATIO_RULE`: "tied", "met" or "not met".

    Args:
        low / high: the 95% CI of the ratio perflab / peer.
        at_most / at_least: the target's range, e.g. ``at_most=1.0`` for "no more than
            the peer", ``at_least=0.99, at_most=1.01`` for "within 1%".
    """
    if low <= 1.0 <= high:
        return "tied"
    return "met" if at_least <= low and high <= at_most else "not met"


def ratio_ci(ratios: list[float]) -> tuple[float, float, float]:
    """The paired ratio over rounds: (geometric mean of the rounds' ratios, 95% CI low,
    high), the CI a t-interval on the log ratios (rounds − 1 df); (nan, nan) with one
    round. Each ratio is perflab / peer measured in the same round, adjacent in time."""
    from scipy import stats as sps

    logs = [math.log(r) for r in ratios]
    centre = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(centre), math.nan, math.nan
    half = float(sps.t.ppf(0.975, len(logs) - 1)) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def compile_perflab() -> None:
    """Byte-compile perflab's modules once, as `pip install` does: where
    PYTHONDONTWRITEBYTECODE is set (this CI machine), every `perflab` process would
    otherwise compile them from source again, a start-up cost no user pays."""
    import compileall

    import perflab

    compileall.compile_dir(Path(perflab.__file__).parent, quiet=1)


@contextmanager
def perflab_serve(*argv: str) -> Iterator[str]:
    """`perflab serve --port 0 ARGS`; yields its URL."""
    # SIGINT at its default even when this script runs in the background (where it is
    # inherited ignored, and Python then keeps ignoring it): the way to stop serve is Ctrl-C
    proc = subprocess.Popen(
        [*PERFLAB, "serve", "--port", "0", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        yield "http://" + line.split("http://")[1].split("/")[0] + "/"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def child_cpu() -> float:
    """CPU seconds (user + system) of the finished children of this process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def threads_problem(threads: int) -> str | None:
    """The one ``error:`` line for an engine thread count perflab http refuses on this
    machine (it runs one engine thread per core at most), or None when it is fine."""
    if 1 <= threads <= (os.cpu_count() or 1):
        return None
    return (
        f"error: --threads {threads}: perflab http runs 1 to {os.cpu_count()} engine "
        "threads on this machine (one per core)"
    )


def wrk(url: str, seconds: int, connections: int, threads: int = 1) -> dict[str, float]:
    """One `wrk -tTHREADS` run: requests/s, whole-process CPU per request, latency p99 (s)."""
    before = child_cpu()
    proc = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", url],
        check=True,
        capture_output=True,
        text=True,
    )
    cpu = child_cpu() - before

    def find(pattern: str) -> tuple[str, ...]:
        return re.search(pattern, proc.stdout).groups()  # type: ignore[union-attr]

    requests = int(find(r"(\d+) requests in")[0])
    value, unit = find(r"\s99%\s+([\d.]+)(us|ms|s|m)")
    return {
        "rate": float(find(r"Requests/sec:\s+([\d.]+)")[0]),
        "cpu_per_request_s": cpu / requests,
        "p99_s": float(value) * _UNITS[unit],
        "requests": requests,
    }


def perflab_http_document(url: str, *argv: str) -> dict[str, Any]:
    """One quiet `perflab http URL --threads 1 ARGV` run: its results file, as JSON."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run(
            [*PERFLAB, "http", url, "--threads", "1", "--quiet", "--json", str(out), *argv],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.read_text())


def sample_rss(cmd: list[str], every_s: float = 10.0) -> list[tuple[float, int]]:
    """Run ``cmd`` (its output discarded) and sample its resident memory every
    ``every_s``: [(seconds since the start, RSS bytes)]."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    samples, started = [], time.monotonic()
    while proc.poll() is None:
        time.sleep(every_s)
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
            kb = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]
            samples.append((time.monotonic() - started, kb * 1024))
        except (OSError, AttributeError):
            pass
    proc.wait()
    return samples


NGINX_CONF = """
worker_processes 1;
daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
  keepalive_requests 1000000000;
  http2_max_concurrent_streams 1024;
  server {{ listen 127.0.0.1:{port}{listen}; location / {{ return 200; }} }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@contextmanager
def nginx(http2: bool = False) -> Iterator[str]:
    """A private nginx (`return 200`, one worker, no master process, a temp dir) on a
    free loopback port; yields its URL. ``http2``: it speaks HTTP/2 with prior knowledge
    (h2c) instead of HTTP/1.1."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        conf = Path(tmp) / "nginx.conf"
        conf.write_text(NGINX_CONF.format(dir=tmp, port=port, listen=" http2" if http2 else ""))
        proc = subprocess.Popen(
            ["nginx", "-c", str(conf), "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            wait_listening(port)
            yield f"http://127.0.0.1:{port}/"
        finally:
            proc.terminate()
            proc.wait(timeout=10)
