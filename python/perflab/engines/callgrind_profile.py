"""A deterministic per-function instruction profile from Callgrind's output files
(``cmd --count instructions --profile``, ``run --count instructions --profile``): each function's exclusive Ir ("self"
instructions), per process, as collapsed stacks ``process: CMD;function (object)``.

Reads the callgrind format (https://valgrind.org/docs/manual/cl-format.html): name
compression (``fn=(12) name`` defines id 12, ``fn=(12)`` reuses it), ``ob=``/``fn=``
set the current object and function, a cost line (position, then one number per event)
adds to the current function, and the cost line right after ``calls=`` is the inclusive
cost of that call, charged to the callee's own lines already, so it is skipped. Counts
repeat to the instruction, run after run, where the program is deterministic.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from perflab.engines.callgrind import DUMP_PREFIX
from perflab.model.profile import clean_frame

#: read at most this much of one output file (a large program's file is a few MB)
MAX_FILE_BYTES = 256 << 20
_NAMED = re.compile(r"^\((\d+)\)(?: (.*))?$")
_COST = re.compile(r"^[0-9+\-*]")


def _name(value: str, table: dict[str, str]) -> str:
    """A compressed name: ``(id) name`` defines, ``(id)`` reuses, anything else is plain."""
    match = _NAMED.match(value)
    if not match:
        return value
    key, name = match.group(1), match.group(2)
    if name is not None:
        table[key] = name
    return table.get(key, f"({key})")


def function_costs(text: str, event: str = "Ir") -> tuple[str, dict[tuple[str, str], int]]:
    """One Callgrind output file's exclusive cost of ``event`` per (object, function).

    Args:
        text: the file's text.
        event: the event to sum (Ir: instructions).

    Returns:
        (the process's command line from the ``cmd:`` header, cost per (object, function)).
        A file without that event gives no costs.
    """
    objects: dict[str, str] = {}
    functions: dict[str, str] = {}
    costs: dict[tuple[str, str], int] = {}
    command, column, ob, fn, skip = "", None, "", "", False
    for line in text.splitlines():
        if not line:
            continue
        if _COST.match(line):
            if skip:
                skip = False
                continue
            parts = line.split()
            if column is not None and len(parts) > column + 1 and fn:
                value = parts[column + 1]
                if value.isdigit():
                    costs[(ob, fn)] = costs.get((ob, fn), 0) + int(value)
            continue
        key, _, value = line.partition("=")
        if key == "fn":
            fn = _name(value, functions)
        elif key == "ob":
            ob = _name(value, objects)
        elif key == "cob":
            _name(value, objects)
        elif key == "cfn":
            _name(value, functions)
        elif key == "calls":
            skip = True
        elif line.startswith("events:"):
            names = line.split(":", 1)[1].split()
            column = names.index(event) if event in names else None
        elif line.startswith("cmd:"):
            command = line.split(":", 1)[1].strip()
    return command, costs


def _trigger(path: Path) -> str:
    """The ``desc: Trigger:`` of a callgrind output file's header ("" when absent): the
    header ends where the first object or function is named."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for _, line in zip(range(64), f):
            if line.startswith("desc: Trigger:"):
                return line[len("desc: Trigger:") :].strip()
            if line.startswith(("ob=", "fl=", "fn=")):
                break
    return ""


def instruction_stacks(
    directory: str | os.PathLike[str], reason: str | None = None, by_process: bool = True
) -> dict[str, int]:
    """Every ``callgrind.out.*`` file of ``directory`` as collapsed stacks
    ``process: CMD;function (object)`` weighted by exclusive Ir; equal stacks of several
    processes (one command run twice) add up.

    Args:
        directory: the folder Callgrind wrote into.
        reason: only the dumps perflab's worker requested with a reason starting with
            this (``"sample:"``: the counted samples of ``run --count``), None: every file.
        by_process: root each stack at its process (``cmd``: a command's children are
            processes of their own); False: ``function (object)`` alone (one worker).
    """
    wanted = None if reason is None else f"Client Request: {DUMP_PREFIX}{reason}"
    stacks: dict[str, int] = {}
    for path in sorted(Path(directory).glob("callgrind.out*")):
        if wanted is not None and not _trigger(path).startswith(wanted):
            continue
        with open(path, "rb") as f:
            text = f.read(MAX_FILE_BYTES).decode(errors="replace")
        command, costs = function_costs(text)
        root = clean_frame(f"process: {command or path.name}") + ";" if by_process else ""
        for (ob, fn), ir in costs.items():
            if ir <= 0:
                continue
            key = root + clean_frame(f"{fn} ({os.path.basename(ob) or '???'})")
            stacks[key] = stacks.get(key, 0) + ir
    return stacks
