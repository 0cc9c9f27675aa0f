"""perflab http --http3 beside perflab's own --http2, both against one `perflab serve
--http3` on loopback (issue 30, "Done when": HTTP/3).

Usage: python benchmarks/http3.py [--rounds 5] [--seconds 5] [--co-seconds 32]
(use a release build of perflab._core: `make bench` does.)

Writes benchmarks/results/http3.md. Every figure is measured here, in one run:

* closed loop, C connections × S streams, one engine thread: HTTP/3 (QUIC, TLS 1.3,
  `--insecure` for serve's self-signed certificate) and HTTP/2 (h2c: serve speaks no
  TLS over TCP) against the same `perflab serve --http3` process, rounds alternating which
  goes first; the verdict is the paired ratio HTTP/3 / HTTP/2 of requests/s with its 95% CI
  (t over the rounds' log ratios), judged by RULE below;
* open loop at a fixed rate over HTTP/3: achieved vs offered, send-lag p99;
* coordinated omission over HTTP/3: `perflab serve --http3 --delay 1ms --stall 1s/10s`
  at a fixed rate, perflab's p99 against the value derived analytically (as
  benchmarks/http.py derives it for HTTP/1.1).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PERFLAB, child_cpu, perflab_serve, write_section
from http2 import CO_DELAY_S, CO_PERIOD_S, CO_RATE, CO_STALL_S, expected_co_p99, paired_ratio
from http_report import open_and_stall, run_lines, section

CONNECTIONS, STREAMS, OPEN_RATE, TARGET = 10, 10, 2_000, 0.50
RULE = (
    f"the target (HTTP/3 ≥ {TARGET:.0%} of HTTP/2's requests/s) is **met** when the whole "
    "95% CI of the paired ratio HTTP/3 / HTTP/2 lies at or above it, **not met** when the "
    "whole CI lies below it, and **undecided** when the CI straddles it"
)


def perflab_http(url: str, protocol: str, *argv: str) -> dict[str, Any]:
    """One `perflab http --http2|--http3` run (quiet, one engine thread): its only step,
    with ``rate`` (OK responses/s) and ``cpu_per_request_s`` (whole process)."""
    extra = ["--http3", "--insecure"] if protocol == "h3" else ["--http2"]
    if protocol == "h3":
        url = url.replace("http://", "https://")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        before = child_cpu()
        subprocess.run(
            [*PERFLAB, "http", url, *extra, "--threads", "1", "--quiet", "--json", str(out)]
            + list(argv),
            check=True,
            capture_output=True,
            text=True,
        )
        cpu = child_cpu() - before
        step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    done = step["ok_responses"] + step["failures"] + (step.get("drained") or 0)
    step["rate"] = step["ok_responses"] / step["elapsed_s"]
    step["cpu_per_request_s"] = cpu / max(done, 1)
    return step


def closed_loop(url: str, rounds: int, seconds: int) -> list[dict[str, dict[str, Any]]]:
    """Rounds of HTTP/2 and HTTP/3, the first protocol alternating."""
    load = ["--connections", str(CONNECTIONS), "--streams", str(STREAMS)]
    load += ["--duration", f"{seconds}s", "--warmup", "1s"]
    out = []
    for i in range(rounds):
        order = ["h2", "h3"] if i % 2 == 0 else ["h3", "h2"]
        out.append({p: perflab_http(url, p, *load) for p in order})
    return out


def verdict(low: float, high: float) -> str:
    """By :data:`RULE`: "met", "not met" or "undecided"."""
    if low >= TARGET:
        return "met"
    return "not met" if high < TARGET else "undecided"


def co_test(seconds: int) -> dict[str, Any]:
    stall = f"{CO_STALL_S:g}s/{CO_PERIOD_S:g}s"
    with perflab_serve("--http3", "--delay", f"{CO_DELAY_S * 1e3:g}ms", "--stall", stall) as url:
        step = perflab_http(
            url,
            "h3",
            *("--streams", str(STREAMS), "--rate", str(CO_RATE), "--duration", f"{seconds}s"),
            *("--warmup", "2s", "--timeout", "5s"),
        )
    return {"step": step, "expected_p99_s": expected_co_p99()}


def report(closed: list[dict[str, dict[str, Any]]], open_step: dict[str, Any], co: dict) -> str:
    rate = paired_ratio(closed, "rate", "h3", "h2")
    cpu = paired_ratio(closed, "cpu_per_request_s", "h3", "h2")
    med = {
        p: {k: statistics.median(r[p][k] for r in closed) for k in ("rate", "cpu_per_request_s")}
        for p in ("h2", "h3")
    }
    stall = "`perflab serve --http3 --delay 1ms --stall 1s/10s`, " + f"{CO_RATE}/s"
    tail, tail_verdicts = open_and_stall(open_step, OPEN_RATE, STREAMS, co, stall, " over HTTP/3")
    body = [
        *run_lines("http3.py", "a release build of perflab._core"),
        f"Target: one `perflab serve --http3` (one thread): HTTP/3 over QUIC with TLS 1.3 on "
        f"its UDP port, HTTP/2 with prior knowledge (h2c, no TLS) on its TCP port. Closed "
        f"loop: {CONNECTIONS} connections × {STREAMS} streams, one engine thread, "
        f"{len(closed)} rounds alternating; CPU is the whole `perflab http` process's "
        "user + system.",
        "",
        "| protocol | requests/s (median) | CPU per request (median) |",
        "|---|---:|---:|",
        *(
            f"| {p} | {med[p]['rate']:,.0f} | {med[p]['cpu_per_request_s'] * 1e6:,.2f} µs |"
            for p in ("h2", "h3")
        ),
        "",
        f"Paired ratios HTTP/3 / HTTP/2: requests/s {rate[0]:.2f} ({rate[1]:.2f}–{rate[2]:.2f}),"
        f" CPU per request {cpu[0]:.2f} ({cpu[1]:.2f}–{cpu[2]:.2f}).",
        "",
        *tail,
    ]
    verdicts = [
        f"- closed loop: HTTP/3 ≥ {TARGET:.0%} of HTTP/2's requests/s (ratio {rate[0]:.2f}, "
        f"95% CI {rate[1]:.2f}–{rate[2]:.2f}): **{verdict(rate[1], rate[2])}**",
        *tail_verdicts,
    ]
    return section("HTTP/3: perflab http --http3 beside perflab http --http2", body, verdicts, RULE)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--co-seconds", type=int, default=32)
    args = p.parse_args(argv)
    with perflab_serve("--http3") as url:
        closed = closed_loop(url, args.rounds, args.seconds)
        open_step = perflab_http(
            url,
            "h3",
            *("--streams", str(STREAMS), "--rate", str(OPEN_RATE)),
            *("--duration", f"{args.seconds + 1}s", "--warmup", "1s"),
        )
    co = co_test(args.co_seconds)
    write_section("http3", report(closed, open_step, co))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
