"""Paired sampling: the order of pairs, the alternating loop, the lock-step barrier."""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time

import pytest

from perflab.engines.run import pairing


class FakeMonitor:
    def start(self) -> None:
        pass

    def stop(self) -> tuple[int, None]:
        return 5, None


@pytest.mark.parametrize("seed", range(10))
def test_pair_order_is_balanced_in_every_block_of_two(seed: int) -> None:
    order = pairing.pair_order(100, random.Random(seed))
    assert len(order) == 100
    assert all(order[i] != order[i + 1] for i in range(0, 100, 2))  # AB BA or BA AB
    assert sum(order) == 50


def test_pair_order_is_randomized_and_repeats_with_a_seed() -> None:
    orders = {tuple(pairing.pair_order(40, random.Random(s))) for s in range(20)}
    assert len(orders) == 20  # not one fixed pattern
    assert pairing.pair_order(40, random.Random(3)) == pairing.pair_order(40, random.Random(3))
    starts = [pairing.pair_order(2, random.Random(s))[0] for s in range(200)]
    assert 60 < sum(starts) < 140  # either side leads a block
    assert len(pairing.pair_order(7, random.Random(1))) == 7
    assert pairing.pair_order(0, random.Random(1)) == []


def test_alternating_runs_both_sides_in_the_drawn_order() -> None:
    log: list[str] = []
    events: list[dict] = []

    def timer(side: str, wall: int):
        def time_one():
            log.append(side)
            return wall, wall, 0, 0

        return time_one

    count = pairing.sample_alternating(
        timer("a", 100),
        timer("b", 103),
        (10, 20),
        random.Random(4),
        pairing.Limits(0, 6, 1000),
        emit=lambda event, **f: events.append({"event": event, **f}),
        monitor=FakeMonitor(),
    )
    assert count == 6
    order = pairing.pair_order(6, random.Random(4))
    assert log == [s for first in order for s in (("a", "b") if first else ("b", "a"))]
    assert [e["pair"] for e in events] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert [e["side"] for e in events] == ["a", "b"] * 6
    assert [e["first"] for e in events[::2]] == order
    assert {e["n"] for e in events if e["side"] == "b"} == {20}
    assert events[1]["wall"] == 103 and events[1]["skew"] == 5


class FakeCounters:
    """Counts its reads; each sample's counters are (its sample number, the side's
    wall time seen inside the bracket), so a test sees which sample they bracketed."""

    def __init__(self, log: list[str]) -> None:
        self.log, self.samples = log, 0

    def start(self) -> None:
        self.log.append("counters on")

    def stop(self) -> tuple[int, int]:
        self.log.append("counters off")
        self.samples += 1
        return (self.samples, 0)


def test_paired_samples_carry_the_counters_of_their_own_bracket() -> None:
    log: list[str] = []
    events: list[dict] = []

    def time_side(side: str):
        return lambda: (log.append(side), (1, 1, 0, 0))[1]

    pairing.sample_alternating(
        time_side("a"),
        time_side("b"),
        (1, 1),
        random.Random(2),
        pairing.Limits(0, 4, 4),
        emit=lambda event, **f: events.append({"event": event, **f}),
        monitor=FakeMonitor(),
        counters=FakeCounters(log),
    )
    # counters on, the sample, counters off: around every sample, nothing else inside
    assert len(log) == 4 * 2 * 3
    for k in range(0, len(log), 3):
        assert log[k] == "counters on" and log[k + 2] == "counters off"
    led = {e["pair"]: e["side"] for e in events if e["first"]}
    for e in events:  # the leading side's sample was read first in its pair
        first = e["side"] == led[e["pair"]]
        assert e["counters"] == (2 * e["pair"] + (1 if first else 2), 0)
    steps: list[str] = []
    lockstep_events: list[dict] = []
    (a_read, a_write), (b_read, b_write) = pairing.barrier_pipes()
    other = threading.Thread(
        target=pairing.sample_lockstep,
        args=(lambda: (1, 1, 0, 0), 1, pairing.PipeBarrier(b_read, b_write, 20)),
        kwargs={
            "limits": pairing.Limits(0, 3, 3),
            "emit": lambda *a, **k: None,
            "monitor": FakeMonitor(),
        },
    )
    other.start()
    pairing.sample_lockstep(
        lambda: (steps.append("sample"), (1, 1, 0, 0))[1],
        1,
        pairing.PipeBarrier(a_read, a_write, 20),
        pairing.Limits(0, 3, 3),
        emit=lambda event, **f: lockstep_events.append(f),
        monitor=FakeMonitor(),
        counters=FakeCounters(steps),
    )
    other.join(20)
    assert steps == ["counters on", "sample", "counters off"] * 3
    assert [e["counters"] for e in lockstep_events] == [(1, 0), (2, 0), (3, 0)]
    for fd in (a_read, a_write, b_read, b_write):
        os.close(fd)


def test_alternating_stops_at_max_pairs() -> None:
    count = pairing.sample_alternating(
        lambda: (1, 1, 0, 0),
        lambda: (1, 1, 0, 0),
        (1, 1),
        random.Random(0),
        pairing.Limits(60, 1, 9),
        emit=lambda *a, **k: None,
        monitor=FakeMonitor(),
    )
    assert count == 9


def _party(read_fd: int, write_fd: int, rounds: int, out) -> None:  # type: ignore[no-untyped-def]
    barrier = pairing.PipeBarrier(read_fd, write_fd, timeout_s=20)
    stamps = []
    for i in range(rounds):
        barrier.wait()
        stamps.append(time.monotonic())
        if i % 3 == 0:
            time.sleep(0.01)  # one side lags now and then: the other must wait for it
    out.put(stamps)


def test_barrier_holds_two_processes_in_lock_step() -> None:
    (a_read, a_write), (b_read, b_write) = pairing.barrier_pipes()
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_party, args=(b_read, b_write, 12, out))
    child.start()
    barrier = pairing.PipeBarrier(a_read, a_write, timeout_s=20)
    mine = []
    for i in range(12):
        time.sleep(0.02 if i % 4 == 1 else 0)
        barrier.wait()
        mine.append(time.monotonic())
    theirs = out.get(timeout=30)
    child.join(10)
    # neither passed round k+1 before the other had passed round k
    for k in range(11):
        assert mine[k + 1] >= theirs[k] and theirs[k + 1] >= mine[k]
    for fd in (a_read, a_write, b_read, b_write):
        os.close(fd)


def test_barrier_vote_stops_both_and_lockstep_counts_agree() -> None:
    (a_read, a_write), (b_read, b_write) = pairing.barrier_pipes()
    counts: dict[str, int] = {}

    def side(name: str, read_fd: int, write_fd: int, max_pairs: int) -> None:
        counts[name] = pairing.sample_lockstep(
            lambda: (10, 10, 0, 0),
            1,
            pairing.PipeBarrier(read_fd, write_fd, timeout_s=20),
            pairing.Limits(60, 1, max_pairs),
            emit=lambda *a, **k: None,
            monitor=FakeMonitor(),
        )

    threads = [
        threading.Thread(target=side, args=("a", a_read, a_write, 7)),
        threading.Thread(target=side, args=("b", b_read, b_write, 1000)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert counts == {"a": 7, "b": 7}  # A's limit stopped B at the same sample
    for fd in (a_read, a_write, b_read, b_write):
        os.close(fd)


def _lockstep(time_one, read_fd: int, write_fd: int, limits, **extra) -> int:
    """One side's :func:`pairing.sample_lockstep` with a fake monitor and no events."""
    return pairing.sample_lockstep(
        time_one,
        1,
        pairing.PipeBarrier(read_fd, write_fd, timeout_s=20),
        limits,
        emit=lambda *a, **k: None,
        monitor=FakeMonitor(),
        **extra,
    )


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="swapping CPUs needs CPU affinity (Linux) and at least two CPUs",
)
def test_lockstep_sides_swap_cpus_sample_by_sample() -> None:
    cpus = sorted(os.sched_getaffinity(0))[:2]
    (a_read, a_write), (b_read, b_write) = pairing.barrier_pipes()
    seen: dict[str, list[set[int]]] = {"a": [], "b": []}
    after: dict[str, set[int]] = {}
    allowed = os.sched_getaffinity(0)

    def side(name: str, read_fd: int, write_fd: int, swap: list[int]) -> None:
        def time_one() -> tuple[int, int, int, int]:
            seen[name].append(os.sched_getaffinity(0))  # this thread's, as it samples
            return (10, 10, 0, 0)

        _lockstep(time_one, read_fd, write_fd, pairing.Limits(60, 1, 6), cpus=swap)
        after[name] = os.sched_getaffinity(0)

    threads = [
        threading.Thread(target=side, args=("a", a_read, a_write, cpus)),
        threading.Thread(target=side, args=("b", b_read, b_write, cpus[::-1])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen["a"] == [{cpus[k % 2]} for k in range(6)]
    assert seen["b"] == [{cpus[(k + 1) % 2]} for k in range(6)]  # never A's CPU
    assert after == {"a": allowed, "b": allowed}  # the affinity given back
    for fd in (a_read, a_write, b_read, b_write):
        os.close(fd)


def test_a_cpu_that_cannot_be_pinned_ends_the_swap() -> None:
    swap = pairing.CpuSwap([10_000_000, 10_000_001])  # no such CPUs: setaffinity refuses
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    swap.to(0)
    assert swap.cpus is None
    swap.to(1)  # no longer tries
    if before is not None:
        assert os.sched_getaffinity(0) == before


def test_lockstep_sampling_time_runs_from_the_first_meeting(monkeypatch) -> None:
    """A side that waited 5 s for the other (start-up, imports) still samples for its
    full second: its time starts when both meet, not when it arrived."""
    clock = [0]
    monkeypatch.setattr(pairing, "_perf_ns", lambda: clock[0])
    (a_read, a_write), (b_read, b_write) = pairing.barrier_pipes()
    counts: dict[str, int] = {}
    a_waiting = threading.Event()

    def a_sample() -> tuple[int, int, int, int]:
        clock[0] += 100_000_000  # 0.1 s of A's clock per sample
        return (10, 10, 0, 0)

    def side(name: str, read_fd: int, write_fd: int, time_one, between) -> None:
        counts[name] = _lockstep(
            time_one, read_fd, write_fd, pairing.Limits(1.0, 1, 1000), between=between
        )

    a = threading.Thread(target=side, args=("a", a_read, a_write, a_sample, a_waiting.set))
    a.start()
    assert a_waiting.wait(20)  # A reached the barrier (its first vote is cast)
    clock[0] += 5_000_000_000  # ... and waited 5 s for B
    b = threading.Thread(
        target=side, args=("b", b_read, b_write, lambda: (10, 10, 0, 0), lambda: None)
    )
    b.start()
    for t in (a, b):
        t.join(30)
    assert counts == {"a": 10, "b": 10}  # 1 s of A's 0.1 s samples, not the minimum 1
    for fd in (a_read, a_write, b_read, b_write):
        os.close(fd)


def test_barrier_breaks_when_the_other_side_is_gone_or_late() -> None:
    (a_read, a_write), (b_read, b_write) = pairing.barrier_pipes()
    with pytest.raises(pairing.BarrierBroken, match="did not come"):
        pairing.PipeBarrier(a_read, a_write, timeout_s=0.05).wait()
    os.close(b_write)
    os.read(b_read, 1)
    with pytest.raises(pairing.BarrierBroken, match="ended"):
        pairing.PipeBarrier(a_read, a_write, timeout_s=5).wait()
    os.close(b_read)
    with pytest.raises(pairing.BarrierBroken, match="ended"):
        pairing.PipeBarrier(a_read, a_write, timeout_s=5).wait()
    os.close(a_read)
    os.close(a_write)
