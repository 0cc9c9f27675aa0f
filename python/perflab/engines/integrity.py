"""Clock integrity during measurement: flag samples whose clocks disagreed.

Every timed sample is bracketed by two native snapshots of MONOTONIC,
REALTIME, MONOTONIC_RAW and the TSC (one ``_core`` call each, well under
1 µs). Over the sample, MONOTONIC's delta is compared with the others':

    skew = Δclock − ΔMONOTONIC   (TSC ticks converted with the calibrated rate)

and the sample is flagged when ``|skew| > ABS_TOLERANCE_NS + REL_TOLERANCE ×
ΔMONOTONIC`` for any clock (the rule: :mod:`perflab.clock_rule`). A REALTIME step shows against MONOTONIC; a clock
that runs at the wrong rate (a misbehaving hypervisor, or libfaketime's
``FAKETIME="+0 x2"``, which fakes MONOTONIC, REALTIME *and* MONOTONIC_RAW)
shows only against the TSC, which ``rdtsc`` reads without any library in
between.

The TSC rate is calibrated once per process against the kernel's
MONOTONIC_RAW read by direct system call, which an LD_PRELOAD interposer
can't reach; the two reference pairs span everything the worker does before
sampling (import, setup, calibration, warmup), so calibration costs nothing
extra (the Linux kernel calibrates its TSC against a reference timer the same
way, keeping only tightly bracketed reads). Method in the field: hyperfine and
pyperf don't cross-check clocks; this follows clockperf's idea of comparing
clocks against each other, applied per sample.
"""

from __future__ import annotations

import time
from typing import Any

from perflab.clock_rule import ABS_TOLERANCE_NS, FLAG_PREFIX, REL_TOLERANCE

#: The TSC calibration spans at least this much true time, ns (error ≈ 0.2 µs / span).
MIN_CALIBRATION_NS = 20_000_000


def load_core() -> Any | None:
    """The native core, or None when it is not built (checks are then skipped)."""
    try:
        from perflab import _core
    except ImportError:
        return None
    return _core


class Monitor:
    """The per-sample clock cross-check of one worker process.

    Create it as early as possible (the TSC calibration starts then), call
    :meth:`ready` once before sampling, then :meth:`start` before and
    :meth:`stop` after each sample, and :meth:`span` once after the last: the
    clocks compared over the whole sampling phase catch a step that fell between
    two samples, which no sample's bracket sees.

    Args:
        core: the native module; by default ``perflab._core`` is loaded. With
            None (or when it is not built) every check is a no-op returning (None, None).
    """

    def __init__(self, core: Any = ...) -> None:
        self._core = load_core() if core is ... else core
        self._start_ref = self._core.tsc_reference() if self._core else None
        self._bracket: Any = None
        self._span: Any = None
        self.ticks_per_ns: float | None = None

    def ready(self) -> None:
        """Finish the TSC calibration (waiting out a span under 20 ms) and arm the bracket.

        After this, :meth:`start` is the native call itself, with no Python frame
        in between, to keep the per-sample cost low.
        """
        if self._core is None or self._bracket is not None:
            return
        self.ticks_per_ns = self._rate()
        self._bracket = self._core.ClockBracket(self.ticks_per_ns, REL_TOLERANCE, ABS_TOLERANCE_NS)
        # a bracket snapshots the clocks when it is made: this one spans all the samples
        self._span = self._core.ClockBracket(self.ticks_per_ns, REL_TOLERANCE, ABS_TOLERANCE_NS)
        self.start = self._bracket.start  # type: ignore[method-assign]

    def _rate(self) -> float | None:
        """TSC ticks per ns since construction, measured over at least 20 ms."""
        if self._start_ref is None:
            return None
        while (left := MIN_CALIBRATION_NS - (self._core.true_ns() - self._start_ref[1])) > 0:
            time.sleep(left * 1e-9)
        return self._core.tsc_rate(self._start_ref, self._core.tsc_reference())

    def start(self) -> None:
        """Snapshot the clocks at the start of a sample (a no-op before :meth:`ready`)."""

    def stop(self) -> tuple[int | None, str | None]:
        """Compare the clocks since :meth:`start`.

        Returns:
            (skew_ns, flag): the largest disagreement Δclock − ΔMONOTONIC, ns
            (negative: MONOTONIC advanced more than that clock), and
            ``"clock:<name>"`` when it exceeds the tolerance, else None.
            (None, None) before :meth:`ready` or without the native core.
        """
        if self._bracket is None:
            return None, None
        skew, clock, flagged = self._bracket.stop()
        return skew, FLAG_PREFIX + clock if flagged else None

    def span(self) -> tuple[int | None, str | None]:
        """Compare the clocks from :meth:`ready` (before the first sample) to now.

        Returns:
            (skew_ns, flag) over the whole span, as :meth:`stop` words them; a flag
            here with no flagged sample means the clocks disagreed between samples.
        """
        if self._span is None:
            return None, None
        skew, clock, flagged = self._span.stop()
        return skew, FLAG_PREFIX + clock if flagged else None


def bracket_cost_ns(core: Any, calls: int = 100_000) -> float:
    """Python-level cost of one integrity bracket (``start()`` + ``stop()``), ns.

    This is the overhead each sample pays, outside its timed region. Measured
    like :func:`perflab.engines.clocks.python_read_cost_ns`. O(calls).
    """
    from perflab.engines.clocks import python_call_cost_ns

    bracket = core.ClockBracket(core.tsc_calibrate(5_000_000), REL_TOLERANCE, ABS_TOLERANCE_NS)
    bracket.start()
    return python_call_cost_ns(bracket.start, calls=calls) + python_call_cost_ns(
        bracket.stop, calls=calls
    )
