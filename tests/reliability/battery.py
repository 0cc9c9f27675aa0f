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

import base64
import datetime as dt
import fnmatch
import hashlib
import json
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.reliability.samples import ROOT, document

TIMEOUT_S = 60.0
#: The history database of the cases that don't name one (outside their folders, as
#: tests/conftest.py does for the test suite).
_HISTORY = os.environ.get("PERFLAB_HISTORY") or str(
    Path(tempfile.gettempdir()) / f"perflab-battery-{os.getpid()}" / "history.sqlite"
)
OUT = ROOT / "docs" / "reliability.md"
CMD = ["cmd", "true", "--runs", "3", "--quiet"]


@dataclass
class Case:
    """One input or fault aimed at one subcommand.

    Attributes:
        group: the fault class (a row of the table).
        name: what is tried.
        argv: perflab's arguments; ``{dir}`` is the case's folder.
        allowed: exit codes that are a correct answer.
        setup: makes the case's files in its folder.
        outputs: files (relative to the folder) perflab may create or change.
        measured: the case measures something, so its results must survive.
        check: an extra judgement of the outcome; returns a problem or None.
    """

    group: str
    name: str
    argv: list[str]
    allowed: frozenset[int] = frozenset({2})
    setup: Callable[[Path], None] | None = None
    outputs: tuple[str, ...] = ()
    measured: bool = False
    check: Callable[[Path, subprocess.CompletedProcess[str]], str | None] | None = None
    preexec: Callable[[], None] | None = None
    #: a whole command line instead of ``python -m perflab argv`` (``{perflab}`` is that
    #: prefix, quoted for a shell), e.g. a pipe into ``head -1``
    shell: str | None = None


@dataclass
class Outcome:
    """How one case ended."""

    case: Case
    code: int | None
    seconds: float
    problems: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- inputs


def _write_doc(doc: Any, name: str = "x.json") -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        (folder / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))

    return setup


def _mutated(kind: str, edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    doc = document(kind)
    edit(doc)
    return doc


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting the dotted ``path`` (ints index lists) to ``value``; "DEL" deletes."""

    def edit(doc: dict[str, Any]) -> None:
        keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
        node: Any = doc
        for key in keys[:-1]:
            node = node[key]
        if value == "DEL":
            del node[keys[-1]]
        else:
            node[keys[-1]] = value

    return edit


def _hdr(digits: int, lowest: int, highest: int, payload: bytes = b"\x02") -> str:
    inner = struct.pack(">iiiiqqd", 0x1C849313, len(payload), 0, digits, lowest, highest, 1.0)
    body = zlib.compress(inner + payload)
    return base64.b64encode(struct.pack(">iI", 0x1C849314, len(body)) + body).decode()


def _bomb() -> str:
    inner = struct.pack(">iiiiqqd", 0x1C849313, 64 << 20, 0, 3, 1, 3_600_000_000, 1.0)
    body = zlib.compress(inner + b"\x00" * (64 << 20), 9)
    return base64.b64encode(struct.pack(">iI", 0x1C849314, len(body)) + body).decode()


SAMPLE = "benchmarks.0.processes.1.samples.3"
STEP = "benchmarks.0.steps.1"

#: Crafted files that are valid data (perflab shows them: exit 0) though odd.
VALID_ODDITIES = {"params size a string"}
#: (name, kind, edit) of crafted results files.
CRAFTED: list[tuple[str, str, Callable[[dict[str, Any]], None]]] = [
    ("kind 'bogus'", "run", _set("kind", "bogus")),
    ("kind 'serve'", "run", _set("kind", "serve")),
    ("kind '../../etc'", "run", _set("kind", "../../etc")),
    ("kind 'cmd' on run data", "run", _set("kind", "cmd")),
    ("kind 'http' on cmd data", "cmd", _set("kind", "http")),
    ("wall_ns a string", "run", _set(f"{SAMPLE}.wall_ns", "12")),
    ("wall_ns negative", "run", _set(f"{SAMPLE}.wall_ns", -5)),
    ("wall_ns 2^70", "run", _set(f"{SAMPLE}.wall_ns", 2**70)),
    ("wall_ns a float", "cmd", _set("benchmarks.0.runs.2.wall_ns", 1.5)),
    ("iterations 0", "run", _set(f"{SAMPLE}.iterations", 0)),
    ("processes missing", "run", _set("benchmarks.0.processes", "DEL")),
    ("pid missing", "run", _set("benchmarks.0.processes.0.pid", "DEL")),
    ("benchmarks missing", "cmd", _set("benchmarks", "DEL")),
    ("command_line missing", "http", _set("command_line", "DEL")),
    ("benchmarks an object", "cmd", _set("benchmarks", {})),
    ("histogram not base64", "http", _set(f"{STEP}.latency.encoded", "not base64!")),
    ("histogram bad padding", "http", _set(f"{STEP}.latency.encoded", "QUJ")),
    (
        "histogram foreign cookie",
        "http",
        _set(f"{STEP}.latency.encoded", base64.b64encode(b"\x00" * 48).decode()),
    ),
    ("histogram 2^62 range", "http", _set(f"{STEP}.latency.encoded", _hdr(5, 1, 2**62))),
    ("histogram 2^52 range, 5 digits", "http", _set(f"{STEP}.latency.encoded", _hdr(5, 1, 2**52))),
    (
        "histogram i64::MIN varint",
        "http",
        _set(f"{STEP}.latency.encoded", _hdr(3, 1, 3_600_000_000, b"\xff" * 9)),
    ),
    (
        "histogram counts past its range",
        "http",
        _set(f"{STEP}.latency.encoded", _hdr(3, 1, 3_600_000_000, b"\x02" * 10**6)),
    ),
    ("histogram deflate bomb (64 MiB)", "http", _set(f"{STEP}.latency.encoded", _bomb())),
    (
        "histogram truncated",
        "http",
        lambda d: d["benchmarks"][0]["steps"][1]["latency"].update(
            encoded=d["benchmarks"][0]["steps"][1]["latency"]["encoded"][:40]
        ),
    ),
    ("status code key ''", "http", _set(f"{STEP}.status_counts", {"": 3})),
    ("settings.ok not a status list", "http", _set("settings.ok", "ok")),
    ("settings.reference 99", "cmd", _set("settings.reference", 99)),
    ("settings.precision -1", "run", _set("settings.precision", -1)),
    ("load average strings", "run", _set("environment.load_average_start", ["x"])),
    ("cpu_count a string", "run", _set("environment.cpu_count", "2")),
    ("params a list", "run", _set("benchmarks.0.params", [1])),
    ("params size a string", "run", _set("benchmarks.0.params.n", "big")),
    ("offered_rate negative", "http", _set(f"{STEP}.offered_rate", -5)),
    ("mode unknown", "http", _set(f"{STEP}.mode", "warp")),
    ("error not a string", "cmd", _set("benchmarks.1.error", False)),
    ("name 100 kB", "cmd", _set("benchmarks.0.name", "x" * 100_001)),
    ("schema_version 'one'", "run", _set("schema_version", "one")),
    ("schema_version 99", "run", _set("schema_version", 99)),
    ("schema_version 0", "run", _set("schema_version", 0)),
    ("tool missing", "run", _set("tool", "DEL")),
]

#: (name, text) of files that are not JSON documents of perflab's.
TEXTS: list[tuple[str, str | bytes]] = [
    ("empty file", ""),
    ("truncated JSON", '{"tool": "perflab", "schema_'),
    ("a JSON list", "[1, 2]"),
    ("NaN", '{"a": NaN}'),
    ("Infinity", '{"a": -Infinity}'),
    ("1e999", '{"tool": "perflab", "schema_version": 1, "x": 1e999}'),
    ("5000-digit integer", '{"a": ' + "1" * 5000 + "}"),
    ("nested 100,000 deep", "[" * 100_000),
    ("binary", b"{\xff\xfe\x00\x01binary"),
    ("UTF-16", '{"a": 1}'.encode("utf-16")),
    ("a CSV", "N,X\n1,2\n"),
    ("a doctor document", '{"tool": "perflab", "kind": "doctor"}'),
]


def _special(kind: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        path = folder / "x.json"
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        elif kind == "sparse 600 MiB":
            with open(path, "wb") as fh:
                fh.truncate(600 * 2**20)
        elif kind == "link to /dev/zero":
            path.symlink_to("/dev/zero")
        elif kind == "link loop":
            path.symlink_to(path)

    return setup


def _reading_cases() -> list[Case]:
    cases = []
    readers = [
        ("show", ["show", "{dir}/x.json"]),
        ("compare", ["compare", "{dir}/x.json", "{dir}/x.json"]),
        ("fit", ["fit", "{dir}/x.json"]),
    ]
    for name, kind, edit in CRAFTED:
        for reader, argv in readers:
            allowed = frozenset({0, 2}) if name in VALID_ODDITIES else frozenset({2})
            cases.append(
                Case(
                    "crafted results files",
                    f"{name} → {reader}",
                    argv,
                    allowed,
                    setup=_write_doc(_mutated(kind, edit)),
                )
            )
    for name, text in TEXTS:
        for reader, argv in readers:
            data = text if isinstance(text, bytes) else text.encode()
            cases.append(
                Case(
                    "malformed JSON",
                    f"{name} → {reader}",
                    argv,
                    setup=lambda f, d=data: (f / "x.json").write_bytes(d),
                )
            )
    specials = [
        "/dev/zero",
        "/dev/urandom",
        "fifo",
        "folder",
        "sparse 600 MiB",
        "link to /dev/zero",
        "link loop",
        "missing",
    ]
    for special in specials:
        for reader, argv in readers:
            words = [
                w.replace("{dir}/x.json", special) if special.startswith("/") else w for w in argv
            ]
            setup = None if special.startswith("/") or special == "missing" else _special(special)
            cases.append(Case("special files", f"{special} → {reader}", words, setup=setup))
    tampered = _mutated(
        "http",
        lambda d: d["benchmarks"][0]["steps"][0]["latency"].update(p50_us=9e9, p90_us=1.0, count=7),
    )
    cases.append(
        Case(
            "crafted results files",
            "p50 > p90 (recomputed) → show",
            ["show", "{dir}/x.json", "--format", "csv"],
            frozenset({0}),
            setup=_write_doc(tampered),
            check=_p50_below_p90,
        )
    )
    return cases


def _p50_below_p90(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
    header, *rows = [line.split(",") for line in result.stdout.splitlines()]
    if "latency_p50_s" not in header or "latency_p90_s" not in header:
        return "no latency_p50_s and latency_p90_s columns"
    p50, p90 = header.index("latency_p50_s"), header.index("latency_p90_s")
    bad = [r for r in rows if r[p50] and r[p90] and float(r[p50]) > float(r[p90])]
    return "p50 > p90 printed" if bad else None


# --------------------------------------------------------------------------- names

NASTY = [
    "closing [/] tag",
    "[red]RED[/red] [link=https://x.invalid]click[/link]",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;title\x07",
    "\x1b]8;;https://x.invalid\x1b\\link",
    "two\nlines",
    "<script>alert(1)</script>",
    "`code` | pipe",
    '=HYPERLINK("http://x.invalid")',
    "@SUM(A1)",
    "\u202eevil",
    "$x$ {y}",
]


def _nasty_doc() -> dict[str, Any]:
    doc = document("cmd")
    runs = doc["benchmarks"][0]["runs"]
    doc["benchmarks"] = [dict(doc["benchmarks"][0], name=n, runs=runs) for n in NASTY]
    doc["command_line"] = ["perflab", "cmd", *NASTY]
    doc["environment"] = {"hostname": "\x1b]0;pwned\x07host", "cpu_model": "[red]cpu"}
    return doc


def _no_controls(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
    """No terminal controls anywhere; no HTML tag in Markdown; no formula in CSV."""
    text, argv = result.stdout, result.args
    if re.search("[\x00-\x08\x0b-\x1f\x7f\u202e]", text):
        return "a control character reached the output"
    if "markdown" in argv and "<script>" in text:
        return "<script> passed through into Markdown"
    if "csv" in argv and re.search(r"(^|,)[=@+]", text, re.M):
        return "a CSV cell starts a formula"
    return None


def _name_cases() -> list[Case]:
    setup = _write_doc(_nasty_doc())
    out = []
    for fmt in ("table", "markdown", "csv"):
        out.append(
            Case(
                "names",
                f"markup, escapes, HTML, formulas → show --format {fmt}",
                ["show", "{dir}/x.json", "--format", fmt],
                frozenset({0}),
                setup,
                check=_no_controls,
            )
        )
    out.append(
        Case(
            "names",
            "the same names → show --env",
            ["show", "{dir}/x.json", "--env"],
            frozenset({0}),
            setup,
            check=_no_controls,
        )
    )
    out.append(
        Case(
            "names",
            "the same names → compare",
            ["compare", "{dir}/x.json", "{dir}/x.json", "--format", "markdown"],
            frozenset({0}),
            setup,
            check=_no_controls,
        )
    )
    for name in ("echo [/] [red]x[/red]", "echo $'\\x1b[31m'"):
        out.append(
            Case(
                "names",
                f"cmd {name!r}",
                ["cmd", name, "--runs", "3", "--quiet", "--json", "{dir}/r.json"],
                frozenset({0}),
                outputs=("r.json",),
                measured=True,
                check=_no_controls,
            )
        )
    out.append(
        Case(
            "names",
            "fit --chart of a series named '$\\frac{a$' (mathtext)",
            ["fit", "{dir}/d.csv", "--chart", "{dir}/c.png"],
            frozenset({0}),
            lambda f: (f / "d.csv").write_text(
                "name,N,X\n"
                + "".join(
                    f"$\\frac{{a$,{n},{x}\n" for n, x in ((1, 100), (2, 190), (4, 350), (8, 500))
                )
            ),
            outputs=("c.png",),
        )
    )
    for module in ("rich", "numpy", "json"):
        out.append(
            Case(
                "names",
                f"a {module}.py beside the bench file → run",
                [
                    "run",
                    "{dir}/bench.py",
                    "--budget",
                    "0.5s",
                    "--max-processes",
                    "5",
                    "--quiet",
                    "--no-alloc",
                    "--json",
                    "{dir}/r.json",
                ],
                frozenset({0}),
                _shadowing(module),
                outputs=("r.json",),
                measured=True,
            )
        )
    return out


def _shadowing(module: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        (folder / f"{module}.py").write_text("raise ImportError('user module imported')\n")
        (folder / "bench.py").write_text(
            "import perflab\n\n\n@perflab.bench\ndef add():\n    return 1 + 1\n"
        )

    return setup


# --------------------------------------------------------------------------- saving


def _foreign(name: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        (folder / name).write_text("someone else's notes\n")

    return setup


def _file_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))


def _saving_cases() -> list[Case]:
    out = []
    targets: list[tuple[str, str, Callable[[Path], None] | None]] = [
        ("a folder", "{dir}/adir", lambda f: (f / "adir").mkdir()),
        (
            "a link to /dev/zero",
            "{dir}/link.json",
            lambda f: (f / "link.json").symlink_to("/dev/zero"),
        ),
        (
            "a link to a foreign file",
            "{dir}/link.json",
            lambda f: (_foreign("notes.txt")(f), (f / "link.json").symlink_to(f / "notes.txt")),
        ),
        ("a foreign file", "{dir}/notes.json", _foreign("notes.json")),
        ("below a file", "{dir}/afile/r.json", _foreign("afile")),
        ("a folder under /proc", "/proc/nope/x.json", None),
        (
            "a broken link",
            "{dir}/gone.json",
            lambda f: (f / "gone.json").symlink_to(f / "nowhere" / "x"),
        ),
    ]
    writers = [
        ("cmd --json", [*CMD, "--json"]),
        ("compare --json", ["compare", "{dir}/a.json", "{dir}/a.json", "--json"]),
        ("fit --json", ["fit", "{dir}/a.json", "--json"]),
        ("fit --chart", ["fit", "{dir}/a.json", "--chart"]),
        ("run --json", ["run", "{dir}/bench.py", "--budget", "0.5s", "--json"]),
        ("doctor --json", ["doctor", "--duration", "100ms", "--json"]),
        ("http --json", ["http", "http://127.0.0.1:9/", "--rate", "1", "--json"]),
        ("http --chart", ["http", "http://127.0.0.1:9/", "--rate", "1", "--chart"]),
    ]
    for what, target, make in targets:
        for writer, argv in writers:

            def setup(folder: Path, make: Any = make) -> None:
                _write_doc(document("http"), "a.json")(folder)
                _shadowing("nothing")(folder)
                if make is not None:
                    make(folder)

            out.append(
                Case("saving: bad destinations", f"{writer} {what}", [*argv, target], setup=setup)
            )
    out += [
        Case(
            "saving: faults after measuring",
            "cmd, disk full (RLIMIT_FSIZE 1000 B)",
            [*CMD, "--json", "{dir}/r.json"],
            frozenset({3}),
            preexec=_file_limit,
        ),
        Case(
            "saving: faults after measuring",
            "cmd, folder replaced by a file mid-run",
            [*CMD, "--json", "{dir}/sub/r.json", "--shell", "--prepare", "touch {dir}/sub"],
            frozenset({3}),
            outputs=("sub",),
            measured=True,
        ),
        Case(
            "saving: faults after measuring",
            "fit --json, disk full",
            ["fit", "{dir}/a.json", "--json", "{dir}/f.json"],
            frozenset({3}),
            _write_doc(document("http"), "a.json"),
            preexec=_file_limit,
        ),
        Case(
            "saving: destinations that work",
            "cmd --json /dev/null",
            [*CMD, "--json", "/dev/null"],
            frozenset({0}),
        ),
        Case(
            "saving: destinations that work",
            "cmd --json -",
            [*CMD, "--json", "-"],
            frozenset({0}),
            measured=True,
        ),
        Case(
            "saving: destinations that work",
            "cmd --json over its own file",
            [*CMD, "--json", "{dir}/own.json"],
            frozenset({0}),
            _write_doc(document("cmd"), "own.json"),
            outputs=("own.json",),
            measured=True,
        ),
        Case(
            "saving: destinations that work",
            "cmd --json into a new folder",
            [*CMD, "--json", "{dir}/new/deeper/r.json"],
            frozenset({0}),
            outputs=("new", "new/deeper", "new/deeper/r.json"),
            measured=True,
        ),
        Case(
            "saving: destinations that work",
            "fit --chart into a new folder",
            ["fit", "{dir}/a.json", "--chart", "{dir}/new/c.png"],
            frozenset({0}),
            _write_doc(document("http"), "a.json"),
            outputs=("new", "new/c.png"),
        ),
    ]
    return out


# --------------------------------------------------------------------------- options


def _option_cases() -> list[Case]:
    bad: list[tuple[str, list[str]]] = [
        ("run --budget -1s", ["run", "x.py", "--budget", "-1s"]),
        ("run --precision -1%", ["run", "x.py", "--precision", "-1%"]),
        ("cmd --timeout -3s", [*CMD, "--timeout", "-3s"]),
        ("cmd --ignore-failure=abc", ["cmd", "--ignore-failure=abc", "true"]),
        ("cmd a folder as the command", ["cmd", "{dir}"]),
        ("cmd --input a folder", [*CMD, "--input", "{dir}"]),
        ("cmd --input a FIFO", [*CMD, "--input", "{dir}/fifo"]),
        ("compare --threshold -5%", ["compare", "a", "b", "--threshold", "-5%"]),
        ("doctor --duration 1e12s", ["doctor", "--duration", "1e12s"]),
        ("doctor --duration 1e400", ["doctor", "--duration", "1e400"]),
        ("http 'http://[::1'", ["http", "http://[::1", "--rate", "1"]),
        ("http port 0", ["http", "http://127.0.0.1:0/", "--rate", "1"]),
        ("http port 99999", ["http", "http://127.0.0.1:99999/", "--rate", "1"]),
        ("http user:password@ URL", ["http", "http://u:hunter2@127.0.0.1:9/", "--rate", "1"]),
        (
            "http --requests a FIFO",
            ["http", "http://127.0.0.1:9/", "--rate", "1", "--requests", "{dir}/fifo"],
        ),
        (
            "http --body-file /dev/zero",
            ["http", "http://127.0.0.1:9/", "--rate", "1", "--body-file", "/dev/zero"],
        ),
        ("run a folder", ["run", "{dir}"]),
        ("run a FIFO", ["run", "{dir}/fifo"]),
        ("run /dev/urandom", ["run", "/dev/urandom"]),
        ("run a binary file", ["run", "{dir}/bin.py"]),
        ("fit a CSV with extra cells", ["fit", "{dir}/extra.csv"]),
        ("fit /dev/zero", ["fit", "/dev/zero"]),
    ]

    def setup(folder: Path) -> None:
        os.mkfifo(folder / "fifo")
        (folder / "bin.py").write_bytes(b"import x\x00\xff\xfe")
        (folder / "extra.csv").write_text("N,X\n1,100\n2,190,7\n4,350\n")

    return [
        Case("options and inputs", name, argv, setup=setup, check=_no_password)
        for name, argv in bad
    ]


def _no_password(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
    return "a password was echoed" if "hunter2" in result.stdout + result.stderr else None


# --------------------------------------------------------------------------- running


def all_cases() -> list[Case]:
    """Every case of the battery (issue 12's and issue 33's, tests/reliability/hostile.py
    and hostile2.py)."""
    from tests.reliability.hostile import hostile_cases
    from tests.reliability.hostile2 import hostile2_cases

    return (
        _reading_cases()
        + _name_cases()
        + _saving_cases()
        + _option_cases()
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
