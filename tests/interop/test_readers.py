"""Peers' files in: pyperf, hyperfine and pytest-benchmark JSON written by the tools
themselves (tests/data/interop/README.md says how) read by show, compare, fit and
``perflab.load``; malformed files get one ``error:`` line and exit code 2."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflab import model
from tests.conftest import debian_tool

DATA = Path(__file__).parent.parent / "data" / "interop"


def _median_s(bench: Any) -> float:
    return float(
        np.median([s.wall_ns / s.iterations * 1e-9 for p in bench.processes for s in p.samples])
    )


def test_pyperf_runs_become_processes_and_values_samples() -> None:
    raw = json.loads((DATA / "pyperf_suite.json").read_text())
    results = model.load(DATA / "pyperf_suite.json")
    assert results.kind == "run" and results.settings["imported"]["format"] == "pyperf"
    assert [b.name for b in results.benchmarks] == ["sort_small", "sum_small"]
    for bench, source in zip(results.benchmarks, raw["benchmarks"]):
        runs = [r for r in source["runs"] if r.get("values")]
        assert len(bench.processes) == len(runs)  # calibration runs are skipped
        values = [v for r in runs for v in r["values"]]
        assert _median_s(bench) == pytest.approx(float(np.median(values)), abs=1e-9)
        assert all(s.iterations == 50 for p in bench.processes for s in p.samples)  # -l 50


def test_a_fresh_pyperf_file_is_shown_with_what_it_lacks(tmp_path: Path, perflab_cli: Any) -> None:
    out = tmp_path / "t.json"
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyperf",
            "timeit",
            "-p",
            "2",
            "-w",
            "1",
            "-n",
            "3",
            "-l",
            "20",
            "-q",
            "-o",
            str(out),
            "sum(range(30))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    shown = perflab_cli("show", "--verbose", str(out))  # --verbose: the processes line
    assert shown.returncode == 0, shown.stderr
    assert "timeit" in shown.stdout and "each pyperf run is a fresh process" in shown.stdout
    assert "2×3 (20)" in shown.stdout  # 2 processes × 3 samples of 20 calls
    row = next(line for line in shown.stdout.splitlines() if line.strip().startswith("timeit"))
    assert " – " in row  # CPU/wall: pyperf keeps no CPU time


def test_hyperfine_times_become_runs(perflab_cli: Any) -> None:
    raw = json.loads((DATA / "hyperfine.json").read_text())
    results = model.load(DATA / "hyperfine.json")
    assert results.kind == "cmd"
    for bench, source in zip(results.benchmarks, raw["results"]):
        assert bench.name == source["command"]
        assert [r.wall_ns * 1e-9 for r in bench.runs] == pytest.approx(source["times"])
        assert all(r.ok for r in bench.runs)
    from perflab.analyze.cmd import summarize_results

    for s, source in zip(summarize_results(results), raw["results"]):
        assert s.median_s == pytest.approx(source["median"], rel=1e-6)
    params = model.load(DATA / "hyperfine_param.json")
    assert [b.params for b in params.benchmarks] == [{"n": "1"}, {"n": "2"}]
    shown = perflab_cli("show", str(DATA / "hyperfine.json"), "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    assert "- hyperfine file" in shown.stdout and "user and system CPU as means" in shown.stdout
    assert "| sleep 0.01 |" in shown.stdout


def test_pytest_benchmark_rounds_are_samples_of_one_process() -> None:
    raw = json.loads((DATA / "pytest_benchmark.json").read_text())
    results = model.load(DATA / "pytest_benchmark.json")
    ids = [b.id for b in results.benchmarks]
    assert ids == [
        "test_sorted",
        "sums/test_sum(n=10)",
        "sums/test_sum(n=100)",
        "sums/test_sum(n=1000)",
        "test_pedantic",
    ]
    for bench, source in zip(results.benchmarks, raw["benchmarks"]):
        assert len(bench.processes) == 1
        assert len(bench.processes[0].samples) == source["stats"]["rounds"]
        # samples hold whole nanoseconds: each round is rounded by at most 0.5 ns
        assert _median_s(bench) == pytest.approx(source["stats"]["median"], abs=1e-9)
    assert results.settings["modes"]["test_pedantic"] == "in-process"
    assert results.benchmarks[-1].processes[0].iterations == 10  # pedantic iterations=10


def test_pytest_benchmark_without_raw_data(perflab_cli: Any, tmp_path: Path) -> None:
    path = str(DATA / "pytest_benchmark_autosave.json")
    shown = perflab_cli("show", path, "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    assert "(no raw data)" in shown.stdout and "| n/a |" in shown.stdout
    assert "| test_sum n=100 | sums |" in shown.stdout
    compared = perflab_cli("compare", path, path)
    assert compared.returncode == 2
    assert compared.stderr.startswith("error: ") and "--benchmark-save-data" in compared.stderr
    assert len(compared.stderr.strip().splitlines()) == 1


def test_compare_two_peer_files_names_what_they_lack(perflab_cli: Any) -> None:
    path = str(DATA / "pyperf_suite.json")
    result = perflab_cli("compare", path, path, "--format", "markdown")
    assert result.returncode == 0, result.stderr
    assert "sort_small" in result.stdout and "pyperf file" in result.stdout
    mixed = perflab_cli(
        "compare",
        str(DATA / "pytest_benchmark.json"),
        str(DATA / "pytest_benchmark.json"),
        "--fail-on",
        "slower",
    )
    assert mixed.returncode == 0, mixed.stderr
    # footnotes wrap at the width, where the paths' length puts them: words, not lines
    assert "within-process bootstrap" in " ".join(mixed.stdout.split())


def test_fit_reads_a_pytest_benchmark_sweep(perflab_cli: Any) -> None:
    result = perflab_cli(
        "fit",
        str(DATA / "pytest_benchmark.json"),
        "--model",
        "complexity",
        "--param",
        "n",
        "--json",
        "-",
    )
    assert result.returncode == 0, result.stderr
    fits = json.loads(result.stdout)
    assert any("test_sum" in json.dumps(f) for f in fits["fits"])


def test_api_load_reads_peer_files() -> None:
    import perflab

    assert len(perflab.load(DATA / "hyperfine_param.json").benchmarks) == 2
    records = perflab.load(DATA / "pyperf_suite.json").to_records()
    assert [r["id"] for r in records] == ["sort_small", "sum_small"]


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (
            '{"version": "1.0", "benchmarks": [{"runs": [{"values": [0.1, -1]}]}]}',
            "not a valid pyperf file: benchmarks[0].runs[0].values[1]: must be a non-negative",
        ),
        (
            '{"results": [{"command": "x", "times": "fast"}]}',
            "not a valid hyperfine file: results[0].times: must be a list",
        ),
        (
            '{"machine_info": {}, "benchmarks": [{"name": "t", "stats": {"median": 1}}]}',
            "not a valid pytest-benchmark file: benchmarks[0].stats: missing key 'rounds'",
        ),
        (
            '{"version": "1.0", "benchmarks": [{"runs": [{"warmups": [[1, 0.1]]}]}]}',
            "no run with values",
        ),
        (
            '{"version": "1.0", "metadata": {"unit": "byte", "name": "m"}, "benchmarks": '
            '[{"runs": [{"values": [10]}]}]}',
            "measures 'byte', not time",
        ),
        ('{"results": [{"command": "x", "times": [0.1], "mean": NaN}]}', "not valid JSON"),
        ('{"results": [{"command": "x", "times": [0.1, 0.2', "not valid JSON"),
    ],
)
def test_malformed_peer_files_get_one_error_line(
    tmp_path: Path, perflab_cli: Any, content: str, words: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    for command in (["show", str(bad)], ["compare", str(bad), str(bad)]):
        result = perflab_cli(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert result.stderr.startswith("error: ") and words in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_from_forces_the_format(perflab_cli: Any) -> None:
    wrong = perflab_cli("show", "--from", "pytest-benchmark", str(DATA / "hyperfine.json"))
    assert wrong.returncode == 2
    assert "not a valid pytest-benchmark file: missing key 'benchmarks'" in wrong.stderr
    right = perflab_cli("show", "--from", "hyperfine", str(DATA / "hyperfine.json"))
    assert right.returncode == 0, right.stderr


def test_names_from_a_file_are_escaped(tmp_path: Path, perflab_cli: Any) -> None:
    evil = tmp_path / "evil.json"
    evil.write_text(
        json.dumps(
            {"results": [{"command": "x\u001b[31mred\u001b[0m", "times": [0.01, 0.011, 0.012]}]}
        )
    )
    result = perflab_cli("show", str(evil))
    assert result.returncode == 0, result.stderr
    assert "\x1b[31m" not in result.stdout
    # a newline in a name stays visible as \x0a in the footnotes that name it too
    lines = tmp_path / "lines.json"
    lines.write_text(
        json.dumps(
            {
                "version": "1.0",
                "benchmarks": [
                    {"metadata": {"name": "a\n<b>"}, "runs": [{"values": [0.1, 0.2, 0.3]}]}
                ],
            }
        )
    )
    result = perflab_cli("show", "--verbose", str(lines))  # --verbose: the processes line
    assert result.returncode == 0, result.stderr
    assert "\n<b>" not in result.stdout and "a\\x0a<b> 1×3 (1)" in result.stdout


def test_cpu_figures_of_perflab_runs_stay(tmp_path: Path) -> None:
    """Only imported samples lose CPU/wall: perflab's own keep it."""
    from perflab.analyze.run.summary import summarize
    from perflab.model import Benchmark, Process, Sample

    own = Benchmark(
        name="f",
        processes=[
            Process(
                index=0,
                pid=1,
                started_s=0.0,
                loop_overhead_ns=1.0,
                samples=[Sample(1, 1000, 900)] * 5,
            )
        ],
    )
    assert summarize(own).cpu_wall == pytest.approx(0.9)
    foreign = Benchmark(
        name="f",
        processes=[Process(index=0, pid=0, started_s=0.0, samples=[Sample(1, 1000, 0)] * 5)],
    )
    assert math.isnan(summarize(foreign).cpu_wall)


def test_hyperfine_without_cpu_times_shows_them_unknown(tmp_path: Path, perflab_cli: Any) -> None:
    """A hyperfine file without ``user``/``system``: CPU is unknown ("–"), never 0 ns."""
    bare = tmp_path / "bare.json"
    bare.write_text(
        json.dumps(
            {
                "results": [
                    {"command": "a", "times": [0.010, 0.011, 0.012]},
                    {"command": "b", "times": [0.020, 0.021]},
                ]
            }
        )
    )
    assert all(
        r.user_ns is None and r.sys_ns is None for b in model.load(bare).benchmarks for r in b.runs
    )
    shown = perflab_cli("show", str(bare), "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if line.startswith("| a |"))
    assert "0 ns" not in row and "0.00" not in row
    assert row.split(" | ")[3:6] == ["–", "–", "–"]  # user, system, total
    assert "user and system CPU as means" not in shown.stdout
    assert "no user or system CPU time" in shown.stdout
    out = tmp_path / "again.json"
    exported = perflab_cli("show", str(bare), "--export", "hyperfine", str(out))
    assert exported.returncode == 0, exported.stderr
    assert "user" not in json.loads(out.read_text())["results"][0]
    assert model.load(out).benchmarks[0].runs[0].user_ns is None


def test_fresh_hyperfine_files(tmp_path: Path, perflab_cli: Any) -> None:
    """Files hyperfine writes now (Debian's hyperfine; `make test` installs it): read,
    shown and compared; with -i, non-zero exits are runs hyperfine kept, not failures."""
    hyperfine = debian_tool("hyperfine")
    made = tmp_path / "hf.json"
    ran = subprocess.run(
        [
            hyperfine,
            "-N",
            "--runs",
            "3",
            "--warmup",
            "1",
            "true",
            "sleep 0.002",
            "--export-json",
            str(made),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    raw = json.loads(made.read_text())["results"]
    results = model.load(made)
    assert [b.name for b in results.benchmarks] == ["true", "sleep 0.002"]
    assert [[r.wall_ns * 1e-9 for r in b.runs] for b in results.benchmarks] == [
        pytest.approx(r["times"]) for r in raw
    ]
    compared = perflab_cli("compare", str(made), str(made), "--fail-on", "slower")
    assert compared.returncode == 0, compared.stderr
    ignored = tmp_path / "ignored.json"
    ran = subprocess.run(
        [hyperfine, "-N", "--runs", "3", "-i", "false", "--export-json", str(ignored)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    [bench] = model.load(ignored).benchmarks
    assert [(r.exit_code, r.ok) for r in bench.runs] == [(1, True)] * 3
    shown = perflab_cli("show", str(ignored), "--format", "markdown")
    assert shown.returncode == 0, shown.stderr
    assert "| false | 3 |" in shown.stdout and "failed" not in shown.stdout


def test_gzip_compressed_pyperf_files(tmp_path: Path, perflab_cli: Any) -> None:
    """pyperf writes gzip-compressed JSON for -o FILE.json.gz; decompression is bounded
    (a gzip bomb is one error line)."""
    out = tmp_path / "t.json.gz"
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyperf",
            "timeit",
            "-p",
            "2",
            "-w",
            "1",
            "-n",
            "3",
            "-l",
            "10",
            "-q",
            "-o",
            str(out),
            "sum(range(30))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    shown = perflab_cli("show", "--verbose", str(out))  # --verbose: the processes line
    assert shown.returncode == 0, shown.stderr
    assert "2×3 (10)" in shown.stdout
    import gzip

    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as sink:
        chunk = b" " * 2**20
        for _ in range(300):  # 300 MiB of blanks, ~300 KiB compressed
            sink.write(chunk)
    result = perflab_cli("show", str(bomb))
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: ") and "MiB" in result.stderr, result.stderr


def test_a_named_format_applies_to_that_load_only() -> None:
    """``model.load(path, format)`` reads the file as the named peer's format, and a
    later load without one detects again (no state is left behind)."""
    from perflab.errors import ResultsFileError

    with pytest.raises(ResultsFileError, match="not a valid pytest-benchmark file"):
        model.load(DATA / "hyperfine.json", "pytest-benchmark")
    assert model.load(DATA / "hyperfine.json", "hyperfine").kind == "cmd"
    assert model.load(DATA / "pyperf_suite.json").settings["imported"]["format"] == "pyperf"
