"""perflab http --http2 beside h2load (nghttp2), on the same nginx `return 200` target
(issue 30, "Done when": HTTP/2).

Usage: python benchmarks/http2.py [--rounds 5] [--seconds 5] [--co-seconds 32] [--only-cpu]
       [--only-open] [--threads 1]
(needs nginx and h2load: `make bench-deps` installs them (Debian's nginx and
nghttp2-client); use a release build of perflab._core: `make bench` does.)

Writes benchmarks/results/http2.md. Every figure is measured here, in one run:

* closed loop, HTTP/2 with prior knowledge (h2c), C connections × S streams, one
  thread each: requests/s and whole-process CPU per request (user + system of the
  whole `perflab http` process, start-up and analysis included, against the whole
  `h2load -t1` process), rounds alternating which tool goes first; the verdict is the
  paired ratio perflab / h2load with its 95% CI (t over the rounds' log ratios);
  ``--threads T``: T engine threads beside `h2load -tT` (``--only-cpu`` writes
  results/http2_h2load_tT.md);
* open loop at a fixed rate over HTTP/2: achieved vs offered, send-lag p99;
* coordinated omission over HTTP/2: `perflab serve --delay 1ms --stall 1s/10s` (h2c)
  at a fixed rate, perflab's p99 against the value derived analytically (as
  benchmarks/http.py does for HTTP/1.1).

The script starts its own nginx (a temp dir, a free port on 127.0.0.1, no master
process) and never touches a system nginx service.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    PERFLAB,
    RATIO_RULE,
    child_cpu,
    compile_perflab,
    nginx,
    perflab_serve,
    ratio_ci,
    ratio_verdict,
    threads_problem,
    write_section,
)
from http_report import open_and_stall, run_lines, section

CONNECTIONS, STREAMS, OPEN_RATE = 10, 10, 5_000
CO_RATE, CO_DELAY_S, CO_STALL_S, CO_PERIOD_S = 500, 1e-3, 1.0, 10.0


def perflab_h2(url: str, *argv: str, threads: int = 1) -> dict[str, Any]:
    """One `perflab http --http2` run (quiet, ``threads`` engine threads): its only step,
    with ``cpu_per_request_s`` = the whole process's CPU ÷ the requests it completed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        before = child_cpu()
        subprocess.run(
            [*PERFLAB, "http", url, "--http2", "--threads", str(threads), "--quiet"]
            + ["--json", str(out), *argv],
            check=True,
            capture_output=True,
            text=True,
        )
        cpu = child_cpu() - before
        step = json.loads(out.read_text())["benchmarks"][0]["steps"][0]
    done = step["ok_responses"] + step["failures"] + (step.get("drained") or 0)
    step["rate"] = step["ok_responses"] / step["elapsed_s"]
    step["cpu_per_request_s"] = cpu / max(done, 1)
    engine = sum(step["thread_cpu_s"])
    step["engine_cpu_per_request_s"] = engine / max(done, 1)
    step["outside_cpu_s"] = cpu - engine
    return step


def h2load(url: str, seconds: int, threads: int = 1) -> dict[str, float]:
    """One `h2load -tT -c C -m S -D seconds` run: requests/s, whole-process CPU/request."""
    before = child_cpu()
    proc = subprocess.run(
        ["h2load", f"-t{threads}", f"-c{CONNECTIONS}", f"-m{STREAMS}", f"-D{seconds}", url],
        check=True,
        capture_output=True,
        text=True,
    )
    cpu = child_cpu() - before
    done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done", proc.stdout).group(1))  # type: ignore[union-attr]
    rate = float(re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", proc.stdout).group(1))  # type: ignore[union-attr]
    return {"rate": rate, "cpu_per_request_s": cpu / max(done, 1), "requests": done}


def closed_loop(
    url: str, rounds: int, seconds: int, threads: int = 1
) -> list[dict[str, dict[str, Any]]]:
    """Rounds of perflab and h2load, the first tool alternating."""
    out = []
    for i in range(rounds):
        row: dict[str, dict[str, Any]] = {}
        for tool in ["perflab", "h2load"] if i % 2 == 0 else ["h2load", "perflab"]:
            if tool == "perflab":
                row[tool] = perflab_h2(
                    url,
                    "--connections",
                    str(CONNECTIONS),
                    "--streams",
                    str(STREAMS),
                    "--duration",
                    f"{seconds}s",
                    "--warmup",
                    "0s",
                    threads=threads,
                )
            else:
                row[tool] = h2load(url, seconds, threads)
        out.append(row)
    return out


def paired_ratio(
    rows: list[dict[str, dict[str, Any]]], key: str, num: str = "perflab", den: str = "h2load"
) -> tuple[float, float, float]:
    """Geometric mean of ``num``/``den`` (perflab/h2load) over the rounds, with its 95% t
    interval."""
    return ratio_ci([r[num][key] / r[den][key] for r in rows])


def expected_co_p99() -> float:
    """p99 of an open-loop client against ``--delay d --stall L/P``: L + 2d − 0.01 P (the
    derivation is in benchmarks/http.py)."""
    return CO_STALL_S + 2 * CO_DELAY_S - 0.01 * CO_PERIOD_S


def co_test(seconds: int) -> dict[str, Any]:
    stall = f"{CO_STALL_S:g}s/{CO_PERIOD_S:g}s"
    with perflab_serve("--delay", f"{CO_DELAY_S * 1e3:g}ms", "--stall", stall) as url:
        step = perflab_h2(
            url,
            "--streams",
            str(STREAMS),
            "--rate",
            str(CO_RATE),
            "--duration",
            f"{seconds}s",
            "--warmup",
            "2s",
            "--timeout",
            "5s",
        )
    return {"step": step, "expected_p99_s": expected_co_p99()}


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.2f} µs"


def closed_lines(
    closed: list[dict[str, dict[str, Any]]], threads: int = 1
) -> tuple[list[str], str]:
    """The closed-loop comparison as Markdown lines (command, machine, medians, paired
    ratios), and its CPU verdict line (≤ 1 at one thread, ≤ 0.8 at more, as for wrk)."""
    cpu = paired_ratio(closed, "cpu_per_request_s")
    engine = ratio_ci(
        [
            r["perflab"]["engine_cpu_per_request_s"] / r["h2load"]["cpu_per_request_s"]
            for r in closed
        ]
    )
    rate = paired_ratio(closed, "rate")
    keys = ("rate", "cpu_per_request_s", "engine_cpu_per_request_s", "outside_cpu_s")
    med = {
        tool: {
            k: statistics.median(r[tool][k] for r in closed) for k in keys if k in closed[0][tool]
        }
        for tool in ("perflab", "h2load")
    }
    target = 1.0 if threads == 1 else 0.8  # issue 30: ≤ 1 at one thread, ≤ 0.8 at four
    verdict = (
        f"- CPU per request, perflab / h2load ≤ {target:g} (ratio {cpu[0]:.2f}, 95% CI "
        f"{cpu[1]:.2f}–{cpu[2]:.2f}): **{ratio_verdict(cpu[1], cpu[2], at_most=target)}**"
    )
    words = "one thread" if threads == 1 else f"{threads} threads (`-t{threads}` for h2load)"
    engines = "the engine thread's" if threads == 1 else "the engine threads'"
    lines = [
        *run_lines(
            "http2.py",
            "a release build of perflab._core; perflab's modules byte-compiled first, as an "
            "install leaves them",
        ),
        f"Target: nginx `return 200`, HTTP/2 with prior knowledge (h2c), one worker. "
        f"Closed loop: {CONNECTIONS} connections × {STREAMS} streams, {words}, "
        f"{len(closed)} rounds alternating; CPU is each whole process's user + system.",
        "",
        "| tool | requests/s (median) | CPU per request (median) |",
        "|---|---:|---:|",
        f"| perflab, whole process | {med['perflab']['rate']:,.0f} | "
        f"{us(med['perflab']['cpu_per_request_s'])} |",
        f"| perflab, engine thread{'s' if threads > 1 else ''} only | | "
        f"{us(med['perflab']['engine_cpu_per_request_s'])} |",
        f"| h2load | {med['h2load']['rate']:,.0f} | {us(med['h2load']['cpu_per_request_s'])} |",
        "",
        f"perflab's CPU outside its engine thread{'s' if threads > 1 else ''} (start-up, "
        "imports, analysis, output): "
        f"median {med['perflab']['outside_cpu_s'] * 1e3:,.0f} ms per run.",
        "",
        f"Paired ratios perflab / h2load: CPU per request {cpu[0]:.2f} "
        f"({cpu[1]:.2f}–{cpu[2]:.2f}); {engines} alone {engine[0]:.2f} "
        f"({engine[1]:.2f}–{engine[2]:.2f}); requests/s {rate[0]:.2f} "
        f"({rate[1]:.2f}–{rate[2]:.2f}).",
    ]
    return lines, verdict


def closed_report(closed: list[dict[str, dict[str, Any]]], threads: int = 1) -> str:
    """``--only-cpu``: the closed-loop comparison alone, with its verdict."""
    lines, verdict = closed_lines(closed, threads)
    words = "" if threads == 1 else f", {threads} threads"
    title = f"HTTP/2: perflab http --http2 beside h2load, CPU per request{words} (issue 30)"
    return section(title, lines, [verdict], RATIO_RULE)


def report(
    closed: list[dict[str, dict[str, Any]]], open_step: dict[str, Any], co: dict, threads: int = 1
) -> str:
    head, cpu_verdict = closed_lines(closed, threads)
    stall = f"`perflab serve --delay 1ms --stall 1s/10s`, h2c, {CO_RATE}/s"
    tail, tail_verdicts = open_and_stall(open_step, OPEN_RATE, STREAMS, co, stall)
    verdicts = [
        cpu_verdict,
        *tail_verdicts,
        "- HTTP/3 ≥ 50% of HTTP/2 throughput: see benchmarks/results/http3.md "
        "(`python benchmarks/http3.py`)",
    ]
    title = "HTTP/2: perflab http --http2 beside h2load"
    return section(title, [*head, "", *tail], verdicts, RATIO_RULE)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--co-seconds", type=int, default=32)
    p.add_argument(
        "--only-cpu",
        action="store_true",
        help="only the closed-loop CPU comparison with h2load (results/http2_h2load.md)",
    )
    p.add_argument(
        "--only-open",
        action="store_true",
        help="only the open loop, HTTP/2 beside HTTP/1.1 interleaved (results/http2_open.md; "
        "benchmarks/http2_open.py, whose options it takes)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="engine threads (and h2load -t) of the closed-loop comparison",
    )
    if "--only-open" in argv:
        import http2_open

        return http2_open.main([a for a in argv if a != "--only-open"])
    args = p.parse_args(argv)
    for tool in ("nginx", "h2load"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            print(f"error: {tool} is not installed; run `make bench-deps`", file=sys.stderr)
            return 2
    if problem := threads_problem(args.threads):
        print(problem, file=sys.stderr)
        return 2
    compile_perflab()
    with nginx(http2=True) as url:
        closed = closed_loop(url, args.rounds, args.seconds, args.threads)
        if args.only_cpu:
            name = "http2_h2load" if args.threads == 1 else f"http2_h2load_t{args.threads}"
            write_section(name, closed_report(closed, args.threads))
            return 0
        open_step = perflab_h2(
            url,
            "--streams",
            str(STREAMS),
            "--rate",
            str(OPEN_RATE),
            "--duration",
            f"{args.seconds + 1}s",
            "--warmup",
            "1s",
        )
    co = co_test(args.co_seconds)
    write_section("http2", report(closed, open_step, co, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
