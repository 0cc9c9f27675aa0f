"""``perflab doctor``'s speed-state probe: a fixed loop timed back to back, alone and on
two CPUs at once, turned into figures by :mod:`perflab.analyze.speed_states`.

The loop is the machine-speed reference every ``perflab run`` worker times between its
samples (:func:`perflab.engines.run.worker.reference_workload`), with its iteration count
calibrated to last about :data:`LOOP_NS` here (short against a speed state, long against
a clock read). Each timing reads CLOCK_MONOTONIC (``time.perf_counter_ns``) and the
thread's CPU time around one loop; the garbage collector is off during a series.

Alone: this process times the loop for ``duration_s``. Two CPUs: two child processes
(:mod:`perflab.engines.speed_child`), each pinned to its own CPU, start at one moment on
CLOCK_MONOTONIC (which all processes share) and time the loop for ``duration_s``; their
timings are paired by time afterwards.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from array import array
from pathlib import Path

import numpy as np

from perflab.analyze import speed_states
from perflab.analyze.speed_states import Series, SpeedStates
from perflab.engines.run.worker import REFERENCE_LOOPS, reference_workload
from perflab.engines.speed_child import time_series

#: Target length of one timing, ns (≈ 50 µs: states last 0.2–3 ms on the VMs measured).
LOOP_NS = 50_000
#: Length of each series (alone, then two CPUs), s.
SERIES_S = 1.0
#: The children start timing this long after both said they are ready, ns.
START_DELAY_NS = 20_000_000
#: The children must finish within the series plus this, s.
CHILD_GRACE_S = 10.0


def calibrate_loops(target_ns: int = LOOP_NS) -> int:
    """Iterations of the reference loop lasting about ``target_ns`` here: scaled from the
    fastest of five timings of :data:`REFERENCE_LOOPS` iterations (100 to 10⁶)."""
    fastest = min(_one(REFERENCE_LOOPS) for _ in range(5))
    return int(min(1_000_000, max(100, round(REFERENCE_LOOPS * target_ns / max(fastest, 1)))))


def _one(loops: int) -> int:
    t0 = time.perf_counter_ns()
    reference_workload(loops)
    return time.perf_counter_ns() - t0


def _series(flat: array | bytes) -> Series:
    data = np.frombuffer(flat, dtype=np.int64).reshape(-1, 3)
    return Series(data[:, 0], data[:, 1], data[:, 2])


def _child_env() -> dict[str, str]:
    """Our environment with this perflab first on PYTHONPATH (the children import it)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def two_cpu_series(cpus: list[int], loops: int, duration_s: float) -> list[Series]:
    """Two children (:mod:`perflab.engines.speed_child`), pinned to ``cpus``, time the
    loop from a common start for ``duration_s``: each says when it is ready, then both
    get the same start moment :data:`START_DELAY_NS` ahead.

    Raises:
        RuntimeError: a child failed or did not finish in time (its stderr's last line).
    """
    argv = [sys.executable, "-P", "-m", "perflab.engines.speed_child"]
    children = [
        subprocess.Popen(
            [*argv, str(cpu), str(loops)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_child_env(),
        )
        for cpu in cpus
    ]
    deadline = time.monotonic() + duration_s + CHILD_GRACE_S
    try:
        for child in children:
            if not _ready(child, deadline):
                raise RuntimeError(f"a probe process did not start: {_last_line(child)}")
        start = time.perf_counter_ns() + START_DELAY_NS
        for child in children:
            child.stdin.write(f"{start} {int(duration_s * 1e9)}\n".encode())  # type: ignore[union-attr]
            child.stdin.close()  # type: ignore[union-attr]
        out = []
        for child in children:
            data = child.stdout.read()  # type: ignore[union-attr]
            if child.wait(timeout=max(0.1, deadline - time.monotonic())) != 0 or not data:
                raise RuntimeError(f"a probe process failed: {_last_line(child)}")
            out.append(_series(data))
        return out
    except subprocess.TimeoutExpired:
        raise RuntimeError("a probe process did not finish in time") from None
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait()
            for stream in (child.stdin, child.stdout, child.stderr):
                if stream is not None and not stream.closed:
                    stream.close()


def _ready(child: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait until ``child`` wrote its ready byte (False: it ended or the deadline passed)."""
    fd = child.stdout.fileno()  # type: ignore[union-attr]
    left = deadline - time.monotonic()
    return left > 0 and bool(select.select([fd], [], [], left)[0]) and os.read(fd, 1) == b"R"


def _last_line(child: subprocess.Popen[bytes]) -> str:
    """The last line the child wrote to stderr (after killing it if still running)."""
    if child.poll() is None:
        child.kill()
    child.wait()
    err = child.stderr.read().decode(errors="replace") if child.stderr else ""  # type: ignore[union-attr]
    return (err.strip().splitlines()[-1:] or ["no message"])[0]


def probe(duration_s: float = SERIES_S) -> SpeedStates:
    """Measure the machine's speed states: alone, then on two CPUs at once.

    Takes about 2 × ``duration_s`` + 0.4 s. The two-CPU part is skipped (with the reason
    in ``two_cpus_note``) when fewer than two CPUs are usable or a child fails.

    Raises:
        ValueError: the alone series held too few undisturbed timings (a machine so busy
            that nearly every timing waited for a core).
    """
    loops = calibrate_loops()
    alone = _series(time_series(loops, time.perf_counter_ns() + int(duration_s * 1e9)))
    figures = speed_states.series_figures(alone.wall_ns, alone.cpu_ns)
    cpus = sorted(os.sched_getaffinity(0))[:2] if hasattr(os, "sched_getaffinity") else []
    two, note = None, ""
    if len(cpus) < 2:
        note = "only one CPU is usable"
    else:
        try:
            a, b = two_cpu_series(cpus, loops, duration_s)
            two = speed_states.pair_figures(a, b, cpus)
        except (RuntimeError, ValueError, OSError) as exc:
            note = str(exc)
    return SpeedStates(
        loops=loops,
        loop_ns=figures.median_ns,
        duration_s=duration_s,
        alone=figures,
        two_cpus=two,
        two_cpus_note=note,
        advice=speed_states.advice(figures, two),
    )
