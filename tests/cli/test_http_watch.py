"""`perflab http --watch PID` / `--watch-cmd NAME`: the server's CPU and RSS per step, sampled
from /proc by the perflab process (a `perflab serve` process is the watched server)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.analyze.watch import server_figures
from perflab.engines.http.watch import Watcher, resolve
from perflab.engines.memory import read
from perflab.errors import UsageError
from perflab.model import HttpStep
from tests.conftest import popen_perflab

FAST = ["--duration", "1s", "--warmup", "0.2s", "--threads", "1", "--quiet"]


@pytest.fixture
def serve():
    """`perflab serve` in its own process: (address, pid)."""
    proc = popen_perflab(
        ["serve", "--port", "0", "--delay", "1ms"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        yield line.split("http://")[1].split("/")[0], proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_watch_adds_the_servers_cpu_and_rss_per_step(tmp_path: Path, serve, perflab_cli) -> None:
    address, pid = serve
    out = tmp_path / "w.json"
    result = perflab_cli(
        "http",
        f"http://{address}/",
        "--rate",
        "200,400",
        *FAST,
        "--watch",
        str(pid),
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert "server CPU/wall" in result.stdout and "RSS growth over each step" in result.stdout
    steps = json.loads(out.read_text())["benchmarks"][0]["steps"]
    assert len(steps) == 2
    for step in steps:
        (part,) = step["watched"]
        assert part["pid"] == pid and len(part["t_s"]) >= 5  # 100 ms over ≥ 1 s
        assert all(r > 1_000_000 for r in part["rss_bytes"])  # a Python process: > 1 MB
        assert part["cpu_s"] == sorted(part["cpu_s"])  # cumulative
    # the second step starts where the first ended: the timelines chain
    assert steps[1]["watched"][0]["t_s"][0] == steps[0]["watched"][0]["t_s"][-1]
    figures = server_figures(HttpStep.from_dict(steps[1]), completed=100)
    # /proc counts CPU in 10 ms ticks, and a fast server may spend less than one tick on a
    # step's few hundred requests: the figure may be 0, never negative, never over 2 cores
    assert figures is not None and 0 <= figures.cpu_wall < 2.5
    part = steps[1]["watched"][0]
    assert figures.cpu_wall * steps[1]["elapsed_s"] <= part["cpu_s"][-1] - part["cpu_s"][0] + 1e-9
    assert 0 < figures.engine_cpu_wall < 2.5 and figures.engine_cpu_per_request_s > 0
    assert "engine CPU/req" in result.stdout
    csv_out = perflab_cli("show", str(out), "--format", "csv")
    record = next(csv.DictReader(io.StringIO(csv_out.stdout)))
    assert float(record["server_rss_peak_bytes"]) > 1_000_000


def test_watch_cmd_finds_the_server_by_name(tmp_path: Path, serve) -> None:
    _, pid = serve
    name = Path(f"/proc/{pid}/comm").read_text().strip()
    assert any(t.pid == pid for t in resolve([], [name]))


@pytest.mark.parametrize(
    "argv,words",
    [
        (["--watch", "4194305"], "no such process"),
        (["--watch-cmd", "no-such-server-xyz"], "no running process has that name"),
    ],
)
def test_a_target_that_is_not_running_is_one_line_and_exit_2(
    argv, words, serve, perflab_cli
) -> None:
    address, _ = serve
    result = perflab_cli("http", f"http://{address}/", "--rate", "10", *FAST, *argv)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in result.stderr


def test_watcher_cuts_chain_and_survive_an_exited_target() -> None:
    child = subprocess.Popen(["sleep", "30"])
    targets = resolve([os.getpid(), child.pid], [])
    with Watcher(targets, interval_s=0.01) as w:
        sum(i * i for i in range(300_000))  # some CPU of our own
        first = w.cut()
        child.kill()
        child.wait()
        second = w.cut()
    mine = first[0]
    assert mine["cpu_s"][-1] >= mine["cpu_s"][0] and mine["rss_bytes"][0] > 0
    assert second[0]["t_s"][0] == mine["t_s"][-1]
    assert read(child.pid) is None  # gone: its timeline just stops


def test_the_engines_cpu_sits_beside_the_servers_and_a_costlier_engine_is_named() -> None:
    """Deterministic: the server used 0.1 CPU s for 100 responses (1 ms each), the engine
    0.3 s for them (3 ms each): the engine costs more, and the footnotes say so."""
    from perflab.analyze.http import summarize_step
    from perflab.report.http_table import _server_lines

    step = HttpStep(
        offered_rate=100.0,
        connections=4,
        mode="open",
        duration_s=1.1,
        warmup_s=0.1,
        elapsed_s=1.0,
        ok_responses=100,
        requests_sent=100,
        drained=0,
        ok_from_warmup=0,
        drain_s=0.0,
        thread_cpu_s=[0.2, 0.1],
    )
    step.watched = [
        {"pid": 1, "name": "srv", "t_s": [0.0, 1.0], "cpu_s": [0.0, 0.1], "rss_bytes": [10, 10]}
    ]
    summary = summarize_step(step, 0)
    f = summary.server
    assert f is not None and f.cpu_per_request_s == pytest.approx(0.001)
    assert f.engine_cpu_wall == pytest.approx(0.3)
    assert f.engine_cpu_per_request_s == pytest.approx(0.003)
    assert any(
        "load engine spent more CPU per request than the server" in line
        for line in _server_lines([summary])
    )


def test_no_watch_no_figures() -> None:
    step = HttpStep(
        offered_rate=10.0, connections=1, mode="open", duration_s=1.0, warmup_s=0.1, elapsed_s=0.9
    )
    assert server_figures(step) is None
    with pytest.raises(UsageError):
        resolve([-1], [])


def test_watch_of_a_wrapper_follows_its_process_tree(tmp_path: Path) -> None:
    """Issue 28 §3: a shell that forks the server read 0 CPU. A fixed amount of work in
    the child (no timing): the wrapper's tree shows its CPU; `--watch-cmd` of both the
    wrapper's and the child's names keeps the child inside the wrapper's tree, once."""
    import sys
    import time

    flag = tmp_path / "done"
    child = (
        "import sys, time\n"
        "x = 0\n"
        "for i in range(3_000_000): x += i\n"
        f"open({str(flag)!r}, 'w').write('1')\n"
        "time.sleep(60)\n"
    )
    wrapper = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "$0"; true', child])
    try:
        for _ in range(600):
            if flag.exists():
                break
            time.sleep(0.1)
        assert flag.exists()
        targets = resolve([wrapper.pid], [])
        with Watcher(targets, interval_s=0.05) as watcher:
            (timeline,) = watcher.cut()
        assert timeline["pid"] == wrapper.pid and timeline["cpu_s"][-1] > 0.02
        own = read(wrapper.pid)
        assert own is not None and own[0] < 0.02  # the shell itself is idle
        kids = [p for p in resolve([wrapper.pid], []) if p.pid != wrapper.pid]
        assert kids == []
        from perflab.engines.memory import descendants

        (kid,) = descendants(wrapper.pid)  # noqa: F811
        assert [t.pid for t in resolve([wrapper.pid, kid], [])] == [wrapper.pid]
    finally:
        from perflab.engines.memory import descendants

        for pid in descendants(wrapper.pid):
            os.kill(pid, 9)
        wrapper.kill()
        wrapper.wait()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 100, allow_nan=False), min_size=2, max_size=12),
    st.floats(-10, 110, allow_nan=False),
    st.integers(0, 2**32),
)
def test_cpu_interpolation_is_numpys(times: list[float], t: float, seed: int) -> None:
    """The plain-Python interpolation of the CPU samples (numpy stays unloaded in
    `perflab http`) gives numpy.interp's value: linear between samples, clamped."""
    import random

    import numpy as np

    from perflab.analyze.watch import _cpu_at

    ts = sorted(times)
    rng = random.Random(seed)
    cpu = sorted(rng.uniform(0, 50) for _ in ts)
    assert _cpu_at({"t_s": ts, "cpu_s": cpu}, t) == pytest.approx(
        float(np.interp(t, ts, cpu)), rel=1e-9, abs=1e-9
    )
