"""A synthetic machine that switches between speed states, for deterministic tests.

Shared VMs run Python about 2× slower in a slow state that comes and goes every 0.2–3 ms
(docs/compare.md). :class:`SpeedStates` draws such a timeline (alternating fast and slow
states of exponentially distributed length) and answers how long a piece of work
started at time t takes on it, so tests can time A and B separately or in pairs without
a clock.
"""

from __future__ import annotations

import numpy as np


class SpeedStates:
    """A two-state timeline over ``horizon_s`` seconds.

    Args:
        rng: the generator (seed it: the timeline is then fixed).
        slow_share: expected share of time spent in the slow state, in (0, 1).
        mean_state_s: mean length of a fast plus a slow state, halved: the mean state
            length is ``mean_state_s`` (fast and slow lengths scaled by the share).
        slow_factor: how much slower work runs in the slow state (2: half speed).
        horizon_s: timeline length, s.
        jitter: each timing's own noise (timer, caches): the SD of its log.
    """

    def __init__(
        self,
        rng: np.random.Generator,
        slow_share: float,
        mean_state_s: float = 1e-3,
        slow_factor: float = 2.0,
        horizon_s: float = 10.0,
        jitter: float = 0.01,
    ) -> None:
        self.rng, self.jitter = rng, jitter
        means = np.array([2 * mean_state_s * (1 - slow_share), 2 * mean_state_s * slow_share])
        count = int(horizon_s / mean_state_s * 2) + 10
        slow_first = rng.random() < slow_share
        kinds = (np.arange(count) + int(slow_first)) % 2  # 0 fast, 1 slow
        lengths = rng.exponential(means[kinds])
        self.times = np.concatenate([[0.0], np.cumsum(lengths)])
        rates = np.where(kinds == 1, 1 / slow_factor, 1.0)
        self.work = np.concatenate([[0.0], np.cumsum(lengths * rates)])

    def wall(self, start_s: float, work_s: float) -> float:
        """Wall time, s, of ``work_s`` seconds of fast-state work started at ``start_s``."""
        done = np.interp(start_s, self.times, self.work)
        wall = float(np.interp(done + work_s, self.work, self.times) - start_s)
        return wall * float(np.exp(self.rng.normal(0, self.jitter))) if self.jitter else wall

    def alone(self, start_s: float, work_s: float, samples: int) -> tuple[np.ndarray, float]:
        """``samples`` back-to-back timings of the same work from ``start_s``: (the wall
        times, shape (samples,); the time the last one ended)."""
        walls, t = np.empty(samples), start_s
        for i in range(samples):
            walls[i] = self.wall(t, work_s)
            t += walls[i]
        return walls, t

    def paired(
        self, start_s: float, work_a_s: float, work_b_s: float, a_first: list[bool]
    ) -> tuple[np.ndarray, np.ndarray, float]:
        """Pairs timed back to back, A first where ``a_first[i]``: (A's walls, B's walls,
        each of shape (pairs,); the time the last one ended)."""
        a, b, t = np.empty(len(a_first)), np.empty(len(a_first)), start_s
        for i, first in enumerate(a_first):
            for side in ("a", "b") if first else ("b", "a"):
                wall = self.wall(t, work_a_s if side == "a" else work_b_s)
                (a if side == "a" else b)[i] = wall
                t += wall
        return a, b, t
