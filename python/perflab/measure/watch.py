"""Watch other processes (the server under test) from outside: RSS and CPU time over a run.

``perflab http --watch PID`` / ``--watch-cmd NAME`` start a :class:`Watcher`: a
thread of the perflab process that reads ``/proc/PID/stat`` (user + system CPU
time, in clock ticks) and ``/proc/PID/statm`` (resident pages) of each target
every ``interval_s`` (100 ms by default), as ``ps``, psrecord and psutil do. The
target runs untouched: nothing is injected into it. :meth:`Watcher.cut` hands
the timeline gathered since the previous cut to the step that just ended.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import UsageError

#: sampling interval of the watched processes, s
INTERVAL_S = 0.1
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_PROC = Path("/proc")


@dataclass(frozen=True)
class Target:
    """A watched process: its pid and its name (``/proc/PID/comm``)."""

    pid: int
    name: str


def _comm(pid: int) -> str | None:
    try:
        return (_PROC / str(pid) / "comm").read_text().strip()
    except OSError:
        return None


def resolve(pids: list[int], names: list[str]) -> list[Target]:
    """The processes to watch: each pid of ``--watch``, and every process whose name
    (comm, or the base name of argv[0]) is one of ``--watch-cmd``'s names.

    Raises:
        UsageError: a pid that is not running, or a name no running process has.
    """
    targets = []
    for pid in pids:
        name = _comm(pid)
        if pid <= 0 or name is None:
            raise UsageError(f"--watch {pid}: no such process; give the pid of the running "
                             "server (e.g. from pgrep or ps)")
        targets.append(Target(pid, name))
    for wanted in names:
        found = [Target(pid, name) for pid, name in _processes()
                 if wanted in (name, _argv0(pid)) and pid != os.getpid()]
        if not found:
            raise UsageError(f"--watch-cmd {wanted!r}: no running process has that name; "
                             "start the server first, or give its pid with --watch")
        targets += found
    return list(dict.fromkeys(targets))


def _processes() -> list[tuple[int, str]]:
    out = []
    for entry in _PROC.iterdir():
        if entry.name.isdigit() and (name := _comm(int(entry.name))) is not None:
            out.append((int(entry.name), name))
    return out


def _argv0(pid: int) -> str:
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return os.path.basename(raw.split(b"\0", 1)[0].decode(errors="replace"))


def read(pid: int) -> tuple[float, int] | None:
    """(CPU seconds used so far, user + system; resident bytes) of ``pid``; None when gone.

    Source: fields 14–15 of /proc/PID/stat (utime, stime, in clock ticks) and field 2
    of /proc/PID/statm (resident pages), as proc(5) describes.
    """
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
        statm = (_PROC / str(pid) / "statm").read_text().split()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()   # the name may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) * _TICK_S, int(statm[1]) * _PAGE


class Watcher:
    """Samples the targets' CPU time and RSS every ``interval_s`` on a daemon thread.

    Use as a context manager; :meth:`cut` returns, per target, the samples since
    the previous cut (the previous cut's last sample first, so that each part
    covers its whole span)::

        {"pid": 123, "name": "nginx", "t_s": [...], "cpu_s": [...], "rss_bytes": [...]}

    ``t_s`` is seconds since the watcher started (monotonic clock), ``cpu_s`` the
    target's cumulative CPU seconds, ``rss_bytes`` its resident set; a target that
    exited keeps its samples up to then.
    """

    def __init__(self, targets: list[Target], interval_s: float = INTERVAL_S) -> None:
        self.targets = targets
        self.interval_s = interval_s
        self._t0 = time.monotonic()
        self._samples: dict[int, list[tuple[float, float, int]]] = {t.pid: [] for t in targets}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="perflab-watch")

    def __enter__(self) -> Watcher:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        now = time.monotonic() - self._t0
        with self._lock:
            for target in self.targets:
                reading = read(target.pid)
                if reading is not None:
                    self._samples[target.pid].append((now, *reading))

    def cut(self) -> list[dict[str, Any]]:
        """The timeline of each target since the previous cut (see the class)."""
        self._sample()
        parts = []
        with self._lock:
            for target in self.targets:
                samples = self._samples[target.pid]
                parts.append({"pid": target.pid, "name": target.name,
                              "t_s": [round(s[0], 4) for s in samples],
                              "cpu_s": [round(s[1], 4) for s in samples],
                              "rss_bytes": [s[2] for s in samples]})
                self._samples[target.pid] = samples[-1:]
        return parts
