"""One run of a command with a py-spy of its own on each of its Python processes, for
``cmd --profile`` on Linux (:mod:`perflab.engines.cmd.profiled`).

Why not ``py-spy record --subprocesses``: py-spy 0.4 attaches to each new child pid
once. A child found between fork and exec is a copy of its Python parent; py-spy's
sampler reads the parent's memory image and, after the exec, stale addresses: the
child's own program is never sampled. A busy machine widens that window, and a
``preexec_fn`` makes it certain. So perflab starts the command itself, follows its
process tree (:mod:`perflab.engines.cmd.proctree`, polled every
:data:`~perflab.engines.cmd.proctree.POLL_S` s) and runs ``py-spy record --pid PID``
on every process that looks like Python
(:func:`~perflab.engines.cmd.proctree.looks_like_python`); after an exec its sampler
is stopped (SIGINT: it writes its samples) and a new one started on the new program.
A sampler that fails while its process still runs (Python not initialised yet) is
started again, at most :data:`MAX_ATTEMPTS` times. At most :data:`MAX_SAMPLERS`
samplers run at once; a Python process still waiting for one when it ends is counted
as unsampled.

Each sampler's stacks start with the chain of processes from the root down
(``process PID:"CMDLINE"`` frames, py-spy's own ``--subprocesses`` form; the root's
command line left empty: it is the measured command), so
:func:`~perflab.engines.cmd.profiled.by_process` reads them as before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import IO, Any

from perflab.engines import profiler
from perflab.engines.cmd.proctree import POLL_S, Process, ProcessTree, looks_like_python

#: py-spy samplers running at once, at most
MAX_SAMPLERS = 32
#: samplers started on one process generation, at most (py-spy fails to attach to a
#: Python not yet initialised; it retries for ≈ 0.4 s itself each time)
MAX_ATTEMPTS = 5
#: a process not named python… is checked for a mapped libpython while younger than this, s
YOUNG_S = 0.25
#: seconds a stopped sampler gets to write its samples before it is killed
STOP_GRACE_S = 10.0


@dataclass
class TreeProfile:
    """What one followed run gave.

    Attributes:
        stacks: raw py-spy stacks (weight: samples), each starting with its process
            chain's ``process PID:"CMDLINE"`` frames.
        python: Python processes found (pids; sampled or not).
        unsampled: those whose program was never sampled, kept waiting while
            :data:`MAX_SAMPLERS` ran (a generation that waited, none sampled after it).
        errors: py-spy's error lines of samplers that took no sample.
        timed_out: the command was killed at the timeout.
    """

    stacks: dict[str, int] = field(default_factory=dict)
    python: int = 0
    unsampled: int = 0
    errors: list[str] = field(default_factory=list)
    timed_out: bool = False


@dataclass
class _Sampler:
    """A running ``py-spy record --pid``: the process generation it samples, the frames
    its stacks get in front, its output and stderr files, its attempt number."""

    process: Process
    prefix: str
    popen: subprocess.Popen[bytes]
    output: str
    err: IO[bytes]
    attempt: int


@dataclass
class _Run:
    """One followed run's state: samplers running, generations waiting for one (with
    attempts made and the earliest start time), young non-python-named processes
    whose memory maps are checked again; the pids found Python, sampled, and ever kept
    waiting by the samplers' bound (these two as (pid, generation))."""

    tree: ProcessTree
    sampler: profiler.Sampler
    workdir: str
    rate_hz: int
    max_samplers: int
    result: TreeProfile = field(default_factory=TreeProfile)
    running: dict[int, _Sampler] = field(default_factory=dict)
    stopping: list[_Sampler] = field(default_factory=list)
    waiting: dict[int, tuple[Process, int, float]] = field(default_factory=dict)
    maybe: dict[int, Process] = field(default_factory=dict)
    python: set[int] = field(default_factory=set)
    sampled: set[tuple[int, int]] = field(default_factory=set)
    blocked: set[tuple[int, int]] = field(default_factory=set)


def sample_tree(
    argv: list[str],
    sampler: profiler.Sampler,
    workdir: str,
    *,
    rate_hz: int = profiler.RATE_HZ,
    timeout_s: float = 3600.0,
    env: dict[str, str] | None = None,
    stdin: Any = subprocess.DEVNULL,
    max_samplers: int = MAX_SAMPLERS,
) -> TreeProfile:
    """Run ``argv`` (no shell; stdout and stderr discarded) in a session of its own to
    its end, each of its Python processes sampled by py-spy; at ``timeout_s`` the whole
    tree is killed (SIGKILL to its process group and to every descendant seen) and the
    samples taken are kept. When this process is stopped (KeyboardInterrupt, re-raised)
    the tree and the samplers are killed.

    Args:
        argv: the command.
        sampler: py-spy.
        workdir: an existing folder for py-spy's files.
        rate_hz: samples per second, per process.
        timeout_s: wall time the command may take, s.
        env: its environment (default: this process's).
        stdin: its standard input (a file or ``subprocess.DEVNULL``).
        max_samplers: py-spy processes at once, at most.

    Raises:
        OSError: the command cannot be started (a missing program).
    """
    root = subprocess.Popen(
        argv,
        start_new_session=True,
        env=env,
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run = _Run(ProcessTree(root.pid), sampler, workdir, rate_hz, max_samplers)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            changes = run.tree.poll()
            ended = root.poll() is not None
            for change in changes:
                _on_change(run, change.kind, change.process)
            _recheck_maybe(run)
            _reap(run)
            _start_waiting(run)
            if ended:
                break
            if time.monotonic() >= deadline:
                run.result.timed_out = True
                _kill_tree(root, run.tree)
                break
            time.sleep(POLL_S)
        _finish(run)
    except BaseException:
        _kill_tree(root, run.tree)
        for s in [*run.running.values(), *run.stopping]:
            _signal(s.popen, signal.SIGKILL)
            s.popen.wait()
            s.err.close()
        raise
    run.result.python = len(run.python)
    run.result.unsampled = len(
        {
            p
            for p, g in run.blocked - run.sampled
            if not any(q == p and h > g for q, h in run.sampled)
        }
    )
    return run.result


def _on_change(run: _Run, kind: str, process: Process) -> None:
    """A process first seen, exec'd or ended: its sampler stopped on exec or exit (a
    sampler of an ended process ends by itself), a new one planned for a Python one."""
    pid = process.pid
    run.maybe.pop(pid, None)
    if kind != "new":
        old = run.running.pop(pid, None)
        if old is not None:
            if kind == "exec":
                _signal(old.popen, signal.SIGINT)
            run.stopping.append(old)
        run.waiting.pop(pid, None)
    if kind == "exit":
        return
    if looks_like_python(process, run.tree.proc_root):
        _plan(run, process, 0, 0.0)
    else:
        run.maybe[pid] = process


def _plan(run: _Run, process: Process, attempts: int, not_before: float) -> None:
    """``process`` to get a sampler (attempt ``attempts + 1``) from ``not_before`` on."""
    if attempts == 0:
        run.python.add(process.pid)
    run.waiting[process.pid] = (process, attempts, not_before)


def _recheck_maybe(run: _Run) -> None:
    """Young processes not named python… looked at again (their libpython may have been
    mapped since); old ones given up."""
    now = run.tree.clock()
    for pid, process in list(run.maybe.items()):
        if run.tree.live.get(pid) is not process or now - process.seen_s > YOUNG_S:
            del run.maybe[pid]
        elif looks_like_python(process, run.tree.proc_root):
            del run.maybe[pid]
            _plan(run, process, 0, 0.0)


def _start_waiting(run: _Run) -> None:
    """Samplers started for the waiting generations that are due, while fewer than
    ``max_samplers`` run (stopping ones included)."""
    now = time.monotonic()
    for pid, (process, attempts, not_before) in list(run.waiting.items()):
        if not_before > now:
            continue
        if len(run.running) + len(run.stopping) >= run.max_samplers:
            run.blocked.add((pid, process.generation))
            continue
        del run.waiting[pid]
        if run.tree.live.get(pid) is not process:
            continue
        output = os.path.join(run.workdir, f"{pid}.{process.generation}.{attempts}.raw")
        argv = profiler.record_argv(run.sampler, output, [], run.rate_hz, pid=pid)
        err = open(output + ".err", "w+b")  # noqa: SIM115 (closed when reaped)
        popen = subprocess.Popen(
            argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=err
        )
        run.sampled.add((pid, process.generation))
        run.running[pid] = _Sampler(
            process, _prefix(run.tree, process), popen, output, err, attempts + 1
        )


def _reap(run: _Run) -> None:
    """Ended samplers' samples collected; a failed one whose process still runs the same
    program planned again (:data:`MAX_ATTEMPTS`)."""
    for pid, s in list(run.running.items()):
        if s.popen.poll() is None:
            continue
        del run.running[pid]
        if (
            not _collect(run, s)
            and s.popen.returncode != 0
            and s.attempt < MAX_ATTEMPTS
            and run.tree.live.get(pid) is s.process
        ):
            _plan(run, s.process, s.attempt, time.monotonic() + 0.05)
    for s in list(run.stopping):
        if s.popen.poll() is not None:
            run.stopping.remove(s)
            _collect(run, s)


def _collect(run: _Run, s: _Sampler) -> bool:
    """An ended sampler's stacks added under its process chain; True when it had any.
    One that took none and failed: its ``Error:`` line kept (at most 10 kept)."""
    stacks = profiler.read_raw(s.output)
    for stack, weight in stacks.items():
        key = f"{s.prefix};{stack}"
        run.result.stacks[key] = run.result.stacks.get(key, 0) + weight
    s.err.seek(0)
    text = s.err.read()[-4000:].decode(errors="replace")
    s.err.close()
    lines = [line for line in text.splitlines() if line.startswith("Error:")]
    if not stacks and lines and s.popen.returncode and len(run.result.errors) < 10:
        run.result.errors.append(lines[0])
    return bool(stacks)


def _finish(run: _Run) -> None:
    """The command ended: every sampler still running stopped (SIGINT: it writes its
    file), waited for (:data:`STOP_GRACE_S`, then killed) and collected."""
    for s in run.running.values():
        _signal(s.popen, signal.SIGINT)
    run.stopping.extend(run.running.values())
    run.running.clear()
    end = time.monotonic() + STOP_GRACE_S
    for s in run.stopping:
        try:
            s.popen.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(s.popen, signal.SIGKILL)
            s.popen.wait()
    _reap(run)


def _prefix(tree: ProcessTree, process: Process) -> str:
    """The ``process PID:"CMDLINE"`` frames of ``process``'s chain, root first (the
    root's command line empty: it is the measured command)."""
    chain = tree.chain(process.pid)[:-1] + [process]
    return ";".join(
        f'process {p.pid}:"{"" if p.pid == tree.root_pid else " ".join(p.cmdline)}"' for p in chain
    )


def _signal(popen: subprocess.Popen[bytes], sig: int) -> None:
    """``sig`` to ``popen`` unless it has been reaped."""
    if popen.poll() is None:
        try:
            popen.send_signal(sig)
        except ProcessLookupError:
            pass


def _kill_tree(root: subprocess.Popen[bytes], tree: ProcessTree) -> None:
    """SIGKILL to the command's process group and to every live descendant seen (one
    that left the group too); the root reaped."""
    try:
        os.killpg(root.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in list(tree.live):
        if pid != root.pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    root.wait()
