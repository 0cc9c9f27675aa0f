"""Peers' formats out (``perflab show FILE --export FORMAT OUT``): github-action-benchmark
JSON, hyperfine JSON, and the HdrHistogram ``.hgrm`` percentile distribution; perflab's
encoded histograms decoded and merged by the Python ``hdrhistogram`` package (``hdrh``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perflab import _core, model
from perflab.analyze.hdr import HdrCounts, decode_histogram

DATA = Path(__file__).parent.parent / "data" / "interop"


@pytest.fixture(scope="module")
def http_results(tmp_path_factory: Any) -> Path:
    """Two open-loop steps against `perflab serve` (1 ms delay) with a 2 s timeout."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("http") / "h.json"
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as server:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "perflab",
                "http",
                f"http://{server.address}/",
                "--rate",
                "100:200:100",
                "--duration",
                "0.6s",
                "--warmup",
                "0.1s",
                "--threads",
                "1",
                "--timeout",
                "2s",
                "--quiet",
                "--json",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    return out


def _merged(steps: list[Any]) -> HdrCounts:
    values: dict[int, int] = {}
    for step in steps:
        hist = decode_histogram(step.latency.encoded)
        for v, c in zip(hist.values.tolist(), hist.counts.tolist()):
            values[v] = values.get(v, 0) + c
    keys = sorted(values)
    return HdrCounts(np.array(keys, np.int64), np.array([values[k] for k in keys], np.int64))


def test_hdrhistogram_package_decodes_and_merges_perflab_histograms(http_results: Path) -> None:
    from hdrh.histogram import HdrHistogram

    steps = model.load(http_results).benchmarks[0].steps
    assert len(steps) == 2 and all(s.latency.count > 20 for s in steps)
    merged = HdrHistogram.decode(steps[0].latency.encoded)
    # the header's highest trackable value is the run's --timeout (2 s in µs)
    assert merged.highest_trackable_value == 2_000_000
    for step in steps[1:]:
        assert HdrHistogram.decode(step.latency.encoded).highest_trackable_value == 2_000_000
        merged.decode_and_add(step.latency.encoded)  # IndexError before the header fix
    ours = _merged(steps)
    assert merged.get_total_count() == ours.total == sum(s.latency.count for s in steps)
    for q in (50, 90, 99, 99.9, 100):
        # hdrh's rank is int(q·N + 0.5); perflab's (Java's, Rust's) is ceil(q·N)
        rank = max(1, int(q / 100 * ours.total + 0.5))
        assert merged.get_value_at_percentile(q) == ours.at_rank(np.array([rank]))[0]
        assert (
            ours.quantile(q / 100)
            == ours.at_rank(np.array([max(1, math.ceil(q / 100 * ours.total))]))[0]
        )
    assert merged.get_max_value() == ours.values[-1]


def _exported(perflab_cli: Any, results: Path, fmt: str, out: Path) -> list[Any]:
    """Run ``show RESULTS --export FMT OUT``; the steps of the http results."""
    result = perflab_cli("show", str(results), "--export", fmt, str(out))
    assert result.returncode == 0, result.stderr
    return model.load(results).benchmarks[0].steps


def _rows(text: str) -> list[tuple[float, float, int]]:
    rows = []
    for line in text.splitlines()[2:]:
        if line.startswith("#"):
            break
        fields = line.split()
        rows.append((float(fields[0]), float(fields[1]), int(fields[2])))
    return rows


def test_hgrm_is_hdrhistograms_percentile_distribution(
    http_results: Path, tmp_path: Path, perflab_cli: Any
) -> None:
    steps = _exported(perflab_cli, http_results, "hgrm", tmp_path / "lat.hgrm")
    for i, step in enumerate(steps):
        text = (tmp_path / f"lat-step{i + 1}.hgrm").read_text()
        assert text.startswith("       Value     Percentile TotalCount 1/(1-Percentile)\n\n")
        hist = decode_histogram(step.latency.encoded)
        rows = _rows(text)
        # the levels HdrHistogram iterates with 5 ticks per half distance (as wrk2 prints)
        levels = [level for _, level, _ in rows]
        assert levels[:8] == pytest.approx([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.55, 0.6])
        assert levels[-1] == 1.0 and rows[-1][2] == hist.total
        cumulative = np.cumsum(hist.counts)
        for value_ms, level, count in rows[:-1]:
            rank = max(1, math.ceil(round(level * hist.total, 9)))
            expected = hist.at_rank(np.array([rank]))[0]
            assert value_ms == pytest.approx(expected / 1000, abs=5e-4)
            assert count == cumulative[np.searchsorted(hist.values, expected)]
        assert f"Total count    = {hist.total:12d}]" in text
        assert "#[Buckets =           11, SubBuckets     =         2048]" in text
        assert "ceil(p·N)" in text.splitlines()[-1]


def test_github_action_benchmark_custom_smaller_is_better(
    tmp_path: Path, http_results: Path, perflab_cli: Any
) -> None:
    out = tmp_path / "gab.json"
    run_file = DATA / "pytest_benchmark.json"
    result = perflab_cli("show", str(run_file), "--export", "github-action-benchmark", str(out))
    assert result.returncode == 0, result.stderr
    entries = json.loads(out.read_text())
    assert isinstance(entries, list) and len(entries) == 5
    for entry in entries:  # the action's customSmallerIsBetter: name, unit, value (+ range, extra)
        assert set(entry) == {"name", "unit", "value", "range", "extra"}
        assert isinstance(entry["name"], str) and isinstance(entry["value"], float)
        assert entry["unit"] == "ns/op" and entry["value"] > 0
        assert entry["range"].startswith("± ") and "95% CI" in entry["extra"]
        assert "e+" not in entry["range"] + entry["extra"]  # plain numbers, as in the tables
    raw = json.loads(run_file.read_text())
    by_name = {e["name"]: e["value"] for e in entries}
    assert by_name["sums/test_sum(n=100)"] == pytest.approx(
        raw["benchmarks"][2]["stats"]["median"] * 1e9, abs=1
    )
    # again onto the same file: perflab replaces its own export
    assert (
        perflab_cli(
            "show", str(run_file), "--export", "github-action-benchmark", str(out)
        ).returncode
        == 0
    )
    http_out = tmp_path / "gab-http.json"
    assert (
        perflab_cli(
            "show", str(http_results), "--export", "github-action-benchmark", str(http_out)
        ).returncode
        == 0
    )
    names = [e["name"] for e in json.loads(http_out.read_text())]
    assert len(names) == 4 and names[0].endswith("@ 100 req/s latency p50")


def test_hyperfine_export_round_trips(tmp_path: Path, perflab_cli: Any) -> None:
    out = tmp_path / "hf.json"
    result = perflab_cli("show", str(DATA / "hyperfine.json"), "--export", "hyperfine", str(out))
    assert result.returncode == 0, result.stderr
    original = json.loads((DATA / "hyperfine.json").read_text())["results"]
    again = json.loads(out.read_text())["results"]
    for a, b in zip(original, again):
        assert b["command"] == a["command"] and b["times"] == pytest.approx(a["times"])
        assert b["median"] == pytest.approx(a["median"])
    reread = model.load(out)
    assert [len(b.runs) for b in reread.benchmarks] == [5, 5]
    # and the file perflab cmd writes for hyperfine's scripts reads back too
    made = tmp_path / "cmd-hf.json"
    ran = perflab_cli(
        "cmd",
        "-r",
        "3",
        "true",
        "--quiet",
        "--json",
        str(tmp_path / "c.json"),
        "--export-json",
        str(made),
    )
    assert ran.returncode == 0, ran.stderr
    shown = perflab_cli("show", str(made))
    assert shown.returncode == 0, shown.stderr and "true" in shown.stdout


def test_exports_refuse_what_they_cannot_write(
    tmp_path: Path, http_results: Path, perflab_cli: Any
) -> None:
    foreign = tmp_path / "notes.json"
    foreign.write_text('["my own file"]\n')
    result = perflab_cli(
        "show", str(DATA / "hyperfine.json"), "--export", "github-action-benchmark", str(foreign)
    )
    assert result.returncode == 2 and "was not written by perflab" in result.stderr
    assert foreign.read_text() == '["my own file"]\n'
    wrong = perflab_cli(
        "show", str(DATA / "hyperfine.json"), "--export", "hgrm", str(tmp_path / "x.hgrm")
    )
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("error: --export hgrm: needs a http results file")
    unknown = perflab_cli("show", str(http_results), "--export", "criterion", str(tmp_path / "x"))
    assert unknown.returncode == 2 and "unknown format" in unknown.stderr


def test_hlog_is_read_by_the_hdrhistogram_log_reader(
    http_results: Path, tmp_path: Path, perflab_cli: Any
) -> None:
    from hdrh.log import HistogramLogReader

    out = tmp_path / "lat.hlog"
    steps = _exported(perflab_cli, http_results, "hlog", out)
    reader = HistogramLogReader(str(out), None)
    read = []
    while (hist := reader.get_next_interval_histogram()) is not None:
        read.append(hist)
    assert [h.get_tag() for h in read] == ["step1", "step2"]
    assert [h.get_total_count() for h in read] == [s.latency.count for s in steps]
    assert all(h.highest_trackable_value == 2_000_000 for h in read)
    again = HistogramLogReader(str(out), None)
    merged = again.add_next_interval_histogram()
    assert again.add_next_interval_histogram(merged) is merged  # step 2 merged into step 1
    assert merged.get_total_count() == sum(s.latency.count for s in steps)
    first, second = (
        float(line.split(",")[1])
        for line in out.read_text().splitlines()
        if line.startswith("Tag=")
    )
    assert first == pytest.approx(0.1) and second > first  # after the first step's warmup


def test_api_records_of_an_http_file(http_results: Path) -> None:
    import perflab

    records = perflab.load(http_results).to_records()
    assert len(records) == 2 and [r["offered_rate"] for r in records] == [100, 200]
