"""A load agent: what runs in each agent process of a distributed ``perflab http``.

Plain Python (no Ray here): the controller wraps :class:`LoadAgent` as a Ray actor
(``ray.remote(max_concurrency=…)``), so :meth:`LoadAgent.progress` and
:meth:`LoadAgent.stop` run on other threads of the agent while :meth:`LoadAgent.run_step`
blocks in the engine. Tests drive it directly.

An agent times every request on its own monotonic clock (the engine's); the controller
only tells it *when* a step starts, already converted to the agent's realtime clock.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from perflab.model.cluster import CLOCK_CHECKS

#: Length of the doctor clock probe each agent runs at start-up, s.
CLOCK_PROBE_S = 0.3
#: Length (warmup included) and warmup of the capacity probe (``--split capacity``), s.
CAPACITY_PROBE_S, CAPACITY_WARMUP_S = 0.6, 0.1


def boot_id() -> str:
    """This kernel's boot id (two processes with the same host and boot id read one
    realtime clock), or "" where Linux does not expose it."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


class LoadAgent:
    """One agent: identity, clock reads and checks, reachability, and steps.

    Args:
        index: the agent's number in the run (0-based).
    """

    def __init__(self, index: int) -> None:
        self.index = index
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._snapshot: dict[str, Any] | None = None

    def hello(self) -> dict[str, Any]:
        """Who this agent is: {index, host, pid, perflab_version, core_version, cores,
        boot_id}."""
        from perflab import __version__, _core

        return {
            "index": self.index,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "perflab_version": __version__,
            "core_version": _core.__version__,
            "cores": len(os.sched_getaffinity(0)),
            "boot_id": boot_id(),
        }

    def now_ns(self) -> int:
        """This machine's realtime clock, ns since the epoch (one offset round trip)."""
        return time.time_ns()

    def clock_checks(self, probe_s: float = CLOCK_PROBE_S) -> dict[str, str]:
        """``perflab doctor``'s native probes, briefly, on this machine: its clock checks
        that were not ok, by name ("fail: …" / "warn: …"). About ``probe_s × 4/3 + 1`` s."""
        from perflab.engines import doctor

        report = doctor.run(probe_s)
        return {
            c.name: f"{c.status}: {c.detail}"
            for c in report.checks
            if c.name in CLOCK_CHECKS and c.status in ("fail", "warn")
        }

    def check(self, configs: list[dict[str, Any]]) -> str | None:
        """The engine's own checks of this agent's step configs on this machine (its
        cores, its ``ulimit -n``): the first problem in one line, or None."""
        from perflab import _core

        for config in configs:
            try:
                _core.http_check(config)
            except ValueError as exc:
                return str(exc)
        return None

    def reachable(self, host: str, port: int, timeout_s: float) -> str | None:
        """Open and close one TCP connection to the target from here: None when it
        accepts, else why not, in words."""
        from perflab.engines.http.engine import Target, check_reachable
        from perflab.errors import UsageError

        try:
            check_reachable(Target("", "http", host, port), timeout_s)
        except UsageError as exc:
            return str(exc)
        return None

    def capacity(self, threads: int | None, probe_s: float = CAPACITY_PROBE_S) -> float:
        """How many requests/s this agent's engine can send, by CPU: a closed-loop burst
        of ``probe_s`` against a ``perflab serve`` on this node's loopback (plain HTTP,
        no delay), with the run's engine threads; requests sent ÷ the engine threads'
        CPU time × the engine threads. A CPU-bound generator sends that many; a faster
        or larger node scores higher. It ranks nodes, not the target's path.

        Args:
            threads: the run's ``--threads`` (None: the engine's default).
            probe_s: the burst's length, warmup (:data:`CAPACITY_WARMUP_S`) included, s.

        Raises:
            ValueError: the engine refused the probe (e.g. ``--threads`` above the cores).
            RuntimeError: the probe sent nothing.
        """
        from perflab import _core

        connections = 2 * (os.cpu_count() or 1)
        with _core.serve({"host": "127.0.0.1", "port": 0}) as server:
            raw = _core.http_run(
                {
                    "url": f"http://127.0.0.1:{server.port}/",
                    "mode": "closed",
                    "connections": connections,
                    "threads": threads,
                    "duration_s": probe_s,
                    "warmup_s": CAPACITY_WARMUP_S,
                },
                None,
                self._stop,
            )
        step = raw["steps"][0]
        cpu_s = sum(step["thread_cpu_s"])
        if not step["requests_sent"] or cpu_s <= 0:
            raise RuntimeError("the capacity probe sent nothing on this node's loopback")
        return len(step["thread_cpu_s"]) * step["requests_sent"] / cpu_s

    def run_step(self, config: dict[str, Any]) -> dict[str, Any]:
        """Run one step (``config`` carries ``start_unix_ns`` on this agent's clock).

        Returns:
            {"raw": the engine's result (``perflab._core.http_run``), "clock_skew_ns",
            "flagged": this process's clock cross-check over the step, "process_cpu_s":
            the agent process's CPU time (user + system, all threads, ``os.times``) over
            the step, s}. A stop (see
            :meth:`stop`) ends the step early, its accounting returned.

        Raises:
            ValueError: the engine refused the config.
        """
        from perflab import _core
        from perflab.engines import integrity

        monitor = integrity.Monitor()
        monitor.ready()
        monitor.start()
        with self._lock:
            self._snapshot = None
        before = os.times()
        raw = _core.http_run(config, self._keep, self._stop, True)
        after = os.times()
        skew, flagged = monitor.stop()
        return {
            "raw": raw,
            "clock_skew_ns": skew,
            "flagged": flagged,
            "process_cpu_s": (after.user - before.user) + (after.system - before.system),
        }

    def _keep(self, snapshot: dict[str, Any]) -> None:
        with self._lock:
            self._snapshot = snapshot

    def progress(self) -> dict[str, Any] | None:
        """The running step's latest engine snapshot (``latency_b64`` included), or None."""
        with self._lock:
            return self._snapshot

    def stop(self) -> None:
        """Stop the running step at once (its accounting is returned) and every later
        one: a stop is final, so one sent just before a step begins is not lost."""
        self._stop.set()
