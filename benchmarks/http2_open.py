"""Open loop over HTTP/2 beside HTTP/1.1 at the same rate, interleaved (issue 30,
"Done when": HTTP/2, open loop: achieved within 0.5% of offered, send-lag p99 ≤ 1 ms).

Usage: python benchmarks/http2_open.py [--rounds 4] [--seconds 6] [--section http2_open]
   or: python benchmarks/http2.py --only-open [--rounds 4] [--seconds 6] [--section ...]
(needs nginx: `make bench-deps`; a release build of perflab._core: `make bench` does.)

Writes benchmarks/results/http2_open.md (or SECTION.md). Two private nginx (`return 200`, one worker
each, the same configuration): one speaks HTTP/1.1, the other HTTP/2 with prior
knowledge (h2c; Debian's nginx 1.22 cannot serve both on one plain port). Each round
runs `perflab http --rate R --threads 1` against each, the order alternating, so both
protocols see the same minutes of the machine: HTTP/1.1 with a pool of
C × S connections, HTTP/2 with C connections × S streams (the same number of request
slots). Per run: achieved ÷ offered, send-lag p99 (intended send time → the request
handed to its connection), dispatch-lag p99 (how late the dispatcher found it due; the
rest of the send lag is waiting for a free slot or for the slot's task to run), requests
that waited for a free slot, latency p99, the 1-minute load average after the run.

Verdicts, from the medians over rounds: HTTP/2 achieved within 0.5% of offered; HTTP/2
send-lag p99 ≤ 1 ms; and whether HTTP/2's send lag is structural: the paired ratio
HTTP/2 ÷ HTTP/1.1 of the send-lag p99 (95% CI over rounds) — a CI containing 1 is a tie
(the two protocols are as late as each other: what is left is the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PERFLAB, compile_perflab, machine, nginx, ratio_ci, ratio_verdict, write_section

RATE, CONNECTIONS, STREAMS = 5_000, 10, 10
PROTOCOLS = ("h1", "h2")


def open_run(url: str, protocol: str, seconds: int) -> dict[str, Any]:
    """One `perflab http URL --rate RATE --threads 1` run, ``seconds`` recorded after a
    1 s warmup. Returns achieved ÷ offered, the p99s in ms and the load average after it.
    """
    slots = (
        ["--http2", "--connections", str(CONNECTIONS), "--streams", str(STREAMS)]
        if protocol == "h2"
        else ["--connections", str(CONNECTIONS * STREAMS)]
    )
    argv = ["--rate", str(RATE), "--threads", "1", "--duration", f"{seconds + 1}s"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        subprocess.run(
            [*PERFLAB, "http", url, *argv, "--warmup", "1s", *slots, "--quiet"]
            + ["--json", str(out)],
            check=True,
            capture_output=True,
            text=True,
        )
        step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    return {
        "achieved": step["ok_responses"] / step["elapsed_s"] / RATE,
        "send_lag_ms": step["send_lag"]["p99_us"] / 1e3,
        "dispatch_lag_ms": step["dispatch_lag"]["p99_us"] / 1e3,
        "latency_ms": step["latency"]["p99_us"] / 1e3,
        "pool_waits": step.get("pool_waits", 0),
        "connections_peak": step.get("connections_peak", 0),
        "load": os.getloadavg()[0],
        "utc": time.strftime("%H:%M:%S", time.gmtime()),
    }


def interleaved(rounds: int, seconds: int) -> list[dict[str, dict[str, Any]]]:
    """Rounds of HTTP/1.1 and HTTP/2 runs, the first protocol alternating."""
    out = []
    with nginx() as h1_url, nginx(http2=True) as h2_url:
        urls = {"h1": h1_url, "h2": h2_url}
        for i in range(rounds):
            row = {}
            for p in PROTOCOLS if i % 2 == 0 else PROTOCOLS[::-1]:
                row[p] = open_run(urls[p], p, seconds)
                print(f"round {i + 1} {p}: {row[p]}", file=sys.stderr)
            out.append(row)
    return out


def open_report(rows: list[dict[str, dict[str, Any]]], argv: list[str]) -> str:
    """The interleaved comparison as a Markdown section with its verdicts."""
    names = {"h1": "HTTP/1.1", "h2": "HTTP/2"}
    table = [
        "| round | protocol | achieved ÷ offered | send lag p99 | dispatch lag p99 "
        "| waited for a slot | latency p99 | connections (peak) | load average | UTC |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for i, row in enumerate(rows, 1):
        for p in PROTOCOLS:
            r = row[p]
            table.append(
                f"| {i} | {names[p]} | {r['achieved']:.4f} | {r['send_lag_ms']:.3f} ms "
                f"| {r['dispatch_lag_ms']:.3f} ms | {r['pool_waits']:,} "
                f"| {r['latency_ms']:.3f} ms | {r['connections_peak']} "
                f"| {r['load']:.2f} | {r['utc']} |"
            )
    med = {
        p: {k: statistics.median(row[p][k] for row in rows) for k in ("achieved", "send_lag_ms")}
        for p in PROTOCOLS
    }
    # send lag p99 is at least 1 µs in any real run; guard a zero from a histogram floor
    ratio = ratio_ci(
        [max(r["h2"]["send_lag_ms"], 1e-3) / max(r["h1"]["send_lag_ms"], 1e-3) for r in rows]
    )
    loads = [row[p]["load"] for row in rows for p in PROTOCOLS]
    achieved, lag = med["h2"]["achieved"], med["h2"]["send_lag_ms"]
    gap = ratio_verdict(ratio[1], ratio[2], at_most=1.0)
    lines = [
        f"## HTTP/2 open loop beside HTTP/1.1, interleaved, load average "
        f"{min(loads):.1f}–{max(loads):.1f} (issue 30)",
        "",
        f"Command: `python benchmarks/http2_open.py {' '.join(argv)}` (a release build of "
        "perflab._core).",
        f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Targets: two nginx `return 200` (one worker each, same configuration), one "
        f"HTTP/1.1, one HTTP/2 with prior knowledge (h2c). `perflab http --rate {RATE} "
        f"--threads 1`, {len(rows)} rounds of one run each, the order alternating: HTTP/1.1 "
        f"with {CONNECTIONS * STREAMS} connections, HTTP/2 with {CONNECTIONS} connections × "
        f"{STREAMS} streams (the same number of request slots). Load average after each run: "
        f"{min(loads):.2f}–{max(loads):.2f}.",
        "",
        *table,
        "",
        f"Medians: HTTP/1.1 send-lag p99 {med['h1']['send_lag_ms']:.3f} ms, HTTP/2 "
        f"{lag:.3f} ms; paired ratio HTTP/2 ÷ HTTP/1.1 {ratio[0]:.2f} "
        f"(95% CI {ratio[1]:.2f}–{ratio[2]:.2f}).",
        "",
        "### Verdicts",
        "",
        f"- HTTP/2 open loop at {RATE:,}/s: achieved within 0.5% of offered "
        f"(median {achieved:.4f}): **{'met' if abs(achieved - 1) <= 0.005 else 'not met'}**",
        f"- HTTP/2 open loop: send-lag p99 ≤ 1 ms (median {lag:.3f} ms): "
        f"**{'met' if lag <= 1.0 else 'not met'}**",
        f"- HTTP/2's send lag no worse than HTTP/1.1's in the same minutes (ratio "
        f"{ratio[0]:.2f}, 95% CI {ratio[1]:.2f}–{ratio[2]:.2f}): **{gap}**",
        "",
        "Rule: a verdict on a median is **met** when the median is inside the target; the "
        "paired ratio's is **tied** when its 95% CI contains 1 (no difference shown), "
        "otherwise **met** when the whole CI lies at or below 1 and **not met** when not.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seconds", type=int, default=6)
    p.add_argument(
        "--section",
        default="http2_open",
        help="the results file's name, results/SECTION.md (e.g. http2_open_loaded for a run "
        "kept beside the quiet one)",
    )
    args, _ = p.parse_known_args(argv)
    if args.rounds < 2 or args.seconds < 1:
        print("error: --rounds must be at least 2 and --seconds at least 1", file=sys.stderr)
        return 2
    if not re.fullmatch(r"http2_open[a-z0-9_]*", args.section):
        print("error: --section must start with http2_open (letters, digits, _)", file=sys.stderr)
        return 2
    if not shutil.which("nginx") and not Path("/usr/sbin/nginx").exists():
        print("error: nginx is not installed; run `make bench-deps`", file=sys.stderr)
        return 2
    compile_perflab()
    rows = interleaved(args.rounds, args.seconds)
    write_section(args.section, open_report(rows, argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
