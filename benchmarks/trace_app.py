"""What tracing costs a real service: examples/traced_app with perflab.trace on and off.

The example (Northwind orders from SQLite rendered as HTML, under uvicorn, one
worker) is served with tracing on (its two spans and the middleware's request
span recorded; no token sent, so no Server-Timing: the traffic of production) and
off (``PERFLAB_TRACE=0``: the decorators return the functions themselves and the
middleware only passes requests through). Each round starts both, in alternating
order, and loads each with ``perflab http``: an open-loop step at a fixed rate, then a
closed-loop step (N connections, as fast as the server answers). Figures per
round: latency p50/p99 (open loop), throughput (closed loop), and the server's CPU
per request (utime + stime of its process over the step / requests answered).

Each figure is reported as the ratio on / off with a 95% CI over the paired rounds
(Student t on the log ratios; Hesterberg would bootstrap, but 5 pairs are too few to
resample). Rule: a CI containing 1 is **tied** (no overhead shown), else the ratio
is the overhead measured. Usage: python benchmarks/trace_app.py [ROUNDS] [RATE]
(defaults 5 rounds, 50/s, below the app's capacity on this machine; writes benchmarks/results/trace_app.md).
"""

from __future__ import annotations

import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PERFLAB, PYTHON, ROOT, machine, write_section  # noqa: E402

APP = ROOT / "examples" / "traced_app" / "app.py"
URL_PATH = "/orders?customer=ALFKI"
STEP = "6s"
CONNECTIONS = 4
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


class App:
    """The example served on a free loopback port, tracing on or off."""

    def __init__(self, traced: bool) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
        sock_addr = sock.getsockname()
        self.url = f"http://127.0.0.1:{sock_addr[1]}"
        env = {**os.environ, "PERFLAB_TRACE": "1" if traced else "0"}
        self.proc = subprocess.Popen(
            [PYTHON, str(APP), "--fd", str(sock.fileno())],
            pass_fds=[sock.fileno()],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        sock.close()
        for _ in range(600):  # a raw GET: benchmarks/http.py shadows the http package here
            try:
                with socket.create_connection(sock_addr, timeout=2) as probe:
                    probe.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if probe.recv(64).startswith(b"HTTP/1.1 200"):
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("the example app did not start")

    def load(self, tmp: Path, *args: str) -> dict[str, float]:
        """One perflab http step: latency p50/p99 (s), rate (1/s), server CPU/request (s)."""
        out = tmp / "http.json"
        before = cpu_s(self.proc.pid)
        subprocess.run(
            [
                *PERFLAB,
                "http",
                self.url + URL_PATH,
                *args,
                "--duration",
                STEP,
                "--json",
                str(out),
                "--quiet",
            ],
            check=True,
            capture_output=True,
        )
        cpu = cpu_s(self.proc.pid) - before
        step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
        served = sum(step["status_counts"].values())
        return {
            "p50_s": step["latency"]["p50_us"] * 1e-6,
            "p99_s": step["latency"]["p99_us"] * 1e-6,
            "rate": step["ok_responses"] / step["elapsed_s"],
            "cpu_per_request_s": cpu / max(served, 1),
        }

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def measure(traced: bool, tmp: Path, rate: int) -> dict[str, float]:
    """Both steps against a fresh server."""
    app = App(traced)
    try:
        opened = app.load(tmp, "--rate", str(rate))
        closed = app.load(tmp, "--connections", str(CONNECTIONS))
    finally:
        app.stop()
    return {
        "open p50": opened["p50_s"],
        "open p99": opened["p99_s"],
        "open CPU/request": opened["cpu_per_request_s"],
        "closed throughput": closed["rate"],
        "closed CPU/request": closed["cpu_per_request_s"],
    }


def paired_ratio(on: list[float], off: list[float]) -> tuple[float, float, float]:
    """Geometric mean of on/off over pairs with its 95% t interval."""
    from scipy import stats

    logs = [math.log(a / b) for a, b in zip(on, off)]
    mean = statistics.fmean(logs)
    half = (
        stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        if len(logs) > 1
        else math.inf
    )
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def fmt(name: str, value: float) -> str:
    if "throughput" in name:
        return f"{value:,.0f}/s"
    return f"{value * 1e3:.3f} ms" if value >= 1e-3 else f"{value * 1e6:.0f} µs"


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    results: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):
            for traced in (True, False) if i % 2 == 0 else (False, True):
                results[traced].append(measure(traced, Path(tmp), rate))
    wall = time.monotonic() - start
    lines = [
        "## perflab.trace on a real service: examples/traced_app (issue 17)",
        "",
        f"Machine: {machine()}. The server, perflab http and other engineers' jobs "
        "share the 2 cores: compare the paired ratios rather than absolutes.",
        "",
        f"Command: `python benchmarks/trace_app.py {rounds} {rate}` ({wall:.0f} s). "
        f"{rounds} rounds; each starts the example under uvicorn with tracing on "
        "(spans `db.orders`, `render`, `app` recorded, no token: no Server-Timing) and "
        "off (`PERFLAB_TRACE=0`), in alternating order, and runs `perflab http` at "
        f"{rate}/s for {STEP} (open loop), then {CONNECTIONS} connections for {STEP} "
        "(closed loop). CPU per request: the server process's user + system time over "
        "the step / requests answered.",
        "",
        "Rule: on/off is the geometric mean of the per-round ratios with a 95% Student "
        "t interval on their logs; an interval containing 1 is **tied** (no overhead "
        "shown).",
        "",
        "| figure | tracing off (median) | tracing on (median) | on / off (95% CI) | verdict |",
        "|---|---:|---:|---:|---|",
    ]
    for name in results[True][0]:
        on = [r[name] for r in results[True]]
        off = [r[name] for r in results[False]]
        ratio, low, high = paired_ratio(on, off)
        verdict = (
            "tied"
            if low <= 1 <= high
            else (
                "on costs more" if (low > 1) != (name == "closed throughput") else "on costs less"
            )
        )
        lines.append(
            f"| {name} | {fmt(name, statistics.median(off))} | "
            f"{fmt(name, statistics.median(on))} | {ratio:.3f} ({low:.3f}–{high:.3f}) "
            f"| {verdict} |"
        )
    write_section("trace_app", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
