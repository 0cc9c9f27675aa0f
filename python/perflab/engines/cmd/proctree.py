"""A process tree followed from ``/proc`` (Linux): every descendant of one root process,
each with its parent, program, command line and *exec generation*, polled every few
milliseconds by ``cmd --profile`` (:mod:`perflab.engines.cmd.follow`) so that each
Python process gets a sampler of its own, started again after each exec.

Method. Descendants are found from ``/proc/PID/task/TID/children`` (the children each
thread forked; Linux >= 3.5 with ``CONFIG_PROC_CHILDREN``), else from a scan of every
``/proc/PID/stat`` (parent pid, field 4). A process is known by (pid, start time): a
reused pid is a new process. Each poll reads every live process's ``stat``, ``exe`` and
``cmdline``; a change of the program (``exe``), of the command line or of the stack's
start address (``stat`` field 28, new on every exec under address-space randomization)
after the process was first seen means it exec'd: its generation goes up by one. A
process found between fork and exec is first a copy of its parent (generation 0) and
then its new program (generation 1). A zombie or a vanished pid has exited.

Limits: a process that starts and ends between two polls is never seen; a process whose
parent exited before it was seen (it was handed to init) is lost; a process that changes
its own command line (``setproctitle``) counts as an exec.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

#: seconds between two polls of the tree
POLL_S = 0.015
_PYTHON_EXE = re.compile(r"^python[0-9.]*[a-z]*$")


@dataclass(frozen=True)
class Process:
    """One generation of one process (a process that exec'd has several).

    Attributes:
        pid: its process id.
        ppid: its parent's pid when it was first seen.
        exe: its program's path (``/proc/PID/exe``; "" when unreadable).
        cmdline: its arguments (``/proc/PID/cmdline``).
        generation: 0 as first seen, +1 per exec seen since.
        seen_s: when this generation was first seen (the tree's clock, s).
    """

    pid: int
    ppid: int
    exe: str
    cmdline: tuple[str, ...]
    generation: int
    seen_s: float


@dataclass(frozen=True)
class Change:
    """What a poll found: ``kind`` is ``"new"`` (a descendant first seen), ``"exec"``
    (a known one runs a new program: ``process`` is its new generation) or ``"exit"``
    (``process``: its last generation)."""

    kind: str
    process: Process


@dataclass
class _State:
    """What is known of one live process: its current generation, start time (clock
    ticks since boot, ``stat`` field 22) and stack start (``stat`` field 28)."""

    process: Process
    start_ticks: int
    stack: int


@dataclass
class ProcessTree:
    """The descendants of ``root_pid``, root included, followed by :meth:`poll`.

    Attributes:
        root_pid: the process whose tree is followed.
        proc_root: the ``/proc`` file system's path (tests may point it elsewhere).
        clock: a monotonic clock, s.
        live: current generation of each live process, by pid.
        history: every generation seen, in the order seen (exited ones included).
    """

    root_pid: int
    proc_root: str = "/proc"
    clock: Callable[[], float] = time.monotonic
    live: dict[int, Process] = field(default_factory=dict)
    history: list[Process] = field(default_factory=list)
    _states: dict[int, _State] = field(default_factory=dict)
    _use_children: bool | None = None

    def poll(self) -> list[Change]:
        """Read the tree once: new descendants, execs and exits since the last poll, in
        that order (a parent before its children). The root itself is ``"new"`` at the
        first poll (no change at all when it already ended). Never raises for a process
        that vanishes while read (it is an exit)."""
        changes: list[Change] = []
        for pid in list(self._states):
            changes.extend(self._recheck(pid))
        if not self._states and not self.history:
            changes.extend(self._add(self.root_pid, 0))
        found = self._children_of(list(self._states))
        while found:
            pid, ppid = found.pop(0)
            new = self._add(pid, ppid)
            changes.extend(new)
            if new:
                found.extend(self._children_of([pid]))
        return changes

    def chain(self, pid: int) -> list[Process]:
        """``pid``'s process and its ancestors' (current or last generation), root
        first; [] for a pid never seen."""
        last = {p.pid: p for p in self.history}
        out: list[Process] = []
        while pid in last and len(out) < 256:
            out.append(last[pid])
            if pid == self.root_pid:
                break
            pid = last[pid].ppid
        return out[::-1]

    def _recheck(self, pid: int) -> list[Change]:
        """A known process re-read: exited, exec'd or unchanged."""
        state = self._states[pid]
        now = _read(self.proc_root, pid)
        if now is None or now[1] != state.start_ticks:
            return [self._exit(pid)]
        _ppid, _start, stack, exe, cmdline = now
        old = state.process
        if (exe, cmdline, stack) == (old.exe, old.cmdline, state.stack):
            return []
        if not cmdline or (old.exe and not exe) or (state.stack and not stack):
            return []  # exiting: its memory is being released (an exit, next poll)
        gen = Process(pid, old.ppid, exe, cmdline, old.generation + 1, self.clock())
        self._states[pid] = _State(gen, state.start_ticks, stack)
        self.live[pid] = gen
        self.history.append(gen)
        return [Change("exec", gen)]

    def _exit(self, pid: int) -> Change:
        state = self._states.pop(pid)
        self.live.pop(pid, None)
        return Change("exit", state.process)

    def _add(self, pid: int, ppid: int) -> list[Change]:
        """A process first seen (nothing when it is gone or a zombie already)."""
        now = _read(self.proc_root, pid)
        if now is None:
            return []
        real_ppid, start, stack, exe, cmdline = now
        proc = Process(pid, ppid or real_ppid, exe, cmdline, 0, self.clock())
        self._states[pid] = _State(proc, start, stack)
        self.live[pid] = proc
        self.history.append(proc)
        return [Change("new", proc)]

    def _children_of(self, pids: list[int]) -> list[tuple[int, int]]:
        """(child pid, parent pid) of every child of ``pids`` not yet known."""
        if self._use_children is None:
            self._use_children = os.path.exists(
                os.path.join(self.proc_root, str(os.getpid()), "task", str(os.getpid()), "children")
            )
        if self._use_children:
            pairs = [(c, p) for p in pids for c in children(p, self.proc_root)]
        else:
            wanted = set(pids)
            pairs = [(c, p) for c, p in parents(self.proc_root).items() if p in wanted]
        return [(c, p) for c, p in pairs if c not in self._states]


def available(proc_root: str = "/proc") -> bool:
    """True when this machine's processes can be followed: ``/proc`` holds this
    process's ``stat`` (Linux), and a sampler may read another process's memory
    without being its parent (root, ``CAP_SYS_PTRACE``, or Yama's ``ptrace_scope`` 0
    or absent). Elsewhere ``cmd --profile`` lets py-spy follow the children itself."""
    if not os.path.exists(os.path.join(proc_root, "self", "stat")):
        return False
    try:
        with open(os.path.join(proc_root, "sys", "kernel", "yama", "ptrace_scope")) as f:
            scope = int(f.read().strip() or 0)
    except (OSError, ValueError):
        scope = 0
    return scope == 0 or os.geteuid() == 0 or _has_cap_sys_ptrace(proc_root)


def _has_cap_sys_ptrace(proc_root: str) -> bool:
    """This process's effective capabilities include ``CAP_SYS_PTRACE`` (bit 19)."""
    try:
        with open(os.path.join(proc_root, "self", "status")) as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> 19 & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def children(pid: int, proc_root: str = "/proc") -> list[int]:
    """The child pids of ``pid``, from each of its threads' ``children`` file ([] when
    it is gone or the files are missing)."""
    tasks = os.path.join(proc_root, str(pid), "task")
    out: list[int] = []
    try:
        tids = os.listdir(tasks)
    except OSError:
        return []
    for tid in tids:
        try:
            with open(os.path.join(tasks, tid, "children")) as f:
                out.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def parents(proc_root: str = "/proc") -> dict[int, int]:
    """The parent pid of every process on the machine (a scan of ``/proc/*/stat``)."""
    out: dict[int, int] = {}
    for name in os.listdir(proc_root):
        if name.isdigit():
            stat = _stat(proc_root, int(name))
            if stat is not None:
                out[int(name)] = int(stat[1])
    return out


def looks_like_python(process: Process, proc_root: str = "/proc") -> bool:
    """True when ``process`` seems to run CPython: its program is named ``python…``
    (``python3``, ``python3.12``), or a ``libpython`` is mapped in its memory (an
    embedding program, or a Python linked to a shared libpython). A statically linked
    Python under another name is not recognized."""
    if _PYTHON_EXE.match(os.path.basename(process.exe)):
        return True
    try:
        with open(os.path.join(proc_root, str(process.pid), "maps")) as f:
            return any("/libpython" in line for line in f)
    except OSError:
        return False


def _stat(proc_root: str, pid: int) -> list[str] | None:
    """``/proc/PID/stat``'s fields from the state on (field 3 is index 0), the command
    name (which may hold spaces and parentheses) left out; None when gone."""
    try:
        with open(os.path.join(proc_root, str(pid), "stat")) as f:
            text = f.read()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def _read(proc_root: str, pid: int) -> tuple[int, int, int, str, tuple[str, ...]] | None:
    """(parent pid, start time, stack start, exe, cmdline) of a live process; None when
    it is gone or a zombie."""
    stat = _stat(proc_root, pid)
    if stat is None or len(stat) < 26 or stat[0] in ("Z", "X"):
        return None
    base = os.path.join(proc_root, str(pid))
    try:
        exe = os.readlink(os.path.join(base, "exe"))
    except OSError:
        exe = ""
    try:
        with open(os.path.join(base, "cmdline"), "rb") as f:
            raw = f.read(1 << 16)
    except OSError:
        return None
    cmdline = tuple(a.decode(errors="replace") for a in raw.split(b"\0")[:-1])
    return int(stat[1]), int(stat[19]), int(stat[25]), exe, cmdline
