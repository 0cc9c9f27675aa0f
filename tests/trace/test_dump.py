"""Trace results files: dump, load, periodic dumps and the environment switches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import perflab.trace
from perflab import model
from perflab.errors import ResultsFileError, UsageError
from perflab.trace.results import PeriodicDump, parse_dump_spec


def test_dump_writes_a_trace_results_file_that_loads(tmp_path):
    @perflab.trace("d.work")
    def work(n):
        return sum(range(n))

    for n in (10, 1000, 100_000):
        work(n)
    path = perflab.trace.dump(tmp_path / "trace.json")
    results = model.load(path)
    assert results.kind == "trace"
    (bench,) = [b for b in results.benchmarks if b.name == "d.work"]
    assert bench.kind == "trace" and bench.span.count == 3
    snap = perflab.trace.snapshot()["d.work"]
    assert bench.span.total_ns == snap["total_ns"]
    assert bench.span.duration.p99_ns == snap["duration"]["p99_ns"]
    assert bench.span.duration.min_ns <= bench.span.duration.p50_ns <= bench.span.duration.max_ns
    data = json.loads(path.read_text())
    assert data["settings"]["enabled"] is True and data["settings"]["pid"] == os.getpid()


def test_dump_never_overwrites_a_foreign_file(tmp_path):
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"mine": 1}')
    with pytest.raises(UsageError, match="not written by perflab"):
        perflab.trace.dump(foreign)
    assert foreign.read_text() == '{"mine": 1}'


def test_a_damaged_span_histogram_is_a_clear_error(tmp_path):
    with perflab.trace.span("d.x"):
        pass
    path = perflab.trace.dump(tmp_path / "t.json")
    data = json.loads(path.read_text())
    data["benchmarks"][0]["span"]["duration"]["encoded"] = "SGVsbG8="
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match=r"benchmarks\[0\]\.span\.duration\.encoded"):
        model.load(path)
    data["benchmarks"][0]["kind"] = "python"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match="benchmarks\\[0\\].kind"):
        model.load(path)


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("t.json,30s", ("t.json", 30.0)),
        ("a,b.json,2m", ("a,b.json", 120.0)),
        ("t.json", ("t.json", float("inf"))),
        ("t.json,", ("t.json", float("inf"))),
    ],
)
def test_dump_specs(spec, expected):
    assert parse_dump_spec(spec) == expected


@pytest.mark.parametrize(
    "spec,message",
    [
        (",30s", "no path"),
        ("t.json,soon", "not a duration"),
        ("t.json,0.1s", "under 1s"),
    ],
)
def test_bad_dump_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_dump_spec(spec)


def test_periodic_dump_rewrites_the_file_and_warns_once_on_failure(tmp_path):
    with perflab.trace.span("d.periodic"):
        pass
    dumper = PeriodicDump(str(tmp_path / "p.json"), 1.0).start()
    try:
        deadline = time.monotonic() + 30
        while dumper.dumps < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert dumper.dumps >= 2
    finally:
        dumper.stop()
    assert model.load(tmp_path / "p.json").benchmarks[0].name == "d.periodic"
    bad = PeriodicDump(str(tmp_path), float("inf"))  # a folder: every dump fails
    with pytest.warns(RuntimeWarning, match="periodic dump"):
        assert bad.dump_now() is False
    assert bad.dump_now() is False  # the same failure again: no second warning


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin"), **env},
        timeout=120,
    )


def test_perflab_trace_dump_writes_at_exit(tmp_path):
    out = tmp_path / "svc.json"
    proc = run_python(
        "import perflab\n@perflab.trace('svc')\ndef f(): pass\nf(); f()",
        PERFLAB_TRACE_DUMP=f"{out},1h",
    )
    assert proc.returncode == 0, proc.stderr
    (bench,) = model.load(out).benchmarks
    assert (bench.name, bench.span.count) == ("svc", 2)


def test_a_bad_perflab_trace_dump_warns_and_the_program_runs(tmp_path):
    proc = run_python("import perflab.trace; print('ran')", PERFLAB_TRACE_DUMP="x.json,never")
    assert proc.returncode == 0 and proc.stdout.strip() == "ran"
    assert "PERFLAB_TRACE_DUMP='x.json,never' ignored" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_perflab_trace_dump_writes_on_sigterm(tmp_path):
    import signal

    out = tmp_path / "term.json"
    code = (
        "import perflab, sys, time\n@perflab.trace('busy')\ndef f(): pass\nf()\n"
        "print('ready', flush=True)\ntime.sleep(60)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "PERFLAB_TRACE_DUMP": f"{out},1h"},
    )
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == -signal.SIGTERM  # still ended by SIGTERM
    assert model.load(out).benchmarks[0].span.count == 1
