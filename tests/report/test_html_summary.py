"""The HTML report's summary: ratios in words, doctor checks grouped, order and folding."""

from __future__ import annotations

import math
import re

from perflab.model.estimate import Estimate
from perflab.report.html import summary
from perflab.report.html.summary import Finding, ratio_words, summary_section


def test_ratio_words_say_how_much_and_how_sure() -> None:
    change, sure, size = ratio_words(Estimate(1.32, 1.28, 1.36), "paired: 40 pairs")
    assert change == "1.32× (+32%)"
    assert sure == "95% CI 1.28×–1.36×; paired: 40 pairs"
    assert size == math.log(1.32)
    change, _, _ = ratio_words(Estimate(0.75, 0.7, 0.8), "")
    assert change == "0.75× (-25%)"
    assert ratio_words(None, "two separate runs") == ("", "two separate runs", 0.0)
    change, sure, _ = ratio_words(Estimate(1.0, math.nan, math.nan), "")  # a reference
    assert change == "1.00× (0%)" and sure == ""


def test_doctor_checks_are_one_line_per_status() -> None:
    document = {
        "checks": [
            {"name": "tsc", "status": "ok"},
            {"name": "ntp", "status": "warn", "detail": "not synced"},
            {"name": "steal", "status": "warn"},
            {"name": "clocksource", "status": "fail"},
        ]
    }
    found = summary.doctor_findings(document, "doctor.json")
    assert [(f.verdict, f.subject) for f in found] == [
        ("fail", "doctor: 1 of 4 checks failed: clocksource"),
        ("warn", "doctor: 2 of 4 checks warned: ntp, steal"),
    ]


def test_the_summary_puts_the_urgent_and_large_first_counts_same_and_folds() -> None:
    findings = [
        Finding("same", "s"),
        Finding("faster", "f", size=0.1),
        Finding("slower", "small", size=0.1),
        Finding("slower", "large", size=0.9),
        Finding("warn", "w"),
        *(Finding("inconclusive", f"i{k}", size=0.01 * k) for k in range(12)),
    ]
    section = summary_section(findings)
    html = "".join(section.blocks)
    subjects = re.findall(r'data-verdict="[^"]+"><td[^>]*>[^<]*</td><td>([^<]*)</td>', html)
    assert subjects[:5] == ["large", "small", "w", "f", "i11"]
    assert "s" not in subjects and ">1</b>same" in html
    assert "<details><summary>4 more findings</summary>" in html  # 16 shown: 12 open
    assert section.kind == "summary"


def test_no_verdict_says_so() -> None:
    assert "no verdict" in "".join(summary_section([]).blocks)
    assert "no difference" in "".join(summary_section([Finding("same", "x")]).blocks)
