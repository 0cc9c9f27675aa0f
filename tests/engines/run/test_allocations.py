"""The allocation pass: totals a call allocates (freed or not), its peak and the blocks it
keeps, each net of the reading's own objects."""

from __future__ import annotations

import pytest

from perflab.engines.integrity import load_core
from perflab.engines.run.sampling import allocations

CORE = load_core()
needs_core = pytest.mark.skipif(
    CORE is None or not hasattr(CORE, "alloc_count_start"),
    reason="the native core (make build) counts allocations",
)


def test_a_call_that_allocates_nothing_reads_zero() -> None:
    # `1 + 1` is folded to the constant 2, a preallocated small int: nothing is allocated.
    # Before the empty-call floor was subtracted this read "28 B" (the reading's own int).
    for call in (lambda: 1 + 1, lambda: None):
        got = allocations(call)
        assert (got["peak_bytes"], got["blocks"]) == (0.0, 0.0)
        assert got["total_bytes"] in (0.0, None) and got["total_blocks"] in (0.0, None)


def test_a_kept_list_reads_its_size_and_its_blocks() -> None:
    got = allocations(lambda: [0] * 100)
    # a 100-slot list: 56 B header + 800 B of pointers, nothing of the floor's own
    assert 856 <= got["peak_bytes"] < 856 + 64
    assert got["blocks"] >= 1


def test_memory_freed_inside_the_call_counts_in_the_peak_not_the_blocks() -> None:
    def churn() -> int:
        data = bytearray(100_000)
        return len(data)

    got = allocations(churn)
    # the 100 kB buffer is freed before the call returns: in the peak, not in the blocks
    # (which hold the returned int and little else)
    assert got["peak_bytes"] >= 100_000 and got["blocks"] <= 2


@needs_core
def test_totals_count_what_was_allocated_and_freed() -> None:
    """Issue 28 §4: a loop allocating and freeing 1,000 × 1 KiB read "2.26 kB, 1 block"
    (the peak and the blocks kept). The totals see every allocation."""

    def loop() -> None:
        for _ in range(1000):
            buf = bytearray(1024)
            del buf

    got = allocations(loop)
    assert got["total_bytes"] >= 1000 * 1024
    assert got["total_blocks"] >= 1000
    assert got["peak_bytes"] < 10_000 and got["blocks"] <= 2


@needs_core
def test_counting_does_not_overlap_tracemalloc() -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError, match="stop tracemalloc"):
            CORE.alloc_count_start()  # type: ignore[union-attr]
    finally:
        tracemalloc.stop()
