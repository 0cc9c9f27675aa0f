"""The report's flame graphs: static SVG, drawn by a real headless Chromium with the
page's Content-Security-Policy (``default-src 'none'``: no script runs, none is there).

Two run files with synthetic profiles (a function named like a script tag holding 70%
of the samples in A, 30% in B) and their comparison make the page; the flame graph of
each and the differential flame graph of the comparison must render with boxes as wide
as their shares.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perflab import model
from perflab.analyze.profile import flame_tree
from perflab.model.profile import Profile
from perflab.report.flame import WIDTH, flame_svg
from tests.conftest import debian_tool
from tests.history.helpers import results

NASTY = "<script>alert(1)</script>"


def _profiled(hot: int, seed: int) -> Any:
    run = results({"work": 1e-6}, seed=seed)
    (bench,) = run.benchmarks
    bench.profile = Profile(
        sampler="py-spy 0.4.3",
        rate_hz=1000.0,
        stacks={
            f"work (b.py:9);{NASTY} (b.py:1)": hot,
            "work (b.py:9);cold (b.py:5)": 100 - hot,
        },
        pids=[10, 11],
        seconds=1.0,
        calls=500,
    )
    return run


@pytest.fixture(scope="module")
def page_path(tmp_path_factory: Any) -> Path:
    tmp = tmp_path_factory.mktemp("flame")
    model.save(_profiled(70, 1), tmp / "a.json", {})
    model.save(_profiled(30, 2), tmp / "b.json", {})
    perflab = [sys.executable, "-m", "perflab"]
    for argv in (
        ["compare", str(tmp / "a.json"), str(tmp / "b.json"), "--json", str(tmp / "c.json")],
        ["report", str(tmp / "a.json"), str(tmp / "c.json"), "-o", str(tmp / "page.html")],
    ):
        done = subprocess.run(perflab + argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    return tmp / "page.html"


def test_the_svg_is_static_and_escaped() -> None:
    svg = flame_svg(flame_tree({f"{NASTY};x": 3, "y": 1}), NASTY)
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert "on" + "load" not in svg and "href" not in svg


def test_chromium_draws_the_flame_graphs_without_script(page_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    text = page_path.read_text()
    assert "default-src 'none'" in text and "<script" not in text
    url = page_path.resolve().as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=debian_tool("chromium"), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            requests, problems, dialogs = [], [], []
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(url, wait_until="load")
            assert problems == [] and dialogs == [] and requests == [url]
            assert page.eval_on_selector_all("script", "s => s.length") == 0
            charts = page.eval_on_selector_all(
                "figure[data-chart^=flame]",
                "fs => fs.map(f => [f.dataset.chart, f.querySelector('svg').getBBox().width])",
            )
            assert sorted(kind for kind, _ in charts) == ["flame", "flame-diff"]
            assert all(width > 100 for _, width in charts)
            boxes = page.eval_on_selector_all(
                "figure[data-chart=flame] g.frame",
                "gs => gs.map(g => [g.querySelector('title').textContent, "
                "g.querySelector('rect').getBBox().width])",
            )
            hot = [(t, w) for t, w in boxes if t.startswith(NASTY)]
            assert len(hot) == 1 and "70.0% of samples" in hot[0][0]
            assert hot[0][1] == pytest.approx(0.7 * WIDTH, abs=1)
            diff = page.eval_on_selector_all(
                "figure[data-chart=flame-diff] g.frame",
                "gs => gs.map(g => [g.querySelector('title').textContent, "
                "g.querySelector('rect').getAttribute('fill')])",
            )
            shrunk = [f for t, f in diff if t.startswith(NASTY)]
            grown = [f for t, f in diff if t.startswith("cold")]
            assert shrunk == ["rgb(0,0,255)"] and grown == ["rgb(255,0,0)"]
        finally:
            browser.close()
