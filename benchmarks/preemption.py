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


def figures(data: list[tuple[int, int, int]]) -> dict[str, float]:
    """The figures of one state: shares and medians (ms), NaN where a side is empty."""
    clean = [d for d in data if d[2] == 0]
    hit = [d for d in data if d[2] > 0]
    nan = float("nan")

    def med(rows: list[tuple[int, int, int]], k: int) -> float:
        return statistics.median(r[k] for r in rows) / 1e6 if rows else nan

    return {
        "samples": len(data),
        "preempted": len(hit) / len(data),
        "wall_clean": med(clean, 0),
        "wall_hit": med(hit, 0),
        "task_clean": med(clean, 1),
        "task_hit": med(hit, 1),
        "off_hit": statistics.median(r[0] - r[1] for r in hit) / 1e6 if hit else nan,
        "all_vs_clean": statistics.median(r[0] for r in data) / 1e6 / med(clean, 0),
    }


def row(state: str, f: dict[str, float]) -> str:
    """One Markdown row of the table (module doc)."""
    cells = [f"{f[k]:.3f}" for k in ("wall_clean", "wall_hit", "task_clean", "task_hit")]
    return (
        f"| {state} | {f['samples']:.0f} | {f['preempted']:.0%} | {' | '.join(cells)} "
        f"| {f['off_hit']:.3f} | {f['all_vs_clean']:.2f} |"
    )


#: verdict rules: preempted samples did the same work when their median task clock is
#: within SAME_WORK of the clean samples'; they distort the median when the median of all
#: samples is more than DISTORTS above the clean samples' median
SAME_WORK = 0.10
DISTORTS = 0.05


def verdicts(rows: dict[str, dict[str, float]]) -> list[str]:
    """The two verdicts, printed from the figures by the rules above."""
    busy = [f for f in rows.values() if f["preempted"] > 0 and f["preempted"] < 1]
    same = all(abs(f["task_hit"] / f["task_clean"] - 1) <= SAME_WORK for f in busy)
    distorts = any(f["all_vs_clean"] > 1 + DISTORTS for f in busy)
    return [
        f"- same work (preempted task clock within ±{SAME_WORK:.0%} of clean, every state "
        f"with both kinds): **{'yes' if same else 'no'}**",
        f"- preempted samples distort the median (all ÷ clean > {1 + DISTORTS:.2f} in some "
        f"state): **{'yes' if distorts else 'no'}**",
        "- so perflab flags them `preempted` and leaves them out of the statistics"
        if same and distorts
        else "- the evidence does not support excluding them here",
    ]


def cost_lines() -> list[str]:
    """The per-sample cost of reading the counters, native and from Python (median of 7)."""
    from perflab.engines.run.counters import SampleCounters, read_cost_ns

    counters = SampleCounters()
    perf = _core.PerfCounters()
    native = statistics.median(perf.read_cost_ns(20_000) for _ in range(7))
    python = statistics.median(read_cost_ns(counters, 20_000) for _ in range(7))
    return [
        f"Cost of reading the counters around one sample (start + stop, median of 7 × "
        f"20,000; {_core.build_profile()} build; outside the timed region): native "
        f"{native / 1e3:.1f} µs, from Python {python / 1e3:.1f} µs; "
        f"{python / 2e6:.2%} of a 2 ms sample (perflab's shortest by default).",
        "",
        f"Counters present: {', '.join(counters.names)}. Hardware: "
        f"{counters.hardware_note or 'available'}.",
    ]


def main() -> int:
    """Measure the three states, print and write the section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--target-ms", type=float, default=2.0)
    args = parser.parse_args()
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    loops = calibrate(args.target_ms * 1e6)
    load0 = os.getloadavg()[0]
    rows = {
        state: figures(measure(state, args.samples, loops, cpu))
        for state in ("as is", "competitor", "competitor, half")
    }
    lines = [
        "## Per-sample counters: preempted samples and the cost of reading them (issue 27)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load average "
        f"{load0:.1f} at the start; `python benchmarks/preemption.py --samples "
        f"{args.samples} --target-ms {args.target_ms:g}`; a sample is work({loops}) "
        "(pure Python), times in ms, medians. Preempted: an involuntary context switch "
        "during the sample. This process is pinned to one CPU in every state.",
        "",
        "| state | samples | preempted | wall clean | wall preempted | task clock clean "
        "| task clock preempted | off-CPU preempted | median all ÷ clean |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *(row(state, f) for state, f in rows.items()),
        "",
        *verdicts(rows),
        "",
        *cost_lines(),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(__file__).parent / "results" / "preemption.md"
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
