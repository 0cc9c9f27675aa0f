"""The real pytest-benchmark and pytest-xdist beside perflab's plugin.

Both are installed by ``make`` into folders beside the venv (``.venv/peers/``, see the
Makefile: with pytest-benchmark in the venv itself, perflab's own ``benchmark`` fixture
would step aside and its compatibility tests would test nothing). Each test here puts a
folder on the PYTHONPATH of a child pytest, so the plugin is loaded there only.

- examples/pytest_project runs unchanged under the real pytest-benchmark (its
  pytest-benchmark-style tests are written as that plugin's docs write them), perflab
  measures the ``perflab_bench`` tests beside it and leaves pytest-benchmark's options
  and files alone; the files pytest-benchmark writes are read by show, compare and fit.
- with pytest-xdist distributing tests (``-n 2``), perflab times nothing and says so in
  one line; ``-n 0`` measures.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

PEERS = ROOT / ".venv" / "peers"


def _child_pytest(cwd: Path, peer: str, *args: str) -> subprocess.CompletedProcess[str]:
    folder = PEERS / peer
    assert folder.is_dir(), f"{folder} is missing: `make test` (the .stamps/peers rule) installs it"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_example_project_under_the_real_pytest_benchmark(tmp_path: Path, perflab_cli: Any) -> None:
    for path in (ROOT / "examples" / "pytest_project").glob("*.py"):
        shutil.copy(path, tmp_path)
    run = _child_pytest(
        tmp_path,
        "pytest-benchmark",
        "--benchmark-max-time=0.002",
        "--benchmark-min-rounds=5",
        "--benchmark-json=pb.json",
        "--perflab-budget=0.2s",
        "--perflab-json=perflab.json",
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "11 passed" in run.stdout
    made = json.loads((tmp_path / "pb.json").read_text())  # pytest-benchmark's, untouched
    assert "machine_info" in made and made["version"].startswith("5.")
    assert {b["name"] for b in made["benchmarks"]} == {
        "test_my_stuff",
        "test_my_stuff_different_arg",
        "test_my_stuff_marked",
        "test_with_setup",
        "test_group_attribute",
        "test_top_k[1]",
        "test_top_k[5]",
    }
    assert all(len(b["stats"]["data"]) >= 5 for b in made["benchmarks"])
    ours = json.loads((tmp_path / "perflab.json").read_text())
    assert {b["name"] for b in ours["benchmarks"]} == {  # only perflab_bench's tests
        "test_words",
        "test_word_counts",
        "test_top_words_pedantic",
    }
    pb = str(tmp_path / "pb.json")
    shown = perflab_cli("show", pb, "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    assert "pytest-benchmark file" in shown.stdout and "| test_with_setup |" in shown.stdout
    compared = perflab_cli("compare", pb, pb, "--fail-on", "slower")
    assert compared.returncode == 0, compared.stderr
    assert "0 slower" in compared.stdout
    # moving to perflab: the same suite without pytest-benchmark, compared with its file
    moved = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "test_pytest_benchmark_style.py",
            "--perflab-budget=0.2s",
            "--perflab-compare=pb.json",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert moved.returncode == 0, moved.stdout[-3000:] + moved.stderr[-3000:]
    only = [line for line in moved.stdout.splitlines() if line.strip().startswith("only in")]
    assert len(only) == 2 and all(line.rstrip().endswith("none") for line in only), only


def test_pytest_benchmark_autosave_file_is_shown_without_cis(
    tmp_path: Path, perflab_cli: Any
) -> None:
    (tmp_path / "test_sum.py").write_text(
        "def test_sum(benchmark):\n    assert benchmark(sum, range(50)) == 1225\n"
    )
    run = _child_pytest(
        tmp_path, "pytest-benchmark", "--benchmark-max-time=0.002", "--benchmark-autosave", "-q"
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [saved] = (tmp_path / ".benchmarks").rglob("0001_*.json")
    shown = perflab_cli("show", str(saved), "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    assert "(no raw data)" in shown.stdout and "| test_sum |" in shown.stdout


def test_xdist_disables_timing_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "def test_a(perflab_bench):\n    assert perflab_bench(abs, -2) == 2\n\n"
        "def test_b(perflab_bench):\n    assert perflab_bench(abs, -3) == 3\n"
    )
    run = _child_pytest(tmp_path, "xdist", "-n", "2", "--perflab-json=x.json")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "2 passed" in run.stdout
    notices = [line for line in run.stdout.splitlines() if line.startswith("perflab:")]
    assert len(notices) == 1 and "not timed" in notices[0], run.stdout
    assert (
        not (tmp_path / "x.json").exists()
        or not json.loads((tmp_path / "x.json").read_text())["benchmarks"]
    )
    serial = _child_pytest(
        tmp_path, "xdist", "-n", "0", "--perflab-budget=0.2s", "--perflab-json=x.json"
    )
    assert serial.returncode == 0, serial.stdout[-3000:] + serial.stderr[-3000:]
    assert len(json.loads((tmp_path / "x.json").read_text())["benchmarks"]) == 2
