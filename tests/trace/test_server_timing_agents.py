"""Server-Timing in distributed runs (``--agents``) and in the CSV records.

A stdlib HTTP/1.1 server (keep-alive) answers with ``Server-Timing: db;dur=…,
render;dur=…, app;dur=…``, the values cycling by request, every 7th header carrying a
malformed metric. Two load agents (driven directly, as Ray would run them) each keep
their own figures; the merged step's histograms must be their exact bucket-by-bucket
merge. The CSV records of such a run, and of ``perflab http --csv`` on one machine,
carry the breakdown, and every column they have is named in the docs. About 2 s.
"""

from __future__ import annotations

import csv
import http.server
import itertools
import re
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from perflab import _core, cli, model
from perflab.engines.http.cluster.merge import merge_server_timing, merge_steps
from perflab.engines.http.steps import step_from_raw
from perflab.model import Histogram, ServerTiming
from perflab.model.cluster import AgentInfo, AgentShare
from tests.conftest import ROOT, agents_results


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the engine expects
    served = itertools.count()

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        n = next(self.served)
        header = f"db;dur={n % 40 / 10}, render;dur={n % 7 / 10}, app;dur={n % 40 / 10 + 1}"
        if n % 7 == 3:
            header += ", late;dur=soon"  # malformed: counted, the rest kept
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.send_header("Server-Timing", header)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Any:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _buckets(h: Histogram) -> Counter[float]:
    d = _core.hdr_decode(h.encoded)
    return Counter(dict(zip(d["values"], d["counts"])))


def _documented_csv_columns() -> set[str]:
    """Every snake_case name on the pages that describe ``http``'s CSV records."""
    return {
        w
        for page in ("http.md", "distributed.md", "trace.md")
        for w in re.findall(r"[a-z][a-z0-9_]*", (ROOT / "docs" / page).read_text())
    }


def test_agents_keep_their_server_timing_and_the_merge_is_exact(
    url: str, tmp_path: Path, load_agents: Any
) -> None:
    steps = [step_from_raw(a["raw"]["steps"][0]) for a in load_agents(url, 2, 300.0, 0.5)]
    timings = [s.server_timing for s in steps]
    assert all(t is not None and t.responses > 0 and t.malformed > 0 for t in timings)
    merged = merge_steps(steps)
    m = merged.server_timing
    assert m is not None and set(m.metrics) == {"db", "render", "app"}
    assert m.responses == sum(t.responses for t in timings)
    assert m.malformed == sum(t.malformed for t in timings)
    pairs = [(m.metrics[n], [t.metrics[n] for t in timings]) for n in m.metrics]
    pairs += [
        (m.app_total, [t.app_total for t in timings]),
        (m.outside_app, [t.outside_app for t in timings]),
    ]
    for whole, parts in pairs:  # bucket by bucket: one recorder fed every response
        assert whole.count == sum(p.count for p in parts) > 0
        assert _buckets(whole) == sum((_buckets(p) for p in parts), Counter())
    assert merge_server_timing([None, None]) is None
    only = ServerTiming(responses=3, metrics={"x": m.metrics["db"]})
    assert merge_server_timing([None, only]).metrics["x"].count == m.metrics["db"].count

    # The results file keeps both levels; the CSV records carry both breakdowns.
    merged.agents = [AgentShare(k, 0, 0, 0.2, 0.01, step=s) for k, s in enumerate(steps)]
    results = agents_results(
        url, merged, [AgentInfo(k, f"h{k}", same_clock=True) for k in range(2)]
    )
    model.save(results, tmp_path / "r.json", {})
    back = model.load(tmp_path / "r.json")
    step = back.benchmarks[0].steps[0]
    assert step.server_timing.metrics["db"].p99_us == m.metrics["db"].p99_us
    assert [a.step.server_timing.responses for a in step.agents] == [t.responses for t in timings]
    from perflab.analyze.http import summarize_results
    from perflab.analyze.server_timing import breakdown
    from perflab.report.http_table import http_records

    rows = http_records(back, summarize_results(back))
    whose = [(r["agent"], r.get("server_timing_metric")) for r in rows]
    names = [r.name for r in breakdown(step)]
    assert whose == [(agent, name) for agent in ("all", 1, 2) for name in [None, *names]]
    assert rows[0]["server_timing_responses"] == m.responses and "achieved_rate" in rows[0]
    db = next(r for r in rows if r.get("server_timing_metric") == "db")
    assert db["server_timing_p99_s"] == pytest.approx(m.metrics["db"].p99_us * 1e-6)
    assert db["server_timing_count"] == m.metrics["db"].count and "achieved_rate" not in db
    columns = {k for r in rows for k in r}
    assert columns - _documented_csv_columns() == set()


def test_http_csv_on_one_machine_has_the_breakdown_and_documented_columns(
    url: str, tmp_path: Path, capsys: Any
) -> None:
    out = tmp_path / "sweep.csv"
    code = cli.main(
        [
            "http",
            url,
            "--rate",
            "100,200",
            "--duration",
            "0.4s",
            "--warmup",
            "0s",
            "--csv",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0, capsys.readouterr().err
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    steps = [r for r in rows if not r["server_timing_metric"]]
    metrics = [r for r in rows if r["server_timing_metric"]]
    assert [r["step"] for r in steps] == ["1", "2"]
    assert all(int(r["server_timing_responses"]) > 0 for r in steps)
    for step in ("1", "2"):
        mine = {r["server_timing_metric"] for r in metrics if r["step"] == step}
        assert {"db", "render", "app", "outside the app"} <= mine
    assert all(float(r["server_timing_p50_s"]) <= float(r["server_timing_max_s"]) for r in metrics)
    assert set(rows[0]) - _documented_csv_columns() == set()
