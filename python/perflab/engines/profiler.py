"""The sampling profiler every engine's ``--profile`` runs: py-spy, from outside the
profiled process (run's profile workers, cmd's measured commands).

Why py-spy (measured in BENCHMARKS.md, ``benchmarks/profile_overhead.py``): it reads the
interpreter's stacks from another process through ``process_vm_readv``, so the profiled
code runs unmodified; on the issue's hotspot workload it slowed the calls by ≈ 1% at
1000 Hz and gave the 70% function 70% of the samples, where pyinstrument, in-process
(a profile hook on calls and returns), slowed them ≈ 1.75×. py-spy also attaches to a
running process (``--pid``), which ``cmd --profile`` uses on each Python process of a
command (:mod:`perflab.engines.cmd.follow`). Its samples are taken whether the thread
runs or waits (``--idle``), so the profile shares out wall time, as the timed figures do.

Where py-spy starts the profiled program as its own child, no ptrace permission beyond
a parent's is needed (Yama's ``ptrace_scope`` 1, the common default, allows it);
``--pid`` on a process py-spy did not start needs more (root, ``CAP_SYS_PTRACE`` or
``ptrace_scope`` 0), and without it ``cmd --profile`` lets py-spy start the command
(``--subprocesses``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import UsageError
from perflab.model.profile import clean_frame

#: samples per second asked of py-spy: 1 ms resolution, ≈ 10% slower code while sampled
RATE_HZ = 1000


@dataclass(frozen=True)
class Sampler:
    """py-spy found on this machine: its path and version text ("py-spy 0.4.3")."""

    path: str
    version: str


def find_sampler() -> Sampler:
    """py-spy beside this Python (a virtual environment's ``bin/``), else on PATH.

    Raises:
        UsageError: py-spy is not installed (what to install is in the message).
    """
    here = Path(sys.executable).with_name("py-spy")
    path = str(here) if os.access(here, os.X_OK) else shutil.which("py-spy")
    if path is None:
        raise UsageError(
            "--profile needs py-spy, the sampling profiler: pip install py-spy "
            "(or pip install 'perflab[profile]')"
        )
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"--profile: py-spy at {path} does not run ({exc})") from exc
    return Sampler(path, out or "py-spy")


def record_argv(
    sampler: Sampler,
    output: str,
    argv: list[str],
    rate_hz: int = RATE_HZ,
    subprocesses: bool = False,
    pid: int | None = None,
) -> list[str]:
    """The command line that runs ``argv`` under py-spy, writing raw collapsed stacks to
    ``output``: frames aggregated by function (``--function``), idle stacks kept
    (``--idle``: wall time), children followed when ``subprocesses``. With ``pid``
    (``argv`` then unused), py-spy samples that running process instead (``--pid``)."""
    flags = ["--function", "--idle", "--format", "raw", "--rate", str(rate_hz)]
    if subprocesses:
        flags.append("--subprocesses")
    target = ["--pid", str(pid)] if pid is not None else ["--", *argv]
    return [sampler.path, "record", *flags, "--output", output, *target]


def read_raw(path: str, max_bytes: int = 64 << 20) -> dict[str, int]:
    """py-spy's raw output (collapsed stacks, ``a;b;c N`` lines) as weight per stack.
    A missing file is an empty profile; a line without a count is skipped.

    Args:
        path: the file py-spy wrote.
        max_bytes: read at most this much (a profile is far smaller).
    """
    try:
        with open(path, "rb") as f:
            text = f.read(max_bytes).decode(errors="replace")
    except FileNotFoundError:
        return {}
    stacks: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit() or not stack.strip():
            continue
        stacks[stack] = stacks.get(stack, 0) + int(count)
    return stacks


def below(stacks: dict[str, int], marker: str) -> dict[str, int]:
    """The part of each stack under the frame whose function is ``marker`` (the frames
    the measured calls ran), stacks without it dropped: setup, imports and perflab's
    own loop stay out of the profile."""
    out: dict[str, int] = {}
    for stack, weight in stacks.items():
        frames = stack.split(";")
        at = [i for i, f in enumerate(frames) if f.split(" (", 1)[0] == marker]
        if not at:
            continue
        kept = ";".join(clean_frame(f) for f in frames[at[-1] + 1 :]) or "(perflab loop)"
        out[kept] = out.get(kept, 0) + weight
    return out


def merge(profiles: Iterable[dict[str, int]]) -> dict[str, int]:
    """Stacks of several processes merged: weights of equal stacks added."""
    out: dict[str, int] = {}
    for stacks in profiles:
        for stack, weight in stacks.items():
            out[stack] = out.get(stack, 0) + weight
    return out


def run_recorded(argv: list[str], timeout_s: float, **popen: object) -> int | None:
    """Run a py-spy command line to its end, in a process group of its own; at
    ``timeout_s``, or when this process is stopped (KeyboardInterrupt, re-raised), the
    whole group is killed: py-spy and the program it started. Returns py-spy's exit code
    (None when killed)."""
    proc = subprocess.Popen(argv, start_new_session=True, **popen)  # type: ignore[call-overload]
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None
    except KeyboardInterrupt:
        _kill_group(proc)
        raise


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s process group (it leads one) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
