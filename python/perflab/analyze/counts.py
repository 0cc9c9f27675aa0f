"""Instruction counts: instructions per op, the layout band, and verdicts on Ir.

Counted (``--count instructions``), a benchmark runs in a few worker processes, each
with its own memory layout (environment padding, hash seed, heap padding:
:mod:`perflab.engines.layout`), and Callgrind counts its calls
(:mod:`perflab.engines.run.counting`). Instruction counts repeat to a few parts in 10⁵
for one layout, so the question a count leaves is not noise but **layout**: how far the count moves when only
where things land in memory changes (Mytkowicz et al. 2009; CodSpeed users' "phantom"
5–13% regressions in its counted mode are such moves).

Methods:
    * per process, Ir per op = (median Ir of the counted samples − median Ir of the
      empty samples) / calls per sample: the fixed cost of the loop, the call and the
      client requests is counted through the same bracket and subtracted;
    * the benchmark's Ir per op is the median over its processes (its layouts);
    * the **layout band** is the range of the processes' values; its spread is
      (max − min) / median. A spread above :data:`LAYOUT_SENSITIVE_SPREAD` flags the
      benchmark **layout-sensitive**;
    * the default noise threshold of a comparison on Ir is
      max(:data:`COUNT_THRESHOLD_FLOOR`, :data:`BAND_MARGIN` × the larger band spread of
      the two sides): a threshold is never below the band (a change of code moves the
      layout, so a move within the band is no evidence);
    * a comparison's ratio B/A is the median of the processes' ratios when both sides
      ran the same layouts (same ``--seed``), else the ratio of the medians; its
      interval is the envelope [min B / max A, max B / min A] of the two bands, judged
      against the threshold by :func:`perflab.analyze.decisions.verdict`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from perflab.analyze.decisions import FAILED, verdict
from perflab.model import Benchmark
from perflab.model.counts import CommandCounts, Counts
from perflab.model.estimate import Estimate

#: a band spread above this flags a benchmark layout-sensitive (1%: ten times the
#: largest run-to-run spread of one layout measured on perflab's VM, benchmarks/count.py)
LAYOUT_SENSITIVE_SPREAD = 0.01
#: the smallest default threshold of a comparison on instruction counts (0.5%: a change
#: adding 1% more work is called slower)
COUNT_THRESHOLD_FLOOR = 0.005
#: the default threshold is this many times the larger band spread
BAND_MARGIN = 1.5
#: the events Callgrind counts with ``--cache-sim=yes`` (without it: Ir only)
CACHE_EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
#: the figures per op perflab derives with ``--cache-sim`` (cache_figures' keys)
CACHE_FIGURES = ("l1_misses", "ll_misses", "estimated_cycles")


def cache_figures(events: dict[str, int]) -> dict[str, int] | None:
    """Cache hits and misses, and estimated cycles, from a dump's events.

    L1 accesses = Ir + Dr + Dw; L1 misses = I1mr + D1mr + D1mw; LL misses (RAM) =
    ILmr + DLmr + DLmw; LL hits = L1 misses − LL misses; estimated cycles = L1 hits +
    5·LL hits + 35·RAM (Turner-Trauring's weights, as Gungraun computes its
    "Estimated Cycles"). An estimate from Valgrind's cache model, not a measurement.

    Returns:
        ``l1_hits``, ``l1_misses``, ``ll_hits``, ``ll_misses``, ``estimated_cycles``
        (counts), or None when the dump has no cache events (no ``--cache-sim``).
    """
    if not all(name in events for name in CACHE_EVENTS):
        return None
    accesses = events["Ir"] + events["Dr"] + events["Dw"]
    l1_misses = events["I1mr"] + events["D1mr"] + events["D1mw"]
    ll_misses = events["ILmr"] + events["DLmr"] + events["DLmw"]
    l1_hits, ll_hits = accesses - l1_misses, l1_misses - ll_misses
    return {
        "l1_hits": l1_hits,
        "l1_misses": l1_misses,
        "ll_hits": ll_hits,
        "ll_misses": ll_misses,
        "estimated_cycles": l1_hits + 5 * ll_hits + 35 * ll_misses,
    }


@dataclass
class CountSummary:
    """The counted figures of one benchmark.

    Attributes:
        ir_per_op: instructions per op, the median over processes (the headline figure).
        process_ir_per_op: each counted process's Ir per op, in process order.
        layouts: each counted process's layout (the ``layout`` of its Process).
        fixed_ir_per_op: the subtracted fixed cost (loop, call, client requests) per op,
            median over processes.
        cold_ir: instructions of the first call of a process (imports, caches), median.
        calls_per_sample: calls per counted sample (the first process's).
        samples: counted samples over all processes.
        band_low / band_high: the smallest and largest process value (Ir per op).
        band_spread: (band_high − band_low) / ir_per_op; 0 with one process.
        layout_sensitive: band_spread > :data:`LAYOUT_SENSITIVE_SPREAD`.
        threshold: the default noise threshold of a comparison of this benchmark alone
            (see the module doc).
        cache: with ``--cache-sim``: per-op L1 misses, LL misses and *estimated* cycles
            (medians over processes); empty otherwise.
        gc_enabled: whether automatic GC was on in every process (None: unknown/mixed).
        gc_collections: collections during the counted samples, summed over processes.
        command_processes: ``perflab cmd --count``: processes counted in one run (the
            command and its children; the median over runs); None for a function. For a
            command "op" is one whole run, and there is no fixed cost or cold count.
    """

    ir_per_op: float
    process_ir_per_op: list[float]
    layouts: list[dict[str, int]]
    fixed_ir_per_op: float
    cold_ir: float
    calls_per_sample: int
    samples: int
    band_low: float
    band_high: float
    band_spread: float
    layout_sensitive: bool
    threshold: float
    cache: dict[str, float] = field(default_factory=dict)
    gc_enabled: bool | None = None
    gc_collections: int | None = None
    command_processes: int | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON form (written beside the raw counts; ignored on read)."""
        return dict(self.__dict__)


def _per_op(counts: Counts, name: str) -> float | None:
    """(median of the samples − median of the empty samples) / calls, for one event or
    cache figure; None when it was not counted."""

    def value(values: list[int]) -> float | None:
        if name in counts.events:
            return counts.event(values, name)
        fig = cache_figures(dict(zip(counts.events, values, strict=False)))
        return None if fig is None else fig.get(name)

    full = [v for v in (value(s) for s in counts.samples) if v is not None]
    empty = [v for v in (value(s) for s in counts.empty) if v is not None]
    if not full:
        return None
    fixed = statistics.median(empty) if empty else 0.0
    return (statistics.median(full) - fixed) / max(counts.iterations, 1)


def _fixed_per_op(counts: Counts) -> float:
    """The empty samples' median Ir per call: the fixed cost subtracted per op."""
    empty = [counts.event(e, "Ir") or 0 for e in counts.empty]
    return statistics.median(empty) / max(counts.iterations, 1) if empty else 0.0


def threshold_for(*spreads: float) -> float:
    """The default threshold for sides with these band spreads: never below the band."""
    return max(COUNT_THRESHOLD_FLOOR, BAND_MARGIN * max(spreads, default=0.0))


def band(values: Sequence[float]) -> tuple[float, float, float]:
    """(low, high, spread) of per-layout values; spread = (high − low) / median.

    Raises:
        ValueError: no values.
    """
    if not values:
        raise ValueError("a band needs at least one value")
    mid = statistics.median(values)
    low, high = min(values), max(values)
    return low, high, (high - low) / mid if mid > 0 else 0.0


def counted_processes(bench: Benchmark) -> list[tuple[int, Counts]]:
    """(position, counts) of each process of ``bench`` that counted samples."""
    return [
        (i, p.counts)
        for i, p in enumerate(bench.processes)
        if getattr(p, "counts", None) is not None and p.counts.samples and not p.error
    ]


def summarize_counts(bench: Benchmark) -> CountSummary | None:
    """The :class:`CountSummary` of a counted benchmark, None when nothing was counted."""
    found = counted_processes(bench)
    values = [_per_op(c, "Ir") for _, c in found]
    if not found or any(v is None for v in values):
        return None
    per_op = [float(v) for v in values if v is not None]
    low, high, spread = band(per_op)
    counts = [c for _, c in found]
    fixed = [_fixed_per_op(c) for c in counts]
    cache: dict[str, float] = {}
    for name in CACHE_FIGURES:
        figs = [_per_op(c, name) for c in counts]
        if all(f is not None for f in figs):
            cache[name] = statistics.median(float(f) for f in figs if f is not None)
    gc_states = {c.gc_enabled for c in counts}
    collections = [c.gc_collections for c in counts]
    return CountSummary(
        ir_per_op=statistics.median(per_op),
        process_ir_per_op=per_op,
        layouts=[bench.processes[i].layout for i, _ in found],
        fixed_ir_per_op=statistics.median(fixed),
        cold_ir=statistics.median(c.cold[0] for c in counts),
        calls_per_sample=counts[0].iterations,
        samples=sum(len(c.samples) for c in counts),
        band_low=low,
        band_high=high,
        band_spread=spread,
        layout_sensitive=spread > LAYOUT_SENSITIVE_SPREAD,
        threshold=threshold_for(spread),
        cache=cache,
        gc_enabled=gc_states.pop() if len(gc_states) == 1 else None,
        gc_collections=None if None in collections else sum(c or 0 for c in collections),
    )


def summarize_command_counts(counted: Sequence[CommandCounts]) -> CountSummary | None:
    """The :class:`CountSummary` of ``perflab cmd --count``'s counted runs of one command
    (each run one layout; "per op" = per run), None when none counted."""
    runs = [c for c in counted if c.totals]
    if not runs:
        return None
    values = [float(c.totals[c.events.index("Ir")]) if "Ir" in c.events else 0.0 for c in runs]
    low, high, spread = band(values)
    return CountSummary(
        ir_per_op=statistics.median(values),
        process_ir_per_op=values,
        layouts=[c.layout for c in runs],
        fixed_ir_per_op=0.0,
        cold_ir=float("nan"),
        calls_per_sample=1,
        samples=len(runs),
        band_low=low,
        band_high=high,
        band_spread=spread,
        layout_sensitive=spread > LAYOUT_SENSITIVE_SPREAD,
        threshold=threshold_for(spread),
        command_processes=int(statistics.median(c.processes for c in runs)),
    )


@dataclass
class CountComparison:
    """B against A on instructions per op.

    Attributes:
        ratio: B/A with the band envelope as its interval (``Estimate``; level 1.0: an
            envelope, not a confidence interval).
        threshold: the threshold the verdict used (never below either band).
        verdict: faster, slower, same or inconclusive (failed when a side has no counts).
        notes: plain-words remarks (layout-sensitive sides, a raised threshold).
    """

    ratio: Estimate | None
    threshold: float
    verdict: str
    notes: list[str] = field(default_factory=list)


def compare_counts(
    a: CountSummary | None, b: CountSummary | None, threshold: float | None = None
) -> CountComparison:
    """Compare two counted summaries of one benchmark (module doc, "Methods").

    Args:
        a / b: the two sides (None: that side was not counted).
        threshold: the user's ``--threshold`` (None: the default from the bands). A
            threshold below a side's band spread is raised to it, with a note.

    Returns:
        A :class:`CountComparison`.
    """
    if a is None or b is None or a.ir_per_op <= 0 or b.ir_per_op <= 0:
        side = "A" if a is None or a.ir_per_op <= 0 else "B"
        return CountComparison(
            None, threshold or COUNT_THRESHOLD_FLOOR, FAILED, [f"{side}: no instruction counts"]
        )
    notes = [
        f"{side} is layout-sensitive: its count moves {s.band_spread:.2%} between layouts"
        for side, s in (("A", a), ("B", b))
        if s.layout_sensitive
    ]
    floor = max(a.band_spread, b.band_spread)
    if threshold is None:
        used = threshold_for(a.band_spread, b.band_spread)
    elif threshold < floor:
        used = floor
        notes.append(f"threshold raised to the layout band, {floor:.2%}")
    else:
        used = threshold
    if a.layouts == b.layouts and len(a.process_ir_per_op) == len(b.process_ir_per_op):
        point = statistics.median(
            y / x for x, y in zip(a.process_ir_per_op, b.process_ir_per_op, strict=True)
        )
    else:
        point = b.ir_per_op / a.ir_per_op
    low, high = b.band_low / a.band_high, b.band_high / a.band_low
    ratio = Estimate(point, min(low, point), max(high, point), 1.0)
    return CountComparison(ratio, used, verdict(ratio.ci_low, ratio.ci_high, used), notes)


def count_figures(benchmarks: Sequence[Benchmark]) -> list[tuple[str, CountSummary]]:
    """(id, summary) of every counted benchmark, in order: Python benchmarks from their
    processes' counts, commands from their counted runs (``Benchmark.counts``)."""
    out = []
    for bench in benchmarks:
        command_runs = getattr(bench, "counts", None)
        summary = (
            summarize_command_counts(command_runs) if command_runs else summarize_counts(bench)
        )
        if summary is not None:
            out.append((bench.id, summary))
    return out


def user_count_threshold(
    text: str, argv: Sequence[str], option: str = "--threshold"
) -> float | None:
    """The threshold of rows on instruction counts from the command line: the value of
    ``option`` when the user gave it in ``argv`` (not its default, not "auto"), else None
    (each row's threshold then comes from its layout bands). ``text`` is the option's
    parsed text (already checked). Raises UsageError on a bad value."""
    from perflab.analyze.decisions import parse_threshold

    given = any(a == option or a.startswith(option + "=") for a in argv)
    if not given or text.strip().lower() == "auto":
        return None
    return parse_threshold(text)
