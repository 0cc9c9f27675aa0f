"""Paired sampling: A and B timed side by side, so both meet the machine in one state.

Shared VMs switch between speed states (Python ≈ 2× slower in the slow one, for
0.2–3 ms at a time). Two samples taken back to back mostly fall in the same state, and
so do two samples taken at the same moment on two CPUs; their ratio cancels the state
(:mod:`perflab.analyze.paired` estimates it). Two ways to pair:

* **alternating**, in one process (:func:`sample_alternating`): pair i times A then B, or
  B then A, in a randomized balanced order (:func:`pair_order`: each block of two pairs
  is AB BA or BA AB), so a drift or a switch inside a pair favours neither side and the
  first position's own effect (cache, branch predictor warmed by the other) cancels;
* **lock-step**, in two processes (:func:`sample_lockstep`): each process times its side,
  and both wait at a two-party barrier (:class:`PipeBarrier`) before every sample, so
  samples i of A and B run at the same moment (Bulej et al., "Duet benchmarking", ICPE
  2020). Used when A and B cannot share a process (their imports collide). The two
  swap CPUs sample by sample (:class:`CpuSwap`), so neither side keeps the slower CPU.

Samples are short against the states (:data:`PAIR_SAMPLE_NS`). This module imports only
the standard library: workers must start fast.
"""

from __future__ import annotations

import os
import random
import select
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: target duration of one paired sample, ns: 100 µs. A pair then spans ≈ 0.2 ms, at or
#: below the shortest mean state length measured on shared VMs (0.2–3.4 ms) and far below
#: the typical one, so most pairs see a single state; it is still ≥ 1,000 times the
#: timer's error (≈ 60 ns here), and the median of the pair ratios ignores the pairs a
#: switch splits (the balanced order makes those split both ways equally often).
PAIR_SAMPLE_NS = 100_000

_perf_ns = time.perf_counter_ns


def pair_order(pairs: int, rng: random.Random) -> list[bool]:
    """Which side leads each pair: True when A runs first.

    Balanced and randomized: pairs go in blocks of two, each block AB BA or BA AB with
    equal chance (an odd last pair leads with either side at random), so over any whole
    number of blocks A leads exactly half the pairs. Deterministic for a seeded ``rng``.

    Args:
        pairs: how many pairs (≥ 0).
        rng: the generator (``random.Random(seed)``).

    Returns:
        Shape (pairs,).
    """
    order: list[bool] = []
    while len(order) < pairs:
        a_first = rng.random() < 0.5
        order.extend((a_first, not a_first))
    return order[:pairs]


class BarrierBroken(Exception):
    """The other party of a :class:`PipeBarrier` ended or timed out."""


class PipeBarrier:
    """A barrier for two processes made of two pipes: each party writes one byte to the
    other and waits for the other's byte. Neither passes wait k before both reached it
    (a party cannot run ahead: its next byte is only read after the other's).

    The byte also carries a vote: both go on only when both want to (the side that
    ran out of time or samples stops the other at the same sample).

    Args:
        read_fd: the pipe end the other party writes to.
        write_fd: the pipe end the other party reads from.
        timeout_s: how long to wait for the other party before giving up.
    """

    def __init__(self, read_fd: int, write_fd: int, timeout_s: float = 60.0) -> None:
        self.read_fd, self.write_fd, self.timeout_s = read_fd, write_fd, timeout_s

    def wait(self, go: bool = True) -> bool:
        """Meet the other party; True when both wanted to go on.

        Raises:
            BarrierBroken: the other side closed its pipe or did not come in time.
        """
        try:
            os.write(self.write_fd, b"1" if go else b"0")
        except BrokenPipeError:
            raise BarrierBroken("the other process of the pair ended") from None
        ready, _, _ = select.select([self.read_fd], [], [], self.timeout_s)
        if not ready:
            raise BarrierBroken(
                f"the other process of the pair did not come in {self.timeout_s:g} s"
            )
        got = os.read(self.read_fd, 1)
        if not got:
            raise BarrierBroken("the other process of the pair ended")
        return go and got == b"1"


def barrier_pipes() -> tuple[tuple[int, int], tuple[int, int]]:
    """Two pipes wired for a :class:`PipeBarrier` of two parties: ((read, write) of party
    A, (read, write) of party B). The caller closes the ends it hands to a child."""
    a_read, b_write = os.pipe()
    b_read, a_write = os.pipe()
    return (a_read, a_write), (b_read, b_write)


def under(path: str | None, root: str) -> bool:
    """Whether ``path`` lies inside folder ``root``."""
    if not path:
        return False
    try:
        return Path(path).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return False


def redirect(entry: str, from_root: str, to_root: str) -> str:
    """A sys.path ``entry`` inside ``from_root`` moved to the same place in ``to_root``."""
    if not under(entry, from_root):
        return entry
    return str(Path(to_root) / Path(entry).resolve().relative_to(from_root))


#: (wall_ns, cpu_ns, gc_count, gc_ns) of one sample
Timing = tuple[int, int, int, int]


@dataclass(frozen=True)
class Limits:
    """When a process's paired sampling stops: after ``seconds`` of sampling and at least
    ``min_pairs`` pairs, or at ``max_pairs``."""

    seconds: float
    min_pairs: int
    max_pairs: int

    def deadline(self) -> int:
        """The perf_counter_ns time sampling started now may last until."""
        return _perf_ns() + int(self.seconds * 1e9)

    def more(self, count: int, deadline: int) -> bool:
        """Whether to time another pair after ``count`` of them."""
        return count < self.max_pairs and (count < self.min_pairs or _perf_ns() < deadline)


def emit_sample(
    emit: Callable[..., None],
    iterations: int,
    timing: Timing,
    check: tuple[int | None, str | None],
    **extra: Any,
) -> None:
    """The ``sample`` event of one timed sample: its calls, its timing, its clock
    cross-check (skew ns, flag) and the ``extra`` fields (a paired sample's side, pair)."""
    wall, cpu, gcs, gcns = timing
    emit(
        "sample",
        n=iterations,
        wall=wall,
        cpu=cpu,
        gc=gcs,
        gc_ns=gcns,
        skew=check[0],
        flag=check[1],
        **extra,
    )


class _Bracket:
    """What brackets one timed sample: the thread's counters (outermost, when given),
    then the clock cross-check, as the worker's unpaired samples are bracketed."""

    def __init__(self, monitor: Any, counters: Any) -> None:
        self.monitor, self.counters = monitor, counters

    def time(
        self, time_one: Callable[[], Timing]
    ) -> tuple[Timing, tuple[int | None, str | None], dict[str, Any]]:
        """Time one sample: (its timing, the cross-check, the event's extra fields)."""
        if self.counters is not None:
            self.counters.start()
        self.monitor.start()
        timing = time_one()
        check = self.monitor.stop()
        if self.counters is None:
            return timing, check, {}
        return timing, check, {"counters": self.counters.stop()}


def sample_alternating(
    time_a: Callable[[], Timing],
    time_b: Callable[[], Timing],
    iterations: tuple[int, int],
    order_rng: random.Random,
    limits: Limits,
    emit: Callable[..., None],
    monitor: Any,
    between: Callable[[], None] = lambda: None,
    counters: Any = None,
) -> int:
    """Time A and B alternately, pair after pair, until ``limits`` say stop.

    Each sample is bracketed by the clock cross-check (``monitor.start``/``stop``) and,
    outside that, by the thread's counters (``counters.start``/``stop``, e.g.
    :class:`perflab.engines.run.counters.SampleCounters`; their values go in the
    sample's ``counters`` field); the two sample events of a pair are emitted after the
    pair, so no event writing falls between its two samples. Each event has ``side``
    ("a" or "b"), ``pair`` (its index) and ``first`` (whether that side led the pair).

    Args:
        time_a, time_b: time one sample of that side: (wall ns, CPU ns, GCs, GC ns).
        iterations: calls per sample of A and of B (the events' ``n``).
        order_rng: the generator of the pairs' order (:func:`pair_order`).
        emit: ``emit(event, **fields)``.
        monitor: the clock cross-check (:class:`perflab.engines.integrity.Monitor`).
        between: run between pairs, untimed (the machine-speed reference).
        counters: the per-sample counters, or None (no ``counters`` field).

    Returns:
        The number of pairs timed.
    """
    bracket = _Bracket(monitor, counters)
    deadline = limits.deadline()
    order: list[bool] = []
    count = 0
    while limits.more(count, deadline):
        if count == len(order):
            order.extend(pair_order(2, order_rng))
        a_first = order[count]
        between()
        timings = {}
        for side in ("a", "b") if a_first else ("b", "a"):
            timings[side] = bracket.time(time_a if side == "a" else time_b)
        for side in ("a", "b"):
            timing, check, extra = timings[side]
            first = a_first == (side == "a")
            emit_sample(
                emit,
                iterations[side == "b"],
                timing,
                check,
                side=side,
                pair=count,
                first=first,
                **extra,
            )
        count += 1
    return count


class CpuSwap:
    """Pins this process to one of two CPUs before each lock-step sample, alternating:
    sample k on ``cpus[k % 2]``. The other process of the pair is given the two CPUs the
    other way round, so sample k of A and of B run on two different CPUs, and A runs on
    each CPU in half the pairs and B in the other half: a CPU that is slower than the
    other for the whole process (another program on it, its own frequency) no longer
    makes one side look slower (:func:`perflab.analyze.paired.paired_ratio` averages
    the two halves). Without this, each lock-step process's ratio carried its own CPU
    asymmetry (processes' ratios 0.96–1.14 around a true 1.05 on this busy 2-core VM).

    Args:
        cpus: (CPU of even samples, CPU of odd samples), or None: no pinning.

    A CPU that cannot be pinned (taken out of this process's allowed set) ends the
    pinning; the affinity is restored by :meth:`restore`.
    """

    def __init__(self, cpus: Any = None) -> None:
        self.cpus = list(cpus) if cpus and hasattr(os, "sched_setaffinity") else None
        self.allowed = os.sched_getaffinity(0) if self.cpus else None

    def to(self, k: int) -> None:
        """Move to sample k's CPU."""
        if self.cpus is None:
            return
        try:
            os.sched_setaffinity(0, {self.cpus[k % 2]})
        except OSError:
            self.restore()
            self.cpus = None

    def restore(self) -> None:
        """Give back the affinity the process had."""
        if self.allowed is not None:
            try:
                os.sched_setaffinity(0, self.allowed)
            except OSError:
                pass


def sample_lockstep(
    time_one: Callable[[], Timing],
    iterations: int,
    barrier: PipeBarrier,
    limits: Limits,
    emit: Callable[..., None],
    monitor: Any,
    between: Callable[[], None] = lambda: None,
    counters: Any = None,
    cpus: Any = None,
) -> int:
    """Time this process's side in lock-step with the other process of the pair: both
    meet at ``barrier`` before every sample, so sample i of each runs at the same moment.
    Either side stops both (its vote at the barrier) when its ``limits`` say stop; both have then timed the same number of samples.
    The sampling time runs from the first meeting, not from this side's arrival: the two
    processes reach sampling at different times (start-up, imports, calibration), and
    time spent waiting for the other is not sampling time.

    Args:
        time_one: time one sample of this side: (wall ns, CPU ns, GCs, GC ns).
        iterations: calls per sample (the events' ``n``).
        barrier: this side's end of the barrier.
        limits: this side's stopping rule.
        emit / monitor / between / counters: as for :func:`sample_alternating`.
        cpus: (CPU of even samples, CPU of odd samples) for :class:`CpuSwap` (the
            other side gets them the other way round), or None: not pinned.

    Returns:
        The number of samples timed (the pairs, as the other side timed as many).

    Raises:
        BarrierBroken: the other process ended or hung.
    """
    bracket = _Bracket(monitor, counters)
    swap = CpuSwap(cpus)
    deadline: int | None = None  # set at the first meeting
    count = 0
    try:
        while True:
            swap.to(count)
            between()
            if not barrier.wait(limits.more(count, deadline or limits.deadline())):
                return count
            if deadline is None:
                deadline = limits.deadline()
            timing, check, extra = bracket.time(time_one)
            emit_sample(emit, iterations, timing, check, pair=count, **extra)
            count += 1
    finally:
        swap.restore()
