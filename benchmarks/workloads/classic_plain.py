"""A plain perf_counter_ns loop over one classic workload in this (fresh) process.

    python classic_plain.py NAME CALLS WARMUP   → prints one JSON list of ns per call

The reference a user would write by hand: no harness, each call timed on its own.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classic import WORKLOADS  # noqa: E402

if __name__ == "__main__":
    fn, calls, warmup = WORKLOADS[sys.argv[1]], int(sys.argv[2]), int(sys.argv[3])
    clock = time.perf_counter_ns
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(calls):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    print(json.dumps(times))
