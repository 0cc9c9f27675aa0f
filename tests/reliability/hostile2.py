"""Issue 33's remaining classes for the battery (tests/reliability/battery.py): hangs and
unbounded work, control characters in every output, and more cases of the classes of
tests/reliability/hostile.py (results lost on a signal, crashes, input accepted when
wrong, secrets) aimed at what the first pass left open: ``http --agents``, the pytest
plugin, cmd's placeholders and command names, hyperfine's exit codes, traced coroutines.

Every case is bounded by the battery's 60 s and uses loopback only; a "hang" is a case
that does not end within that bound, or within the tighter one its check states.
"""

from __future__ import annotations

import json
import resource
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.reliability.battery_cases import Case
from tests.reliability.hostile import F2, F5, F6, _served
from tests.reliability.samples import ROOT

F3 = "hangs and unbounded work (33)"
#: ``perflab cmd`` measuring briefly; the command (``true``) follows the case's options.
CMD = ["cmd", "--runs", "3", "--quiet"]
F7 = "control characters (33)"

Check = Callable[[Path, subprocess.CompletedProcess[str]], "str | None"]
#: Raw control characters (C0 but tab and newline, DEL, C1) and bidi overrides.
_RAW = ("\x1b", "\x07", "\x08", "\x9b", "\u202e", "\u2066")
#: A name with an SGR colour, an OSC window title, a BEL, a bidi override and a newline.
EVIL = "ev\x1b[31mil\x1b]0;pwned\x07 \u202egnp.exe\nline"


def _within(seconds: float) -> Check:
    """A check: the case ended within ``seconds`` (its run time, from its stderr marker)."""

    def check(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
        marks = [ln for ln in result.stderr.splitlines() if ln.startswith("elapsed ")]
        took = float(marks[-1].split()[1]) if marks else 0.0
        return None if took <= seconds else f"took {took:.1f} s, more than {seconds:g} s"

    return check


def _timed(command: str) -> str:
    """``command`` with its wall time printed on stderr (``elapsed S``) and its exit code kept."""
    return (
        "s=$(date +%s.%N); " + command + "; code=$?; "
        'echo "elapsed $(echo "$(date +%s.%N) - $s" | bc)" >&2; (exit $code)'
    )  # (exit $code), not exit: a wrapper's shell (_SERVED, _HTTP1) then stops its server


def _clean_terminal(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
    """A check: no raw control character (nor a missing-glyph warning) on the terminal."""
    text = result.stdout + result.stderr
    if "Glyph" in text:
        return "matplotlib warned of a missing glyph"
    raw = [repr(c) for c in _RAW if c in text]
    return f"raw {', '.join(raw)} on the terminal" if raw else None


def _clean_files(*names: str) -> Check:
    """A check: the terminal and the files ``names`` hold no raw control character."""

    def check(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
        problem = _clean_terminal(folder, result)
        if problem:
            return problem
        for name in names:
            text = (folder / name).read_text(errors="replace")
            raw = [repr(c) for c in _RAW if c in text]
            if raw:
                return f"raw {', '.join(raw)} in {name}"
        return None

    return check


# --------------------------------------------------------------------------- hangs


def _requests(lines: int, distinct: int, array: bool = False) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        items = [json.dumps({"path": f"/item/{i % distinct}"}) for i in range(lines)]
        text = "[" + ",\n".join(items) + "]\n" if array else "\n".join(items) + "\n"
        (folder / "req.jsonl").write_text(text)

    return setup


def _memory_bound(gib: float) -> Callable[[], None]:
    """A preexec: the case's address space limited to ``gib`` GiB (memory per byte
    bounded: a 60 MB requests file took 1.45 GB)."""
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (int(gib * 2**30),) * 2)


_HTTP1 = (
    'port=$(python3 -c \'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); '
    "print(s.getsockname()[1])'); python3 -c 'import http.server, sys; "
    'http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), '
    "http.server.BaseHTTPRequestHandler).serve_forever()' $port >/dev/null 2>&1 & lsn=$!; "
    "sleep 1; {command}; code=$?; kill $lsn; exit $code"
)
_SILENT = (
    'port=$(python3 -c \'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); '
    "print(s.getsockname()[1])'); python3 -c 'import socket, sys, time; s=socket.socket(); "
    's.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(30)\' $port '
    ">/dev/null 2>&1 & lsn=$!; "
    "sleep 0.5; {command}; code=$?; kill $lsn; exit $code"
)


def _hang_cases() -> list[Case]:
    http = "{perflab} http http://127.0.0.1:9/ --rate 1 --duration 1s --quiet"
    cluster = [
        ("--agents 1000 on this machine", f"{http} --agents 1000", 5),
        ("--agents 10000 --agents-per-node 1", f"{http} --agents 10000 --agents-per-node 1", 5),
        ("--cluster where nothing listens", f"{http} --agents 2 --cluster 127.0.0.1:1", 15),
        (
            "--cluster ray:// where nothing listens",
            f"{http} --agents 2 --cluster ray://127.0.0.1:1",
            15,
        ),
        ("--cluster without a port", f"{http} --agents 2 --cluster 127.0.0.1", 15),
        ("--cluster on a port of another protocol", "", 20),
        ("--cluster on an HTTP/2 server that is not Ray's", "", 45),
        ("--cluster on a silent listener", "", 25),
    ]
    cases = []
    for what, command, bound in cluster:
        if what.endswith("not Ray's"):  # perflab serve answers HTTP/2's preface
            shell = _served(
                _timed(
                    "{perflab} http http://127.0.0.1:9/ --rate 1 --quiet "
                    "--agents 2 --cluster 127.0.0.1:$port"
                )
            )
        elif what.endswith("another protocol"):  # an HTTP/1.1 server
            shell = _HTTP1.replace(
                "{command}", _timed(f"{http} --agents 2 --cluster 127.0.0.1:$port")
            )
        elif what.endswith("silent listener"):
            shell = _SILENT.replace(
                "{command}", _timed(f"{http} --agents 2 --cluster 127.0.0.1:$port")
            )
        else:
            shell = _timed(command)
        cases.append(Case(F3, f"http {what}: one error line within {bound} s", [],
                          check=_within(bound), shell=shell))  # fmt: skip
    http_args = ["http", "http://127.0.0.1:9/", "--rate", "1", "--duration", "1s"]
    for what, setup in (
        ("1,000,001 lines", _requests(1_000_001, 10)),
        ("250,001 distinct requests", _requests(250_001, 250_001)),
        ("an array of 1,000,001 requests", _requests(1_000_001, 10, array=True)),
    ):
        cases.append(
            Case(
                F3,
                f"http --requests with {what}: refused within 1.5 GiB of address space",
                [*http_args, "--requests", "{dir}/req.jsonl"],
                setup=setup,
                preexec=_memory_bound(1.5),
            )  # fmt: skip
        )
    cases.append(
        Case(
            F3,
            "http --requests, 1,000,000 lines of 100,000 requests: read within 1.5 GiB",
            [*http_args, "--requests", "{dir}/req.jsonl"],
            setup=_requests(1_000_000, 100_000),
            preexec=_memory_bound(1.5),
            check=lambda f, r: None if "connection refused" in r.stderr else r.stderr[-200:],
        )
    )
    return cases


# --------------------------------------------------------------------------- control characters


def _evil_history(folder: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "perflab", *CMD, "-n", EVIL, "--history", "h.sqlite",
         "--json", "r.json", "true"],
        capture_output=True, check=True, cwd=folder,
    )  # fmt: skip


def _control_cases() -> list[Case]:
    evil_csv = "N,X,name\n" + "".join(
        f"{n},{100 * n**0.8:.1f},{EVIL!r}\n" for n in (1, 2, 4, 8, 16)
    )
    cases = [
        Case(F7, "cmd -n NAME --chart: the chart's labels", [*CMD, "-n", EVIL, "--json",
             "{dir}/r.json", "--chart", "{dir}/c.png", "true"], frozenset({0}),
             outputs=("r.json", "c.png"), measured=True, check=_clean_terminal),
        Case(F7, "history --chart of a NAME (drawn before its layout was measured)",
             ["history", "*", "--history", "{dir}/h.sqlite", "--chart", "{dir}/t.png"],
             frozenset({0}), setup=_evil_history, outputs=("t.png",), check=_clean_terminal),
        Case(F7, "history --format markdown: the trend table of a NAME",
             ["history", "*", "--history", "{dir}/h.sqlite", "--format", "markdown"],
             frozenset({0}), setup=_evil_history, check=_clean_terminal),
        Case(F7, "report: the HTML page (inline SVG) of a NAME",
             ["report", "{dir}/r.json", "-o", "{dir}/r.html"], frozenset({0}),
             setup=_evil_history, outputs=("r.html",), check=_clean_files("r.html")),
        Case(F7, "cmd --markdown and --csv files of a NAME", [*CMD, "-n", EVIL, "--markdown",
             "{dir}/r.md", "--csv", "{dir}/r.csv", "--json", "{dir}/r.json", "true"],
             frozenset({0}), outputs=("r.json", "r.md", "r.csv"), measured=True,
             check=_clean_files("r.md", "r.csv")),
        Case(F7, "cmd --json PATH with ESC ] 0 ; in it: the 'results saved to' line",
             [*CMD, "--json", "{dir}/o\x1b]0;pwned\x07.json", "true"], frozenset({0}),
             outputs=("o*.json",), check=_clean_terminal),
        Case(F7, "an unknown option with ESC in it: the argparse error line",
             ["cmd", "--\x1b[31mbogus", "true"], check=_clean_terminal),
        Case(F7, "fit --chart of a CSV whose series name holds controls",
             ["fit", "{dir}/s.csv", "--chart", "{dir}/f.png"], frozenset({0}),
             setup=lambda f: (f / "s.csv").write_text(evil_csv), outputs=("f.png",),
             check=_clean_terminal),
        Case(F7, "show --format csv of a NAME", ["show", "{dir}/r.json", "--format", "csv"],
             frozenset({0}), setup=_evil_history, check=_clean_terminal),
    ]  # fmt: skip
    return cases


# --------------------------------------------------------------------------- signals


_AGENTS = (
    "set -m; {perflab} http http://127.0.0.1:$port/ --agents 2 --rate 50,60,70 --duration 3s "
    "--no-history --json {dir}/r.json > {dir}/out.txt 2> {dir}/err.txt & pid=$!; "
    # the signal follows an event (at most 50 s): a finished step, or Ray starting
    "for i in $(seq 500); do grep -q '%s' {dir}/err.txt && break; "
    "kill -0 $pid 2>/dev/null || break; sleep 0.1; done; %s"
    # (exit $code): the status for _SERVED, whose shell goes on to stop its server
    "kill -TERM $pid; wait $pid; code=$?; cat {dir}/err.txt >&2; (exit $code)"
)

_BENCH_TESTS = (
    "import pathlib, time\n\n\ndef slow():\n    time.sleep(0.002)\n\n\n"
    "def test_a(perflab_bench):\n    pathlib.Path(__file__).with_name('started').touch()\n"
    "    perflab_bench(slow)\n"
    # enough tests that the last Ctrl-C (5 s in) still lands while measuring on a quiet
    # machine (about 1 s a test): after the tests, a Ctrl-C is pytest's own (exit 130)
    + "".join(f"\n\ndef test_{c}(perflab_bench):\n    perflab_bench(slow)\n" for c in "bcdefgh")
)


def _signal_cases() -> list[Case]:
    cases = [
        Case(F2, "http --agents 2: SIGTERM after a step saves it, exit 143", [],
             frozenset({143}), outputs=("r.json", "out.txt", "err.txt"), measured=True,
             shell=_served(_AGENTS % ("step 1/3", ""))),
        Case(F2, "http --agents 2: SIGTERM while Ray starts, exit 143 (was 15)", [],
             frozenset({143}), outputs=("out.txt", "err.txt"),
             shell=_served(_AGENTS % ("starting a local Ray", "sleep 1; "))),
    ]  # fmt: skip
    pytest_run = (
        "set -m; {py} -m pytest -q -p no:cacheprovider "
        "{dir}/test_b.py --perflab-json {dir}/r.json > {dir}/out.txt 2>&1 & pid=$!; "
        "for i in $(seq 500); do [ -e {dir}/started ] && break; kill -0 $pid 2>/dev/null "
        "|| break; sleep 0.1; done; sleep %s; kill -INT $pid; wait $pid; code=$?; "
        "[ $code = 2 ] && exit 0; cat {dir}/out.txt >&2; exit 9"
    ).replace("{py}", shlex.quote(sys.executable))
    for wait in ("0.5", "1.5", "3", "5"):
        cases.append(
            Case(
                F2,
                f"pytest plugin: Ctrl-C {wait} s into measuring stops pytest (its exit 2, "
                "shown as 0), results saved",
                [],
                frozenset({0}),
                outputs=("*",),
                measured=True,
                setup=lambda f: (f / "test_b.py").write_text(_BENCH_TESTS),
                check=_saved("r.json"),
                shell=pytest_run % wait,
            )  # fmt: skip
        )
    return cases


def _saved(name: str) -> Check:
    def check(folder: Path, result: subprocess.CompletedProcess[str]) -> str | None:
        from perflab import model

        try:
            results = model.load(folder / name)
        except Exception as exc:  # noqa: BLE001 - any failure means nothing was saved
            return f"{name} not saved: {exc}"
        return None if results.benchmarks else f"{name} holds no benchmark"

    return check


# --------------------------------------------------------------------------- refused


def _hyperfine(codes: Callable[[int], list[int]]) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        raw = json.loads((ROOT / "tests" / "data" / "interop" / "hyperfine.json").read_text())
        for result in raw["results"]:
            result["exit_codes"] = codes(len(result["times"]))
        (folder / "h.json").write_text(json.dumps(raw))

    return setup


def _refused_cases() -> list[Case]:
    cmd = ["cmd", "--runs", "3", "--quiet", "--no-history"]
    placeholders = [
        ("an undefined {x}", [*cmd, "echo {x}"]),
        ("{nn} for the parameter {n}", [*cmd, "-P", "n", "1", "2", "echo {nn}"]),
        ("{n:03d} (a format)", [*cmd, "-P", "n", "1", "2", "echo {n:03d}"]),
        ("{n-1} (arithmetic)", [*cmd, "-P", "n", "1", "2", "echo {n-1}"]),
        ("an unclosed {n", [*cmd, "-P", "n", "1", "2", "echo {n} {n"]),
        ("{m} in --prepare", [*cmd, "-P", "n", "1", "2", "--prepare", "echo {m}", "echo {n}"]),
        ("{k} in a -n name", [*cmd, "-P", "n", "1", "2", "-n", "run {k}", "echo {n}"]),
    ]
    cases = [Case(F5, f"cmd: {what} is refused", argv) for what, argv in placeholders]
    for what, codes in (
        ("more exit codes than times", lambda n: [0] * (n + 3)),
        ("fewer exit codes than times", lambda n: [0] * (n - 1)),
        ("no exit code for its times", lambda n: []),
    ):
        cases.append(Case(F5, f"show a hyperfine file with {what}", ["show", "{dir}/h.json"],
                          setup=_hyperfine(codes)))  # fmt: skip
    cases.append(Case(F5, "cmd: a failing command without -i exits 1, hyperfine's rule",
                      [*cmd, "--json", "{dir}/r.json", "false"], frozenset({1}),
                      outputs=("r.json",), measured=True))  # fmt: skip
    return cases


# --------------------------------------------------------------------------- secrets


def _secret_cmd_cases() -> list[Case]:
    outputs = ["--json", "{dir}/r.json", "--history", "{dir}/h.sqlite", "--markdown",
               "{dir}/r.md", "--csv", "{dir}/r.csv", "--export-json", "{dir}/e.json"]  # fmt: skip
    commands = [
        ("a credential header", "true -H 'Authorization: Bearer S3CRET-VALUE' http://h/"),
        ("a URL's password", "true https://user:hunter2@127.0.0.1:9/x"),
        ("a ?token= query", "true 'http://h/x?token=S3CRET-VALUE&page=2'"),
        ("--password VALUE", "true --password hunter2 -v"),
        ("--api-key=VALUE", "true --api-key=S3CRET-VALUE"),
        ("TOKEN=VALUE", "env GITHUB_TOKEN=S3CRET-VALUE true"),
    ]
    cases = [
        Case(
            F6,
            f"cmd: {what} in the command → its name in results, history, files, terminal",
            [*CMD, *outputs, command],
            frozenset({0}),
            outputs=("*",),
            measured=True,
        )  # fmt: skip
        for what, command in commands
    ]
    cases.append(
        Case(
            F6,
            "cmd: a failing command's error line does not echo its --token",
            [*CMD, "--json", "{dir}/r.json", "false --token S3CRET-VALUE"],
            frozenset({1}),
            outputs=("r.json",),
            measured=True,
        )  # fmt: skip
    )
    cases.append(
        Case(
            F6,
            "cmd: a command not found does not echo its password",
            [*CMD, "no-such-program-perflab --password hunter2"],
        )  # fmt: skip
    )
    return cases


def hostile2_cases() -> list[Case]:
    """Every case of this module."""
    return (
        _hang_cases() + _control_cases() + _signal_cases() + _refused_cases() + _secret_cmd_cases()
    )
