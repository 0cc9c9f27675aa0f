"""Comparing two runs at equal machine speed: the machine-speed reference divided out.

Two results files are usually measured at different times, and a shared or virtual
machine does not run at one speed from one hour to the next: on perflab's own 2-core
test VM, quiet by its load average, the medians of 20 repeat runs of the same code
varied by 8–13% (SD) while each run's CI was about ±11% (benchmarks/repeat.py), so a
seconds ratio of two runs can read "slower" with no change of code. Every ``perflab
run`` worker times a fixed loop between its samples (:mod:`perflab.analyze.reference`);
its CPU time per op ÷ that loop's time (``cpu_vs_reference``) varied 3–6% over the same
runs, and its CI held the later runs' figures in 84–100% of tries.

So for each python benchmark with reference timings on both sides, the comparison gains
a row (metric :data:`SPEED_NORMALIZED`, never primary: it does not enter the geometric
mean, and ``--fail-on`` reads the seconds, not it) with B/A of the speed-normalized
medians and its t-interval (:class:`perflab.analyze.stats.LogLocation`: variances of the
logs add, Welch–Satterthwaite df); and the suite a warning when the reference itself
differs between the files beyond the noise threshold — the seconds then include a change
of machine speed. The normalized figure covers CPU-bound code; code that waits (I/O,
sleep, locks) has CPU time below its wall time and is better judged by the seconds of an
interleaved run.
"""

from __future__ import annotations

from collections.abc import Sequence

from perflab.analyze import reference
from perflab.analyze.decisions import verdict
from perflab.model import Benchmark
from perflab.model.comparison import SPEED_NORMALIZED, Row, Side
from perflab.units import format_time

#: The unit of the speed-normalized rows (metric SPEED_NORMALIZED): reference loops per op (unitless).
REFERENCE_UNIT = "ref"


def speed_normalized_row(a: Benchmark, b: Benchmark, confidence: float) -> Row | None:
    """B/A of one python benchmark's CPU time per op ÷ machine-speed reference.

    Args:
        a / b: the benchmark in the baseline and the candidate file.
        confidence: CI level, e.g. 0.95.

    Returns:
        A non-primary row (id ``"<id> (CPU ÷ reference)"``, unit :data:`REFERENCE_UNIT`,
        sides in reference loops per op; verdict set by the caller's rule), or None when a
        side has fewer than 2 processes with reference timings (files from before the
        reference, or ``perflab cmd``). O(N).
    """
    if a.kind != "python" or b.kind != "python":
        return None
    loc_a = reference.normalized_location(reference.cpu_reference_pairs(a))
    loc_b = reference.normalized_location(reference.cpu_reference_pairs(b))
    if loc_a is None or loc_b is None:
        return None
    row = Row(
        f"{a.id} (CPU ÷ reference)",
        a.kind,
        SPEED_NORMALIZED,
        REFERENCE_UNIT,
        test_key=a.id,
        primary=False,
    )
    for side, loc, bench in (("a", loc_a, a), ("b", loc_b, b)):
        ci = loc.ci(confidence)
        setattr(row, side, Side(ci, int(loc.df) + 1, sum(len(p.samples) for p in bench.processes)))
    row.ratio = (loc_b / loc_a).ci(confidence)
    return row


def machine_speed_warning(
    a: Sequence[Benchmark], b: Sequence[Benchmark], threshold: float, confidence: float
) -> str | None:
    """A plain-words warning when the machine ran at a different speed in B than in A.

    Args:
        a / b: every benchmark of each file (their processes' reference timings are pooled:
            the reference is the machine's, not the benchmark's).
        threshold: the noise threshold t; a reference ratio whose CI lies wholly outside
            1 ± t is a change of machine speed.
        confidence: CI level.

    Returns:
        The warning, or None when the speeds do not differ beyond the threshold or a file
        has no reference timings. O(N).
    """
    ref_a, ref_b = reference.machine_reference(a), reference.machine_reference(b)
    if ref_a is None or ref_b is None:
        return None
    ratio = (ref_b / ref_a).ci(confidence)
    if verdict(ratio.ci_low, ratio.ci_high, threshold) not in ("slower", "faster"):
        return None
    change = ratio.value - 1
    how = "slower" if change > 0 else "faster"
    return (
        f"the machine ran {abs(change):.0%} {how} during B than during A (its speed "
        f"reference: {format_time(ref_b.value)} in B, {format_time(ref_a.value)} in A; "
        f"ratio CI {ratio.ci_low:.2f}–{ratio.ci_high:.2f}): the seconds ratios include "
        "that change of machine. The '(CPU ÷ reference)' rows divide it out for "
        "CPU-bound code; re-run both, interleaved, to be sure"
    )
