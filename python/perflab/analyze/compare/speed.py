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
logs add, Welch–Satterthwaite df); and when the reference itself differs between the
files beyond the noise threshold, the seconds include a change of machine speed: the suite
gets a warning and no seconds verdict is "slower" or "faster" (:func:`hold_verdicts`:
they become inconclusive, and the ``--fail-on`` gate does not trip on them). Two runs
measured apart are not paired; on these machines the share of time spent in the slow
speed state moves between runs (issue 26: unchanged code read 1.62× slower while the
machine ran 30% slower), and dividing the reference out does not cancel it fully. The
normalized figure covers CPU-bound code; code that waits (I/O, sleep, locks) has CPU time
below its wall time and is better judged by the seconds of an interleaved run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perflab.analyze import reference
from perflab.analyze.decisions import FASTER, INCONCLUSIVE, SLOWER, verdict
from perflab.model import Benchmark
from perflab.model.comparison import SPEED_NORMALIZED, Row, Side
from perflab.model.estimate import Estimate
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


@dataclass
class MachineSpeed:
    """How much slower the machine ran during B than during A, by the speed reference.

    Attributes:
        ratio: B/A of the two files' reference times with its CI (> 1: B's machine slower).
        a_s / b_s: each file's reference time, s.
    """

    ratio: Estimate
    a_s: float
    b_s: float

    @property
    def words(self) -> str:
        """ "the machine ran 30% slower during B" (or faster)."""
        change = self.ratio.value - 1
        return f"the machine ran {abs(change):.0%} {'slower' if change > 0 else 'faster'} during B"


def machine_speed(
    a: Sequence[Benchmark], b: Sequence[Benchmark], threshold: float, confidence: float
) -> MachineSpeed | None:
    """The change of machine speed between two runs, when it is beyond the noise: the
    ratio of the files' reference times (:func:`perflab.analyze.reference.machine_reference`,
    every process of every benchmark pooled: the reference is the machine's, not the
    benchmark's) with a CI wholly outside 1 ± ``threshold``.

    Args:
        a / b: every benchmark of each file.
        threshold: the noise threshold t.
        confidence: CI level.

    Returns:
        The change, or None when the speeds do not differ beyond the threshold or a file
        has no reference timings (files from before the reference, ``perflab cmd``). O(N).
    """
    ref_a, ref_b = reference.machine_reference(a), reference.machine_reference(b)
    if ref_a is None or ref_b is None:
        return None
    ratio = (ref_b / ref_a).ci(confidence)
    if verdict(ratio.ci_low, ratio.ci_high, threshold) not in (SLOWER, FASTER):
        return None
    return MachineSpeed(ratio, ref_a.value, ref_b.value)


def machine_speed_warning(speed: MachineSpeed) -> str:
    """The plain-words warning of a change of machine speed between A and B."""
    return (
        f"{speed.words} than during A (its speed reference: {format_time(speed.b_s)} in B, "
        f"{format_time(speed.a_s)} in A; ratio CI {speed.ratio.ci_low:.2f}–"
        f"{speed.ratio.ci_high:.2f}): the seconds ratios include that change of machine, so "
        "their slower/faster verdicts are held as inconclusive (runs measured apart are not "
        "paired). The '(CPU ÷ reference)' rows divide it out for CPU-bound code; to judge "
        "the code, measure A and B paired: perflab run --compare-to REF (a git ref or "
        "folder), or both as cases of one group"
    )


def hold_verdicts(rows: Sequence[Row], speed: MachineSpeed) -> dict[str, str]:
    """Make the slower/faster verdicts of timed rows (python and command seconds; not the
    speed-normalized rows, which divide the reference out) inconclusive, with a note
    saying why. Returns the held ids with the verdict each would have had."""
    note = f"inconclusive: {speed.words}; measure paired with --compare-to REF"
    held = {}
    for row in rows:
        timed = row.kind in ("python", "command") and row.metric != SPEED_NORMALIZED
        if timed and row.verdict in (SLOWER, FASTER):
            held[row.id] = row.verdict
            row.verdict = INCONCLUSIVE
            row.notes.append(note)
    return held
