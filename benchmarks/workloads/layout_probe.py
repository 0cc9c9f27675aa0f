"""One fresh process timing a classic workload, with chosen parts of perflab's worker turned on.

    python layout_probe.py WORKLOAD SECONDS FEATURE[,FEATURE...]   → one JSON line

With no feature this is a plain loop (each call timed with two ``perf_counter_ns``
reads, ten untimed warmup calls). Each feature adds one thing perflab's worker
does differently, so benchmarks/layout.py can switch them on one at a time:

* ``imports``: import ``perflab.engines.run.worker`` (its modules, the native core,
  the clock monitor's TSC reference) before the workload;
* ``loader``: get the function through ``perflab.engines.run.suite.load_file`` of
  the benchmark file (importlib, a fresh module, the file's folder on sys.path)
  instead of a normal import;
* ``partial``: call it through ``functools.partial`` (as the worker does when a
  benchmark has arguments);
* ``time_loop``: time each sample with the worker's ``time_loop`` (an
  ``itertools.repeat`` loop with CPU-clock reads outside the wall bracket);
* ``gc_callback``: the worker's GC monitor in ``gc.callbacks``;
* ``monitor``: the clock cross-check bracket (native calls) around each sample;
* ``warmup``: the worker's warmup (until the timings stop drifting) instead of
  ten calls;
* ``emit``: write every sample as a JSON line, as the worker streams events;
* ``heap``: allocate PERFLAB_PROBE_HEAP small objects (kept alive) before the
  workload is imported, as perflab's layout randomization does — a layout change
  with no other effect;
* ``gc_freeze``: ``gc.freeze()`` after import (objects of start-up never
  scanned again).

With PERFLAB_PROBE_RING="IN,OUT,READY,BLOCKS" (file descriptors and a count) the
probe runs in lockstep with other probes: after warmup it writes to READY, then
BLOCKS times waits for a token on IN, makes RING_CALLS timed calls and passes the
token on OUT. Probes in one ring therefore take turns every few calls and meet
the machine's slow swings (another program's load, a busy host) alike: comparing
them cancels noise that comparing processes run one after another cannot.

``python layout_probe.py --alternate WORKLOAD SECONDS FEATURE`` instead alternates
blocks of calls with and without one in-process feature (partial, time_loop,
gc_callback, monitor, emit) and prints the ratio of their CPU medians.

Prints {"median_ns": …, "samples": [wall ns per call, …], "cpu_samples": […],
"cpu_median_ns": …, "cpu_p10_ns": …}: wall time per call and its median, and the
process CPU time per call with its median and 10th percentile (CPU time leaves out
the time spent waiting for a core that another program held).
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: calls a probe makes each time it holds the token in lockstep (ring) mode
RING_CALLS = 2


def alternate(name: str, seconds: float, feature: str) -> int:
    """Blocks of three calls with and without ``feature``, alternating in one process:
    prints {"ratio": median CPU per call with ÷ without}. Slow drift of the machine hits
    both alike, so even a small effect of the feature shows."""
    from perflab.engines.run import worker

    sys.path.insert(0, str(HERE))
    import functools

    from classic import WORKLOADS

    fn = WORKLOADS[name]
    gcmon = worker.GcMonitor()
    try:
        from perflab.engines.run.sampling import MONITOR as monitor
    except ImportError:  # perflab before the sampling module
        monitor = worker._MONITOR  # noqa: SLF001 - the probe imitates the worker
    monitor.ready()
    sink = open(os.devnull, "w")  # noqa: SIM115
    with_, without = [], []
    cpu = time.process_time_ns
    for _ in range(10):
        fn()
    deadline = time.perf_counter_ns() + seconds * 1e9
    block = 0
    while time.perf_counter_ns() < deadline or len(with_) < 9:
        on = block % 2 == 0
        block += 1
        call = functools.partial(fn) if on and feature == "partial" else fn
        if feature == "gc_callback":
            if on:
                gc.callbacks.append(gcmon)
            elif gcmon in gc.callbacks:
                gc.callbacks.remove(gcmon)
        for _ in range(3):
            c0 = cpu()
            if on and feature == "monitor":
                monitor.start()
            if on and feature == "time_loop":
                worker.time_loop(call, 1, gcmon)
            else:
                call()
            if on and feature == "monitor":
                monitor.stop()
            if on and feature == "emit":
                sink.write(json.dumps({"event": "sample", "n": 1, "wall": 1}) + "\n")
            (with_ if on else without).append(cpu() - c0)
    print(json.dumps({"ratio": statistics.median(with_) / statistics.median(without)}))
    return 0


def main() -> int:
    if sys.argv[1] == "--alternate":
        return alternate(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    name, seconds = sys.argv[1], float(sys.argv[2])
    features = set(filter(None, sys.argv[3].split(","))) if len(sys.argv) > 3 else set()
    keep = []
    if "heap" in features:
        count = int(os.environ.get("PERFLAB_PROBE_HEAP", "0"))
        try:
            from perflab.engines.layout import heap_padding
        except ImportError:  # a perflab without layout randomization: the same objects
            keep = [bytes(i * 37 % 512) for i in range(count)]
        else:
            keep = heap_padding(count)
    if "imports" in features or features & {"time_loop", "gc_callback", "monitor", "warmup"}:
        from perflab.engines.run import worker
    if "loader" in features:
        from perflab.engines.run.suite import load_file

        bench_file = load_file(HERE / "classic_bench.py")
        fn = next(s.func for s in bench_file.benches if s.name == name)
    else:
        sys.path.insert(0, str(HERE))
        from classic import WORKLOADS

        fn = WORKLOADS[name]
    if "gc_freeze" in features:
        gc.freeze()
    call = fn
    if "partial" in features:
        import functools

        call = functools.partial(fn)
    gcmon = None
    if "gc_callback" in features or "time_loop" in features or "warmup" in features:
        gcmon = worker.GcMonitor()
        if "gc_callback" in features:
            gc.callbacks.append(gcmon)
    out = open(os.devnull, "w") if "emit" in features else None  # noqa: SIM115
    call()
    if "warmup" in features:
        worker.warmup(call, 1, gcmon, 0.25)
    else:
        for _ in range(10):
            call()
    monitor = None
    if "monitor" in features:
        try:
            from perflab.engines.run.sampling import MONITOR as monitor
        except ImportError:  # perflab before the sampling module
            monitor = worker._MONITOR  # noqa: SLF001 - the probe imitates the worker
        monitor.ready()
    clock, cpu_clock = time.perf_counter_ns, time.process_time_ns
    samples, cpu_samples = [], []

    def sample() -> None:
        c0 = cpu_clock()
        if monitor is not None:
            monitor.start()
        if "time_loop" in features:
            ns = worker.time_loop(call, 1, gcmon)[0]
        else:
            t0 = clock()
            call()
            ns = clock() - t0
        if monitor is not None:
            monitor.stop()
        cpu_samples.append(cpu_clock() - c0)
        samples.append(ns)
        if out is not None:
            out.write(json.dumps({"event": "sample", "n": 1, "wall": ns}) + "\n")

    ring = os.environ.get("PERFLAB_PROBE_RING")
    if ring:  # lockstep with other probes: blocks of calls passed around like a token
        token_in, token_out, ready, blocks = map(int, ring.split(","))
        os.write(ready, b"R")
        for _ in range(blocks):
            os.read(token_in, 1)
            for _ in range(RING_CALLS):
                sample()
            os.write(token_out, b"T")
    else:
        deadline = clock() + seconds * 1e9
        while clock() < deadline or len(samples) < 5:
            sample()
    del keep
    ordered = sorted(cpu_samples)
    print(
        json.dumps(
            {
                "median_ns": statistics.median(samples),
                "samples": samples,
                "cpu_samples": cpu_samples,
                "cpu_median_ns": statistics.median(ordered),
                "cpu_p10_ns": ordered[len(ordered) // 10],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
