"""Real clock faults, injected with libfaketime (Debian's libfaketime; LD_PRELOAD).

libfaketime replaces libc's clock_gettime, so it fakes MONOTONIC, REALTIME,
MONOTONIC_RAW and BOOTTIME alike (checked here: they all run at 2× under
``FAKETIME="+0 x2"``); only the TSC (rdtsc, no library call) and the kernel's
clocks read by direct system call stay true. That is what doctor and the
per-sample bracket compare against.

Each test starts the real entry point; timings are bounded by the probes' own
true-time limits, so the bounds below are generous.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LIB = next(iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))), None)
pytestmark = [
    pytest.mark.skipif(
        LIB is None,
        reason="libfaketime is not installed (Debian package "
        "libfaketime; 'make system-deps' installs it)",
    ),
    pytest.mark.skipif(
        not Path("/proc/cpuinfo").exists() or " tsc" not in Path("/proc/cpuinfo").read_text(),
        reason="no TSC: the faked clocks can't be told from true ones",
    ),
]

BENCH = "import perflab\n\n@perflab.bench()\ndef add():\n    return sum(range(200))\n"


def _env(**faketime: str) -> dict[str, str]:
    return {**os.environ, "LD_PRELOAD": str(LIB), **faketime}


def _perflab(
    *args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "perflab", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def _write_offset(path: Path, seconds: float) -> None:
    """Rewrite libfaketime's offset file atomically (a half-written file reads as garbage)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"{seconds:+.3f}\n")
    tmp.replace(path)


def _checks(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in doc["checks"]}


def test_doctor_reports_clocks_at_twice_the_tsc_rate() -> None:
    done = _perflab("doctor", "--duration", "300ms", "--json", env=_env(FAKETIME="+0 x2"))
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    rates = doc["cross_checks"]["rates"]
    for clock in ("monotonic", "realtime", "monotonic_raw", "boottime"):
        assert rates[clock] == pytest.approx(2.0, rel=0.02), (clock, rates)
    check = _checks(doc)["rate_vs_tsc"]
    assert check["status"] == "fail"
    assert check["detail"].startswith("MONOTONIC runs at 2.000× the TSC")


#: the stepped doctor's probe, s (a bound: the step lands inside it however busy the machine)
PROBE_S = 8.0


@pytest.fixture
def offset_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "faketime-offset"
    _write_offset(path, 0)
    yield path


def _step_doctor(offset_file: Path, **extra: str) -> tuple[dict[str, Any], float]:
    """Run doctor with an 8 s probe; 0.5 s after it says the probe began, step the clocks
    +1 s. The probe's length is a bound, not a speed: the step must land inside it, and on
    a busy machine (load 4-16) the probe's start line, this process's wake-up and the
    write can each come late; 7.5 s of slack covers that where a 2 s probe did not.

    Returns:
        (the JSON document, wall time of the step as epoch seconds).
    """
    env = _env(FAKETIME_NO_CACHE="1", FAKETIME_TIMESTAMP_FILE=str(offset_file), **extra)
    proc = subprocess.Popen(
        [sys.executable, "-m", "perflab", "doctor", "--duration", f"{PROBE_S:g}s", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "cross-check probe" in line:
            break
    time.sleep(0.5)
    _write_offset(offset_file, 1.0)
    stepped_at = time.time()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 1), err
    return json.loads(out), stepped_at


def test_doctor_reports_a_step_of_every_clock_with_its_size_and_time(offset_file: Path) -> None:
    doc, stepped_at = _step_doctor(offset_file)
    steps = doc["cross_checks"]["steps"]
    big = [s for s in steps if abs(s["sizes_ns"].get("monotonic", 0)) > 100_000_000]
    assert len(big) == 1, steps
    (step,) = big
    assert step["against"] == "tsc"
    assert step["sizes_ns"]["monotonic"] == pytest.approx(1e9, abs=5e6)
    # libfaketime re-reads the offset file on every call, so the step can land between
    # the probe's MONOTONIC and REALTIME reads: REALTIME's +1 s then shows in that window
    # or the next one. Either way it is reported once, with the right size.
    realtime = [
        s["sizes_ns"]["realtime"]
        for s in steps
        if abs(s["sizes_ns"].get("realtime", 0)) > 100_000_000
    ]
    assert realtime == [pytest.approx(1e9, abs=5e6)], steps
    # never before the write (0.5 s after the probe began), and inside the probe
    assert 0.2 < step["offset_s"] < PROBE_S
    from datetime import datetime

    # "at" is REALTIME just before the step: the real time (the offset was +0 until then).
    assert datetime.fromisoformat(step["at"]).timestamp() == pytest.approx(stepped_at, abs=1.0)
    check = _checks(doc)["clock_steps"]
    assert check["status"] == "fail"
    assert check["detail"].startswith("clock stepped +1.000 s at ")
    assert doc["cross_checks"]["rates"]["monotonic"] == pytest.approx(1.0, abs=1e-3)


def test_doctor_reports_a_realtime_only_step_as_a_warning(offset_file: Path) -> None:
    doc, _ = _step_doctor(offset_file, FAKETIME_DONT_FAKE_MONOTONIC="1")
    big = [
        s
        for s in doc["cross_checks"]["steps"]
        if abs(max(s["sizes_ns"].values(), key=abs)) > 100_000_000
    ]
    assert [sorted(s["sizes_ns"]) for s in big] == [["realtime"]]
    assert big[0]["sizes_ns"]["realtime"] == pytest.approx(1e9, abs=5e6)
    assert _checks(doc)["clock_steps"]["status"] == "warn"


def _run(
    tmp_path: Path, env: dict[str, str], process_time: str = "100ms"
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    (tmp_path / "b.py").write_text(BENCH)
    done = _perflab(
        "run",
        "b.py",
        "--verbose",  # the notes in full: which samples were excluded
        "--min-processes",
        "2",
        "--max-processes",
        "2",
        "--budget",
        "5s",
        "--process-time",
        process_time,
        "--no-alloc",
        "--quiet",
        "--json",
        "r.json",
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return done, json.loads((tmp_path / "r.json").read_text())


def test_run_at_twice_the_rate_flags_and_excludes_every_sample(tmp_path: Path) -> None:
    done, results = _run(tmp_path, _env(FAKETIME="+0 x2"))
    bench = results["benchmarks"][0]
    samples = [s for p in bench["processes"] for s in p["samples"]]
    # at least the minimum per process the harness guarantees, 2 processes (how many more
    # fit in 100 ms is the machine's speed)
    from perflab.engines.run.runner import Settings

    assert len(bench["processes"]) == 2 and len(samples) >= 2 * Settings().min_samples
    for s in samples:
        assert s["flagged"] == "clock:tsc"
        # The TSC saw half of what MONOTONIC claims: skew = ΔTSC − ΔMONOTONIC = −Δ/2 over
        # the bracket, which holds the timed loop (wall) and can't be shorter.
        assert s["clock_skew_ns"] <= -0.45 * s["wall_ns"]
    assert bench["summary"]["flagged"] == len(samples) and bench["summary"]["samples"] == 0
    text = " ".join(done.stdout.split())  # --verbose's note on the benchmark, unwrapped
    assert f"add: all {len(samples)} samples excluded: the clocks disagreed during them" in text


THREADS_BENCH = """
import perflab

@perflab.bench(threads=[2])
def add():
    sum(range(50))
"""


def test_threads_mode_at_twice_the_rate_flags_every_window(tmp_path: Path) -> None:
    """Threads-mode windows carry the same clock cross-check as normal samples."""
    (tmp_path / "t.py").write_text(THREADS_BENCH)
    done = _perflab(
        "run",
        "t.py",
        "--verbose",  # the notes in full: which samples were excluded
        "--min-processes",
        "1",
        "--max-processes",
        "1",
        "--process-time",
        "100ms",
        "--no-alloc",
        "--quiet",
        "--json",
        "r.json",
        env=_env(FAKETIME="+0 x2"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    bench = json.loads((tmp_path / "r.json").read_text())["benchmarks"][0]
    windows = [s for p in bench["processes"] for s in p["samples"]]
    assert windows and all(s["flagged"] == "clock:tsc" for s in windows)


def test_cmd_at_twice_the_rate_flags_and_excludes_every_run(tmp_path: Path) -> None:
    """perflab cmd checks the clocks per batch of runs, in the parent (which reads the TSC)."""
    done = _perflab(
        "cmd",
        "--runs",
        "6",
        "--warmup",
        "0",
        "--quiet",
        "--json",
        "r.json",
        "sleep 0.01",
        env=_env(FAKETIME="+0 x2"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    bench = json.loads((tmp_path / "r.json").read_text())["benchmarks"][0]
    runs = [r for r in bench["runs"] if not r["warmup"]]
    assert len(runs) == 6 and all(r["flagged"] == "clock:tsc" for r in runs)
    assert "runs excluded (the clocks disagreed" in done.stdout  # grouped by kind (issue 14)
    assert "sleep 0.01 6 runs" in done.stdout


def test_http_at_twice_the_rate_flags_the_step(tmp_path: Path) -> None:
    """perflab http brackets each step with the clock cross-check; the target runs unfaked."""
    from perflab import _core

    with _core.serve({"port": 0}) as server:
        done = _perflab(
            "http",
            f"http://{server.address}/",
            "--rate",
            "200",
            "--duration",
            "1s",
            "--json",
            "r.json",
            env=_env(FAKETIME="+0 x2"),
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr
    (step,) = json.loads((tmp_path / "r.json").read_text())["benchmarks"][0]["steps"]
    assert step["flagged"] == "clock:tsc"
    assert "the clocks disagreed during this step" in done.stdout


def test_run_with_clock_steps_flags_and_excludes_the_samples_spanning_them(
    tmp_path: Path, offset_file: Path
) -> None:
    stop = threading.Event()

    def stepper() -> None:  # +20 ms every 250 ms (a sample lasts 10-100 ms here)
        offset = 0.0
        while not stop.wait(0.25):
            offset += 0.02
            _write_offset(offset_file, offset)

    thread = threading.Thread(target=stepper, daemon=True)
    thread.start()
    try:
        done, results = _run(
            tmp_path, _env(FAKETIME_NO_CACHE="1", FAKETIME_TIMESTAMP_FILE=str(offset_file)), "1s"
        )
    finally:
        stop.set()
        thread.join()
    bench = results["benchmarks"][0]
    samples = [s for p in bench["processes"] for s in p["samples"]]
    flagged = [s for s in samples if s["flagged"]]
    # a busy machine preempts some samples too: named so, and left out as well
    assert {s["flagged"] for s in flagged} <= {"clock:tsc", "preempted"}
    clocked = [s for s in flagged if s["flagged"] == "clock:tsc"]
    assert clocked and len(clocked) < len(samples), "steps hit some samples, not all"
    for s in clocked:
        # MONOTONIC jumped k × 20 ms that the TSC never saw.
        steps = -s["clock_skew_ns"] / 20e6
        assert round(steps) >= 1
        assert steps == pytest.approx(round(steps), abs=0.1), s
    for s in samples:
        if not s["flagged"]:
            # within the tolerance plus the widths of its two snapshots (libfaketime reads
            # its offset file on every clock call, so they are wide): far below one step
            assert abs(s["clock_skew_ns"]) < 1_000_000
    summary = bench["summary"]
    assert summary["flagged"] == len(flagged)
    assert summary["samples"] == len(samples) - len(flagged)
    text = " ".join(done.stdout.split())  # --verbose's note on the benchmark, unwrapped
    n = len(clocked)
    assert f"add: {n} sample{'s' if n > 1 else ''} excluded: the clocks disagreed" in text
