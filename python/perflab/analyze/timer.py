"""The timer-error rule: a sample must last long enough for the timer's error to vanish.

Timer error = Python read cost + observed resolution (pyperf and Google Benchmark
reason the same way about timer overhead); a sample is long enough when that error is
at most :data:`TIMER_ERROR_FRACTION` of it. :func:`perflab.engines.clocks.measure_timer`
measures the figures; ``perflab run`` sizes its samples by them and ``perflab doctor``
words the floor.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Timer error must stay under this fraction of one sample (0.1%).
TIMER_ERROR_FRACTION = 0.001


@dataclass(frozen=True)
class TimerInfo:
    """The timer figures of this machine.

    Attributes:
        clock: the clock behind ``perf_counter_ns`` ("monotonic" on Linux).
        native_read_ns: native read cost of that clock, ns per read.
        python_read_ns: cost of one ``time.perf_counter_ns()`` call from Python, ns.
        resolution_ns: smallest non-zero step seen between reads, ns.
    """

    clock: str
    native_read_ns: float | None
    python_read_ns: float
    resolution_ns: float

    @property
    def error_ns(self) -> float:
        """Timer error of one sample: Python read cost + resolution, ns."""
        return self.python_read_ns + self.resolution_ns

    @property
    def min_sample_ns(self) -> float:
        """Shortest sample whose timer error is ≤ 0.1% of it, ns."""
        return self.error_ns / TIMER_ERROR_FRACTION

    def to_dict(self) -> dict[str, Any]:
        """JSON form, with the derived figures included."""
        return {**asdict(self), "error_ns": self.error_ns, "min_sample_ns": self.min_sample_ns}
