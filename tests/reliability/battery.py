"""The fault battery of issue 12: every malformed input and fault class against every
subcommand, with the table of what was tried and how perflab answered.

Run ``python -m tests.reliability.battery`` from the repository root: it prints the
table and writes it to docs/reliability.md. ``tests/reliability/test_battery.py``
runs the same cases in ``make test`` and asserts 0 internal errors, 0 hangs, 0 data
lost and 0 files outside the results touched.

Each case runs ``python -m perflab …`` in a fresh folder and is judged by:

* internal error: exit 1 with "internal error" or a traceback, or any exit code
  the case does not allow (a crafted file is bad input: 2, never 1);
* hang: no exit within :data:`TIMEOUT_S`;
* data lost: a case that measured something whose results are neither at the
  destination nor in the rescue file the error names;
* outside touched: any file in the case's folder other than its declared outputs
  created, changed or removed (the folder holds the foreign files, links and
  special files the case aims perflab at).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.reliability.battery_cases import (
    Case,
    name_cases,
    option_cases,
    reading_cases,
    saving_cases,
)
from tests.reliability.samples import ROOT

TIMEOUT_S = 60.0
#: The history database of the cases that don't name one (outside their folders, as
#: tests/conftest.py does for the test suite).
_HISTORY = os.environ.get("PERFLAB_HISTORY") or str(
    Path(tempfile.gettempdir()) / f"perflab-battery-{os.getpid()}" / "history.sqlite"
)
OUT = ROOT / "docs" / "reliability.md"


@dataclass
class Outcome:
    """How one case ended."""

    case: Case
    code: int | None
    seconds: float
    problems: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- running


def all_cases() -> list[Case]:
    """Every case of the battery (issue 12's and issue 33's, tests/reliability/hostile.py
    and hostile2.py)."""
    from tests.reliability.hostile import hostile_cases
    from tests.reliability.hostile2 import hostile2_cases

    return (
        reading_cases()
        + name_cases()
        + saving_cases()
        + option_cases()
        + hostile_cases()
        + hostile2_cases()
    )


def _snapshot(folder: Path) -> dict[str, str]:
    """Relative path → a fingerprint of every entry (links and special files included)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[rel] = f"mode:{path.lstat().st_mode:o}"
    return out


def _rescue_named(stderr: str) -> Path | None:
    match = re.search(r"saved to (\S+perflab-rescue-\S+) instead", stderr)
    return Path(match.group(1)) if match else None


def run_case(case: Case) -> Outcome:
    """Run one case in a fresh folder and judge it."""
    folder = Path(tempfile.mkdtemp(prefix="perflab-battery-"))
    try:
        if case.setup is not None:
            case.setup(folder)
        before = _snapshot(folder)
        argv = [w.replace("{dir}", str(folder)) for w in case.argv]
        started = time.monotonic()
        command: list[str] | str = [sys.executable, "-m", "perflab", *argv]
        if case.shell is not None:
            prefix = f"{shlex.quote(sys.executable)} -m perflab"
            command = case.shell.replace("{perflab}", prefix).replace("{dir}", str(folder))
        try:
            result = subprocess.run(
                command,
                shell=case.shell is not None,
                executable="/bin/bash" if case.shell is not None else None,
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                env={**os.environ, "COLUMNS": "120", "PERFLAB_HISTORY": _HISTORY},
                preexec_fn=case.preexec,
                errors="replace",
            )
        except subprocess.TimeoutExpired:
            return Outcome(case, None, time.monotonic() - started, ["hang"])
        outcome = Outcome(case, result.returncode, time.monotonic() - started)
        _judge(case, folder, before, result, outcome)
        return outcome
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _judge(
    case: Case,
    folder: Path,
    before: dict[str, str],
    result: subprocess.CompletedProcess[str],
    outcome: Outcome,
) -> None:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    if "internal error" in result.stderr or "Traceback" in result.stderr:
        outcome.problems.append("internal error")
    elif result.returncode not in case.allowed:
        outcome.problems.append(f"unexpected exit {result.returncode}")
    elif result.returncode in (2, 3) and len(errors) != 1:
        outcome.problems.append("not one error line")
    rescue = _rescue_named(result.stderr)
    if case.measured or result.returncode == 3:
        if not _results_survived(case, folder, result, rescue):
            outcome.problems.append("data lost")
    from tests.reliability.hostile import secret_leaked

    if secret_leaked(folder, result, rescue):
        outcome.problems.append("secret leaked")
    if rescue is not None:
        rescue.unlink(missing_ok=True)
    after = _snapshot(folder)
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    if [k for k in changed if not any(fnmatch.fnmatch(k, o) for o in case.outputs)]:
        outcome.problems.append("outside touched")
    if case.check is not None and not outcome.problems:
        try:
            problem = case.check(folder, result)
        except (ValueError, IndexError, KeyError) as exc:
            problem = f"its check failed: {exc}"
        if problem:
            outcome.problems.append(problem)


def _results_survived(
    case: Case, folder: Path, result: subprocess.CompletedProcess[str], rescue: Path | None
) -> bool:
    """The measured results load from the destination, stdout or the rescue file."""
    from perflab import model

    if result.returncode == 3:
        if rescue is None:  # no file could be written: the JSON is on stderr
            body = result.stderr.split("'perflab: end'\n", 1)[-1].split("perflab: end")[0]
            return json.loads(body or "{}").get("tool") == "perflab"
        return _loads(model, rescue)
    if result.returncode != 0:
        return True  # refused before measuring: nothing was measured
    if "--json" in case.argv and case.argv[case.argv.index("--json") + 1] == "-":
        return json.loads(result.stdout).get("tool") == "perflab"
    outputs = [folder / o for o in case.outputs if o.endswith(".json")]
    return all(_loads(model, p) for p in outputs)


def _loads(model: Any, path: Path) -> bool:
    try:
        model.load(path)
    except Exception:  # noqa: BLE001 - any failure means the data is not there
        return False
    return True


def run_battery(workers: int = 2) -> list[Outcome]:
    """Run every case (``workers`` at a time); the outcomes in case order."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run_case, all_cases()))


COLUMNS = ("internal error", "hang", "data lost", "outside touched", "secret leaked")


def table(outcomes: list[Outcome]) -> str:
    """The Markdown table: per fault class, inputs tried and outcomes."""
    groups = list(dict.fromkeys(o.case.group for o in outcomes))
    lines = [
        "| fault class | inputs tried | handled | internal errors | hangs | data lost | "
        "files outside the results touched | secrets on disk or printed | other problems |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = [(g, [o for o in outcomes if o.case.group == g]) for g in groups]
    rows.append(("**all**", outcomes))
    for group, items in rows:
        counts = [sum(c in o.problems for o in items) for c in COLUMNS]
        other = sum(any(p not in COLUMNS for p in o.problems) for o in items)
        ok = sum(not o.problems for o in items)
        lines.append(
            f"| {group} | {len(items)} | {ok} | " + " | ".join(map(str, counts)) + f" | {other} |"
        )
    return "\n".join(lines)


def report(outcomes: list[Outcome], seconds: float) -> str:
    """docs/reliability.md: how it was run, the table, and every case that had a problem."""
    load = (
        Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    )
    bad = [o for o in outcomes if o.problems]
    text = [
        "# Reliability: the fault battery",
        "",
        "Every malformed input and fault class of issue 12 aimed at every subcommand "
        "(show, compare, fit, run, cmd, http, doctor), and issue 33's second pass at "
        "what later waves added (history databases, default result names, pipes, "
        "secrets, distributed load, the pytest plugin, traced coroutines: the groups "
        "marked (33), tests/reliability/hostile.py and hostile2.py), each case in a "
        "fresh folder. A hang case also fails when it ends later than the bound its "
        "name states (each wait of `http --agents`' start-up is bounded, and "
        "`--requests` files are refused past their bounds within a 1.5 GiB address "
        "space). "
        "Written by `python -m tests.reliability.battery` (the same cases run in "
        "`make test`, tests/reliability/test_battery.py); the rules of reading and "
        "writing files are in [results-format.md](results-format.md).",
        "",
        f"Run {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC on "
        f"{platform.system()} {platform.release()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; load average at start {' '.join(load)}; "
        f"{len(outcomes)} cases in {seconds:.0f} s.",
        "",
        "A case is *handled* when perflab exits with the code the case allows (2 for "
        "bad input, 0 for what must work, 3 when a save fails after measuring) with one "
        "`error:` line and no traceback, within 60 s, the measured results load from "
        "the destination, from the rescue file the error names or, when no file can be "
        "written at all, from stderr, and no file in the case's "
        "folder other than its declared outputs was created, changed or removed, and no "
        "secret the case passes (a token, password or credential header) reached a file "
        "in its folder (history databases unpacked), the rescue file or the terminal.",
        "",
        table(outcomes),
        "",
    ]
    if bad:
        text += ["## Cases with problems", ""]
        text += [
            f"- {o.case.group}: {o.case.name}: {', '.join(o.problems)} (exit {o.code})" for o in bad
        ]
        text.append("")
    return "\n".join(text)


def main() -> int:
    """Run the battery, print the table, write docs/reliability.md; exit 1 on any problem."""
    started = time.monotonic()
    outcomes = run_battery()
    text = report(outcomes, time.monotonic() - started)
    OUT.write_text(text)
    print(text)
    print(f"wrote {OUT}")
    return 1 if any(o.problems for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
