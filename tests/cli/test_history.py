"""`perflab history`, automatic recording and `compare --to` through the real entry point.

Two real `perflab run`s with tiny budgets feed the history (their figures are
not asserted, only what was recorded); the rest uses synthetic runs.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.history.store import Store
from tests.cli.test_cmd import one_error_line
from tests.history.helpers import add, results

FAST = [
    "--budget",
    "0.5s",
    "--min-processes",
    "2",
    "--process-time",
    "20ms",
    "--quiet",
    "--no-alloc",
]
BENCH = "import perflab\n@perflab.bench(group='g')\ndef total():\n    return sum(range(50))\n"


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Two real runs recorded into FOLDER/h.sqlite (the second tagged), in a git repo; made
    once for the module's tests, which only read the database (a test that records more
    runs records them into a copy)."""
    tmp_path = tmp_path_factory.mktemp("two_runs")
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(tmp_path)], check=True)
    bench = tmp_path / "bench.py"
    bench.write_text(BENCH)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(tmp_path)]
    subprocess.run([*git, "add", "bench.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "bench"], check=True)
    db = tmp_path / "h.sqlite"
    for i, extra in enumerate([[], ["--tag", "nightly"]]):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "perflab",
                "run",
                "bench.py",
                "--json",
                f"r{i}.json",
                "--history",
                str(db),
                *FAST,
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert "warning" not in proc.stderr
    return tmp_path, db


def test_runs_are_recorded_with_git_state_and_listed_newest_first(two_runs, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    folder, db = two_runs
    with Store(db) as store:
        runs = store.runs()
        assert [r.id for r in runs] == [2, 1]
        assert runs[0].git_branch == "trunk" and runs[0].git_dirty is False
        assert len(runs[0].git_commit or "") == 40 and runs[0].tags == ("nightly",)
        assert runs[0].results_path == str(folder / "r1.json")
        stored = json.loads(store.document(2))
        assert stored == {**json.loads((folder / "r1.json").read_text())}
    proc = perflab_cli("history", "--history", str(db), "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("run,kind,started,commit,branch") and len(lines) == 3
    assert lines[1].startswith("2,run,") and "nightly" in lines[1]
    tagged = perflab_cli("history", "--history", str(db), "--tag", "nightly", "--format", "csv")
    assert len(tagged.stdout.splitlines()) == 2


def test_trend_table_chart_and_compare_to_last(two_runs, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    folder, db = two_runs
    proc = perflab_cli(
        "history",
        "g/*",
        "--history",
        str(db),
        "--chart",
        "trend.png",
        "--format",
        "markdown",
        cwd=folder,
    )
    assert proc.returncode == 0, proc.stderr
    assert "### g/total: median time per op, 2 runs in commit order" in proc.stdout
    assert (folder / "trend.png").read_bytes().startswith(b"\x89PNG")
    cmp = perflab_cli(
        "compare", "--to", "last", "--history", str(db), "--format", "markdown", cwd=folder
    )
    assert cmp.returncode == 0, cmp.stderr
    assert "B = history #2" in cmp.stdout and "A = history #1" in cmp.stdout
    # a file given as B: its own run is skipped, so A is the run before it
    cmp = perflab_cli(
        "compare",
        "--to",
        "last",
        "r1.json",
        "--history",
        str(db),
        "--threshold",
        "auto",
        "--format",
        "markdown",
        cwd=folder,
    )
    assert cmp.returncode == 0, cmp.stderr
    assert "A = history #1" in cmp.stdout
    assert "threshold auto: fewer than 3 earlier runs" in cmp.stdout
    by_ref = perflab_cli(
        "compare", "--to", "HEAD", "r0.json", "--history", str(db), "--format", "csv", cwd=folder
    )
    assert by_ref.returncode == 0, by_ref.stderr
    copy = folder / "h-trend.sqlite"  # this run is recorded: not into the module's database
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    run = perflab_cli(
        "run",
        "bench.py",
        "--history",
        str(copy),
        *FAST,
        "--compare-to",
        "1",
        "--threshold",
        "auto",
        "--format",
        "markdown",
        cwd=folder,
    )
    assert run.returncode == 0, run.stderr
    assert "against A = history #1" in run.stdout and "threshold auto" in run.stdout


def test_history_off_and_a_broken_database_never_lose_the_results(
    tmp_path: Path, perflab_cli
) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(BENCH)
    off = perflab_cli(
        "run",
        str(bench),
        "--json",
        str(tmp_path / "a.json"),
        *FAST,
        env={**os.environ, "PERFLAB_HISTORY": "off"},
    )
    assert off.returncode == 0 and (tmp_path / "a.json").exists()
    skip = perflab_cli(
        "run",
        str(bench),
        "--json",
        str(tmp_path / "b.json"),
        *FAST,
        "--no-history",
        "--history",
        str(tmp_path / "never.sqlite"),
    )
    assert skip.returncode == 0 and not (tmp_path / "never.sqlite").exists()
    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database " * 200)
    proc = perflab_cli(
        "run", str(bench), "--json", str(tmp_path / "c.json"), *FAST, "--history", str(broken)
    )
    # a file that isn't perflab's database is refused before anything is measured (issue
    # 33: perflab never writes into a file it did not create), so nothing can be lost
    assert proc.returncode == 2, proc.stderr
    assert "not a perflab history database" in one_error_line(proc.stderr)
    assert not (tmp_path / "c.json").exists()
    assert broken.read_text() == "not a database " * 200
    listed = perflab_cli("history", "--history", str(broken))
    assert listed.returncode == 2
    assert "not a perflab history database" in one_error_line(listed.stderr)


def test_a_locked_database_is_a_warning_after_the_busy_timeout(tmp_path: Path, perflab_cli) -> None:
    db = tmp_path / "h.sqlite"
    Store(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        bench = tmp_path / "bench.py"
        bench.write_text(BENCH)
        proc = perflab_cli(
            "run", str(bench), "--json", str(tmp_path / "r.json"), *FAST, "--history", str(db)
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 0 and (tmp_path / "r.json").exists()
    assert "warning: not recorded in history" in proc.stderr and "locked" in proc.stderr


def test_import_export_round_trip_and_bad_input(tmp_path: Path, perflab_cli) -> None:
    from perflab import model

    files = [
        model.save(
            results({"a": 1e-6 * (1 + i / 10)}, seed=i, created=f"2026-01-0{i + 1}T00:00:00+00:00"),
            tmp_path / f"{i}.json",
        )
        for i in range(3)
    ]
    (tmp_path / "junk.json").write_text("{}")
    db = str(tmp_path / "h.sqlite")
    proc = perflab_cli(
        "history",
        "--history",
        db,
        "--import",
        *map(str, files),
        str(tmp_path / "junk.json"),
        "--import-tag",
        "old",
    )
    assert proc.returncode == 2
    assert proc.stderr.count("recorded ") == 3 and "junk.json" in one_error_line(proc.stderr)
    out = tmp_path / "out"
    assert perflab_cli("history", "--history", db, "--export", str(out)).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["run-1.json", "run-2.json", "run-3.json"]
    again = model.load(out / "run-3.json")
    assert [b.id for b in again.benchmarks] == ["g/a"]
    trend = perflab_cli("history", "a", "--history", db, "--format", "csv")
    values = [float(line.split(",")[10]) for line in trend.stdout.splitlines()[1:]]
    assert values == pytest.approx([1e-6, 1.1e-6, 1.2e-6], rel=0.02)
    for args, message in [
        (["nothing-matches"], "no recorded benchmark matches"),
        (["--chart", "x.png"], "give BENCHMARK"),
        (["--limit", "-1"], "--limit"),
    ]:
        bad = perflab_cli("history", "--history", db, *args)
        assert bad.returncode == 2 and message in one_error_line(bad.stderr)
    missing = perflab_cli("compare", "--to", "last", "--history", str(tmp_path / "none.sqlite"))
    assert missing.returncode == 2 and "no such database" in one_error_line(missing.stderr)
    one = perflab_cli("compare", str(files[0]))
    assert one.returncode == 2 and "give two results files" in one_error_line(one.stderr)


def test_a_benchmark_named_like_markup_is_escaped_in_the_trend(tmp_path: Path, perflab_cli) -> None:
    with Store(tmp_path / "h.sqlite") as store:
        add(store, results({"<script>alert(1)</script>|x": 1e-6}))
    proc = perflab_cli(
        "history", "script", "--history", str(tmp_path / "h.sqlite"), "--format", "markdown"
    )
    assert proc.returncode == 0, proc.stderr
    assert "&lt;script>alert(1)&lt;/script>\\|x" in proc.stdout


def test_since_and_until_are_checked_dates_in_utc() -> None:
    # "--since yesterday" and "--since 2026-13-45" listed no run, exit 0
    from perflab.commands.history import parse_date
    from perflab.errors import UsageError

    for bad in ("yesterday", "2026-13-45", "11/23/2026"):
        with pytest.raises(UsageError, match="--since .* is not a date; write it in ISO 8601"):
            parse_date(bad, "--since")
    assert parse_date("2026-11-01", "--until") == "2026-11-01"  # the whole day
    assert parse_date("2026-11-01T14:30+02:00", "--since") == "2026-11-01T12:30:00+00:00"
    assert parse_date("2026-11-01T14:30", "--since") == "2026-11-01T14:30:00+00:00"
    assert parse_date(None, "--since") is None
