"""`perflab http --watch PID --slo rss=…` (issue 28 §4): a memory limit on the watched
server per step. A `perflab serve` process holds some MB of RSS whatever the load, so a
1 kB limit is always missed and a 100 GB one always met: no timing is judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflab.analyze.http_slo import slo_misses, slo_text
from perflab.analyze.watch import ServerFigures
from tests.cli.test_http_watch import FAST, serve  # noqa: F401  (the fixture)


def test_rss_over_the_slo_trips_the_gate(tmp_path: Path, serve, perflab_cli) -> None:  # noqa: F811
    address, pid = serve
    out = tmp_path / "w.json"
    args = ["http", f"http://{address}/", "--rate", "100", *FAST, "--watch", str(pid)]
    missed = perflab_cli(*args, "--slo", "rss=1kB", "--json", str(out))
    assert missed.returncode == 1, missed.stderr
    assert "gate: --fail-on slo tripped by 1 step(s)" in missed.stderr
    assert json.loads(out.read_text())["settings"]["slo"] == {"rss": 1000.0}
    met = perflab_cli(*args, "--slo", "rss=100GB,p99=10s")
    assert met.returncode == 0, met.stderr


def test_rss_slo_needs_a_watched_process(perflab_cli) -> None:
    proc = perflab_cli("http", "http://127.0.0.1:9/", "--rate", "10", "--slo", "rss=200MB")
    assert proc.returncode == 2
    assert "--slo rss=… bounds the watched server's memory" in proc.stderr
    bad = perflab_cli(
        "http", "http://127.0.0.1:9/", "--rate", "10", "--slo", "rss=lots", "--watch", "1"
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: --slo rss")


class _Step:
    """What slo_misses reads of a step."""

    error_fraction = 0.0
    latency_s = {"p99": 0.001}

    def __init__(self, rss: int | None) -> None:
        self.server = None if rss is None else ServerFigures(1, 0.1, 1e-4, rss, 0)


@pytest.mark.parametrize(
    "rss, unmeasured, expected",
    [
        (300_000_000, True, ["RSS over the 200 MB SLO"]),
        (100_000_000, True, []),
        (None, True, ["RSS over the 200 MB SLO"]),
        (None, False, []),
    ],
)
def test_slo_misses_on_rss(rss, unmeasured, expected) -> None:
    assert slo_misses(_Step(rss), {"rss": 200e6}, unmeasured) == expected  # type: ignore[arg-type]
    assert slo_text({"p99": 0.01, "rss": 200e6}) == "p99 ≤ 10 ms, RSS ≤ 200 MB"
