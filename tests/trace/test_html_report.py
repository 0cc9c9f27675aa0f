"""Trace files in the HTML report (``perflab report trace.json``): the per-span table and
the duration spectra, names escaped."""

from __future__ import annotations

import re

import perflab
import perflab.trace

NASTY = "<script>alert(1)</script>"


def test_a_trace_file_gets_its_section_table_and_spectrum(tmp_path, perflab_cli):
    for _ in range(200):
        with perflab.span("outer"):
            with perflab.span(NASTY):
                pass
    with perflab.span("once"):
        pass
    dump = perflab.trace.dump(tmp_path / "trace.json")
    out = tmp_path / "report.html"
    proc = perflab_cli("report", str(dump), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "<h2>trace: " in text
    assert "<script" not in text.replace("&lt;script", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # One table row per span name, with its figures for tools, and one spectrum chart.
    rows = re.findall(r'<tr data-span="([^"]*)" data-count="(\d+)"', text)
    assert sorted(rows) == sorted(
        [("&lt;script&gt;alert(1)&lt;/script&gt;", "200"), ("once", "1"), ("outer", "200")]
    ), rows
    assert text.count('data-chart="spectrum"') == 1
