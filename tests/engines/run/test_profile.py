"""`perflab run --profile`: py-spy's samples of the measured calls, in processes of their own.

A workload with a known hotspot (one function doing 70% of each call's identical loop
iterations) must show it with 60–80% of the samples; the timed samples must come from
processes py-spy never touched. Shares are asserted, never times: both halves slow down
alike on a busy machine.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from perflab import model
from perflab.analyze.profile import figures, total_share
from perflab.engines import profiler

#: the workload: one loop body, 70% of its iterations in hot, 30% in cold
FUNCTIONS = """def hot(n):
    s = 0
    for i in range(n):
        s += i ^ 5
    return s


def cold(n):
    s = 0
    for i in range(n):
        s += i ^ 5
    return s
"""

HOTSPOT = (
    """
import os
import perflab

LOG = os.environ.get("PERFLAB_TEST_PIDLOG")
_seen = set()


def _note():
    # which process made this call, and is py-spy its parent? (once per process)
    if LOG and os.getpid() not in _seen:
        _seen.add(os.getpid())
        with open(f"/proc/{os.getppid()}/comm") as f:
            parent = f.read().strip()
        with open(LOG, "a") as f:
            f.write(f"{os.getpid()} {parent}\\n")
"""
    + FUNCTIONS
    + """

@perflab.bench
def work():
    _note()
    hot(7000)
    cold(3000)
"""
)


def _py_spy() -> profiler.Sampler:
    try:
        return profiler.find_sampler()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"py-spy is not installed ({exc}); make test installs it")


@pytest.fixture(scope="module")
def profiled_run(tmp_path_factory: Any) -> dict[str, Any]:
    """One real `perflab run --profile` of the hotspot workload."""
    import subprocess
    import sys

    _py_spy()
    tmp = tmp_path_factory.mktemp("profile")
    bench = tmp / "hotspot.py"
    bench.write_text(textwrap.dedent(HOTSPOT))
    log = tmp / "pids.log"
    out = tmp / "run.json"
    proc = subprocess.run(
        [sys.executable, "-m", "perflab", "run", str(bench), "--json", str(out), "--profile"]
        + ["--profile-time", "1s", "--budget", "1.5s", "--min-processes", "2"]
        + ["--max-processes", "2", "--process-time", "20ms", "--quiet", "--no-alloc"]
        + ["--no-history"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**__import__("os").environ, "PERFLAB_TEST_PIDLOG": str(log)},
    )
    assert proc.returncode == 0, proc.stderr
    parents = dict(line.split(" ", 1) for line in log.read_text().splitlines())
    return {"results": model.load(str(out)), "parents": parents, "out": out, "proc": proc}


def test_the_hotspot_has_between_60_and_80_percent_of_the_samples(profiled_run) -> None:
    (bench,) = profiled_run["results"].benchmarks
    profile = bench.profile
    assert profile is not None and profile.kind == "time"
    assert profile.total >= 200, profile  # 1 s at 1000 Hz, less on a loaded machine
    assert 0.60 <= total_share(profile, "hot") <= 0.80
    assert 0.20 <= total_share(profile, "cold") <= 0.40
    # only the measured calls: no frame of perflab's loop, setup or imports
    frames = {f for s in profile.stacks for f in s.split(";")}
    assert not any("profile_worker" in f or "importlib" in f for f in frames), frames
    top = figures(profile).top_self(2)
    assert [f.frame.split(" (")[0] for f in top] == ["hot", "cold"]


def test_timed_samples_come_from_processes_py_spy_never_ran(profiled_run) -> None:
    (bench,) = profiled_run["results"].benchmarks
    parents = profiled_run["parents"]
    timed = {p.pid for p in bench.processes if p.samples}
    assert len(timed) == 2 and set(bench.profile.pids).isdisjoint(timed)
    for pid in timed:  # the timed workers' parent is perflab, never py-spy
        assert parents[str(pid)] != "py-spy"
    for pid in bench.profile.pids:  # every profiled process ran under py-spy
        assert parents[str(pid)] == "py-spy"


def test_collapsed_and_speedscope_files_are_written_beside_the_results(profiled_run) -> None:
    folder = profiled_run["out"].with_name("run.profile")
    collapsed = (folder / "work.collapsed").read_text().splitlines()
    (bench,) = profiled_run["results"].benchmarks
    parsed = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in collapsed}
    assert parsed == bench.profile.stacks
    doc = json.loads((folder / "work.speedscope.json").read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    (prof,) = doc["profiles"]
    assert prof["type"] == "sampled" and len(prof["samples"]) == len(prof["weights"])
    names = {f["name"] for f in doc["shared"]["frames"]}
    assert {"work", "hot", "cold"} <= names
    assert sum(prof["weights"]) == pytest.approx(bench.profile.total / 1000)


def test_show_profile_prints_the_top_functions(profiled_run, perflab_cli) -> None:
    done = perflab_cli("show", str(profiled_run["out"]), "--profile", "--format", "csv")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("benchmark,function,self_share,total_share")
    assert lines[1].startswith("work,hot (")


def test_a_folder_not_made_by_perflab_is_refused_before_measuring(
    tmp_path: Path, perflab_cli
) -> None:
    _py_spy()
    bench = tmp_path / "b.py"
    bench.write_text("import perflab\n@perflab.bench\ndef f():\n    pass\n")
    (tmp_path / "r.profile").mkdir()
    (tmp_path / "r.profile" / "mine.txt").write_text("user data")
    done = perflab_cli("run", str(bench), "--json", str(tmp_path / "r.json"), "--profile")
    assert done.returncode == 2
    assert done.stderr.startswith("error: --profile:") and "not made by perflab" in done.stderr
    assert not (tmp_path / "r.json").exists()
    assert (tmp_path / "r.profile" / "mine.txt").read_text() == "user data"


API_SCRIPT = (
    """
import sys
import perflab
from perflab.analyze.profile import total_share
"""
    + FUNCTIONS
    + """

def work():
    hot(7000)
    cold(3000)


if __name__ == "__main__":
    result = perflab.measure(work, budget=0.3, profile=0.6)
    timed = {p.pid for p in result.benchmark.processes}
    print(total_share(result.profile, "hot"), len(result.profile.pids), timed & set(result.profile.pids))
    try:
        perflab.measure(lambda: None, profile=True)
    except Exception as exc:
        print("refused:", exc)
"""
)


def test_measure_profile_samples_fresh_processes(tmp_path: Path) -> None:
    import subprocess
    import sys

    _py_spy()
    script = tmp_path / "api_profile.py"
    script.write_text(textwrap.dedent(API_SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=180, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    share, processes, shared = done.stdout.splitlines()[0].split(" ", 2)
    assert 0.6 <= float(share) <= 0.8 and processes == "2" and shared == "set()"
    assert "refused: measure(processes=…): the call can't be sent" in done.stdout


def test_a_stop_while_profiling_keeps_the_timed_results(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    from tests.conftest import popen_perflab

    _py_spy()
    bench = tmp_path / "hotspot.py"
    bench.write_text(textwrap.dedent(HOTSPOT))
    out = tmp_path / "run.json"
    err = tmp_path / "err.txt"
    with err.open("w") as stderr:
        proc = popen_perflab(
            ["run", str(bench), "--json", str(out), "--profile", "--profile-time", "60s"]
            + ["--budget", "1.5s", "--min-processes", "2", "--max-processes", "2"]
            + ["--process-time", "20ms", "--no-alloc", "--no-history"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PERFLAB_TEST_MARK": str(tmp_path)},
        )
        deadline = time.monotonic() + 120
        while "profiling work" not in err.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    assert code == 143, err.read_text()
    (saved,) = model.load(str(out)).benchmarks
    assert len(saved.processes) == 2 and all(p.samples for p in saved.processes)
    assert "--profile stopped" in err.read_text()
    time.sleep(0.5)  # no profile worker left behind (py-spy's group is killed whole)
    assert _marked(f"PERFLAB_TEST_MARK={tmp_path}".encode()) == []


def _marked(mark: bytes) -> list[int]:
    """The live processes whose environment holds ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
