"""`perflab report`: the self-contained HTML page, opened in a real headless Chromium.

The page is built by the real entry point from a synthetic run file (one benchmark
named like a script tag), an http file measured against `perflab serve` (0.3 s
steps), a comparison of two run files and a USL fit (their --json documents), and a
history of six runs. Chromium is Debian's (the Makefile installs it,
as root, where missing), driven by Playwright's Python API with that executable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perflab import _core, model
from perflab.analyze.run.ratios import summarize_benchmarks
from perflab.history.store import Store
from tests.conftest import debian_tool
from tests.history.helpers import add_step, results

NASTY = "<script>alert(1)</script>"
USL_CSV = Path(__file__).resolve().parents[1] / "golden" / "data" / "usl.csv"


def chromium() -> str:
    """Debian's chromium, or a skip saying why it can't be there."""
    return debian_tool("chromium")


@pytest.fixture(scope="module")
def report(tmp_path_factory: Any) -> dict[str, Any]:
    """Write the inputs and the report; return paths and what the page must show."""
    tmp = tmp_path_factory.mktemp("report")
    run = results({NASTY: 1e-6, "plain": 3e-6}, seed=3)
    _with_memory(run)
    grouped = summarize_benchmarks(run.benchmarks, precision=0.01)
    summaries = {s.id: s.to_dict() for g in grouped.values() for s in g}
    model.save(run, tmp / "run.json", summaries)
    slower = results({NASTY: 1.3e-6, "plain": 3e-6}, seed=4)
    grouped_b = summarize_benchmarks(slower.benchmarks, precision=0.01)
    model.save(
        slower, tmp / "run-b.json", {s.id: s.to_dict() for g in grouped_b.values() for s in g}
    )
    perflab = [sys.executable, "-m", "perflab"]
    for argv in (
        [
            "cmd",
            "--memory",
            "--runs",
            "2",
            "--quiet",
            "--no-history",
            "--json",
            str(tmp / "cmd.json"),
            "sleep 0.05",
        ],
        [
            "compare",
            str(tmp / "run.json"),
            str(tmp / "run-b.json"),
            "--json",
            str(tmp / "compare.json"),
        ],
        ["fit", str(USL_CSV), "--model", "usl", "--json", str(tmp / "fit.json")],
    ):
        done = subprocess.run(perflab + argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as server:
        http = subprocess.run(
            [
                sys.executable,
                "-m",
                "perflab",
                "http",
                f"http://{server.address}/",
                "--rate",
                "100:200:100",
                "--duration",
                "0.3s",
                "--warmup",
                "0.1s",
                "--threads",
                "1",
                "--quiet",
                "--json",
                str(tmp / "http.json"),
                "--no-history",
                "--watch",
                str(os.getpid()),
            ],  # the server runs in here
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert http.returncode == 0, http.stderr
    db = tmp / "h.sqlite"
    with Store(db) as store:
        add_step(store)
    out = tmp / "report.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "perflab",
            "report",
            str(tmp / "run.json"),
            str(tmp / "http.json"),
            str(tmp / "cmd.json"),
            str(tmp / "compare.json"),
            str(tmp / "fit.json"),
            "--history",
            "--database",
            str(db),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        "page": out,
        "summaries": summaries,
        **{
            name: json.loads((tmp / f"{name}.json").read_text())
            for name in ("http", "compare", "fit")
        },
    }


def _with_memory(run: model.Results) -> None:
    """Give every process of ``run`` what ``run --memory`` records: RSS readings, an RSS
    timeline and a heap pass keeping 50 B per call."""
    for bench in run.benchmarks:
        for i, proc in enumerate(bench.processes):
            proc.rss_start_bytes, proc.rss_end_bytes = 20_000_000, 20_000_000 + 4096 * i
            proc.rss_calls, proc.rss_peak_bytes = 1000, 21_000_000
            proc.memory = {
                "t_s": [0.0, 0.01, 0.02],
                "cpu_s": [0.0, 0.01, 0.02],
                "rss_bytes": [9_000_000, 20_000_000, 20_000_000 + 4096 * i],
            }
            proc.heap = {
                "calls": [0, 10, 20],
                "t_s": [0.0, 0.001, 0.002],
                "traced_bytes": [0, 500, 1000],
                "peak_bytes": [0, 700, 1200],
            }


def test_the_file_is_self_contained_small_and_escapes_names(report: dict[str, Any]) -> None:
    text = report["page"].read_text()
    assert text.startswith("<!DOCTYPE html><!-- perflab report -->")
    assert "<script" not in text.replace("&lt;script", "")  # no script, the name escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert len(text.encode()) < 5 * 2**20


def test_chromium_renders_every_chart_offline_with_the_files_figures(
    report: dict[str, Any],
) -> None:
    from playwright.sync_api import sync_playwright

    url = report["page"].resolve().as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            requests, problems, dialogs = [], [], []
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url, wait_until="load")
            assert problems == [] and dialogs == []
            assert requests == [url], "the page made a request"
            charts = page.eval_on_selector_all(
                "figure[data-chart]",
                "fs => fs.map(f => [f.dataset.chart, "
                "f.querySelectorAll('svg').length, f.querySelector('svg').getBBox().width])",
            )
            kinds = sorted(kind for kind, _, _ in charts)
            # run: distribution, forest, cold-warm, memory, heap; http: sweep, spectrum,
            # memory (--watch); cmd: distribution, user-sys, memory; compare: forest;
            # fit: its curve; one trend
            assert kinds == [
                "cold-warm",
                "distribution",
                "distribution",
                "fit",
                "forest",
                "forest",
                "heap",
                "memory",
                "memory",
                "memory",
                "spectrum",
                "sweep",
                "trend",
                "user-sys",
            ]
            assert all(count == 1 and width > 100 for _, count, width in charts)
            figures = page.eval_on_selector_all(
                "table.figures tr[data-id]",
                "rs => rs.map(r => [r.dataset.id, Number(r.dataset.medianS)])",
            )
            assert len(figures) == 3  # the run's two benchmarks and the cmd's command
            figures = [f for f in figures if f[0] in report["summaries"]]
            assert len(figures) == 2
            for bench_id, median in figures:
                assert median == pytest.approx(report["summaries"][bench_id]["median_s"], rel=1e-12)
            steps = page.eval_on_selector_all(
                "table.figures tr[data-step]",
                "rs => rs.map(r => [r.dataset.step, Number(r.dataset.achievedRate)])",
            )
            saved = report["http"]["benchmarks"][0]["summary"]["steps"]
            assert [s for s, _ in steps] == [s["label"] for s in saved]
            assert [r for _, r in steps] == pytest.approx([s["achieved_rate"] for s in saved])
            compared = page.eval_on_selector_all(
                "table.compare tr[data-id]",
                "rs => rs.map(r => [r.dataset.id, "
                "r.dataset.verdict, Number(r.dataset.ratio), Number(r.dataset.ratioLow), "
                "Number(r.dataset.ratioHigh)])",
            )
            saved_rows = report["compare"]["rows"]
            assert [c[:2] for c in compared] == [[r["id"], r["verdict"]] for r in saved_rows]
            for (_, _, *ratio), row in zip(compared, saved_rows):
                assert ratio == pytest.approx(
                    [row["ratio"][k] for k in ("value", "ci_low", "ci_high")], rel=1e-12
                )
            body = page.inner_text("body")
            # run --memory: the terminal's memory table, the heap kept 50 B per call
            assert "memory (--memory)" in body and "heap/1k ops" in body
            assert "+50.0 kB" in body
            memory_titles = page.eval_on_selector_all(
                "figure[data-chart=memory] svg, figure[data-chart=heap] svg",
                "ss => ss.map(s => s.textContent)",
            )
            assert any("spawn to exit" in t for t in memory_titles)  # run
            assert any("children summed" in t for t in memory_titles)  # cmd
            assert any("watched processes" in t for t in memory_titles)  # http --watch
            assert any("heap pass" in t and "calls since" in t for t in memory_titles)
            # the fit's tables as the terminal printed them (the document keeps them)
            for table in report["fit"]["tables"]:
                assert table["title"] in body
                assert all(cell in body for row in table["rows"] for cell in row if cell)
            assert page.get_by_text(NASTY, exact=True).count() >= 2  # run and compare: text
            assert "change point in 22222222..33333333" in body
            rows_with_js = page.locator("table tr").count()

            plain = browser.new_context(java_script_enabled=False).new_page()
            plain.goto(url, wait_until="load")
            assert plain.locator("table tr").count() == rows_with_js > 10
            assert plain.locator("figure[data-chart] svg").count() == len(charts)
        finally:
            browser.close()
