"""The tracemalloc pass reads what the call allocates, net of the reading's own objects."""

from __future__ import annotations

from perflab.engines.run.sampling import allocations


def test_a_call_that_allocates_nothing_reads_zero() -> None:
    # `1 + 1` is folded to the constant 2, a preallocated small int: nothing is allocated.
    # Before the empty-call floor was subtracted this read "28 B" (the reading's own int).
    assert allocations(lambda: 1 + 1) == (0.0, 0.0)
    assert allocations(lambda: None) == (0.0, 0.0)


def test_a_kept_list_reads_its_size_and_its_blocks() -> None:
    peak, blocks = allocations(lambda: [0] * 100)
    # a 100-slot list: 56 B header + 800 B of pointers, nothing of the floor's own
    assert 856 <= peak < 856 + 64
    assert blocks >= 1


def test_memory_freed_inside_the_call_counts_in_the_peak_not_the_blocks() -> None:
    def churn() -> int:
        data = bytearray(100_000)
        return len(data)

    peak, blocks = allocations(churn)
    # the 100 kB buffer is freed before the call returns: in the peak, not in the blocks
    # (which hold the returned int and little else)
    assert peak >= 100_000 and blocks <= 2
