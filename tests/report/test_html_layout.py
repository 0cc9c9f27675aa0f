"""The HTML report as a page, checked in a real headless Chromium at 1400 px and 390 px.

The inputs are saved files, so nothing is measured and nothing depends on the machine's
speed: a synthetic run of three functions at n = 10, 1,000 and 100,000 (times over four
decades), the golden cmd and http files, a comparison and a break-even and USL fit
(written by perflab from golden data), a doctor file, and a history database that
also holds a doctor run of the same machine (which must not show a second time).

What the test reads from the DOM: horizontal overflow, the table widths, every SVG
text's box (no two labels of a chart overlap), the axes' scales and the measured points
each chart declares (``data-*``), exponent notation anywhere in the visible text. The
full-page screenshots are kept in ``out/screenshots/`` (an artifact of the run; the
first screens are in docs/report.md).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perflab import cli, model
from perflab.analyze.run.ratios import summarize_benchmarks
from perflab.history import record
from perflab.history.store import Store
from perflab.model import Results
from perflab.report.html.summary import ORDER
from tests.conftest import debian_tool, lognormal_groups, make_bench
from tests.history.helpers import ENV, add_step

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "data"
SCREENSHOTS = ROOT / "out" / "screenshots"
WIDTHS = (1400, 390)
#: Exponent notation as people should never see it: 1.27e+03, 5e-05.
EXPONENT = re.compile(r"\d(\.\d+)?e[+-]\d")


def _run_file(path: Path) -> None:
    """Three functions × n in (10, 1,000, 100,000): 2 ns·n … 10 ns·n per op."""
    benches = [
        make_bench(
            name,
            lognormal_groups(per_n * n, 4, 12, 0.02, 0.005, seed),
            group="sort",
            params={"n": n},
        )
        for seed, (name, per_n) in enumerate(
            [("builtin_sorted", 2e-9), ("heapsort", 1e-8), ("insertion", 5e-9)]
        )
        for n in (10, 1000, 100_000)
    ]
    results = Results(
        "run",
        ["perflab", "run", "sorts.py"],
        "2026-01-01T00:00:00+00:00",
        "0.1.0",
        environment=dict(ENV),
        settings={"precision": 0.01},
        benchmarks=benches,
    )
    grouped = summarize_benchmarks(results.benchmarks, precision=0.01)
    model.save(results, path, {s.id: s.to_dict() for g in grouped.values() for s in g})


def _history_with_doctor(db: Path) -> None:
    """A history database holding one doctor run on the run file's machine, and six runs
    of one benchmark with a 30% step (a trend with a change point)."""
    doctor = json.loads((GOLDEN / "doctor.json").read_text())
    doctor["environment"] = dict(ENV)
    with Store(db) as store:
        store.add(record.make_record("doctor", doctor, [], [], None, git=False))
        add_step(store)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: Any) -> Path:
    """Write the inputs and the report through the real entry point; return the page."""
    tmp = tmp_path_factory.mktemp("layout")
    _run_file(tmp / "run.json")
    _history_with_doctor(tmp / "h.sqlite")
    for argv in (
        ["compare", str(GOLDEN / "run-a.json"), str(GOLDEN / "run-b.json")],
        ["fit", str(GOLDEN / "cost.csv"), "--between", "scan", "index"],
        ["fit", str(GOLDEN / "usl.csv"), "--model", "usl"],
    ):  # in process: the documents only, the page itself through the real entry point
        out = tmp / f"{argv[0]}-{len(list(tmp.iterdir()))}.json"
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli.main([*argv, "--json", str(out)]) == 0
    inputs = [tmp / "run.json", GOLDEN / "cmd-a.json", GOLDEN / "http-open.json"]
    inputs += sorted(tmp.glob("compare-*.json")) + sorted(tmp.glob("fit-*.json"))
    inputs.append(GOLDEN / "doctor.json")
    page = tmp / "report.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "perflab",
            "report",
            *map(str, inputs),
            "--history",
            "--database",
            str(tmp / "h.sqlite"),
        ]
        + ["-o", str(page)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    return page


#: Per SVG, pairs of text elements whose boxes overlap (by more than 1 px each way).
OVERLAPS = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('figure[data-chart] svg')) {
    const boxes = [...svg.querySelectorAll('text')]
      .filter(t => t.textContent.trim())
      .map(t => [t.textContent.trim(), t.getBoundingClientRect()])
      .filter(([, r]) => r.width > 0 && r.height > 0);
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const [a, r] = boxes[i], [b, s] = boxes[j];
        const x = Math.min(r.right, s.right) - Math.max(r.left, s.left);
        const y = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
        if (x > 1 && y > 1) out.push([svg.closest('figure').dataset.chart, a, b]);
      }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def browser() -> Any:
    from playwright.sync_api import sync_playwright

    executable = debian_tool("chromium")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_layout_fits_the_window_and_no_label_overlaps(
    page_file: Path, browser: Any, width: int
) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.goto(page_file.resolve().as_uri(), wait_until="load")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"report-{width}.png"), full_page=True)
    page.screenshot(path=str(SCREENSHOTS / f"report-{width}-first-screen.png"))
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px at {width} px"
    assert page.evaluate(OVERLAPS) == []
    widths = page.evaluate(
        """() => { const main = document.querySelector('main');
        const cs = getComputedStyle(main);
        const inner = main.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
        return [inner, [...document.querySelectorAll('.tw')].filter(w => w.offsetParent)
          .map(w => [w.querySelector('table').className, w.scrollWidth, w.clientWidth,
                     w.querySelector('table').getBoundingClientRect().width])]; }"""
    )
    inner, wrappers = widths
    assert wrappers, "no table shown"
    for css, scroll, client, table in wrappers:
        if css == "pairs":
            continue
        assert table >= min(client, inner) - 1, f"table.{css} is narrower than the page"
        if width == 1400:  # wide enough for every table: nothing scrolls inside the page
            assert scroll <= client + 1, f"table.{css} overflows its {client} px"
    text = page.evaluate("document.querySelector('main').textContent")  # folded parts too
    assert not EXPONENT.search(text), EXPONENT.search(text)
    page.close()


def test_summary_first_sections_once_and_charts_with_points(page_file: Path, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(page_file.resolve().as_uri(), wait_until="load")
    kinds = page.eval_on_selector_all("section[data-section]", "s => s.map(e => e.dataset.section)")
    assert kinds[0] == "summary"
    assert kinds.count("doctor") == 1, "the doctor section shows twice"
    verdicts = page.eval_on_selector_all(
        "table.summary tr[data-verdict]", "rs => rs.map(r => r.dataset.verdict)"
    )
    assert verdicts and verdicts[0] in ("fail", "failed", "slower"), verdicts
    order = list(ORDER)
    assert [order.index(v) for v in verdicts] == sorted(order.index(v) for v in verdicts)
    assert "same" not in verdicts  # counted, not listed
    assert verdicts.count("fastest") == 3  # the run has no baseline: one per n
    charts = page.eval_on_selector_all(
        "figure[data-chart]",
        "fs => fs.map(f => [f.dataset.chart, f.dataset.xScale, f.dataset.yScale,"
        " Number(f.dataset.points || -1), f.querySelector('svg').textContent])",
    )
    run = [c for c in charts if c[0] == "distribution" and "group sort" in c[4]]
    assert [c[1] for c in run] == ["log"], "four decades of time per op on a linear axis"
    scaling = [c for c in charts if c[0] == "scaling"]
    assert [(c[1], c[2], c[3]) for c in scaling] == [("log", "log", 9)]
    fits = [c for c in charts if c[0] == "fit"]
    breakeven = [c for c in fits if "scan vs index" in c[4]]
    assert [c[3] for c in breakeven] == [8], "the break-even chart without its measured points"
    assert all(c[3] > 0 for c in fits)
    forest = next(c[4] for c in charts if c[0] == "forest" and "group sort" in c[4])
    assert "like cases" in forest and "n=100000" in forest
    page.close()


def test_forest_blocks_like_parameters_and_marks_the_reference() -> None:
    from perflab.analyze.run.ratios import SELF_RATIO
    from perflab.model.estimate import Estimate
    from perflab.report.html import charts

    fig = charts.forest_figure(
        "t",
        ["a n=1", "b n=1", "a n=2", "b n=2", "c"],
        [SELF_RATIO, Estimate(2.0, 1.5, 2.5), Estimate(3.0, 2.0, 4.0), SELF_RATIO, None],
        "the fastest",
        blocks=["n=1", "n=1", "n=2", "n=2", "n=3"],
    )
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["n=1", "a n=1", "b n=1", "n=2", "a n=2", "b n=2"]  # no empty row
    marked = {round(y) for c in ax.collections for _, y in c.get_offsets()}
    bars = {round(y) for line in ax.lines for y in line.get_ydata() if len(line.get_ydata()) == 1}
    assert {1, 2, 4, 5} <= marked | bars
    charts.pyplot_for_charts().close(fig)


def test_axis_numbers_are_for_people() -> None:
    from perflab.report.html.axes import number, spans_decade

    assert [number(v) for v in (0.005, 20, 1270, 50_000, 1e6, 5e-5)] == [
        "0.005",
        "20",
        "1,270",
        "50,000",
        "10⁶",
        "5×10⁻⁵",
    ]
    assert spans_decade([1e-6, 2e-5]) and not spans_decade([1e-6, 9e-6, float("nan"), 0])
