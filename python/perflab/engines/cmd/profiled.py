"""``perflab cmd --profile``: a Python command's time by function, its child processes
included, sampled by py-spy in runs of its own after the timed runs.

Each command is run until the profile time is spent (at least once, at most
:data:`MAX_RUNS` times); the stacks of every run are merged. On Linux perflab follows
the command's process tree itself and runs one ``py-spy record --pid`` per Python
process, started again after each exec (:mod:`perflab.engines.cmd.follow`: py-spy's
own ``--subprocesses`` missed a child found between fork and exec); where processes
cannot be followed (no ``/proc``, or no permission to read a non-child's memory),
``py-spy record --subprocesses`` runs the command. Each stack starts with the chain of
processes it was sampled in (``process: COMMAND LINE``, root first, the pid left out so
that runs merge; the pids are kept in the profile), so a flame graph shows which
process spent the time. A command that runs no Python gets an empty profile with a
note saying so.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from perflab.engines import profiler
from perflab.engines.cmd import follow, proctree
from perflab.model.profile import Profile, bounded, clean_frame

#: the note of a profile whose command ran no Python
NO_PYTHON = "no Python process to sample (cmd --profile samples Python programs)"
#: profiled runs of one command at most, however short it is
MAX_RUNS = 50
_PROCESS = re.compile(r'^process (\d+):"(.*)"$')
_OPEN_PROCESS = re.compile(r'^process \d+:"')


def profile_command(
    argv: Sequence[str],
    seconds: float,
    sampler: profiler.Sampler,
    *,
    timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    input_path: str | None = None,
    rate_hz: int = profiler.RATE_HZ,
) -> Profile:
    """Run ``argv`` with py-spy on each of its Python processes until ``seconds`` of
    wall time are spent; the merged :class:`Profile` (``calls``: the runs made; ``note``:
    why it is empty, how many Python processes went unsampled, what was folded).

    Args:
        argv: the command (no shell), as the timed runs spawned it.
        seconds: profile time (at least one run).
        sampler: py-spy.
        timeout_s: a run longer than this is killed (its samples kept); None: no limit.
        env: the command's environment (default: this process's).
        input_path: a file given on stdin (``--input``).
        rate_hz: samples per second.
    """
    parts, pids, runs, spent, notes, unsampled = [], set(), 0, 0.0, [], 0
    follow_tree = proctree.available()
    while runs < MAX_RUNS and (runs == 0 or spent < seconds):
        with tempfile.TemporaryDirectory(prefix="perflab-profile-") as tmp:
            stdin = open(input_path, "rb") if input_path else subprocess.DEVNULL  # noqa: SIM115
            t0 = time.monotonic()
            try:
                run = _followed_run if follow_tree else _subprocesses_run
                stacks, why, missed = run(
                    argv, sampler, tmp, rate_hz, timeout_s or 3600.0, env, stdin
                )
                unsampled += missed
            finally:
                if input_path:
                    stdin.close()  # type: ignore[union-attr]
            spent += time.monotonic() - t0
            runs += 1
        if not stacks:
            notes.append(why)
            break
        merged, seen = by_process(stacks, shlex.join(argv))
        parts.append(merged)
        pids |= seen
    if unsampled:
        notes.append(
            f"{unsampled} Python process{'es' if unsampled > 1 else ''} not sampled "
            f"(at most {follow.MAX_SAMPLERS} samplers at once)"
        )
    stacks, folded = bounded(profiler.merge(parts))
    return Profile(
        kind="time",
        sampler=sampler.version,
        rate_hz=float(rate_hz),
        stacks=stacks,
        pids=sorted(pids),
        seconds=spent,
        calls=runs,
        note="; ".join(n for n in [*notes, folded] if n),
    )


def _followed_run(
    argv: Sequence[str], sampler: profiler.Sampler, tmp: str, rate_hz: int,
    timeout_s: float, env: dict[str, str] | None, stdin: Any,
) -> tuple[dict[str, int], str, int]:  # fmt: skip
    """One run with a sampler per Python process (Linux, :mod:`.follow`), ``tmp`` its
    folder: (raw stacks under their process chains, why there is none, Python processes
    left unsampled)."""
    try:
        got = follow.sample_tree(
            list(argv), sampler, tmp, rate_hz=rate_hz, timeout_s=timeout_s, env=env, stdin=stdin
        )
    except OSError as exc:
        return {}, f"py-spy took no sample (the command did not start: {exc})", 0
    if got.stacks:
        why = ""
    elif not got.python:
        why = NO_PYTHON
    else:
        why = _why_empty("\n".join(got.errors), 1 if got.errors else 0)
    return got.stacks, why, got.unsampled


def _subprocesses_run(
    argv: Sequence[str], sampler: profiler.Sampler, tmp: str, rate_hz: int,
    timeout_s: float, env: dict[str, str] | None, stdin: Any,
) -> tuple[dict[str, int], str, int]:  # fmt: skip
    """One run under ``py-spy record --subprocesses`` (where processes cannot be followed
    from ``/proc``), ``tmp`` its folder: (raw stacks, why there is none, 0)."""
    raw = os.path.join(tmp, "raw")
    command = profiler.record_argv(sampler, raw, list(argv), rate_hz, subprocesses=True)
    with tempfile.TemporaryFile() as err:
        code = profiler.run_recorded(
            command, timeout_s, env=env, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err
        )
        err.seek(0)
        stderr = err.read()[-4000:].decode(errors="replace")
    return profiler.read_raw(raw), _why_empty(stderr, code), 0


def by_process(stacks: dict[str, int], command: str = "") -> tuple[dict[str, int], set[int]]:
    """Stacks under their process chains (py-spy's ``--subprocesses`` form, which
    :mod:`.follow` writes too) with each ``process PID:"CMD"`` frame made
    ``process: CMD`` (runs merge), and the pids seen. The root process's command line is
    left empty (py-spy does so for the process it started): that one is ``command``, the
    measured command line."""
    out: dict[str, int] = {}
    pids: set[int] = set()
    for stack, weight in stacks.items():
        frames = []
        for frame in _frames(stack):
            match = _PROCESS.match(frame)
            if match:
                pids.add(int(match.group(1)))
                frame = "process: " + (match.group(2) or command)
            frames.append(clean_frame(frame))
        key = ";".join(frames) or "(no frame)"
        out[key] = out.get(key, 0) + weight
    return out, pids


def _frames(stack: str) -> list[str]:
    """A raw stack's frames; a ``process PID:"CMD"`` frame whose command line holds ``;``
    (``python -c 'a; b'``) is put back together."""
    out: list[str] = []
    for piece in stack.split(";"):
        if out and _OPEN_PROCESS.match(out[-1]) and not _PROCESS.match(out[-1]):
            out[-1] += ";" + piece
        else:
            out.append(piece)
    return out


def _why_empty(stderr: str, code: int | None) -> str:
    """Why py-spy took no sample, in words."""
    if "No python processes found" in stderr:
        return NO_PYTHON
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    text = errors[0].removeprefix("Error:").strip() if errors else ""
    if code is None:
        return "py-spy was killed at the timeout before it wrote its samples"
    return f"py-spy took no sample ({text or f'exit {code}'})"
