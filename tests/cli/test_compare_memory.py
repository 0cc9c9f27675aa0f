"""``perflab compare`` on memory (issue 28 §4), through the real entry point: the memory
table and its verdicts, ``--fail-on memory`` (and that the time words never read memory
rows), the CSV and JSON rows, and ``run --fail-on memory`` without a baseline refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_compare import save
from tests.conftest import lognormal_groups, make_bench


def bench(name: str, allocated: float, seed: int):  # type: ignore[no-untyped-def]
    b = make_bench(name, lognormal_groups(1e-6, 6, 20, 0.005, 0.002, seed))
    for p in b.processes[:3]:
        p.alloc_total_bytes, p.alloc_total_blocks = allocated, allocated / 100
        p.alloc_peak_bytes, p.alloc_blocks = allocated / 2, 0.0
    return b


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """ "grows" allocates 3× as much in B; "steady" the same; times unchanged."""
    a = save(tmp_path / "a.json", bench("grows", 4000.0, 1), bench("steady", 800.0, 2))
    b = save(tmp_path / "b.json", bench("grows", 12000.0, 3), bench("steady", 800.0, 4))
    return a, b


def test_the_memory_table_and_the_gate(files, perflab_cli) -> None:
    proc = perflab_cli("compare", *map(str, files), "--fail-on", "memory", env=_wide())
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "memory verdicts" in out and "3 more, 0 less, 0 inconclusive, 3 same" in out
    assert "memory (noise threshold ±2.0% of B/A and ±16 B/op" in out
    assert "allocated/op" in out and "+8.00 kB" in out and "3.00×" in out
    assert "g/grows (allocated/op), g/grows (allocs/op), g/grows (alloc peak/op)" in proc.stderr
    assert "steady (" not in proc.stderr
    time_gate = perflab_cli("compare", *map(str, files), "--fail-on", "slower,faster")
    assert time_gate.returncode == 0, time_gate.stderr  # time words never read memory rows


def test_csv_and_json_hold_every_memory_row(files, perflab_cli, tmp_path: Path) -> None:
    proc = perflab_cli("compare", *map(str, files), "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if "allocated/op" in line]
    assert len(lines) == 2 and any(",more," in line for line in lines)
    out = tmp_path / "c.json"
    assert perflab_cli("compare", *map(str, files), "--json", str(out)).returncode == 0
    document = json.loads(out.read_text())
    rows = [r for r in document["rows"] if r["metric"] == "allocs/op"]
    assert [r["verdict"] for r in rows] == ["more", "same"]
    assert rows[0]["difference"]["value"] == pytest.approx(80.0)
    shown = perflab_cli("show", str(out), env=_wide())
    assert shown.returncode == 0 and "allocs/op" in shown.stdout, shown.stderr


def test_run_fail_on_memory_needs_a_baseline(tmp_path: Path, perflab_cli) -> None:
    bench_file = tmp_path / "bench_x.py"
    bench_file.write_text("import perflab\n\n@perflab.bench\ndef f():\n    return 1\n")
    proc = perflab_cli("run", str(bench_file), "--fail-on", "memory", "--no-history")
    assert proc.returncode == 2
    assert "--fail-on memory compares this run's allocations" in proc.stderr


def _wide() -> dict[str, str]:
    import os

    return {**os.environ, "COLUMNS": "200"}
