"""`perflab cmd` through the real entry point: good runs and every bad input of issue 5.

Run counts are fixed and tiny (--runs) so the file runs in well under a minute;
timings themselves are not asserted here (tests/engines covers the logic).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import popen_perflab

QUIET = ["--quiet", "--runs", "3"]


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def load(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_interpreters_compared_in_a_table_and_a_results_file(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "r.json"
    result = perflab_cli(
        "cmd",
        "-L",
        "py",
        f"{sys.executable},{sys.executable}",
        "{py} -c 'import json'",
        "--json",
        str(out),
        *QUIET,
    )
    assert result.returncode == 0, result.stderr
    for word in (
        "median ± CI",
        "user",
        "system",
        "total",
        "real (mean ± σ)",
        "CPU/wall",
        "max RSS",
        "× fastest",
        "spawn overhead",
        " #2",
    ):
        assert word in result.stdout
    data = load(out)
    assert data["kind"] == "cmd" and data["command_line"][:2] == ["perflab", "cmd"]
    assert len(data["spawn_overhead_ns"]) == 30 and data["rss_floor_bytes"] > 0
    first, second = data["benchmarks"]
    assert first["kind"] == "command" and first["params"] == {"py": sys.executable}
    assert second["name"].endswith("#2") and len(first["runs"]) == 3
    run = first["runs"][0]
    assert run["wall_ns"] > 0 and run["user_ns"] + run["sys_ns"] > 0 and run["ok"]
    assert run["max_rss_bytes"] > 1e6
    assert first["summary"]["unit"] == "s/run" and first["summary"]["ratio"]


def test_show_re_renders_a_cmd_file(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "r.json"
    assert perflab_cli("cmd", "true", "--json", str(out), *QUIET).returncode == 0
    table = perflab_cli("show", str(out))
    assert table.returncode == 0 and "true" in table.stdout and "CPU/wall" in table.stdout
    markdown = perflab_cli("show", str(out), "--format", "markdown").stdout
    assert markdown.startswith("### commands") and "| true |" in markdown
    csv = perflab_cli("show", str(out), "--format", "csv").stdout.splitlines()
    assert csv[0].startswith("id,label,runs") and csv[1].startswith("true,true,3")


def test_scan_no_interleave_and_reference(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "r.json"
    result = perflab_cli(
        "cmd",
        "-P",
        "n",
        "1",
        "2",
        "sleep 0.00{n}",
        "--no-interleave",
        "--reference",
        "true",
        "--json",
        str(out),
        *QUIET,
    )
    assert result.returncode == 0, result.stderr
    assert "sleep 0.001" in result.stdout and "× reference" in result.stdout
    assert "n=1" not in result.stdout  # the name holds the value: not repeated
    benches = load(out)["benchmarks"]
    assert [b["name"] for b in benches] == ["true", "sleep 0.001", "sleep 0.002"]
    indices = [r["index"] for b in benches for r in b["runs"]]
    assert indices == sorted(indices), "--no-interleave runs one command after another"
    assert benches[0]["summary"]["reference"]


def test_bad_input_gets_one_line_and_exit_2(tmp_path: Path, perflab_cli) -> None:
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\n")
    cases = [
        (["no-such-program-perflab"], "not found on PATH"),
        ([str(script)], "permission denied"),
        (["-P", "n", "1", "sleep {n}"], "not a number"),
        (["-P", "n", "5", "1", "sleep {n}"], "above HI"),
        (["-L", "n", "a,,b", "echo {n}"], "empty value"),
        (["-L", "n", "a,b", "true"], "not used"),
        ([], "no command given"),
        (["--input", str(tmp_path / "missing"), "true"], "--input"),
        (["--reference", "9", "true"], "--reference"),
        (["--min-runs", "1", "true"], "--min-runs"),
        (["--timeout", "soon", "true"], "not a duration"),
        (["true 'unclosed"], "quotes"),
    ]
    for args, words in cases:
        result = perflab_cli("cmd", *args, "--quiet", cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert words in one_error_line(result.stderr), args
    assert not (tmp_path / ".perflab").exists(), "nothing measured, nothing saved"


def test_a_failing_command_exits_1_and_keeps_the_others(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "r.json"
    result = perflab_cli("cmd", "false", "true", "--json", str(out), *QUIET)
    assert result.returncode == 1
    assert "exited with status 1" in result.stdout and "FAILED" in result.stdout
    failed, ok = load(out)["benchmarks"]
    assert failed["stop_reason"] == "failed" and not failed["runs"][0]["ok"]
    assert len(ok["runs"]) == 3 and ok["error"] is None


def test_ignore_failure_with_and_without_codes(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "r.json"
    result = perflab_cli("cmd", "--ignore-failure", "false", "--json", str(out), *QUIET)
    assert result.returncode == 0, result.stderr
    assert "non-zero exits (runs that exited non-zero" in result.stdout
    assert "false 3 runs" in result.stdout
    assert [r["exit_code"] for r in load(out)["benchmarks"][0]["runs"]] == [1, 1, 1]
    only_2 = perflab_cli("cmd", "--ignore-failure=2", "sh -c 'exit 1'", "--json", str(out), *QUIET)
    assert only_2.returncode == 1 and "--ignore-failure=1" in only_2.stdout


def test_a_hang_is_killed_at_the_timeout(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "r.json"
    began = time.monotonic()
    result = perflab_cli("cmd", "--timeout", "0.5", "sleep 600", "--json", str(out), *QUIET)
    assert time.monotonic() - began < 60  # one 0.5 s timeout + start-up, not the 600 s
    assert result.returncode == 1 and "timed out after 0.5 s" in result.stdout
    assert load(out)["benchmarks"][0]["runs"][0]["timed_out"]


def test_gigabytes_of_output_are_discarded_or_streamed(tmp_path: Path, perflab_cli) -> None:
    out = tmp_path / "r.json"
    flood = "head -c 1000000000 /dev/zero"
    result = perflab_cli("cmd", flood, "--json", str(out), "--quiet", "--runs", "2")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) < 20_000
    proc = popen_perflab(
        ["cmd", flood, "--show-output", "--json", str(out), "--quiet", "--runs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    # 2 GB went to stdout: perflab (and its helper) must not have held it in memory
    assert usage.ru_maxrss * 1024 < 400e6


def test_show_output_and_input_file(tmp_path: Path, perflab_cli) -> None:
    data = tmp_path / "in.txt"
    data.write_text("hello\n")
    out = tmp_path / "r.json"
    result = perflab_cli(
        "cmd",
        "--shell",
        "--show-output",
        "--input",
        str(data),
        'read x; echo "got $x"',
        "--json",
        str(out),
        *QUIET,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("got hello") == 3
    silent = perflab_cli("cmd", "--shell", 'echo "not shown"', "--json", str(out), *QUIET)
    assert "not shown" not in silent.stdout.replace('echo "not shown"', "")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_keeps_finished_runs(tmp_path: Path, sig: int) -> None:
    out, log = tmp_path / "r.json", tmp_path / "log"
    proc = popen_perflab(
        [
            "cmd",
            "sleep 0.05",
            "--quiet",
            "--runs",
            "100000",
            "--budget",
            "10m",
            "--json",
            str(out),
            "--prepare",
            f"echo x >> {log}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60  # generous: start-up on a busy machine
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text()) < 8):
        time.sleep(0.05)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, stderr  # 130 Ctrl-C, 143 SIGTERM
    data = load(out)
    assert data["interrupted"] and len(data["benchmarks"][0]["runs"]) >= 3
    assert data["benchmarks"][0]["stop_reason"] == "interrupted"
    assert "interrupted" in stdout
