"""Gates that fail a CI build: ``perflab http --slo`` (k6-style thresholds, exit 1 when a
step misses one) and the in-run verdicts of ``perflab cmd --fail-on`` and ``perflab run
--fail-on`` (as ``perflab compare`` decides), through the real entry point. Steps are 0.5 s
at 50 req/s against ``perflab serve``; commands are 3–5 runs of ``true`` and ``sleep``;
Python benchmarks 5 processes of 20 ms."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from perflab import _core

FAST = ["--duration", "0.5s", "--warmup", "0.1s", "--threads", "1", "--quiet"]


@pytest.fixture
def server() -> Any:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "5ms"}) as s:
        yield s


def _http(perflab_cli: Any, server: Any, tmp_path: Path, *argv: str) -> Any:
    return perflab_cli(
        "http",
        f"http://{server.address}/",
        "--rate",
        "50",
        *FAST,
        "--json",
        str(tmp_path / "h.json"),
        "--format",
        "markdown",
        *argv,
    )


def test_a_missed_slo_exits_1_with_a_gate_line(
    tmp_path: Path, server: Any, perflab_cli: Any
) -> None:
    # every response takes ≥ 5 ms: p99 can't be under 1 ms
    missed = _http(perflab_cli, server, tmp_path, "--slo", "1ms")
    assert missed.returncode == 1, missed.stderr
    assert "gate: --fail-on slo tripped by 1 step(s): 50/s" in missed.stderr
    # the verdict: saturated by the SLO, unless a busy machine made perflab send late
    assert "p99 over the 1 ms SLO" in missed.stdout or "generator-limited" in missed.stdout
    kept = _http(perflab_cli, server, tmp_path, "--slo", "1ms", "--fail-on", "none")
    assert kept.returncode == 0, kept.stderr
    assert "gate:" not in kept.stderr
    # 2 s is far above a 5 ms delay, however busy the machine
    met = _http(perflab_cli, server, tmp_path, "--slo", "p99=2s,error=50%")
    assert met.returncode == 0, met.stderr
    data = json.loads((tmp_path / "h.json").read_text())
    assert data["settings"]["slo"] == {"p99": 2.0, "error": 0.5}


def test_several_thresholds_each_gate(tmp_path: Path, server: Any, perflab_cli: Any) -> None:
    result = _http(perflab_cli, server, tmp_path, "--slo", "p50=2s,p99.9=1ms")
    assert result.returncode == 1
    assert "gate: --fail-on slo tripped by 1 step(s)" in result.stderr
    assert "p50 over" not in result.stdout
    met = _http(perflab_cli, server, tmp_path, "--slo", "p50=2s,max=3s")
    assert met.returncode == 0, met.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--slo", "p42=1ms"], "key of p50, p90, p99, p99.9, max, error"),
        (["--slo", "p99=fast"], "--slo p99"),
        (["--slo", "error=150%"], "--slo error"),
        (["--fail-on", "slo"], "needs an --slo"),
        (["--slo", "1s", "--fail-on", "slower"], "use some of slo, saturated"),
    ],
)
def test_bad_gates_are_one_line_and_exit_2(argv: list[str], message: str, perflab_cli: Any) -> None:
    result = perflab_cli(
        "http", "http://127.0.0.1:1/", "--rate", "10", "--quiet", *argv, timeout=30
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_cmd_verdict_against_the_reference_gates(tmp_path: Path, perflab_cli: Any) -> None:
    out = tmp_path / "c.json"
    argv = [
        "cmd",
        "true",
        "sleep 0.05",
        "--reference",
        "true",
        "--runs",
        "4",
        "--quiet",
        "--format",
        "markdown",
        "--json",
        str(out),
    ]
    # sleeping 50 ms against an empty process: ~10-50× slower on any machine
    slower = perflab_cli(*argv, "--fail-on", "slower")
    assert slower.returncode == 1, slower.stderr
    assert "gate: --fail-on slower tripped by 1 benchmark(s): sleep 0.05" in slower.stderr
    assert "verdict" in slower.stdout and "slower" in slower.stdout
    summary = json.loads(out.read_text())["benchmarks"][1]["summary"]
    assert summary["verdict"] == "slower"
    assert perflab_cli(*argv, "--fail-on", "faster,same").returncode == 0
    bad = perflab_cli(*argv, "--fail-on", "worse")
    assert bad.returncode == 2 and "not a verdict" in bad.stderr


_RUN_FAST = [
    "--budget",
    "3s",
    "--min-processes",
    "5",
    "--max-processes",
    "5",
    "--process-time",
    "20ms",
    "--quiet",
    "--no-alloc",
    "--no-history",
]


def _bench_file(tmp_path: Path, baseline: bool = True) -> Path:
    path = tmp_path / "bench.py"
    path.write_text(
        "import perflab\n"
        f"@perflab.bench(group='g', baseline={baseline})\n"
        "def small():\n    return sum(range(500))\n"
        "@perflab.bench(group='g')\n"
        "def busy():\n    return sum(range(100000))\n"
    )
    return path


def test_run_verdict_against_the_baseline_gates(tmp_path: Path, perflab_cli: Any) -> None:
    out = tmp_path / "r.json"
    argv = [
        "run",
        str(_bench_file(tmp_path)),
        *_RUN_FAST,
        "--format",
        "markdown",
        "--json",
        str(out),
    ]
    # summing 100,000 numbers against 500: ~200× slower on any machine; the baseline does
    # some work, as an empty call's per-process medians scatter widely on a busy machine
    slower = perflab_cli(*argv, "--fail-on", "slower")
    assert slower.returncode == 1, slower.stderr
    gates = [line for line in slower.stderr.splitlines() if line.startswith("gate:")]
    assert gates == ["gate: --fail-on slower tripped by 1 benchmark(s): g/busy"]
    header = next(line for line in slower.stdout.splitlines() if "| benchmark |" in line)
    assert "| × baseline | verdict |" in header
    assert "| slower |" in slower.stdout and "wholly beyond ±2.0%" in slower.stdout
    summaries = [b["summary"] for b in json.loads(out.read_text())["benchmarks"]]
    assert [s["verdict"] for s in summaries] == ["", "slower"]
    shown = perflab_cli("show", str(out), "--format", "csv")
    assert "verdict" in shown.stdout.splitlines()[0] and ",slower," in shown.stdout
    assert perflab_cli(*argv, "--fail-on", "faster,same", "--threshold", "5%").returncode == 0


def test_run_fail_on_needs_something_to_judge(tmp_path: Path, perflab_cli: Any) -> None:
    bench = _bench_file(tmp_path, baseline=False)
    result = perflab_cli("run", str(bench), *_RUN_FAST, "--fail-on", "slower")
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "baseline=True" in errors[0] and "--compare-to" in errors[0]
    assert "Traceback" not in result.stderr


def test_step_summary_of_a_github_actions_job(tmp_path: Path, perflab_cli: Any) -> None:
    summary = tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    result = perflab_cli(
        "cmd", "true", "--runs", "3", "--quiet", "--json", str(tmp_path / "c.json"), env=env
    )
    assert result.returncode == 0, result.stderr
    text = summary.read_text()
    assert text.startswith("### commands") and "| true |" in text and "verdict" in text


def test_a_server_answering_errors_is_named_errors_and_gates(
    tmp_path: Path, perflab_cli: Any
) -> None:
    # half the responses are 500s: the verdict is "errors" (or "saturated", if a busy
    # machine left the server behind), never "ok"; --fail-on errors names it
    with _core.serve({"host": "127.0.0.1", "port": 0, "error_rate": 0.5, "seed": 3}) as s:
        result = _http(perflab_cli, s, tmp_path, "--fail-on", "errors,saturated")
    assert result.returncode == 1, result.stderr
    assert "gate: --fail-on errors,saturated tripped by 1 step(s): 50/s" in result.stderr
    (summary,) = json.loads((tmp_path / "h.json").read_text())["benchmarks"][0]["summary"]["steps"]
    assert summary["verdict"] in ("errors", "saturated"), summary
    assert any(r.endswith("failed (status 500)") for r in summary["reasons"])
    assert "failed requests:" in result.stdout and "× status 500" in result.stdout
