"""perflab http beside wrk, closed loop, one thread (or T): whole-process CPU per request
(issue 30, "The engine on a bigger host").

Usage: python benchmarks/http_wrk.py [--rounds 7] [--seconds 5] [--connections 64]
[--threads 1] (also run by `python benchmarks/http.py`, and alone by `python
benchmarks/http.py --only-cpu [--threads T]`; needs nginx and wrk: `make bench-deps`; a
release build of perflab._core.)

Writes benchmarks/results/http_wrk.md (one thread) or http_wrk_tT.md (T threads). Both
tools run closed loop against one private nginx `return 200` (one worker, 127.0.0.1),
with the same connections, threads and length: `perflab http URL --threads T
--connections C --duration Ds --warmup 0s --quiet` (the table printed to a pipe, the
results file and the history record written, as a user's run does) and `wrk -tT -cC
-dDs`. The rounds alternate which tool goes first.

* CPU per request: each whole process's user + system time (getrusage of the finished
  child, so start-up, imports, analysis, printing and writing count) ÷ the requests it
  completed (perflab: successful + failed + drained; wrk: its "N requests").
* Where perflab's CPU goes: its engine thread's CPU (``thread_cpu_s`` in the results
  file) ÷ requests, and the rest of the process (start-up, imports, analysis, output),
  per run.
* Verdict: the paired ratio perflab / wrk of CPU per request (the geometric mean of the
  rounds' ratios, 95% t-interval) against the target (≤ 1 at one thread, ≤ 0.8 at more:
  :data:`TARGET`), by the one rule of common.RATIO_RULE.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    PERFLAB,
    RATIO_RULE,
    child_cpu,
    compile_perflab,
    machine,
    nginx,
    ratio_ci,
    ratio_verdict,
    threads_problem,
    write_section,
    wrk,
)

#: issue 30's targets for perflab / wrk, whole-process CPU per request, by engine threads
TARGET = {1: 1.0}
#: ... and for more than one thread
TARGET_MORE = 0.8

#: issue 30's figures from a 16-core VM (`perflab serve --threads 8`, 64 connections,
#: whole-process CPU), the reference for hosts with more cores than this one:
#: threads → (perflab req/s, perflab µs CPU/req, wrk req/s, wrk µs CPU/req)
BIGGER_HOST = {
    1: (112_000, 14.95, 161_000, 6.22),
    4: (508_000, 8.85, 447_000, 8.90),
    8: (504_000, 11.54, 515_000, 10.70),
}


def perflab_closed(
    url: str, connections: int, seconds: int, *extra: str, threads: int = 1
) -> dict[str, float]:
    """One closed-loop `perflab http` run on ``threads`` engine threads, no warmup (every
    request counted, as wrk counts them): requests/s, whole-process CPU per request, the
    engine threads' CPU per request and the CPU spent outside them, s."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        before = child_cpu()
        subprocess.run(
            [*PERFLAB, "http", url, "--threads", str(threads), "--connections", str(connections)]
            + ["--duration", f"{seconds}s", "--warmup", "0s", "--quiet", "--json", str(out)]
            + list(extra),
            check=True,
            capture_output=True,
            text=True,
        )
        cpu = child_cpu() - before
        step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    done = max(step["ok_responses"] + step["failures"] + (step.get("drained") or 0), 1)
    engine = sum(step["thread_cpu_s"])
    return {
        "rate": step["ok_responses"] / step["elapsed_s"],
        "cpu_per_request_s": cpu / done,
        "engine_cpu_per_request_s": engine / done,
        "outside_cpu_s": cpu - engine,
        "requests": done,
    }


def closed_rounds(
    url: str, rounds: int, seconds: int, connections: int, threads: int = 1
) -> list[dict]:
    """``rounds`` pairs {perflab, wrk}, the tool that goes first alternating."""
    out = []
    for i in range(rounds):
        row: dict[str, dict[str, float]] = {}
        for tool in ("perflab", "wrk") if i % 2 == 0 else ("wrk", "perflab"):
            if tool == "perflab":
                row[tool] = perflab_closed(url, connections, seconds, threads=threads)
            else:
                row[tool] = wrk(url, seconds, connections, threads)
        out.append(row)
    return out


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.2f} µs"


def ratio_text(value: float, low: float, high: float) -> str:
    return f"{value:.3f} ({low:.3f}–{high:.3f})"


def section(
    rows: list[dict], seconds: int, connections: int, command: str, threads: int = 1
) -> str:
    """The Markdown section: medians, the CPU breakdown, paired ratios, the verdict."""

    def med(tool: str, key: str) -> float:
        return statistics.median(r[tool][key] for r in rows)

    cpu = ratio_ci(
        [r["perflab"]["cpu_per_request_s"] / r["wrk"]["cpu_per_request_s"] for r in rows]
    )
    engine = ratio_ci(
        [r["perflab"]["engine_cpu_per_request_s"] / r["wrk"]["cpu_per_request_s"] for r in rows]
    )
    rate = ratio_ci([r["perflab"]["rate"] / r["wrk"]["rate"] for r in rows])
    outside = med("perflab", "outside_cpu_s")
    requests = med("perflab", "requests")
    target = TARGET.get(threads, TARGET_MORE)
    words = "one thread" if threads == 1 else f"{threads} threads"
    goal = "" if threads == 1 else " (issue 30's target for four threads)"
    engine_words = "engine thread" if threads == 1 else f"{threads} engine threads"
    return "\n".join(
        [
            f"## perflab http vs wrk: whole-process CPU per request, {words} (issue 30)",
            "",
            f"Command: `{command}` (a release build of perflab._core).",
            f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
            (
                f"Target: nginx `return 200`, one worker, 127.0.0.1. Closed loop, "
                f"{connections} connections, {seconds} s, {len(rows)} rounds alternating which "
                f"tool goes first. perflab: `perflab http URL --threads {threads} --connections "
                f"{connections} --duration {seconds}s --warmup 0s --quiet` (its tables printed "
                f"to a pipe, results file and history written); wrk: `wrk -t{threads} "
                f"-c{connections} -d{seconds}s --latency`. CPU: each whole process's user + "
                "system time (getrusage of the child) ÷ the requests it completed. perflab's "
                "modules are byte-compiled first, as an install leaves them."
            ),
            "",
            "| tool | requests/s (median) | CPU per request (median) |",
            "|---|---:|---:|",
            f"| perflab, whole process | {med('perflab', 'rate'):,.0f} | "
            f"{us(med('perflab', 'cpu_per_request_s'))} |",
            f"| perflab, {engine_words} only | | "
            f"{us(med('perflab', 'engine_cpu_per_request_s'))} |",
            f"| wrk -t{threads}, whole process | {med('wrk', 'rate'):,.0f} | "
            f"{us(med('wrk', 'cpu_per_request_s'))} |",
            "",
            (
                f"perflab's CPU outside its {engine_words} (Python start-up, imports, the "
                f"analysis, the tables, the results file and the history record): median "
                f"**{outside * 1e3:,.0f} ms per run**, {us(outside / requests)} per request over "
                f"this run's {requests:,.0f} requests; it is fixed per run, so it shrinks per "
                "request with longer or faster runs (more engine threads on a bigger host)."
            ),
            "",
            "Paired ratios perflab / wrk (geometric mean of the rounds, 95% CI):",
            "",
            f"- CPU per request, whole process: **{ratio_text(*cpu)}**",
            f"- CPU per request, perflab's {engine_words} alone: {ratio_text(*engine)}",
            f"- requests/s: {ratio_text(*rate)}",
            "",
            *bigger_host(threads),
            "### Verdict",
            "",
            f"- whole-process CPU per request, perflab / wrk ≤ {target:g}{goal} at {words}: "
            f"**{ratio_verdict(cpu[1], cpu[2], at_most=target)}**",
            "",
            f"Rule: {RATIO_RULE}.",
        ]
    )


def bigger_host(threads: int) -> list[str]:
    """Lines quoting issue 30's 16-core figures: at one thread for a one-thread section,
    at every larger count for a section of more threads (perflab runs at most as many
    engine threads as the machine has cores, so 4 and 8 are not measurable here)."""
    counts = [t for t in BIGGER_HOST if (t == 1) == (threads == 1)]
    figures = "; ".join(
        f"at {t} thread{'s' if t > 1 else ''} perflab {BIGGER_HOST[t][0]:,} req/s at "
        f"{BIGGER_HOST[t][1]:.2f} µs CPU per request, wrk -t{t} {BIGGER_HOST[t][2]:,} at "
        f"{BIGGER_HOST[t][3]:.2f} µs (ratio {BIGGER_HOST[t][1] / BIGGER_HOST[t][3]:.2f})"
        for t in counts
    )
    return [
        (
            "For more cores (quoted from issue 30, not measured here: a 16-core VM, "
            f"`perflab serve --threads 8`, 64 connections, whole-process CPU): {figures}."
        ),
        "",
    ]


def section_name(threads: int) -> str:
    """benchmarks/results/<name>.md of a run at ``threads``: http_wrk, http_wrk_t4, …"""
    return "http_wrk" if threads == 1 else f"http_wrk_t{threads}"


def wrk_text(
    url: str, rounds: int, seconds: int, connections: int, command: str, threads: int = 1
) -> str:
    """Measure against ``url`` and return the section (byte-compiles perflab first)."""
    compile_perflab()
    rows = closed_rounds(url, rounds, seconds, connections, threads)
    return section(rows, seconds, connections, command, threads)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="engine threads, and wrk's -t")
    args = p.parse_args(argv)
    for tool in ("nginx", "wrk"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            print(f"error: {tool} is not installed; run `make bench-deps`", file=sys.stderr)
            return 2
    if problem := threads_problem(args.threads):
        print(problem, file=sys.stderr)
        return 2
    command = f"python benchmarks/http_wrk.py {' '.join(argv)}".strip()
    with nginx() as url:
        text = wrk_text(url, args.rounds, args.seconds, args.connections, command, args.threads)
    write_section(section_name(args.threads), text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
