"""Per-sample counters (``perflab run`` in timed mode): preempted samples and the counts
per op.

Each sample of a worker carries what the kernel counted during it
(:mod:`perflab.engines.run.counters`, read by the Rust core): task clock, page faults,
CPU migrations, voluntary and involuntary context switches, and where the kernel exposes
a PMU, instructions, cycles, branch misses and cache misses.

**Preempted samples.** A sample with an involuntary context switch was preempted: the
scheduler took the CPU from it while it could run. Measured on perflab's VM
(benchmarks/preemption.py, BENCHMARKS.md): a preempted 2 ms sample took 3–14× the wall
time of a clean one for the same task clock (+3–5%: caches refilled after the switch), and
on a busy machine over half the samples were preempted, pulling the median of all
samples to 1.3–5× the clean median. So the rule (:func:`flag_preempted`): a process's
preempted samples are flagged ``"preempted"`` (kept in the file, left out of the
statistics, as clock-flagged samples are) when at least :data:`MIN_CLEAN_SAMPLES` clean
samples remain in that process; otherwise none of its samples is flagged (there would be
too little left to measure) and the summary says how many preempted samples it kept.
Voluntary switches (the code blocked: I/O, sleep, a lock) never flag a sample: that wait
is the code's own doing.

**Counts per op.** Instructions per op = median over the statistics' samples of
instructions ÷ (calls × ops per call); IPC = Σ instructions ÷ Σ cycles over those samples.
Both are None where the hardware events are absent (most VMs), never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perflab.model import Benchmark, Process, Sample

#: ``Sample.flagged`` of a sample that was preempted (an involuntary context switch).
PREEMPTED_FLAG = "preempted"
#: A process's preempted samples are excluded only when this many clean samples remain.
MIN_CLEAN_SAMPLES = 3
#: The hardware counters, absent where the kernel has no PMU.
HARDWARE_EVENTS = ("instructions", "cycles", "branch_misses", "cache_misses")


def is_preempted(sample: Sample) -> bool | None:
    """True when ``sample`` had an involuntary context switch; None without counters
    (files written before per-sample counters, imported files, threads mode)."""
    if sample.counters is None or "involuntary_switches" not in sample.counters:
        return None
    return sample.counters["involuntary_switches"] > 0


def flag_preempted(process: Process) -> int:
    """Apply the preemption rule (module doc) to ``process``'s samples, in place: flag
    its preempted, not yet flagged samples ``"preempted"`` when at least
    :data:`MIN_CLEAN_SAMPLES` samples are neither. O(samples).

    Returns:
        The number of samples flagged now (0 when the rule kept them all).
    """
    hit = [s for s in process.samples if not s.flagged and is_preempted(s)]
    clean = sum(1 for s in process.samples if not s.flagged and is_preempted(s) is False)
    if not hit or clean < MIN_CLEAN_SAMPLES:
        return 0
    for s in hit:
        s.flagged = PREEMPTED_FLAG
    return len(hit)


@dataclass(frozen=True)
class CounterFigures:
    """What a benchmark's per-sample counters say.

    Attributes:
        preempted: samples with an involuntary context switch (excluded or kept).
        preempted_excluded: those flagged ``"preempted"`` and left out of the statistics.
        instructions_per_op: median user-space instructions per op over the statistics'
            samples; None without hardware counters.
        ipc: instructions per cycle over those samples; None without hardware counters.
        hardware_note: why hardware counters are absent (the kernel's words), or None.
    """

    preempted: int
    preempted_excluded: int
    instructions_per_op: float | None
    ipc: float | None
    hardware_note: str | None


def counter_figures(bench: Benchmark) -> CounterFigures | None:
    """The counter figures of ``bench``, or None when none of its samples has counters.
    O(samples)."""
    procs = [p for p in bench.processes if any(s.counters is not None for s in p.samples)]
    if not procs:
        return None
    samples = [s for p in procs for s in p.samples]
    kept = [s for s in samples if not s.flagged and s.counters is not None]
    both = [s for s in kept if _has(s, "instructions") and _has(s, "cycles")]
    cycles = sum(s.counters["cycles"] for s in both)
    notes = [p.hardware_note for p in procs if p.hardware_note]
    return CounterFigures(
        preempted=sum(1 for s in samples if is_preempted(s)),
        preempted_excluded=sum(1 for s in samples if s.flagged == PREEMPTED_FLAG),
        instructions_per_op=_per_op(kept, "instructions", bench.ops_per_call),
        ipc=sum(s.counters["instructions"] for s in both) / cycles if cycles else None,
        hardware_note=notes[0] if notes else None,
    )


def _has(sample: Sample, name: str) -> bool:
    return sample.counters is not None and sample.counters.get(name) is not None


def _per_op(samples: Sequence[Sample], name: str, ops_per_call: int) -> float | None:
    """Median of counter ``name`` per op over the samples that have it, or None."""
    values = [s.counters[name] / s.iterations / ops_per_call for s in samples if _has(s, name)]
    return float(np.median(values)) if values else None
