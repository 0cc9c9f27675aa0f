"""The benchmark file behind tests/golden/data/run-*.json (kept to regenerate them).

Every kind of table ``perflab run`` prints: a group with a baseline and a metric, a
parameter scan, a staged group (two stages, a payload metric), threads mode, and a
benchmark that fails. ``GOLDEN_SLOWER=1`` makes the second file's "sorted" case slower,
so that ``perflab compare`` has a verdict to give.
"""

import json
import os
import pickle
import threading

import perflab

DATA = list(range(200))
SLOWER = os.environ.get("GOLDEN_SLOWER") == "1"


@perflab.bench(group="sort", baseline=True)
def sorted_copy():
    return sorted(DATA * (3 if SLOWER else 1))


@perflab.bench(group="sort")
def list_sort():
    copy = list(DATA)
    copy.sort()
    return copy


@perflab.metric(group="sort", unit="B")
def size(result):
    return len(pickle.dumps(result))


@perflab.bench(group="scan", params={"n": [10, 100, 1000]})
def sum_range(n):
    return sum(range(n))


@perflab.bench(group="scan", params={"n": [10, 100, 1000]}, setup=lambda n: list(range(n)))
def sum_list(values, n):
    return sum(values)


def _rows():
    return [{"id": i, "name": f"row {i}"} for i in range(50)]


perflab.bench(
    lambda rows: json.dumps(rows),
    name="json",
    group="codec",
    stage="dump",
    setup=_rows,
    baseline=True,
)
perflab.bench(
    lambda text: json.loads(text),
    name="json",
    group="codec",
    stage="load",
    setup=lambda: json.dumps(_rows()),
    baseline=True,
)
perflab.bench(
    lambda rows: pickle.dumps(rows), name="pickle", group="codec", stage="dump", setup=_rows
)
perflab.bench(
    lambda data: pickle.loads(data),
    name="pickle",
    group="codec",
    stage="load",
    setup=lambda: pickle.dumps(_rows()),
)


@perflab.metric(group="codec", stage="dump", unit="B")
def payload(result):
    return len(result)


_LOCK = threading.Lock()


@perflab.bench(group="locked", threads=[1, 2, 4])
def locked_increment():
    with _LOCK:
        return sum(range(50))


@perflab.bench(group="broken")
def fails():
    raise ValueError("broken on purpose")
