"""`perflab cmd --max-rss SIZE`: a memory limit gate (issue 28 §4)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.cli.test_cmd import QUIET

#: A command that writes 100 MB (so the pages are resident), then exits.
BIG = f"{sys.executable} -c \"b = b'x' * 100_000_000\""


def test_max_rss_gate_trips_above_the_limit_only(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    over = perflab_cli("cmd", BIG, "--max-rss", "50MB", "--json", str(tmp_path / "a.json"), *QUIET)
    assert over.returncode == 1, over.stderr
    assert "gate: --max-rss 50.0 MB tripped by 1 command(s):" in over.stderr
    under = perflab_cli("cmd", BIG, "--max-rss", "1GiB", "--json", str(tmp_path / "b.json"), *QUIET)
    assert under.returncode == 0, under.stderr
    assert "gate:" not in under.stderr


def test_a_bad_size_is_one_line_and_exit_2(perflab_cli) -> None:  # type: ignore[no-untyped-def]
    bad = perflab_cli("cmd", "true", "--max-rss", "lots")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: --max-rss: 'lots' is not a memory size")
    assert "Traceback" not in bad.stderr
