"""Memory and CPU of other processes, read from outside through /proc: perflab's one sampler.

Three commands watch processes with it, and none of them injects anything into
what it watches (no thread, no allocator hook, no tracer in the measured process):

* ``perflab run --memory``: the worker processes (:class:`Sampler` on a thread of
  perflab, every 10 ms; the worker also calls :func:`read` on itself between timed
  samples, outside the timed loop, so that each reading falls between known calls);
* ``perflab cmd --memory``: each command and its descendants, summed (the spawning
  helper calls :func:`read_tree` between its waits for the command to exit);
* ``perflab http --watch``: the server under test (:mod:`perflab.engines.http.watch`
  keeps a :class:`Sampler` every 100 ms).

A reading is the process's cumulative CPU seconds (user + system: fields 14–15 of
/proc/PID/stat, in clock ticks) and its resident set (field 2 of /proc/PID/statm, in
pages), as ``ps``, psutil and psrecord read them (proc(5)). The kernel's own high-water
mark of the resident set (``VmHWM`` of /proc/PID/status) is what ``wait4``'s
``ru_maxrss`` reports at exit; :func:`high_water` reads it while the process lives.

Summing a tree's resident sets counts pages shared by several processes (the
interpreter's code, copy-on-write pages after fork) once per process, as psrecord's
``--include-children`` does; ``ru_maxrss`` is instead the largest single process.

This module imports only ``os`` and ``time`` (and ``threading`` inside
:class:`Sampler`), because the spawning helper (:mod:`perflab.engines.cmd.spawn_helper`)
loads it by path into a process whose own memory it must keep small; for the same
reason its annotations use builtin types only (no ``typing``).
"""

import os
import time

#: default sampling interval of ``run --memory`` and ``cmd --memory``, s
INTERVAL_S = 0.01
#: descendants of a tree are looked up afresh every this many readings (a scan of /proc
#: costs ~1 ms on a busy machine; reading known pids costs tens of µs)
RESCAN_EVERY = 10
#: between scans, each reading checks the pids created since the last one (the kernel's
#: last pid, /proc/loadavg) for new children of the tree, when there are at most this
#: many; more (a busy machine) scan /proc at once instead
NEW_PIDS_MAX = 64
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the name (field 3 on), or None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rsplit(b")", 1)[1].split()  # the name may hold spaces and parentheses


def read(pid: int) -> tuple[float, int] | None:
    """(CPU seconds used so far, user + system; resident bytes) of ``pid``; None when gone
    (or a zombie: its memory is already released)."""
    fields = _stat_fields(pid)
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            resident = int(f.read().split()[1])
    except (OSError, IndexError):
        return None
    if fields is None:
        return None
    return (int(fields[11]) + int(fields[12])) * _TICK_S, resident * _PAGE


def high_water(pid: int) -> int | None:
    """The kernel's peak resident set of ``pid`` so far (``VmHWM``), bytes; None when gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (children, their children, …), from one scan of
    /proc (each process's parent, field 4 of its stat). Order: breadth first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    frontier = [pid]
    while frontier:
        kids = [c for p in frontier for c in children.get(p, ())]
        found += kids
        frontier = kids
    return found


def last_pid() -> int | None:
    """The pid the kernel handed out last in this pid namespace (the 5th field of
    /proc/loadavg; proc(5)), or None when unreadable. Pids (and thread ids) are handed out
    in increasing order until they wrap at ``pid_max``."""
    try:
        with open("/proc/loadavg", "rb") as f:
            return int(f.read().split()[4])
    except (OSError, IndexError, ValueError):
        return None


class Tree:
    """Readings of a process and (``children``) its descendants, summed.

    This kernel may lack /proc/PID/task/TID/children, so descendants are found by
    scanning /proc (:func:`descendants`) every :data:`RESCAN_EVERY` readings, and, at
    each reading between scans, by checking the few pids created since the last one
    (:func:`last_pid`): a pid whose parent is in the tree and which is a process (not a
    thread: a thread's exit signal, field 38 of its stat, is −1) joins it. A child is
    then missed only when it starts and ends between two readings; ``wait4``'s max RSS
    still sees the largest of those (see :mod:`perflab.engines.cmd.commands`).

    Args:
        pid: the root process.
        children: include descendants.
    """

    def __init__(self, pid: int, children: bool = False) -> None:
        self.pid = pid
        self.children = children
        self._members = [pid]
        self._readings = 0
        self._last_pid: int | None = None

    def _find_members(self) -> None:
        """Update the tree's members: a full scan, or the pids created since the last."""
        newest = last_pid()
        start = self._last_pid
        self._last_pid = newest
        if (
            self._readings % RESCAN_EVERY == 0
            or newest is None
            or start is None
            or not 0 <= newest - start <= NEW_PIDS_MAX
        ):
            self._members = [self.pid, *descendants(self.pid)]
            return
        members = set(self._members)
        for pid in range(start + 1, newest + 1):
            if pid in members:  # found by the scan that read ``start``
                continue
            fields = _stat_fields(pid)
            try:
                if fields is not None and int(fields[1]) in members and int(fields[35]) != -1:
                    self._members.append(pid)
                    members.add(pid)
            except (IndexError, ValueError):
                continue

    def read(self) -> tuple[float, int] | None:
        """(CPU seconds, resident bytes) summed over the tree, or None when the root is gone.

        The CPU of a descendant that exited is not counted here (its parent may collect
        it as children's time, which /proc/PID/stat keeps apart): a tree's CPU is a lower
        bound; ``wait4`` gives the whole at exit."""
        if self.children:
            self._find_members()
        self._readings += 1
        root = read(self.pid)
        if root is None:
            return None
        cpu, rss = root
        for member in self._members[1:]:
            reading = read(member)
            if reading is not None:
                cpu, rss = cpu + reading[0], rss + reading[1]
        return cpu, rss


class Sampler:
    """Samples processes every ``interval_s`` on a daemon thread of this process.

    Each key of ``trees`` (e.g. a pid) gets a timeline of ``(t_s, cpu_s, rss_bytes)``:
    seconds on the monotonic clock since the sampler started, cumulative CPU seconds and
    resident bytes, as :meth:`Tree.read` gives them; a process that exited keeps its
    readings up to then. Use as a context manager; :meth:`sample` adds a reading of
    every tree at once (e.g. when an event of interest arrives) and returns them;
    :meth:`take` hands over the readings so far and keeps only the last one.

    Args:
        trees: key → :class:`Tree`.
        interval_s: the period of the thread's readings, s.
    """

    def __init__(self, trees: dict, interval_s: float = INTERVAL_S) -> None:
        import threading  # here, not at the top: the spawning helper never loads it

        self.trees = dict(trees)
        self.interval_s = interval_s
        self._t0 = time.monotonic()
        self.timelines: dict = {key: [] for key in self.trees}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="perflab-memory")

    def __enter__(self) -> "Sampler":
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> dict:
        """Read every tree now; returns key → (t_s, cpu_s, rss_bytes), or None when gone."""
        out = {}
        with self._lock:
            now = time.monotonic() - self._t0
            for key, tree in self.trees.items():
                reading = tree.read()
                out[key] = None if reading is None else (now, *reading)
                if reading is not None:
                    self.timelines[key].append(out[key])
        return out

    def take(self, key: object) -> list:
        """The readings of ``key`` so far; the last one stays as the next part's first."""
        with self._lock:
            readings = self.timelines[key]
            self.timelines[key] = readings[-1:]
        return readings


def timeline_dict(readings: list) -> dict[str, list]:
    """The JSON form of readings ``(t_s, cpu_s, rss_bytes)``: ``{"t_s": [...], "cpu_s":
    [...], "rss_bytes": [...]}`` (times to 0.1 ms, CPU to 0.1 ms)."""
    return {
        "t_s": [round(r[0], 4) for r in readings],
        "cpu_s": [round(r[1], 4) for r in readings],
        "rss_bytes": [int(r[2]) for r in readings],
    }
