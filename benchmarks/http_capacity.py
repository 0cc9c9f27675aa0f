"""perflab http's achieved rate against what the server can serve (issue 11).

Usage: python benchmarks/http_capacity.py [--rounds 3]
(use a release build of perflab._core, as `make bench` does; wrk, installed by `make
bench-deps`, measures the capacity beside perflab when present.)

Writes benchmarks/results/http_capacity.md. The target is the issue's repro:
`perflab serve --serialize 1ms`, one global lock held 1 ms per request, so the server
completes at most 1,000 responses/s. Measured here, in one run:

* its **capacity**: `perflab http --connections 8` (closed loop) `--rounds` times, and
  `wrk -t1 -c8` as many times beside it;
* **open loop** at 0.5×, 1.5× and 3× that capacity, in steps of 1, 2, 5 and 10 s (default
  warmup and `--timeout`, as a user would run it), each on a fresh server: a lock keeps
  serving the requests of clients that gave up, so an overloaded step leaves a backlog
  that would slow the next one down.

For every step the script prints the achieved rate against the capacity, the rate the
schema-1 accounting would have printed (every response to a recorded request, the ones
that came while the step drained included, ÷ the window: the bug), the drained
responses, the drain, the unsent requests and perflab's verdict, and decides **met** or
**not met** by one rule: achieved ≤ 1.02 × capacity (the best closed-loop measurement,
perflab's or wrk's), and the verdict is `ok` below the capacity and `saturated` above it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine, perflab_http_document, perflab_serve, write_section, wrk

SERIALIZE = "1ms"
CONNECTIONS = 8
LOADS = (0.5, 1.5, 3.0)
DURATIONS_S = (1, 2, 5, 10)
#: achieved ÷ capacity at most this (the issue's bound: one response per window edge and
#: the noise between two measurements of the same lock)
SLACK = 1.02


def perflab_step(url: str, *argv: str) -> dict[str, Any]:
    """One `perflab http` run with one engine thread: its step and its summary."""
    bench = perflab_http_document(url, *argv)["benchmarks"][0]
    step, summary = bench["steps"][0], bench["summary"]["steps"][0]
    # What schema 1 divided by the window: every OK response to a recorded request.
    answered = step["ok_responses"] - step["ok_from_warmup"] + step["drained"]
    return {
        **step,
        "achieved": summary["achieved_rate"],
        "verdict": summary["verdict"],
        "reasons": summary["reasons"],
        "old_achieved": answered / step["elapsed_s"],
    }


def capacity(rounds: int) -> dict[str, list[float]]:
    """Closed-loop throughput of the serializing server: perflab and wrk, alternating."""
    runs: dict[str, list[float]] = {"perflab": [], "wrk": []}
    have_wrk = shutil.which("wrk") is not None
    with perflab_serve("--serialize", SERIALIZE) as url:
        for _ in range(rounds):
            runs["perflab"].append(
                perflab_step(url, "--connections", str(CONNECTIONS), "--duration", "5s")["achieved"]
            )
            if have_wrk:
                runs["wrk"].append(wrk(url, 5, CONNECTIONS)["rate"])
    return runs


def open_loop(rate_of: dict[float, float]) -> list[dict[str, Any]]:
    """One step per (load, duration), each against a fresh server."""
    rows = []
    for duration in DURATIONS_S:
        for load, rate in rate_of.items():
            with perflab_serve("--serialize", SERIALIZE) as url:
                step = perflab_step(url, "--rate", f"{rate:.0f}", "--duration", f"{duration}s")
            rows.append({**step, "load": load, "step_s": duration})
    return rows


def judge(row: dict[str, Any], cap: float) -> str:
    """The script's rule (module docstring): "met" or "not met (why)"."""
    expected = "ok" if row["load"] < 1 else "saturated"
    problems = []
    if row["achieved"] > SLACK * cap:
        problems.append(f"achieved {row['achieved'] / cap:.3f}× capacity")
    if row["verdict"] != expected:
        problems.append(f"{row['verdict']}, not {expected}")
    return "met" if not problems else f"not met ({'; '.join(problems)})"


def section(caps: dict[str, list[float]], rows: list[dict[str, Any]], rounds: int) -> str:
    best = max(caps["perflab"] + caps["wrk"])
    ours = statistics.median(caps["perflab"])

    def spread(values: list[float]) -> str:
        if not values:
            return "not measured (wrk is not installed: `make bench-deps`)"
        return (
            f"median {statistics.median(values):,.0f}/s ({', '.join(f'{v:,.0f}' for v in values)})"
        )

    lines = [
        "## perflab http: achieved rate against the server's capacity (issue 11)",
        "",
        (
            f"Machine: {machine()}. Command: `python benchmarks/http_capacity.py --rounds {rounds}` "
            "with a release build of perflab._core."
        ),
        "",
        (
            f"Target: `perflab serve --serialize {SERIALIZE}` (one lock held {SERIALIZE} per "
            "request: at most 1,000 responses/s). Its capacity, closed loop with "
            f"{CONNECTIONS} connections, 5 s runs: perflab "
            f"`--connections {CONNECTIONS} --duration 5s` {spread(caps['perflab'])}; "
            f"`wrk -t1 -c{CONNECTIONS} -d5s` {spread(caps['wrk'])}. Open-loop rates are "
            f"multiples of perflab's median, {ours:,.0f}/s; the bound below uses the best "
            f"measurement, **{best:,.0f}/s**."
        ),
        "",
        (
            "Each row is one `perflab http URL --rate R --duration T --threads 1` step against a "
            "fresh server (default warmup: a fifth of the step up to 1 s; default `--timeout "
            "10s`). *achieved* counts the successful responses that completed inside the "
            "recorded window; *schema 1* is what perflab printed before (every response to a "
            "recorded request ÷ the window, the drained ones included); *drained* are the "
            "responses that came after the step ended, *drain* how long they took, *unsent* the "
            "requests that never got a connection. Rule: **met** when achieved ≤ "
            f"{SLACK:g} × {best:,.0f}/s and the verdict is `ok` below the capacity, `saturated` "
            "above it."
        ),
        "",
        (
            "| load | step | offered | achieved | achieved ÷ capacity | schema 1 ÷ capacity | "
            "drained | drain | unsent | perflab's verdict | rule |"
        ),
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        verdict = r["verdict"] + (f": {', '.join(r['reasons'])}" if r["reasons"] else "")
        lines.append(
            f"| {r['load']:g}× | {r['step_s']} s | {r['offered_rate']:,.0f}/s | "
            f"{r['achieved']:,.0f}/s | {r['achieved'] / best:.3f} | "
            f"{r['old_achieved'] / best:.3f} | {r['drained']:,} | {r['drain_s']:.3f} s | "
            f"{r['unsent']:,} | {verdict} | {judge(r, best)} |"
        )
    met = sum(judge(r, best) == "met" for r in rows)
    lines += ["", f"**{met} of {len(rows)} steps met the rule.**"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    caps = capacity(args.rounds)
    ours = statistics.median(caps["perflab"])
    rows = open_loop({load: load * ours for load in LOADS})
    write_section("http_capacity", section(caps, rows, args.rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
