"""How the runner reaches one worker process: :class:`WorkerBackend` (the interface;
tests use fakes, :mod:`perflab.engines.run.inprocess` runs in this process) and
:class:`SubprocessBackend`, which spawns perflab's worker (timed or counted) with a
dedicated event pipe, its plan, its layout's environment and, when asked, a memory
sampler; :class:`Outcome` is what one process produced.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from perflab.engines import memory
from perflab.engines.layout import Layout
from perflab.engines.run import counted

#: one event a worker wrote (a decoded JSON line)
Event = dict[str, Any]


@dataclass
class Outcome:
    """What one worker process produced: its events and how it ended.

    Attributes:
        events: decoded events in arrival order.
        returncode: exit status (negative: killed by that signal; None if killed by us).
        timed_out: True when the runner killed it at the timeout.
        interrupted: True when Ctrl-C ended it.
        wall_s: wall time from spawn to exit, s.
        stderr: the tail of what it wrote on stderr.
        memory: with the plan's ``memory_interval_s``: the process's timeline
            (:func:`perflab.engines.memory.timeline_dict`); None otherwise.
        counts: with the plan's ``count``: Callgrind's dumps of the process by reason
            (:func:`perflab.engines.run.counted.finish`); empty otherwise.
    """

    events: list[Event] = field(default_factory=list)
    returncode: int | None = 0
    timed_out: bool = False
    interrupted: bool = False
    wall_s: float = 0.0
    stderr: str = ""
    memory: dict[str, list[float]] | None = None
    counts: dict[str, Any] = field(default_factory=dict)


class WorkerBackend(Protocol):
    """Runs one worker process for a case and reports its events."""

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[Event], None]
    ) -> Outcome:
        """Run one process with ``plan``; call ``on_event`` for each event as it arrives."""
        ...


class SubprocessBackend:
    """Spawns ``python -m perflab.engines.run.worker`` with a dedicated event pipe.

    Args:
        argv: another worker command (default: perflab's worker). The pytest plugin
            runs a child pytest on one test, whose fixture measures and emits the events.
        cwd: its working folder (default: ours).
        plan_env: when set, the plan (JSON) goes in this environment variable instead
            of on stdin (a child pytest keeps stdin for itself).
        pythonpath: folders put on the worker's PYTHONPATH right after perflab's own
            (a baseline checkout's folders, ahead of what site-packages points to).
    """

    def __init__(
        self,
        argv: list[str] | None = None,
        cwd: str | None = None,
        plan_env: str | None = None,
        pythonpath: Sequence[str] = (),
    ) -> None:
        self.argv = argv  # None: counted.worker_argv (the timed or the counted worker)
        self.cwd, self.plan_env, self.pythonpath = cwd, plan_env, list(pythonpath)
        self.stop: Any = None  # a threading.Event: set, running workers are killed

    def run(
        self, plan: dict[str, Any], timeout_s: float, on_event: Callable[[Event], None]
    ) -> Outcome:
        """Run one worker; kill it at ``timeout_s``. Ctrl-C kills it and is re-raised
        after the events received so far are kept in the returned outcome's caller.

        With the plan's ``memory_interval_s`` the worker is sampled from here
        (:class:`perflab.engines.memory.Sampler`) and its timeline goes in the outcome;
        its ``done`` event gains ``rss_hwm_bytes`` (the kernel's peak, read from here).
        (The worker adds its own ``rss_bytes`` to each ``sample`` event: read here, as
        events arrive, they would bunch up whenever this process is descheduled.)"""
        read_fd, write_fd = os.pipe()
        outcome = Outcome()
        start = time.monotonic()
        own = self.argv is None  # perflab's worker (counted: it imports the plan's file)
        argv, counting = counted.start(plan, self.argv or counted.worker_argv(plan), own)
        text = counted.plan_text(plan, write_fd)
        env = worker_env(plan.get("layout"), self.pythonpath) | (
            {self.plan_env: text} if self.plan_env else {}
        )
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL if self.plan_env else subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=err,
                pass_fds=(write_fd, *counted.pass_fds(plan)),
                env=env,
                cwd=self.cwd,
            )
            os.close(write_fd)
            sampler = _sampler(proc.pid, plan.get("memory_interval_s"))
            try:
                if proc.stdin is not None:
                    proc.stdin.write(text.encode())
                    proc.stdin.close()
                for event in _read_events(read_fd, start + timeout_s, self.stop):
                    if sampler is not None:
                        _add_memory(event, proc.pid)
                    outcome.events.append(event)
                    on_event(event)
                outcome.timed_out = time.monotonic() >= start + timeout_s
            except KeyboardInterrupt:
                outcome.interrupted = True
                raise
            finally:
                os.close(read_fd)
                if sampler is not None:
                    sampler.__exit__()
                    outcome.memory = memory.timeline_dict(sampler.timelines[proc.pid])
                outcome.returncode = _reap(proc, kill=outcome.timed_out or outcome.interrupted)
                outcome.wall_s = time.monotonic() - start
                err.seek(0)
                outcome.stderr = err.read()[-4000:].decode(errors="replace")
                outcome.counts = counted.finish(counting, outcome.events)
        return outcome


def _sampler(pid: int, interval_s: float | None) -> memory.Sampler | None:
    """A started sampler of ``pid`` every ``interval_s`` (None: no sampling)."""
    return memory.Sampler({pid: memory.Tree(pid)}, interval_s).__enter__() if interval_s else None


def _add_memory(event: Event, pid: int) -> None:
    """Add the kernel's peak of the worker's resident set to its ``done`` event."""
    if event["event"] == "done":
        event["rss_hwm_bytes"] = memory.high_water(pid)


def worker_env(
    layout: dict[str, int] | None = None, pythonpath: Sequence[str] = ()
) -> dict[str, str]:
    """The worker's environment: ours, with this perflab first on PYTHONPATH (then
    ``pythonpath``) and the process's layout randomization (padding variable, hash seed)
    when it has one."""
    env = dict(os.environ)
    package_root = str(
        Path(__file__).resolve().parents[3]
    )  # python/ (engines/run/ → perflab/ → python/)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [package_root, *pythonpath, env.get("PYTHONPATH")])
    )
    if layout:
        env.update(Layout(**layout).environment())
    return env


def _read_events(fd: int, deadline: float, stop: Any = None) -> Iterator[Event]:
    """Yield JSON-line events from ``fd`` until EOF or ``deadline`` (monotonic s).
    Raises KeyboardInterrupt within 0.5 s of ``stop`` (a threading.Event) being set."""
    buffer = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while (remaining := deadline - time.monotonic()) > 0:
            if stop is not None and stop.is_set():  # a worker run on another thread
                raise KeyboardInterrupt
            if not sel.select(timeout=min(remaining, 0.5)):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                yield json.loads(line)


def _reap(proc: subprocess.Popen[bytes], kill: bool) -> int | None:
    """Wait for ``proc`` (killing it first if asked); its return code, None if we killed it."""
    if kill and proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return None
    try:
        return proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
