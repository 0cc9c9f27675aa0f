"""`perflab run --max-rss SIZE`: a memory limit gate over each benchmark's worker RSS
peak (issue 28 §4). Memory, not speed: the benchmark writes 200 MB, the limit is 100 MB."""

from __future__ import annotations

import json
from pathlib import Path

BENCH = """
import perflab

@perflab.bench
def big():
    return len(b"x" * 200_000_000)

@perflab.bench
def small():
    return 1 + 1
"""
FAST = ["--quick", "--quiet", "--no-history"]


def test_max_rss_names_the_benchmark_above_the_limit(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    file = tmp_path / "bench_mem.py"
    file.write_text(BENCH)
    out = tmp_path / "a.json"
    over = perflab_cli("run", str(file), "--max-rss", "100MB", "--json", str(out), *FAST)
    assert over.returncode == 1, over.stderr
    [line] = [x for x in over.stderr.splitlines() if x.startswith("gate:")]
    assert line.startswith("gate: --max-rss 100 MB tripped by 1 benchmark(s): big (")
    assert "small" not in line
    # --max-rss turned the RSS reading on: every process has its peak in the file
    document = json.loads(out.read_text())
    peaks = [p["rss_peak_bytes"] for b in document["benchmarks"] for p in b["processes"]]
    assert peaks and all(peaks)
    roomy = perflab_cli(
        "run", str(file), "--max-rss", "2GiB", "--json", str(tmp_path / "b.json"), *FAST
    )
    assert roomy.returncode == 0, roomy.stderr
    assert "gate:" not in roomy.stderr


def test_bad_max_rss_is_one_line_and_exit_2(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    file = tmp_path / "bench_mem.py"
    file.write_text(BENCH)
    bad = perflab_cli("run", str(file), "--max-rss", "abc")
    assert bad.returncode == 2
    assert bad.stderr == (
        "error: --max-rss: 'abc' is not a memory size above zero; "
        "write e.g. 200MB, 1.5GiB or 512kB\n"
    )
    counted = perflab_cli("run", str(file), "--max-rss", "1GB", "--count", "instructions")
    assert counted.returncode == 2
    assert counted.stderr.startswith("error: --max-rss reads a timed worker's RSS")
