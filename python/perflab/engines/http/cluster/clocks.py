"""Clocks across machines: each load agent's offset to the controller, and the shared
start instant of a step placed on each agent's clock.

Method (Cristian, "Probabilistic clock synchronization", Distributed Computing 3, 1989;
NTP's on-wire calculation and clock filter, RFC 5905 §8 and §10): the controller reads
its realtime clock (``t1``), asks the agent for its realtime clock (``t2``) and reads its
own again when the answer arrives (``t4``). Whatever the asymmetry of the two paths, the
agent's read happened between ``t1`` and ``t4``, so its offset θ (agent clock − controller
clock) lies in ``[t2 − t4, t2 − t1]``: the estimate ``t2 − (t1 + t4)/2`` is off by at
most half the round trip ``δ = t4 − t1``. Of several round trips the one with the
smallest δ gives the tightest bound (NTP keeps the minimum-delay sample for the same
reason: queueing only ever adds delay).

Latencies never use these offsets: every agent times its requests on its own monotonic
clock. Offsets only place the start instant of each step (so the agents' schedules
interleave) and the agents on one timeline. Two processes on one kernel (same host and
boot id) read the same realtime clock: their offset is exactly 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Round trips per offset measurement at start-up, and before each step.
ROUNDS_AT_START = 16
ROUNDS_PER_STEP = 5


@dataclass(frozen=True)
class Offset:
    """One agent's clock offset to the controller.

    Attributes:
        offset_ns: agent realtime clock − controller realtime clock, ns (estimate).
        uncertainty_ns: the true offset is within ``offset_ns ± uncertainty_ns``: half the
            smallest round trip, ns.
        round_trip_ns: that smallest round trip, ns.
        samples: round trips measured.
    """

    offset_ns: int
    uncertainty_ns: int
    round_trip_ns: int
    samples: int


def estimate(samples: Sequence[tuple[int, int, int]]) -> Offset:
    """The offset from ``(t1, t2, t4)`` round trips (module docstring: the method).

    Args:
        samples: controller send time, agent clock read, controller receive time, each
            in ns of the realtime clocks; at least one, with ``t4 ≥ t1``.

    Raises:
        ValueError: no samples, or a sample whose receive precedes its send (the
            controller's clock stepped back).
    """
    if not samples:
        raise ValueError("no round trips to estimate a clock offset from")
    if any(t4 < t1 for t1, _, t4 in samples):
        raise ValueError("a round trip ended before it began: the controller's clock stepped")
    t1, t2, t4 = min(samples, key=lambda s: s[2] - s[0])
    rtt = t4 - t1
    return Offset(
        offset_ns=t2 - (t1 + t4) // 2,
        uncertainty_ns=(rtt + 1) // 2,
        round_trip_ns=rtt,
        samples=len(samples),
    )


def measure(ask: Callable[[], int], rounds: int, clock: Callable[[], int] = time.time_ns) -> Offset:
    """Measure an offset with ``rounds`` round trips.

    Args:
        ask: one round trip to the agent, returning its realtime clock in ns (blocking).
        rounds: how many round trips (≥ 1).
        clock: the controller's realtime clock in ns.

    Raises:
        ValueError: see :func:`estimate`. Whatever ``ask`` raises.
    """
    samples = []
    for _ in range(rounds):
        t1 = clock()
        t2 = ask()
        samples.append((t1, t2, clock()))
    return estimate(samples)


def on_agent_clock(instant_ns: int, offset_ns: int) -> int:
    """A controller-clock instant expressed on an agent's clock (ns): ``instant + θ``."""
    return instant_ns + offset_ns
