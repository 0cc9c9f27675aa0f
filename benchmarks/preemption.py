"""How preempted samples differ: the evidence behind perflab's rule for them.

A sample is *preempted* when the scheduler switched its thread out while it could run (an
involuntary context switch, counted per sample by perflab's Rust core,
``perflab._core.PerfCounters``). This script times SAMPLES samples of a fixed pure-Python
workload (≈ TARGET_MS each) in three machine states and compares preempted and clean
samples:

* ``as is``: the machine as it is (on a shared VM, other programs come and go);
* ``competitor``: this process and a spinning competitor process pinned to the same CPU
  (os.sched_setaffinity): the scheduler must share that CPU between them;
* ``competitor, half``: the competitor pinned beside it for every other block of samples.

For each: the share of samples preempted; medians of wall time and task clock (CPU time
of the thread, perf ``task-clock``) of clean and preempted samples; the median off-CPU
time of a preempted sample (wall − task clock); and the median of all samples against the
median of the clean ones.

Rule printed at the end (perflab's choice): exclude preempted samples from the statistics
when the clean ones are at least half of a process's samples, else keep them all and say
so — justified when (1) a preempted sample's task clock matches a clean one's (the code
did the same work; the extra wall time is the wait), and (2) on a busy CPU most samples
are preempted, so excluding them all would leave too few.

Usage: python benchmarks/preemption.py [--samples N] [--target-ms MS]
Writes benchmarks/results/preemption.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

from perflab import _core


def work(loops: int) -> int:
    """A fixed pure-Python workload: integer arithmetic and dict stores."""
    total, table = 0, {}
    for i in range(loops):
        total += (i * 7) % 13
        table[i & 127] = total
    return total


def spin(cpu: int) -> None:
    """The competitor: pinned to ``cpu``, spins until killed."""
    os.sched_setaffinity(0, {cpu})
    while True:
        pass


def calibrate(target_ns: float) -> int:
    """Loops of :func:`work` that take about ``target_ns`` (median of 5 timings)."""
    loops = 1000
    while True:
        walls = []
        for _ in range(5):
            t0 = time.perf_counter_ns()
            work(loops)
            walls.append(time.perf_counter_ns() - t0)
        wall = statistics.median(walls)
        if wall >= target_ns * 0.9:
            return loops
        loops = int(loops * target_ns / max(wall, 1)) + 1


def sample(counters: object, loops: int) -> tuple[int, int, int]:
    """One sample: (wall ns, task clock ns, involuntary switches)."""
    names = counters.events
    counters.start()
    t0 = time.perf_counter_ns()
    work(loops)
    wall = time.perf_counter_ns() - t0
    values = dict(zip(names, counters.stop(), strict=True))
    return wall, values["task_clock_ns"], values["involuntary_switches"]


def measure(state: str, samples: int, loops: int, cpu: int) -> list[tuple[int, int, int]]:
    """``samples`` samples in ``state`` (see the module doc)."""
    counters = _core.PerfCounters()
    out: list[tuple[int, int, int]] = []
    competitor = None
    block = 20
    for k in range(samples):
        want = state == "competitor" or (state == "competitor, half" and (k // block) % 2)
        if want and competitor is None:
            competitor = multiprocessing.Process(target=spin, args=(cpu,), daemon=True)
            competitor.start()
            time.sleep(0.05)
        elif not want and competitor is not None:
            competitor.kill()
            competitor.join()
            competitor = None
        out.append(sample(counters, loops))
    if competitor is not None:
        competitor.kill()
        competitor.join()
    return out


def row(state: str, data: list[tuple[int, int, int]]) -> str:
    """One Markdown row of the table (module doc)."""
    clean = [d for d in data if d[2] == 0]
    hit = [d for d in data if d[2] > 0]

    def med(rows: list[tuple[int, int, int]], k: int) -> str:
        return f"{statistics.median(r[k] for r in rows) / 1e6:.3f}" if rows else "–"

    off = f"{statistics.median(r[0] - r[1] for r in hit) / 1e6:.3f}" if hit else "–"
    all_vs_clean = (
        f"{statistics.median(r[0] for r in data) / statistics.median(r[0] for r in clean):.3f}"
        if clean
        else "–"
    )
    return (
        f"| {state} | {len(data)} | {len(hit) / len(data):.0%} | {med(clean, 0)} | {med(hit, 0)}"
        f" | {med(clean, 1)} | {med(hit, 1)} | {off} | {all_vs_clean} |"
    )


def main() -> int:
    """Measure the three states, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--target-ms", type=float, default=2.0)
    args = parser.parse_args()
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    loops = calibrate(args.target_ms * 1e6)
    lines = [
        f"# Preempted samples on this machine ({time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})",
        "",
        f"Command: `python benchmarks/preemption.py --samples {args.samples} "
        f"--target-ms {args.target_ms:g}`; work({loops}) a sample; ms.",
        "",
        "| state | samples | preempted | wall clean | wall preempted | task clock clean "
        "| task clock preempted | off-CPU preempted | median all ÷ clean |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for state in ("as is", "competitor", "competitor, half"):
        lines.append(row(state, measure(state, args.samples, loops, cpu)))
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(__file__).parent / "results" / "preemption.md"
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
