"""Workloads for the leak-detection test (tests/engines/run/test_leak_detection.py) and
benchmarks/memory.py: names starting with ``leak_`` keep memory on every call, ``flat_``
ones hold nothing once they return, and ``slow_leak`` keeps 1,057 B per call of ≥ 2 ms: too
slowly for RSS to pass its 64 KiB floor in 20 ms of samples (at most 10 calls, 11 kB), not
for the Python heap: the heap pass makes at least 2 calls however slow the machine, and 2
calls keep more than the heap rule's 1 KiB floor (a 50 µs call keeping 49 B needed 21 calls
in the pass's 20 ms, which a busy machine's late wake-ups did not always allow)."""

import itertools
import json
import random
import re
import time

import perflab

_KEPT: list = []
_CACHE: dict = {}
_COUNTER = itertools.count()
_ROW = {"id": 1, "name": "Chai", "price": 18.0, "tags": ["tea", "drink"], "stock": 39}
_WORDS = re.compile(r"\w+")


@perflab.bench()
def leak_bytes():
    """1,000 bytes kept per call."""
    _KEPT.append(bytes(1000))


@perflab.bench()
def leak_cache():
    """An unbounded cache: a new key (and a ~100-byte value) per call."""
    key = next(_COUNTER)
    _CACHE[key] = f"value-{key:090d}"


@perflab.bench()
def leak_objects():
    """A small object (a tuple of two ints, ~64 bytes) kept per call."""
    _KEPT.append((next(_COUNTER), 1))


@perflab.bench()
def slow_leak():
    """A sleep of 2 ms or more (slow, but allocating nothing), and a 1,024-byte ``bytes``
    (1,057 bytes) kept per call."""
    _KEPT.append(bytes(1024))
    time.sleep(2e-3)


@perflab.bench()
def flat_list():
    return sum(list(range(300)))


@perflab.bench()
def flat_dict():
    return len({str(i): i for i in range(100)})


@perflab.bench()
def flat_json():
    return json.loads(json.dumps(_ROW))


@perflab.bench()
def flat_sort():
    data = [random.random() for _ in range(200)]
    data.sort()
    return data[0]


@perflab.bench()
def flat_regex():
    return len(_WORDS.findall("the quick brown fox jumps over the lazy dog " * 5))


@perflab.bench()
def flat_bytearray():
    """A 1 MB buffer allocated and freed on every call (mmap'd, returned at once)."""
    return len(bytearray(1_000_000))
