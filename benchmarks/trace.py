"""perflab.trace's cost per span beside the OpenTelemetry SDK's, measured with `perflab run`.

One `perflab run` of benchmarks/workloads/trace_overhead.py times, interleaved in
fresh worker processes, the same call of an empty function: plain, decorated
with perflab.trace (recording on, and off with ``enable(False)``), decorated with
OpenTelemetry's ``start_as_current_span`` (SDK tracer with the batch span
processor and an exporter that drops spans; the API's no-op tracer; the SDK
feeding perflab's bridge), and the same for ``with make(name): pass`` blocks
against a C-level context manager (an uncontended lock), in a plain function, in
a coroutine (no await inside: the thread's stack) and around an ``await`` of a done
future in a coroutine (the ContextVar). A span's overhead is the case's median less
its baseline's (the plain call, the lock block).

Verdict rule (one, printed by this script): the overhead's 95% interval is
[case CI low − baseline CI high, case CI high − baseline CI low] (the two CIs
combined, conservatively); "met" when that whole interval is at or under the
target, "not met" when it is wholly above, "tied" when it contains the target.
Targets (issue 17): ≤ 250 ns per enabled span, ≤ 60 ns per disabled span.

Beside them, without verdicts: the CPU time per call of perflab's cases and their
baselines (``time.thread_time_ns``, the least over interleaved rounds, in this process),
which a busy machine disturbs far less than wall time; ``--cpu-only`` prints just those
(e.g. to set two builds side by side: ``PYTHONPATH=OTHER/python python
benchmarks/trace.py --cpu-only``).

Needs the release build of the native core (``make bench`` makes it; a debug build
is refused). Usage: python benchmarks/trace.py [BUDGET | --cpu-only]   (default 10s per
case; writes benchmarks/results/trace.md)
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import LOAD_AT_START, PYTHON, ROOT, machine, timed, write_section  # noqa: E402

WORKLOAD = ROOT / "benchmarks" / "workloads" / "trace_overhead.py"
TARGET_ON_NS, TARGET_OFF_NS = 250.0, 60.0
#: case → (baseline, target ns or None) for the verdict.
ROWS = {
    "trace/perflab.trace on": ("trace/plain call", TARGET_ON_NS),
    "trace/perflab.trace off": ("trace/plain call", TARGET_OFF_NS),
    "trace/otel sdk batch": ("trace/plain call", None),
    "trace/otel no-op tracer": ("trace/plain call", None),
    "trace/otel sdk + perflab bridge": ("trace/plain call", None),
    "trace-block/perflab span on": ("trace-block/c lock", TARGET_ON_NS),
    "trace-block/perflab span off": ("trace-block/c lock", TARGET_OFF_NS),
    "trace-block/otel span batch": ("trace-block/c lock", None),
    "trace-block/otel no-op span": ("trace-block/c lock", None),
    "trace-async-block/perflab span on": ("trace-async-block/c lock", TARGET_ON_NS),
    "trace-async-await/perflab span on": ("trace-async-await/c lock", TARGET_ON_NS),
}
#: The CPU-time table: interleaved rounds of calls per case (OpenTelemetry's are left
#: out: at 10–90 µs a call they would take minutes).
CPU_ROUNDS, CPU_CALLS = 15, 100_000


def verdict(low_ns: float, high_ns: float, target_ns: float | None) -> str:
    """The stated rule: met / not met / tied against the target (– without one)."""
    if target_ns is None:
        return "–"
    if high_ns <= target_ns:
        return "met"
    if low_ns > target_ns:
        return "not met"
    return "tied"


def overheads(summaries: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Per case: median and combined interval of (case − baseline), ns."""
    out = {}
    for case, (base, _target) in ROWS.items():
        c, b = summaries[case], summaries[base]
        out[case] = {
            "median_ns": (c["median_s"] - b["median_s"]) * 1e9,
            "low_ns": (c["ci_low_s"] - b["ci_high_s"]) * 1e9,
            "high_ns": (c["ci_high_s"] - b["ci_low_s"]) * 1e9,
            "case_ns": c["median_s"] * 1e9,
            "base_ns": b["median_s"] * 1e9,
        }
    return out


def cpu_times(rounds: int = CPU_ROUNDS, calls: int = CPU_CALLS) -> dict[str, float]:
    """Per perflab case and baseline of the workload ("group/name"): the least CPU time
    per call, ns (``time.thread_time_ns`` around ``calls`` calls of the case's timed
    body; the least of ``rounds`` rounds, the cases interleaved within each round)."""
    spec = importlib.util.spec_from_file_location("trace_overhead", WORKLOAD)
    assert spec is not None and spec.loader is not None
    workload = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workload)
    cases = [
        (f"{group}/{name}", body, setup)
        for group, (body, table, _) in workload.GROUPS.items()
        for name, setup in table.items()
        if not name.startswith("otel")
    ]
    best = {case: math.inf for case, _, _ in cases}
    for _ in range(rounds):
        for case, body, setup in cases:
            arg = setup()
            t0 = time.thread_time_ns()
            for _ in range(calls):
                body(arg)
            best[case] = min(best[case], (time.thread_time_ns() - t0) / calls)
    import perflab.trace

    perflab.trace.enable(True)
    return best


def cpu_lines(cpu: dict[str, float]) -> list[str]:
    """The CPU-time table (Markdown): each case's least CPU per call beside its
    baseline's, and the difference."""
    lines = [
        "| case | CPU per call (least) | baseline | overhead per span |",
        "|---|---:|---:|---:|",
    ]
    for case, ns in cpu.items():
        group = case.split("/")[0]
        base = next(b for c, (b, _) in ROWS.items() if c.startswith(group + "/"))
        if case != base:
            lines.append(
                f"| {case} | {ns:,.0f} ns | {cpu[base]:,.0f} ns | **{ns - cpu[base]:,.0f} ns** |"
            )
    return lines


def report(
    rows: dict[str, dict[str, float]], command: str, wall_s: float, cpu: dict[str, float]
) -> str:
    """The Markdown section for BENCHMARKS.md."""
    lines = [
        "## perflab.trace: cost per span beside OpenTelemetry (issue 17)",
        "",
        f"Machine: {machine()}. Shared 2-core machine with other jobs running: compare "
        "overheads measured side by side in this one run rather than absolutes.",
        "",
        f"Command: `{command}` ({wall_s:.0f} s). One `perflab run` of "
        "benchmarks/workloads/trace_overhead.py, cases interleaved in fresh processes: "
        "the same call of an empty function, plain or wrapped by each tracer's decorator; "
        "and `with make(name): pass` against a C-level context manager (`with "
        "locks.get(None): pass`, an uncontended lock), in a plain function "
        "(`trace-block`: perflab keeps the span on a per-thread stack), in a coroutine "
        "run by one `send` (`trace-async-block`: the block holds no `await`, so the "
        "per-thread stack too), and as `with make(name): await done` in a coroutine "
        "(`trace-async-await`: a block that spans an `await`, of an already-done "
        "asyncio future, so one `send` still runs it to its end: the span is kept in a "
        "ContextVar). A disabled span is `enable(False)` at run time: the decorated "
        "wrapper's flag check, and `span(name)` returning a shared no-op.",
        "",
        "Verdict rule: the overhead's interval is [case CI low − baseline CI high, case "
        "CI high − baseline CI low] (95% CIs of perflab run's medians, combined "
        "conservatively); **met** when it lies wholly at or under the target, **not met** "
        "when wholly above, **tied** when it contains the target. Targets: ≤ 250 ns per "
        "enabled span, ≤ 60 ns disabled (`enable(False)` at run time; with "
        "`PERFLAB_TRACE=0` set at start the decorator returns the function itself: "
        "0 ns by construction).",
        "",
        "| case | median per call | baseline | overhead per span (interval) | target | verdict |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for case, r in rows.items():
        target = ROWS[case][1]
        lines.append(
            f"| {case} | {r['case_ns']:,.0f} ns | {r['base_ns']:,.0f} ns | "
            f"**{r['median_ns']:,.0f} ns** ({r['low_ns']:,.0f} – {r['high_ns']:,.0f}) "
            f"| {f'≤ {target:.0f} ns' if target else '–'} "
            f"| {verdict(r['low_ns'], r['high_ns'], target)} |"
        )
    on = rows["trace/perflab.trace on"]["median_ns"]
    otel = rows["trace/otel sdk batch"]["median_ns"]
    noop = rows["trace/otel no-op tracer"]["median_ns"]
    lines += [
        "",
        f"OpenTelemetry SDK (batch processor) / perflab.trace, overhead per decorated "
        f"call, ratio of medians: **{otel / on:.1f}×**; even OpenTelemetry's no-op "
        f"tracer costs {noop / on:.1f}× perflab's recording span.",
        "",
        f"CPU time per call (no verdicts: a second view that a busy machine disturbs "
        f"less; `time.thread_time_ns` around {CPU_CALLS:,} calls, the least of "
        f"{CPU_ROUNDS} rounds with the cases interleaved, in the script's process):",
        "",
        *cpu_lines(cpu),
        "",
        f"Load average at the start: {LOAD_AT_START:.2f}.",
    ]
    return "\n".join(lines)


def main() -> int:
    from perflab import _core

    if _core.trace_debug_build:
        print(
            "error: the native core is a debug build; its timings mean nothing. Run "
            "`make bench`, or `maturin develop --release` first",
            file=sys.stderr,
        )
        return 2
    if sys.argv[1:] == ["--cpu-only"]:
        print("\n".join(cpu_lines(cpu_times())))
        return 0
    budget = sys.argv[1] if len(sys.argv) > 1 else "10s"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "trace.json"
        cmd = [
            PYTHON,
            "-m",
            "perflab",
            "run",
            str(WORKLOAD),
            "--budget",
            budget,
            "--no-alloc",
            "--quiet",
            "--json",
            str(out),
        ]
        wall, _ = timed(cmd)
        data = json.loads(out.read_text())
    summaries = {b["summary"]["id"]: b["summary"] for b in data["benchmarks"]}
    shown = " ".join(
        ["python", "-m", "perflab", *cmd[3:4], "benchmarks/workloads/trace_overhead.py", *cmd[5:-2]]
    )
    write_section(
        "trace",
        report(
            overheads(summaries),
            f"python benchmarks/trace.py {budget}  # runs: {shown}",
            wall,
            cpu_times(),
        ),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
