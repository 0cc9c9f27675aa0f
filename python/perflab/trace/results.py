"""``trace`` results files: a snapshot of :mod:`perflab.trace` as a perflab results file.

A trace file is a results file (``perflab/schemas/results.schema.json``) of kind
``"trace"`` with one benchmark per span name (kind ``"trace"``, its ``span`` holding
count, exact totals and the duration and self-time HdrHistograms in ns), so that
``perflab show`` and ``perflab compare`` read it like any other. Periodic dumps
(``PERFLAB_TRACE_DUMP=path,interval``) rewrite the same file atomically, each time
with everything recorded since the process started, and once more at exit or SIGTERM.
"""

from __future__ import annotations

import atexit
import datetime as dt
import os
import signal
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

from perflab import _core, redact
from perflab.model import Benchmark, Results, SpanHistogram, TraceSpan

#: Shortest interval of a periodic dump, s (a dump merges every thread's recorder).
MIN_INTERVAL_S = 1.0


def _histogram(report: dict[str, Any]) -> SpanHistogram:
    """A :class:`SpanHistogram` from the core's snapshot entry (ns)."""
    return SpanHistogram(
        report["encoded_b64"],
        report["count"],
        report["min_ns"],
        report["mean_ns"],
        report["p50_ns"],
        report["p90_ns"],
        report["p99_ns"],
        report["p999_ns"],
        report["max_ns"],
    )


def build(started: str | None = None) -> Results:
    """The current snapshot as a :class:`perflab.model.Results` of kind ``trace``.

    Args:
        started: ISO-8601 UTC time recording started (default: now).

    Returns:
        Results with one benchmark per span name (in first-registered order), its
        settings {pid, enabled, max_names, refused_names, max_depth, dropped_spans}.
    """
    from perflab.environment import fingerprint

    # The native core's version is the package's (one workspace version); importing
    # perflab.__version__ here would close an import cycle through perflab's lazy hook.
    version = _core.__version__

    max_names, refused = _core.trace_limits()
    max_depth, dropped = _core.trace_dropped()
    benchmarks = [
        Benchmark(
            name=entry["name"],
            group="trace",
            kind="trace",
            span=TraceSpan(
                entry["count"],
                entry["total_ns"],
                entry["self_total_ns"],
                _histogram(entry["duration"]),
                _histogram(entry["self_time"]),
            ),
        )
        for entry in _core.trace_snapshot()
    ]
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return Results(
        kind="trace",
        command_line=redact.argv(sys.argv),
        created=started or now,
        perflab_version=version,
        environment=fingerprint(version),
        settings={
            "pid": os.getpid(),
            "enabled": _core.trace_enabled(),
            "max_names": max_names,
            "refused_names": refused,
            "max_depth": max_depth,
            "dropped_spans": dropped,
            "dumped": now,
        },
        benchmarks=benchmarks,
    )


def dump(path: str | os.PathLike[str], started: str | None = None) -> Path | None:
    """Write :func:`build`'s results to ``path`` (see :func:`perflab.trace.dump`).

    Raises:
        UsageError: the destination is unusable (a folder, a foreign file, …).
        SaveError: the write failed.
    """
    from perflab import model

    return model.save(build(started), path)


def parse_dump_spec(spec: str) -> tuple[str, float]:
    """``"path,interval"`` (``PERFLAB_TRACE_DUMP``) → (path, interval s).

    The interval uses perflab's duration grammar (``30s``, ``5m``, a bare number is
    seconds) and is at least :data:`MIN_INTERVAL_S`; without one, the file is written
    at exit only (interval ``inf``).

    Raises:
        ValueError: no path, or an interval that is not a duration ≥ 1 s.
    """
    path, sep, interval = spec.rpartition(",")
    if not sep:
        path, interval = spec, ""
    path = path.strip()
    if not path:
        raise ValueError("no path; write PERFLAB_TRACE_DUMP=trace.json,30s")
    if not interval.strip():
        return path, float("inf")
    seconds = _core.parse_duration_s(interval.strip(), "PERFLAB_TRACE_DUMP interval")
    if not seconds >= MIN_INTERVAL_S:
        raise ValueError(f"interval {interval.strip()!r} is under {MIN_INTERVAL_S:g}s")
    return path, seconds


class PeriodicDump:
    """A daemon thread that dumps every ``interval_s`` and once more at exit.

    Failures (a full disk, a foreign file put in the way) are warned about once
    each, never raised: the traced program runs on.

    Args:
        path: the trace file (checked when each dump is written).
        interval_s: seconds between dumps (``inf``: at exit only).
    """

    def __init__(self, path: str, interval_s: float) -> None:
        self.path, self.interval_s = path, interval_s
        self.started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.dumps = 0
        self._stop = threading.Event()
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="perflab-trace-dump", daemon=True)

    def start(self) -> PeriodicDump:
        """Start the thread and register the last dump at exit and on SIGTERM; returns self.

        SIGTERM (how servers and process managers stop a service) ends a process
        without running atexit, so where SIGTERM still has its default action and this
        is the main thread, a handler is installed that dumps, then lets SIGTERM end the
        process as before. Servers that install their own handler and restore the old
        one before re-raising the signal (uvicorn does) reach it too.
        """
        atexit.register(self.stop)
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            signal.signal(signal.SIGTERM, self._on_sigterm)
        if self.interval_s != float("inf"):
            self._thread.start()
        return self

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        """Dump, then end the process by SIGTERM's default action."""
        self.stop()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def dump_now(self) -> bool:
        """Write the file now; True when written."""
        with self._lock:
            try:
                dump(self.path, self.started)
            except Exception as exc:  # noqa: BLE001 - never break the traced program
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                if message not in self._warned:
                    self._warned.add(message)
                    warnings.warn(
                        f"perflab.trace: periodic dump to {self.path} failed: {message}",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                return False
            self.dumps += 1
            return True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.dump_now()

    def stop(self) -> None:
        """Stop the thread and write a last dump (idempotent)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.dump_now()
        atexit.unregister(self.stop)


_ACTIVE: PeriodicDump | None = None


def start_periodic_dump(spec: str) -> PeriodicDump:
    """Start (once per process) the dump ``PERFLAB_TRACE_DUMP`` asks for.

    Raises:
        ValueError: a malformed spec (see :func:`parse_dump_spec`).
    """
    global _ACTIVE
    if _ACTIVE is None:
        path, interval = parse_dump_spec(spec)
        _ACTIVE = PeriodicDump(path, interval).start()
    return _ACTIVE
