"""The worker's per-sample counters: what the kernel counted while each sample ran.

A thin layer over the Rust core's ``PerfCounters`` (rust/engine/src/counters/): opened
once by the sampling thread, read before and after each sample outside its timed region,
like the clock bracket (:mod:`perflab.engines.integrity`). Software events always (task
clock, page faults; CPU migrations and perf's context switches where kernel-side events
are permitted; voluntary and involuntary switches from getrusage); hardware events
(instructions, cycles, branch misses, cache misses) where the kernel exposes a PMU, else
absent with one note. Cost: 3–8 µs a sample on perflab's VM (a perf group read at each
end, getrusage only where perf's switch count moved, and the Python calls;
:func:`read_cost_ns`, benchmarks/preemption.py), against samples of at least 2 ms.

This module imports only the standard library: workers must start fast.
"""

from __future__ import annotations

import time
from typing import Any

from perflab.engines.integrity import load_core


class SampleCounters:
    """The counters of the thread that creates it, read around each sample.

    Call :meth:`start` before and :meth:`stop` after each sample. Without the native
    core (or on a kernel without perf events, where only the switch counts remain)
    it still works; with no core at all every sample's counters are None.

    Args:
        core: the native module; by default ``perflab._core`` is loaded; None: no
            counters.

    Attributes:
        names: the counters present, in the order the core reads them.
        software_note / hardware_note: why software or hardware events are absent
            (the kernel's words), or None.
    """

    def __init__(self, core: Any = ...) -> None:
        core = load_core() if core is ... else core
        perf = getattr(core, "PerfCounters", None) if core is not None else None
        self._perf = perf() if perf is not None else None
        self.names: tuple[str, ...] = tuple(self._perf.events) if self._perf else ()
        self.software_note: str | None = self._perf.software_note if self._perf else None
        self.hardware_note: str | None = (
            self._perf.hardware_note if self._perf else "no native core: no counters"
        )
        if self._perf is not None:
            self.start = self._perf.start  # type: ignore[method-assign]

    def start(self) -> None:
        """Read the counters at the start of a sample (a no-op without counters)."""

    def stop(self) -> tuple[int | None, ...] | None:
        """What each counter counted since :meth:`start`, in :attr:`names` order (None
        for a hardware count the multiplexed PMU never took); None without counters.
        The names are joined to the values by the parent (:func:`by_name`), not here."""
        return None if self._perf is None else self._perf.stop()

    def event(self) -> dict[str, Any]:
        """The fields of the worker's ``counters`` event (sent once, before the samples)."""
        return {
            "names": list(self.names),
            "software_note": self.software_note,
            "hardware_note": self.hardware_note,
        }


def by_name(names: list[str], values: list[int | None] | None) -> dict[str, int] | None:
    """A sample's counters as ``{name: count}`` (None counts left out), from the names
    of the ``counters`` event and a sample's values; None when either is missing or
    they differ in length (a damaged event)."""
    if values is None or not names or len(values) != len(names):
        return None
    return {n: int(v) for n, v in zip(names, values, strict=True) if v is not None}


def read_cost_ns(counters: SampleCounters, pairs: int = 20_000) -> float:
    """Mean cost of one sample's counter reads from Python (:meth:`SampleCounters.start`
    + :meth:`SampleCounters.stop`), ns, over ``pairs`` pairs. O(pairs)."""
    start, stop = counters.start, counters.stop
    t0 = time.perf_counter_ns()
    for _ in range(pairs):
        start()
        stop()
    return (time.perf_counter_ns() - t0) / pairs
