"""Watch other processes (the server under test) from outside: RSS and CPU time over a run.

``perflab http --watch PID`` / ``--watch-cmd NAME`` start a :class:`Watcher`: a
thread of the perflab process that reads each target's CPU time and resident set
— the process and all its descendants, summed (:class:`perflab.engines.memory.Tree`),
so a wrapper (a shell that forks the server, a master and its workers) reads the
server's figures, not the idle wrapper's zero —
from /proc every ``interval_s`` (100 ms by default) with perflab's one sampler,
:mod:`perflab.engines.memory` (``memory.read``). The
target runs untouched: nothing is injected into it. :meth:`Watcher.cut` hands
the timeline gathered since the previous cut to the step that just ended.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.engines import memory
from perflab.errors import UsageError

#: sampling interval of the watched processes, s
INTERVAL_S = 0.1
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
            raise UsageError(
                f"--watch {pid}: no such process; give the pid of the running "
                "server (e.g. from pgrep or ps)"
            )
        targets.append(Target(pid, name))
    for wanted in names:
        found = [
            Target(pid, name)
            for pid, name in _processes()
            if wanted in (name, _argv0(pid)) and pid != os.getpid()
        ]
        if not found:
            raise UsageError(
                f"--watch-cmd {wanted!r}: no running process has that name; "
                "start the server first, or give its pid with --watch"
            )
        targets += found
    return _roots(list(dict.fromkeys(targets)))


def _roots(targets: list[Target]) -> list[Target]:
    """The targets that are not descendants of another target: each is watched with its
    whole process tree, so a worker of a watched master would be counted twice."""
    pids = {t.pid for t in targets}
    inside = {d for t in targets for d in memory.descendants(t.pid) if d in pids}
    return [t for t in targets if t.pid not in inside]


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


class Watcher:
    """Samples the targets' CPU time and RSS every ``interval_s`` (a
    :class:`perflab.engines.memory.Sampler`, perflab's one sampler).

    Use as a context manager; :meth:`cut` returns, per target, the samples since
    the previous cut (the previous cut's last sample first, so that each part
    covers its whole span)::

        {"pid": 123, "name": "nginx", "t_s": [...], "cpu_s": [...], "rss_bytes": [...]}

    ``t_s`` is seconds since the watcher started (monotonic clock), ``cpu_s`` the
    cumulative CPU seconds of the target and its live descendants, ``rss_bytes`` their
    resident sets summed; a target that exited keeps its samples up to then.
    """

    def __init__(self, targets: list[Target], interval_s: float = INTERVAL_S) -> None:
        self.targets = targets
        self.interval_s = interval_s
        self._sampler = memory.Sampler(
            {t.pid: memory.Tree(t.pid, children=True) for t in targets}, interval_s
        )

    def __enter__(self) -> Watcher:
        self._sampler.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sampler.__exit__(*exc)

    def cut(self) -> list[dict[str, Any]]:
        """The timeline of each target since the previous cut (see the class)."""
        self._sampler.sample()
        return [
            {"pid": t.pid, "name": t.name, **memory.timeline_dict(self._sampler.take(t.pid))}
            for t in self.targets
        ]
