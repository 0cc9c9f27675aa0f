"""Issue 33's cases for the battery (tests/reliability/battery.py): hostile input, faults
and secrets aimed at what waves 1-2 added (history, the HTML report, Server-Timing…).

Each class of failure of the issue is a group of the table, with at least five cases:
foreign files touched, results lost, crashes, input accepted when it is wrong. A case
of any group also fails when a secret of :data:`SECRETS` reaches a file in its folder
(history databases included, their compressed documents unpacked), the rescue file or
the terminal (:func:`secret_leaked`).
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

from tests.reliability.battery_cases import CMD, Case, _write_doc
from tests.reliability.deep_program import DEEP_PROGRAM
from tests.reliability.samples import document

#: Strings that must never reach a file or the terminal (the cases pass them as
#: passwords, tokens and credential headers).
SECRETS = ("S3CRET-VALUE", "hunter2")

F1 = "foreign files (33)"
F2 = "results lost (33)"
F4 = "crashes (33)"
F5 = "accepted when wrong (33)"
F6 = "secrets (33)"
#: A ``perflab serve`` on a free loopback port for one case: ``{http}`` in the command
#: becomes ``{perflab} http http://127.0.0.1:PORT``; the server is stopped after.
_SERVED = (
    'port=$(python3 -c \'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); '
    "print(s.getsockname()[1])'); {perflab} serve --port $port >/dev/null 2>&1 & srv=$!; "
    "for i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; "
    "sleep 0.1; done; {command}; code=$?; kill $srv; wait $srv 2>/dev/null; exit $code"
)
_OUTPUTS = (
    "--json {dir}/r.json --history {dir}/h.sqlite --markdown {dir}/r.md --csv {dir}/r.csv "
    "--rate 20 --duration 0.5s"
)


def _file_text(path: Path) -> bytes:
    """A file's bytes; for an SQLite file, its rows as text with zlib blobs unpacked."""
    data = path.read_bytes()
    if not data.startswith(b"SQLite format 3\x00"):
        return data
    out = [data]
    try:
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                for row in db.execute(f'SELECT * FROM "{table}"'):
                    for cell in row:
                        if isinstance(cell, bytes):
                            try:
                                cell = zlib.decompress(cell)
                            except zlib.error:
                                pass
                        out.append(cell if isinstance(cell, bytes) else str(cell).encode())
        finally:
            db.close()
    except sqlite3.Error:
        pass
    return b"\n".join(out)


def secret_leaked(
    folder: Path, result: subprocess.CompletedProcess[str], rescue: Path | None
) -> bool:
    """True when a string of :data:`SECRETS` is in a file of the case's folder (except
    the inputs that hold it on purpose: ``*.secret`` files), the rescue file, stdout or
    stderr."""
    texts = [result.stdout.encode(), result.stderr.encode()]
    paths = [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]
    paths += [rescue] if rescue is not None and rescue.exists() else []
    for path in paths:
        if path.suffix != ".secret":
            try:
                texts.append(_file_text(path))
            except OSError:
                pass
    return any(s.encode() in t for s in SECRETS for t in texts)


# --------------------------------------------------------------------------- setups


def _user_db(name: str = "app.sqlite", application_id: int = 0) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        db = sqlite3.connect(folder / name)
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes (body) VALUES ('mine')")
        if application_id:
            db.execute(f"PRAGMA application_id = {application_id}")
        db.commit()
        db.close()
        _write_doc(document("cmd"), "a.json")(folder)

    return setup


def _empty(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes(b"")


def _no_dev_null_sibling(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
    leftovers = [p for p in Path("/dev").glob("null-*")]
    return f"made {leftovers[0]}" if leftovers else None


def _untouched(
    name: str, text: str
) -> Callable[[Path, subprocess.CompletedProcess[str]], str | None]:
    def check(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
        return None if (folder / name).read_text() == text else f"{name} was replaced"

    return check


def _count(pattern: str, n: int) -> Callable[[Path, subprocess.CompletedProcess[str]], str | None]:
    def check(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
        found = sorted(folder.glob(pattern))
        if len(found) != n:
            return f"{len(found)} files match {pattern}, expected {n}"
        for path in found:
            if json.loads(path.read_text()).get("tool") != "perflab":
                return f"{path.name} is not a results file"
        return None

    return check


def _corrupt_history(folder: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "perflab", *CMD, "--history", "h.sqlite", "--json", "r.json"],
        capture_output=True,
        check=True,
        cwd=folder,
    )
    with open(folder / "h.sqlite", "r+b") as fh:
        fh.seek(4096)
        fh.write(b"\x00" * 4096)


# --------------------------------------------------------------------------- cases


def _foreign_cases() -> list[Case]:
    fake_cmd = '{"tool": "perflab", "kind": "cmd", "notes": "a user\'s own file"}\n'
    fake_export = '{"tool": "perflab", "results": "my own list"}\n'
    return [
        Case(
            F1,
            "cmd --history a user's SQLite database",
            [*CMD, "--history", "{dir}/app.sqlite"],
            setup=_user_db(),
        ),
        Case(
            F1,
            "cmd --history an empty file",
            [*CMD, "--history", "{dir}/e.sqlite"],
            setup=_empty("e.sqlite"),
        ),
        Case(
            F1,
            "cmd --history a database of another application id",
            [*CMD, "--history", "{dir}/o.sqlite"],
            setup=_user_db("o.sqlite", 0x12345678),
        ),
        Case(
            F1,
            "cmd --history a text file",
            [*CMD, "--history", "{dir}/notes.txt"],
            setup=lambda f: (f / "notes.txt").write_text("mine\n"),
        ),
        Case(
            F1,
            "cmd --history a FIFO",
            [*CMD, "--history", "{dir}/fifo"],
            setup=lambda f: __import__("os").mkfifo(f / "fifo"),
        ),
        Case(
            F1,
            "cmd --history /dev/null (recording off, no /dev/null-journal)",
            [*CMD, "--history", "/dev/null"],
            frozenset({0}),
            check=_no_dev_null_sibling,
            outputs=(".perflab", ".perflab/cmd-*.json"),
        ),
        Case(
            F1,
            "history on a user's SQLite database",
            ["history", "--history", "{dir}/app.sqlite"],
            setup=_user_db(),
        ),
        Case(
            F1,
            "history --import into a user's SQLite database",
            ["history", "--import", "{dir}/a.json", "--history", "{dir}/app.sqlite"],
            setup=_user_db(),
        ),
        Case(
            F1,
            "report from a user's SQLite database",
            ["report", "--database", "{dir}/app.sqlite", "-o", "{dir}/r.html"],
            setup=_user_db(),
        ),
        Case(
            F1,
            'cmd --json over a user\'s file with "tool": "perflab", "kind": "cmd"',
            [*CMD, "--json", "{dir}/fake.json"],
            setup=_write_doc(fake_cmd, "fake.json"),
        ),
        Case(
            F1,
            'fit --json over a user\'s {"tool": "perflab", "results": …}',
            ["fit", "{dir}/a.json", "--json", "{dir}/fake.json"],
            setup=lambda f: (
                _write_doc(fake_export, "fake.json")(f),
                _write_doc(document("http"), "a.json")(f),
            ),
        ),
        Case(
            F1,
            "cmd --json: a file created at the destination during the run",
            [
                *CMD,
                "--json",
                "{dir}/late.json",
                "--shell",
                "--prepare",
                "echo mine > {dir}/late.json",
            ],
            frozenset({3}),
            outputs=("late.json", ".perflab", ".perflab/*"),
            measured=True,
            check=_untouched("late.json", "mine\n"),
        ),
    ]


def _lost_cases() -> list[Case]:
    two = "{perflab} cmd true --runs 3 --quiet --no-history & {perflab} cmd true --runs 3 --quiet --no-history; wait"
    return [
        Case(
            F2,
            f"{n} cmd at once with default names: {n} files",
            [],
            frozenset({0}),
            outputs=(".perflab", ".perflab/cmd-*.json"),
            check=_count(".perflab/cmd-*.json", n),
            shell=" & ".join([two.replace("; wait", "")] * (n // 2)) + "; wait",
        )
        for n in (2, 4, 6)
    ] + [
        Case(
            F2,
            f"{n} run at once with default names: {n} files",
            [],
            frozenset({0}),
            setup=lambda f: (f / "bench.py").write_text(
                "import perflab\n\n\n@perflab.bench\ndef add():\n    return 1 + 1\n"
            ),
            outputs=(".perflab", ".perflab/run-*.json"),
            check=_count(".perflab/run-*.json", n),
            shell=" & ".join(
                [
                    "{perflab} run {dir}/bench.py --budget 0.3s --max-processes 3 --no-alloc --quiet --no-history"
                ]
                * n
            )
            + "; wait",
        )
        for n in (2, 3)
    ]


def _deaf_bench(body: str) -> Callable[[Path], None]:
    """A bench file that takes the stop signals away at import (``body``), then a
    benchmark of 10 ms calls whose first call creates ``started`` beside it (the case
    signals on that event, not after a fixed wait a busy machine may not have reached)."""
    return lambda folder: (folder / "bench.py").write_text(
        "import pathlib, signal, time\nimport perflab\n\n"
        + body
        + "\n\n_STARTED = pathlib.Path(__file__).with_name('started')\n\n\n"
        "@perflab.bench\ndef slow():\n    if not _STARTED.exists():\n"
        "        _STARTED.touch()\n    time.sleep(0.01)\n"
    )


def _interrupted_cases() -> list[Case]:
    run = (
        "set -m; {perflab} run {dir}/bench.py --budget 60s --quiet --no-history "
        "--json {dir}/r.json & pid=$!; "
        # the signal follows the benchmark's first call (at most 60 s: a hang fails later)
        "for i in $(seq 600); do [ -e {dir}/started ] && break; "
        "kill -0 $pid 2>/dev/null || break; sleep 0.1; done; "
        "kill -%s $pid; wait $pid"
    )
    ignore = "signal.signal(signal.SIG%s, signal.SIG_IGN)"
    deaf = [
        ("SIGINT ignored at import, Ctrl-C", ignore % "INT", "INT", 130),
        ("SIGTERM ignored at import, SIGTERM", ignore % "TERM", "TERM", 143),
        ("SIGHUP ignored at import, SIGHUP", ignore % "HUP", "HUP", 129),
        (
            "a do-nothing SIGINT handler at import, Ctrl-C",
            "signal.signal(signal.SIGINT, lambda *a: None)",
            "INT",
            130,
        ),
        (
            "every stop signal ignored at import, Ctrl-C",
            "\n".join(ignore % s for s in ("INT", "TERM", "HUP")),
            "INT",
            130,
        ),
    ]
    return [
        Case(
            F2,
            f"run: {what}: stops, saves what was measured",
            [],
            frozenset({code}),
            setup=_deaf_bench(body),
            outputs=("r.json", "started"),
            measured=True,
            shell=run % sig,
        )
        for what, body, sig, code in deaf
    ]


def _killed_parent_cases() -> list[Case]:
    killed = (
        "{perflab} cmd %s --runs 500 --no-history --quiet --json {dir}/r.json & pid=$!; "
        # the kill follows an event, not a fixed wait a busy machine may not have reached:
        # the spawn helper exists (at most 30 s); then at most 10 s for it to end
        # (or the parent's own end: a refused command line spawns none)
        "for i in $(seq 1500); do h=$(pgrep -P $pid | head -1); "
        '[ -n "$h" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.02; done; '
        "kill -KILL $pid; wait $pid; "
        'for i in $(seq 500); do [ -n "$h" ] && kill -0 $h 2>/dev/null || break; sleep 0.02; '
        "done; "
        "exit 0"
    )
    commands = [
        "'sleep 0.05'",
        "'sleep 0.02' 'sleep 0.03'",
        "--shell 'sleep 0.05'",
        "'sleep 0.05' --prepare true",
        "'sleep 0.01' --input /dev/null",
    ]
    return [
        Case(
            F4,
            f"cmd {words}: parent SIGKILLed, the helper ends quietly",
            [],
            frozenset({0}),
            outputs=("*",),
            shell=killed % words,
        )
        for words in commands
    ]


def _printed(
    first: str | tuple[str, ...],
) -> Callable[[Path, subprocess.CompletedProcess[str]], str | None]:
    """A check: the program's first line of output is ``first`` (or one of them)."""
    allowed = (first,) if isinstance(first, str) else first

    def check(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
        lines = result.stdout.split()[:1]
        return None if lines and lines[0] in allowed else f"printed {result.stdout[:80]!r}"

    return check


def _deep_cases() -> list[Case]:
    run = shlex.quote(sys.executable) + " {dir}/deep.py %s %d"
    cases = [
        ("traced", 20_000, "20000"),
        ("traced", 50_000, "50000"),
        ("kwargs", 35_000, "35000"),
        ("blocks", 50_000, "50000"),
        ("by_hand", 100_000, "100000"),
        ("traced", 150_000, "RecursionError"),
        # coroutines: resumed on new C stack segments near its end (SIGSEGV at 20,000)
        ("async", 5_000, "5000"),
        ("async", 15_000, "15000"),
        ("async", 20_000, "20000"),
        ("async", 25_000, "25000"),
    ]
    return [
        Case(
            F4,
            f"perflab.trace: {mode} recursion {depth:,} deep under a raised limit",
            [],
            frozenset({0}),
            setup=lambda f: (f / "deep.py").write_text(DEEP_PROGRAM),
            check=_printed(first),
            shell=run % (mode, depth),
        )
        for mode, depth, first in cases
    ]


def _crash_cases() -> list[Case]:
    show = "{perflab} show {dir}/a.json"
    return (
        _killed_parent_cases()
        + _deep_cases()
        + [
            Case(
                F4,
                "history on a database with a zeroed page",
                ["history", "--history", "{dir}/h.sqlite"],
                setup=_corrupt_history,
            ),
            Case(
                F4,
                "history trend on a database with a zeroed page",
                ["history", "*", "--history", "{dir}/h.sqlite"],
                setup=_corrupt_history,
            ),
            Case(
                F4,
                "history on a file of zeros",
                ["history", "--history", "{dir}/z.sqlite"],
                setup=lambda f: (f / "z.sqlite").write_bytes(b"\x00" * 8192),
            ),
            Case(
                F4,
                "history on a truncated database",
                ["history", "--history", "{dir}/h.sqlite"],
                setup=lambda f: (
                    _corrupt_history(f),
                    (f / "h.sqlite").write_bytes((f / "h.sqlite").read_bytes()[:150]),
                ),
            ),
        ]
        + [
            Case(
                F4,
                f"show {fmt} | head -1 (a closed pipe ends quietly)",
                [],
                frozenset({0}),
                setup=_write_doc(document(kind), "a.json"),
                shell=f"{show} {fmt} | head -1 >/dev/null; exit ${{PIPESTATUS[0]}}",
            )
            for kind, fmt in (("cmd", ""), ("http", "--format csv"), ("run", "--format markdown"))
        ]
    )


def _accepted_cases() -> list[Case]:
    return [
        Case(
            F5,
            f"{writer} into a missing top-level folder",
            [*argv, "/nonexistent-perflab/dir/x" + ext],
            setup=_write_doc(document("http"), "a.json"),
        )
        for writer, argv, ext in (
            ("cmd --json", [*CMD, "--json"], ".json"),
            ("cmd --chart", [*CMD, "--chart"], ".png"),
            ("fit --json", ["fit", "{dir}/a.json", "--json"], ".json"),
            ("fit --chart", ["fit", "{dir}/a.json", "--chart"], ".png"),
            ("compare --json", ["compare", "{dir}/a.json", "{dir}/a.json", "--json"], ".json"),
        )
    ]


def _served(command: str) -> str:
    return _SERVED.replace(
        "{command}", command.replace("{http}", "{perflab} http http://127.0.0.1:$port")
    )


def _secret_cases() -> list[Case]:
    sent = [
        ("?token= in the URL", "{http}'/x?token=S3CRET-VALUE&page=2'"),
        (
            "?api_key= and #access_token=",
            "{http}'/x?page=1&api_key=S3CRET-VALUE#access_token=S3CRET-VALUE'",
        ),
        ("-H Authorization: Bearer", "{http}/ -H 'Authorization: Bearer S3CRET-VALUE'"),
        ("--header X-Api-Key", "{http}/ --header 'X-Api-Key: S3CRET-VALUE'"),
        ("--header=Cookie", "{http}/ '--header=Cookie: session=S3CRET-VALUE'"),
        ("perflab's own X-Perflab-Token", "{http}/ -H 'X-Perflab-Token: S3CRET-VALUE'"),
        ("an X-Goog-Api-Key-like header", "{http}/ -H 'X-Goog-Api-Key: S3CRET-VALUE'"),
        ("-HX-Auth-Token joined", "{http}/ '-HX-Auth-Token: S3CRET-VALUE'"),
    ]
    out = [
        Case(
            F6,
            f"http {what} → results, history, Markdown, CSV, terminal",
            [],
            frozenset({0}),
            outputs=("*",),
            measured=True,
            shell=_served(f"{words} {_OUTPUTS}"),
        )
        for what, words in sent
    ]
    out += [
        Case(
            F6,
            f"http {option} (an abbreviation) is refused without echoing the secret",
            ["http", "http://127.0.0.1:9/", "--rate", "1", option, "X-Api-Key: S3CRET-VALUE"],
        )
        for option in ("--head", "--hea", "--heade")
    ]
    out.append(
        Case(
            F6,
            "http user:password@ URL: the error does not echo the password",
            ["http", "http://u:hunter2@127.0.0.1:9/?token=S3CRET-VALUE", "--rate", "1"],
        )
    )
    return out


def _list_cases() -> list[Case]:
    http = ["http", "http://127.0.0.1:9/", "--duration", "0.2s"]
    return [
        Case(F5, f"http {option} {value!r} (an empty value)", [*http, option, value])
        for option, value in (
            ("--rate", "100,200,"),
            ("--rate", "100,,200"),
            ("--rate", ",100"),
            ("--connections", "1,2,"),
            ("--rate", ","),
        )
    ]


def hostile_cases() -> list[Case]:
    """Every case of issue 33."""
    return (
        _foreign_cases()
        + _lost_cases()
        + _interrupted_cases()
        + _crash_cases()
        + _accepted_cases()
        + _list_cases()
        + _secret_cases()
    )
