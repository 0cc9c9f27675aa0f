"""The layout's heap padding: small objects in CPython's pools and holes in the C heap
(perflab.engines.layout.heap_padding)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perflab.engines.layout import MEDIUM_EVERY, heap_padding

#: counts glibc's free chunks (mallinfo2, glibc ≥ 2.33) around a padding, in a fresh process
HOLES = """
import ctypes, sys
from perflab.engines.layout import heap_padding

class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
before = libc.mallinfo2().ordblks
kept = heap_padding(int(sys.argv[1]))
print(libc.mallinfo2().ordblks - before)
"""


def test_the_padding_keeps_small_objects_and_every_other_medium_block() -> None:
    kept = heap_padding(4095)
    small = [b for b in kept if len(b) < 512]
    medium = [b for b in kept if len(b) > 512]
    assert len(small) == 4095
    assert len(medium) == (4095 // MEDIUM_EVERY) // 2  # the other half was freed
    assert all(513 <= len(b) < 513 + 16_384 for b in medium)
    assert heap_padding(0) == [] and heap_padding(-3) == []


def test_the_freed_medium_blocks_stay_holes_in_the_c_heap() -> None:
    import ctypes

    if not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("this C library has no mallinfo2 (glibc ≥ 2.33) to count free chunks")
    holes = [
        int(subprocess.check_output([sys.executable, "-c", HOLES, str(n)], text=True))
        for n in (0, 4095)
    ]
    freed = (4095 // MEDIUM_EVERY) - (4095 // MEDIUM_EVERY) // 2
    # freed blocks below glibc's tcache limit (1,032 bytes) are not free chunks to
    # mallinfo, and a hole may merge with a free neighbour: most, not all, are counted
    assert holes[1] - holes[0] >= freed // 2, holes
