"""The cases of the fault battery (tests/reliability/battery.py runs and judges them):
malformed results files, hostile names, saving faults and bad options, each a
:class:`Case` aimed at one subcommand."""

from __future__ import annotations

import base64
import json
import os
import re
import resource
import signal
import struct
import subprocess
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.reliability.samples import NASTY, document

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


def reading_cases() -> list[Case]:
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


def name_cases() -> list[Case]:
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


def saving_cases() -> list[Case]:
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


def option_cases() -> list[Case]:
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
