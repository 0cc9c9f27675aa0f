"""Memory: perflab's RSS figures beside psrecord, /usr/bin/time -v and memray, same workloads.

Runs, in one go on this machine:
  A. peak RSS of a command that writes 10 MB every 20 ms up to 200 MB and holds it
     0.3 s: ``perflab cmd --memory`` (the summed tree, sampled every 10 ms, and wait4's
     max RSS) beside ``psrecord --interval 0.01 --include-children`` (max of its RSS
     column) and ``/usr/bin/time -v`` (Maximum resident set size, from wait4);
  B. the same with two such commands started by one shell at once: the tree's sum
     (perflab, psrecord) is about twice the largest process (wait4, time -v);
  C. a Python function that builds 100 MB of bytes and drops them: ``perflab run
     --memory`` (the worker's kernel peak − its RSS at the first timed sample) beside
     memray's peak heap for one call (``memray run`` + ``memray stats --json``);
  D. what sampling costs the measured command: ``perflab cmd`` wall time of a CPU-bound
     command with and without ``--memory`` (10 ms readings), in alternating invocations;
  E. the leak rules over seeds: tests/engines/run/data/leak_workloads.py (4 leaking, 6 not)
     with ``run --memory`` settings of 4 processes × 20 ms; how often each is flagged.

Verdicts are printed from the figures by one rule (common.RATIO_RULE): a ratio whose
95% CI contains 1 is a tie; otherwise met when the whole CI lies in the target's
range. CIs of ratios of medians are percentile bootstraps (2,000 resamples, seed 0)
over the runs of the two sides. E's target (≥ 95% of non-leaking verdicts not flagged,
every leaking one flagged) is a count, judged as stated.

Usage: python benchmarks/memory.py [--quick]   (--quick: 3 runs and 3 seeds)
Writes benchmarks/results/memory.md.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PERFLAB, PYTHON, RATIO_RULE, ROOT, machine, ratio_verdict, write_section  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = 3 if QUICK else 7
SEEDS = range(3 if QUICK else 10)
BIN = Path(PYTHON).parent
GROW = (
    "import time\nb = []\nfor _ in range(20):\n    b.append(b'x' * 10_000_000)\n"
    "    time.sleep(0.02)\ntime.sleep(0.3)\n"
)
HEAP = ROOT / "benchmarks" / "workloads" / "memory_heap.py"
MB = 1e6


def ratio_ci(a: list[float], b: list[float], resamples: int = 2000) -> tuple[float, float, float]:
    """median(a) / median(b) with a percentile-bootstrap 95% CI (independent resamples)."""
    rng = np.random.default_rng(0)
    x, y = np.asarray(a, float), np.asarray(b, float)
    reps = [
        np.median(rng.choice(x, x.size)) / np.median(rng.choice(y, y.size))
        for _ in range(resamples)
    ]
    low, high = np.percentile(reps, [2.5, 97.5])
    return float(np.median(x) / np.median(y)), float(low), float(high)


def perflab_cmd(commands: list[str], runs: int, memory: bool = True) -> list[dict]:
    """``perflab cmd`` on COMMANDS (run through sh); the results file's benchmarks."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cmd.json"
        cmd = [
            *PERFLAB,
            "cmd",
            "--shell",
            "--runs",
            str(runs),
            "--warmup",
            "1",
            "--quiet",
            "--json",
            str(out),
            *(["--memory"] if memory else []),
            *commands,
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())["benchmarks"]


def time_v(command: str) -> float:
    """/usr/bin/time -v's Maximum resident set size of ``sh -c COMMAND``, bytes."""
    proc = subprocess.run(
        ["/usr/bin/time", "-v", "sh", "-c", command], check=True, capture_output=True, text=True
    )
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return int(found.group(1)) * 1024  # type: ignore[union-attr]


def psrecord(command: str) -> float:
    """psrecord's highest RSS of COMMAND and its children (every 10 ms), bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.txt"
        subprocess.run(
            [
                str(BIN / "psrecord"),
                command,
                "--interval",
                "0.01",
                "--include-children",
                "--log",
                str(log),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rows = [
            line.split()
            for line in log.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
    return max(float(r[2]) for r in rows) * 1024**2  # its "Real (MB)" column is MiB


def peaks(command: str, runs: int) -> dict[str, list[float]]:
    """Per-run peaks of one command by every tool (sh -c COMMAND for all)."""
    bench = perflab_cmd([command], runs)[0]
    timed = [r for r in bench["runs"] if r["ok"] and not r["warmup"]]
    return {
        "perflab tree": [r["tree_rss_peak_bytes"] for r in timed],
        "perflab max RSS (wait4)": [r["max_rss_bytes"] for r in timed],
        "psrecord": [psrecord(command) for _ in range(runs)],
        "time -v": [time_v(command) for _ in range(runs)],
    }


def peak_section(
    title: str, figures: dict[str, list[float]], pairs: list[tuple[str, str, float, float]]
) -> list[str]:
    lines = [f"### {title}", "", "| tool | median peak RSS | runs |", "|---|---:|---:|"]
    lines += [
        f"| {k} | {statistics.median(v) / MB:.1f} MB | {len(v)} |" for k, v in figures.items()
    ]
    lines += ["", "| ratio | median (95% CI) | target | verdict |", "|---|---:|---|---|"]
    for a, b, lo, hi in pairs:
        r = ratio_ci(figures[a], figures[b])
        lines.append(
            f"| {a} / {b} | {r[0]:.3f} ({r[1]:.3f}–{r[2]:.3f}) | {lo:g}–{hi:g} | "
            f"{ratio_verdict(r[1], r[2], at_most=hi, at_least=lo)} |"
        )
    return lines + [""]


def heap_section() -> list[str]:
    """C: perflab run --memory's peak growth vs memray's peak heap, 100 MB built and dropped."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        subprocess.run(
            [
                *PERFLAB,
                "run",
                str(HEAP),
                "--memory",
                "--min-processes",
                str(RUNS),
                "--max-processes",
                str(RUNS),
                "--process-time",
                "50ms",
                "--no-alloc",
                "--quiet",
                "--json",
                str(out),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        procs = json.loads(out.read_text())["benchmarks"][0]["processes"]
        ours = [
            p["rss_peak_bytes"] - p["rss_start_bytes"]
            for p in procs
            if p.get("rss_peak_bytes") and p.get("rss_start_bytes")
        ]
        theirs = []
        for i in range(RUNS):
            trace, stats_json = Path(tmp) / f"m{i}.bin", Path(tmp) / f"m{i}.json"
            subprocess.run(
                [str(BIN / "memray"), "run", "-q", "-o", str(trace), str(HEAP)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            subprocess.run(
                [str(BIN / "memray"), "stats", "--json", "-o", str(stats_json), str(trace)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            theirs.append(float(json.loads(stats_json.read_text())["metadata"]["peak_memory"]))
    r = ratio_ci(ours, theirs)
    return [
        "### C. A Python function building 100 MB of bytes (perflab run --memory vs memray)",
        "",
        "| tool | median peak | runs |",
        "|---|---:|---:|",
        f"| perflab run --memory: kernel peak − RSS at the first timed sample | "
        f"{statistics.median(ours) / MB:.1f} MB | {len(ours)} |",
        f"| memray: peak heap of the script | {statistics.median(theirs) / MB:.1f} MB | "
        f"{len(theirs)} |",
        "",
        f"perflab / memray: {r[0]:.3f} ({r[1]:.3f}–{r[2]:.3f}); target 0.9–1.1: "
        f"**{ratio_verdict(r[1], r[2], at_most=1.1, at_least=0.9)}**",
        "",
    ]


def overhead_section() -> list[str]:
    """D: wall time of a CPU-bound command with and without the helper's 10 ms readings."""
    busy = f"{PYTHON} -c 'sum(range(6_000_000))'"
    plain: list[float] = []
    sampled: list[float] = []
    for _ in range(3):  # alternating, so that a slow stretch of the machine hits both
        for memory, walls in ((False, plain), (True, sampled)):
            walls += [
                r["wall_ns"]
                for r in perflab_cmd([busy], RUNS, memory)[0]["runs"]
                if r["ok"] and not r["warmup"]
            ]
    r = ratio_ci(sampled, plain)
    return [
        "### D. What --memory costs the measured command",
        "",
        f"`python -c 'sum(range(6_000_000))'`, {len(plain)} runs each in 3 alternating "
        f"invocations: median wall {statistics.median(plain) / 1e6:.1f} ms without, "
        f"{statistics.median(sampled) / 1e6:.1f} ms with --memory; "
        f"ratio {r[0]:.3f} ({r[1]:.3f}–{r[2]:.3f}); target ≤ 1.02: "
        f"**{ratio_verdict(r[1], r[2], at_most=1.02)}**",
        "",
    ]


def leak_section() -> list[str]:
    """E: how often the leak rule (RSS) and the heap rule flag each workload over seeds."""
    code = (
        "import json, sys\n"
        "from perflab.analyze import memory as am\n"
        "from perflab.engines.run.runner import Runner, Settings\n"
        "from perflab.engines.run.suite import expand, load_file\n"
        f"f = load_file({str(ROOT / 'tests/engines/run/data/leak_workloads.py')!r})\n"
        "s = Settings(seed=int(sys.argv[1]), min_processes=4, max_processes=4, "
        "precision=1e-9, process_seconds=0.02, warmup_max_s=0.05, allocations=False, "
        "memory_interval_s=0.01)\n"
        "b = Runner(str(f.path), expand(f), s, 1e6, 50.0).run()\n"
        "print(json.dumps({m.id.split('/')[-1]: [m.leaking, m.heap_growing] "
        "for m in am.summaries(b)}))\n"
    )
    flags: dict[str, list[list[bool]]] = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    for seed in SEEDS:
        out = subprocess.run(
            [PYTHON, "-c", code, str(seed)], check=True, capture_output=True, text=True, env=env
        ).stdout
        for name, flagged in json.loads(out.splitlines()[-1]).items():
            flags.setdefault(name, []).append(flagged)

    def count(prefix: str, rule: int) -> list[bool]:
        return [f[rule] for k, v in flags.items() if k.startswith(prefix) for f in v]

    flat, leaks, slow = count("flat_", 0), count("leak_", 0), count("slow_", 0)
    heap_flat, heap_leaks = count("flat_", 1), count("leak_", 1) + count("slow_", 1)
    ok = sum(flat) <= 0.05 * len(flat) and all(leaks)
    heap_ok = sum(heap_flat) <= 0.05 * len(heap_flat) and all(heap_leaks)
    lines = [
        "### E. The leak rules over seeds (4 processes × 20 ms of samples each)",
        "",
        "`slow_leak` keeps 1,057 B per call of ≥ 2 ms: at most 11 kB over 20 ms of samples, "
        "under the RSS rule's 64 KiB floor; the heap rule reads it from the heap pass "
        "(`leak?` shows `heap grows`).",
        "",
        "| workload | RSS rule: growing | heap rule: heap grows |",
        "|---|---:|---:|",
    ]
    lines += [
        f"| {k} | {sum(f[0] for f in v)} of {len(v)} | {sum(f[1] for f in v)} of {len(v)} |"
        for k, v in flags.items()
    ]
    return lines + [
        "",
        f"RSS rule: non-leaking flagged {sum(flat)} of {len(flat)} "
        f"({sum(flat) / max(len(flat), 1):.0%}); leaking flagged {sum(leaks)} of {len(leaks)} "
        f"(and the slow leak {sum(slow)} of {len(slow)}); target ≥ 95% of non-leaking not "
        f"flagged and every `leak_` one flagged: **{'met' if ok else 'not met'}**",
        "",
        f"heap rule: non-leaking flagged {sum(heap_flat)} of {len(heap_flat)}; leaking "
        f"(the slow leak included) flagged {sum(heap_leaks)} of {len(heap_leaks)}; target ≥ "
        f"95% of non-leaking not flagged and every leaking one flagged: "
        f"**{'met' if heap_ok else 'not met'}**",
        "",
    ]


def main() -> None:
    grow = f'{PYTHON} -c "{GROW}"'
    both = f"{grow} & {grow}; wait"
    text = [
        "## Memory: perflab beside psrecord, /usr/bin/time -v and memray",
        "",
        f"`python benchmarks/memory.py{' --quick' if QUICK else ''}` on {machine()}. Verdicts: "
        f"{RATIO_RULE}.",
        "",
    ]
    single = peaks(grow, RUNS)
    text += peak_section(
        "A. One command writing 200 MB",
        single,
        [
            ("perflab tree", "psrecord", 0.95, 1.05),
            ("perflab tree", "time -v", 0.95, 1.05),
            ("perflab max RSS (wait4)", "time -v", 0.98, 1.02),
        ],
    )
    pair = peaks(both, RUNS)
    text += peak_section(
        "B. Two such commands at once under one shell",
        pair,
        [
            ("perflab tree", "psrecord", 0.95, 1.05),
            ("perflab max RSS (wait4)", "time -v", 0.98, 1.02),
        ],
    )
    text += [
        "Reading A and B: `/usr/bin/time -v` and perflab's `max RSS` are the same number "
        "(the kernel's peak of the largest process, from wait4); perflab's tree peak and "
        "psrecord sum every process of the tree, sampled every 10 ms, so in B they read about "
        "twice the single peak, and a peak shorter than the interval can fall between two "
        "readings (both read a little below the kernel's peak). psrecord runs the command "
        "through its own shell, as perflab does here with --shell.",
        "",
    ]
    text += heap_section()
    text += [
        "Reading C: memray counts the bytes the script's allocations asked for (its heap); "
        "perflab counts resident pages at the kernel's peak above the worker's RSS after "
        "warmup: allocator rounding and pages that were resident already separate them.",
        "",
    ]
    text += overhead_section()
    text += leak_section()
    write_section("memory", "\n".join(text))


if __name__ == "__main__":
    main()
