"""The timing loop of ``perflab doctor``'s speed-state probe, and the child process that
runs it on one CPU for the two-CPU part (:mod:`perflab.engines.speed_states`).

Kept to the standard library and the worker's reference loop so that a child starts in
tens of milliseconds. Protocol of ``python -m perflab.engines.speed_child CPU LOOPS``: the
child pins itself to CPU, writes one byte (ready) to stdout, reads ``START_NS DURATION_NS``
(CLOCK_MONOTONIC, which every process shares) from stdin, waits for START_NS, times the
loop for DURATION_NS and writes the int64 triples (start_ns, wall_ns, cpu_ns) to stdout.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from array import array

from perflab.engines.run.worker import reference_workload


def time_series(loops: int, end_ns: int) -> array:
    """Time ``reference_workload(loops)`` back to back until CLOCK_MONOTONIC passes
    ``end_ns`` (at least once), the garbage collector off.

    Returns:
        int64 triples (start_ns, wall_ns, thread CPU ns), flat.
    """
    out = array("q")
    wall, cpu, work = time.perf_counter_ns, time.thread_time_ns, reference_workload
    enabled = gc.isenabled()
    gc.disable()
    try:
        while True:
            c0 = cpu()
            t0 = wall()
            work(loops)
            t1 = wall()
            c1 = cpu()
            out.extend((t0, t1 - t0, c1 - c0))
            if t1 >= end_ns:
                return out
    finally:
        if enabled:
            gc.enable()


def main(argv: list[str]) -> int:
    """The child (module docstring). Returns the exit code: 2 on bad arguments or input."""
    try:
        cpu, loops = (int(a) for a in argv)
        os.sched_setaffinity(0, {cpu})
        sys.stdout.buffer.write(b"R")
        sys.stdout.flush()
        start_ns, duration_ns = (int(a) for a in sys.stdin.readline().split())
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"speed_child: {exc}\n")
        return 2
    ahead = start_ns - time.perf_counter_ns() - 2_000_000
    if ahead > 0:
        time.sleep(ahead * 1e-9)
    while time.perf_counter_ns() < start_ns:
        pass
    sys.stdout.buffer.write(time_series(loops, start_ns + duration_ns).tobytes())
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
