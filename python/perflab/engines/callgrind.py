"""Counting under Valgrind's Callgrind: the command that starts a counted process, and the
reader of the counts it writes.

perflab's instruction-count mode (``perflab run --count instructions``, ``perflab cmd
--count instructions``, the pytest plugin's and ``perflab.measure``'s ``count``) runs a
process under ``valgrind --tool=callgrind``: Valgrind executes it on a synthetic CPU and
counts every guest instruction (Ir), so the figure does not move with the machine's speed
(Weidendorfer, "Sequential Performance Analysis with Callgrind and KCachegrind", 2008;
Gungraun, formerly iai-callgrind, and CodSpeed's "CPU simulation" measure the same way).

* :func:`valgrind_command`: the argv prefix: address-space randomization off
  (``setarch -R``), then Valgrind with Callgrind's output directed into a directory of
  perflab's own, one file per dump (``callgrind.out.<pid>.<part>``);
* :func:`read_dumps` / :func:`parse_dump`: the totals of each dump, from the header
  (``events:``, ``summary:``) and the end (``totals:``) of Callgrind's output format
  (Valgrind manual, "Callgrind Format Specification"); each file is read line by line,
  never whole, and only those few lines are kept;
* with ``--cache-sim`` the dumps also hold Callgrind's cache events, from which
  :func:`perflab.analyze.counts.cache_figures` derives the *estimated* cycles.

This module imports only the standard library (the worker uses it to calibrate).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: the prefix of the dump reasons perflab's worker gives (``perflab:<label>``)
DUMP_PREFIX = "perflab:"
#: a value above this in a ``summary:`` line is an unsigned wrap-around (Callgrind's
#: final dump after instrumentation stopped can underflow), not a count
MAX_PLAUSIBLE_COUNT = 1 << 62
#: longest line kept from a callgrind output file, characters (the format's header
#: lines are short; ``cmd:`` can hold a long command line)
MAX_LINE = 1 << 16

_FILE_RE = re.compile(r"^callgrind\.out\.(\d+)(?:\.(\d+))?(?:-(\d+))?$")


#: what to do when Valgrind is missing (the one line perflab prints)
MISSING = (
    "counting instructions needs Valgrind, which is not installed: install it "
    "(Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind; "
    "macOS is not supported by Valgrind), or measure time without --count"
)


class ValgrindMissing(RuntimeError):
    """Valgrind (or its Callgrind tool) is not installed: counting is impossible here."""


@dataclass
class Dump:
    """The totals of one Callgrind dump.

    Attributes:
        pid: the counted process's id (from the file's ``pid:`` line or its name).
        part: the dump's number within the process (1, 2, …; the final dump at exit
            is the last part).
        thread: the thread id with ``--separate-threads=yes``, else None.
        trigger: what caused the dump: ``Client Request: <reason>`` or
            ``Program termination`` (the ``desc: Trigger:`` line).
        events: event name → total count over the dump (Ir, and with the cache
            simulation Dr, Dw, I1mr, D1mr, D1mw, ILmr, DLmr, DLmw).
        command: the counted command line (``cmd:``), "" when absent.
    """

    pid: int
    part: int
    thread: int | None
    trigger: str
    events: dict[str, int] = field(default_factory=dict)
    command: str = ""

    @property
    def reason(self) -> str | None:
        """The client request's reason without perflab's prefix ("sample:3"), or None
        for a dump perflab did not request."""
        head = "Client Request: "
        if self.trigger.startswith(head) and self.trigger[len(head) :].startswith(DUMP_PREFIX):
            return self.trigger[len(head) + len(DUMP_PREFIX) :]
        return None


def _values(text: str, names: list[str]) -> dict[str, int]:
    """Event name → value from a ``summary:``/``totals:`` value list (missing trailing
    values are zero, as the format says). Raises ValueError on a non-integer."""
    numbers = [int(v) for v in text.split()]
    numbers += [0] * (len(names) - len(numbers))
    return dict(zip(names, numbers, strict=False))


def parse_dump(lines: Iterable[str], pid: int = 0, part: int = 1) -> Dump:
    """The totals of one callgrind output file.

    Args:
        lines: the file's lines (an open text file is fine: read one line at a time).
        pid / part: defaults when the file has no ``pid:`` / ``part:`` line.

    Returns:
        A :class:`Dump`. Its events come from the ``summary:`` line; where that is
        missing or wrapped around (above :data:`MAX_PLAUSIBLE_COUNT`), from ``totals:``.

    Raises:
        ValueError: no ``events:`` line, or neither a usable ``summary:`` nor ``totals:``.
    """
    names: list[str] = []
    summary: dict[str, int] | None = None
    totals: dict[str, int] | None = None
    dump = Dump(pid, part, None, "")
    for raw in lines:
        line = raw[:MAX_LINE].rstrip("\n")
        key, sep, rest = line.partition(":")
        if not sep or not key or key[0] not in "ecpstd":  # cost lines start with digits
            continue
        rest = rest.strip()
        if key == "events":
            names = rest.split()
        elif key == "summary" and names:
            summary = _values(rest, names)
        elif key == "totals" and names:
            totals = _values(rest, names)
        elif key == "pid" and rest.isdigit():
            dump.pid = int(rest)
        elif key == "part" and rest.isdigit():
            dump.part = int(rest)
        elif key == "thread" and rest.isdigit():
            dump.thread = int(rest)
        elif key == "desc" and rest.startswith("Trigger:"):
            dump.trigger = rest[len("Trigger:") :].strip()
        elif key == "cmd":
            dump.command = rest
    if not names:
        raise ValueError("not a callgrind output file: no 'events:' line")
    if summary is not None and max(summary.values(), default=0) < MAX_PLAUSIBLE_COUNT:
        dump.events = summary
    elif totals is not None:
        dump.events = totals
    else:
        raise ValueError("callgrind output file without a usable 'summary:' or 'totals:' line")
    return dump


def read_dumps(directory: str | os.PathLike[str], pid: int | None = None) -> list[Dump]:
    """Every dump Callgrind wrote into ``directory`` (files ``callgrind.out.<pid>[.<part>]
    [-<thread>]``), ordered by pid, then part, then thread.

    Args:
        directory: the folder :func:`valgrind_command` directed the output into.
        pid: only this process's dumps (None: every process's, e.g. a command whose
            children were traced).

    Returns:
        The dumps; a file that is not a complete callgrind file (a process killed while
        writing) is skipped.
    """
    found: list[Dump] = []
    for path in Path(directory).iterdir():
        match = _FILE_RE.match(path.name)
        if not match or (pid is not None and int(match[1]) != pid):
            continue
        try:
            with path.open(encoding="utf-8", errors="replace") as handle:
                dump = parse_dump(handle, int(match[1]), int(match[2] or 1))
        except (OSError, ValueError):
            continue
        found.append(dump)
    return sorted(found, key=lambda d: (d.pid, d.part, d.thread or 0))


def dumps_by_reason(dumps: Iterable[Dump]) -> dict[str, Dump]:
    """perflab's dumps keyed by their reason ("cold", "sample:0", …); others dropped."""
    return {d.reason: d for d in dumps if d.reason is not None}


def valgrind_path() -> str:
    """The ``valgrind`` executable. Raises :class:`ValgrindMissing` with what to do."""
    found = shutil.which("valgrind")
    if not found:
        raise ValgrindMissing(MISSING)
    return found


def valgrind_version() -> str:
    """Valgrind's version ("3.19.0"), "" when it can't be read. Raises ValgrindMissing."""
    try:
        out = subprocess.run(
            [valgrind_path(), "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.strip().removeprefix("valgrind-")


def no_aslr_prefix() -> list[str]:
    """The argv prefix that starts a process with address-space randomization off:
    ``setarch <machine> -R`` (util-linux; personality(ADDR_NO_RANDOMIZE), inherited by
    every exec), or [] where setarch is missing (the results record ``aslr: "on"``)."""
    found = shutil.which("setarch")
    return [found, os.uname().machine, "-R"] if found else []


def valgrind_command(
    out_dir: str | os.PathLike[str],
    *,
    cache_sim: bool = False,
    trace_children: bool = False,
    instr_at_start: bool = False,
) -> list[str]:
    """The argv prefix that runs a program counted by Callgrind.

    Args:
        out_dir: an existing folder of perflab's own (a temp dir): Callgrind writes
            ``callgrind.out.<pid>[.<part>]`` there, one file per dump.
        cache_sim: also simulate the caches (``--cache-sim=yes``; the run is slower).
        trace_children: follow exec'd children (``--trace-children=yes``; ``perflab cmd``).
        instr_at_start: count from the first instruction (``perflab cmd``); False waits
            for the worker's CALLGRIND_START_INSTRUMENTATION (``--instr-atstart=no``).

    Returns:
        ``[setarch …, valgrind, options…]``: append the program's own argv.

    Raises:
        ValgrindMissing: Valgrind is not installed.
    """
    return [
        *no_aslr_prefix(),
        valgrind_path(),
        "--tool=callgrind",
        "-q",
        f"--instr-atstart={'yes' if instr_at_start else 'no'}",
        f"--cache-sim={'yes' if cache_sim else 'no'}",
        f"--trace-children={'yes' if trace_children else 'no'}",
        # a file per process and per dump; %p is the counted process's pid
        f"--callgrind-out-file={Path(out_dir) / 'callgrind.out.%p'}",
    ]
