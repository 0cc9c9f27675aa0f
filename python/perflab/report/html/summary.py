"""The HTML report's first section: what is faster or slower, by how much, how sure.

Like asv's list of regressions and criterion's "change" line, the page opens with the
answer: the counts of verdicts, then one row per finding, the largest changes first
(slower, then faster, then inconclusive; "same" rows are only counted), each with its
ratio, its CI and what the CI rests on (paired samples or separate runs), and the file
it comes from; then the machine's and the load test's warnings.

Each kind of input adds its findings through one small function listed in
:data:`RESULTS_FINDINGS` or :data:`DOCUMENT_FINDINGS` (a new kind of section adds its
finder there). They read verdicts the analyses already decided; nothing is computed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from perflab.model import Results
from perflab.model.estimate import Estimate
from perflab.report.escape import html as esc
from perflab.report.html.page import Section, folded, paragraph
from perflab.units import format_ratio, significant

if TYPE_CHECKING:
    from perflab.analyze.results_figures import ResultsFigures

#: Order of the verdicts in the summary, the most urgent first.
#: A memory row's "more" ranks with "slower", its "less" with "faster".
ORDER = (
    "fail",
    "failed",
    "slower",
    "more",
    "warn",
    "faster",
    "less",
    "inconclusive",
    "fastest",
    "info",
    "same",
)
#: Most finding rows shown open; the rest are folded under one line.
SHOWN = 12
#: The verdicts of a comparison against a baseline or reference.
VERDICTS = ("faster", "slower", "same", "inconclusive")


@dataclass
class Finding:
    """One line of the summary.

    Attributes:
        verdict: one of :data:`ORDER` (the compare and run verdicts, "fail"/"warn" for
            checks, "fastest" for the winner of a group without a baseline, "info").
        subject: what it is about (a benchmark, a step, a check), untrusted text.
        change: how much, in words for people ("1.32× (+32%)"), or "".
        sure: what the figure rests on ("95% CI 1.28–1.36×, paired: 120 pairs"), or "".
        source: the file it comes from.
        size: |log ratio|, to put the largest changes first (0 when none).
    """

    verdict: str
    subject: str
    change: str = ""
    sure: str = ""
    source: str = ""
    size: float = 0.0


def ratio_words(ratio: Estimate | None, basis: str) -> tuple[str, str, float]:
    """(change, sure, size) of a ratio B/A: ``("1.32× (+32%)", "95% CI 1.28–1.36×;
    paired: 40 pairs", 0.28)``; empty texts without a ratio."""
    if ratio is None or not (math.isfinite(ratio.value) and ratio.value > 0):
        return "", basis, 0.0
    percent = significant(100 * (ratio.value - 1), 2)
    if ratio.value > 1 and percent != "0":
        percent = "+" + percent
    change = f"{format_ratio(ratio.value)} ({percent}%)"
    sure = ""
    if math.isfinite(ratio.ci_low) and math.isfinite(ratio.ci_high):
        sure = f"95% CI {format_ratio(ratio.ci_low)}–{format_ratio(ratio.ci_high)}"
    return change, "; ".join(t for t in (sure, basis) if t), abs(math.log(ratio.value))


def run_findings(results: Results, figures: ResultsFigures, name: str) -> list[Finding]:
    """A run: each verdict against its baseline; in a group without a baseline, the
    fastest case of each set of like parameters and how far the next one is."""
    out = []
    params = {
        b.id: " ".join(f"{k}={v}" for k, v in sorted(b.params.items())) for b in results.benchmarks
    }
    for group, summaries in figures.grouped.items():
        judged = [s for s in summaries if s.verdict in VERDICTS and not s.baseline]
        for s in judged:
            basis = (
                f"paired: {s.baseline_pairs:,} pairs" if s.baseline_pairs else "separate processes"
            )
            change, sure, size = ratio_words(s.ratio_baseline, basis)
            out.append(Finding(s.verdict, f"{s.label} vs baseline", change, sure, name, size))
        if judged:
            continue
        blocks: dict[str, list[Any]] = {}
        for s in summaries:
            if s.ok and s.ratio_best is not None:
                blocks.setdefault(params.get(s.id, ""), []).append(s)
        for block in blocks.values():
            if len(block) < 2:
                continue
            ranked = sorted(block, key=lambda s: s.ratio_best.value)
            _, sure, size = ratio_words(ranked[1].ratio_best, "separate processes")
            out.append(
                Finding(
                    "fastest",
                    f"{ranked[0].label} ({group or 'benchmarks'}); next: {ranked[1].label}",
                    f"next takes {format_ratio(ranked[1].ratio_best.value)}",
                    sure,
                    name,
                    size,
                )
            )
    return out


def cmd_findings(results: Results, figures: ResultsFigures, name: str) -> list[Finding]:
    """A cmd file: each command's verdict against the reference command."""
    reference = next((s.label for s in figures.commands if s.reference), "the reference")
    out = []
    for s in figures.commands:
        if s.reference or s.verdict not in VERDICTS:
            continue
        basis = f"paired: {s.pairs:,} blocks" if s.pairs else "separate runs"
        change, sure, size = ratio_words(s.ratio, basis)
        out.append(Finding(s.verdict, f"{s.label} vs {reference}", change, sure, name, size))
    return out


def http_findings(results: Results, figures: ResultsFigures, name: str) -> list[Finding]:
    """An http sweep: the capacity, and every step whose verdict is not ok."""
    sweep = figures.sweep
    if sweep is None:
        return []
    out = []
    if sweep.capacity is not None:
        step = sweep.capacity.step
        out.append(
            Finding(
                "info",
                f"capacity: {'at least ' if sweep.capacity.at_least else ''}{step.label}",
                f"{significant(step.achieved_rate, 3)} req/s achieved",
                "the heaviest step whose verdict is ok",
                name,
            )
        )
    for step in sweep.steps:
        if step.verdict != "ok":
            out.append(
                Finding(
                    "warn", f"step {step.label}: {step.verdict}", "", "; ".join(step.reasons), name
                )
            )
    return out


def compare_findings(document: dict[str, Any], name: str) -> list[Finding]:
    """A comparison: each row's verdict with its B/A ratio."""
    from perflab.model.comparison import SuiteComparison

    suite = SuiteComparison.from_dict(document)
    out = []
    for r in suite.rows:
        basis = f"paired: {r.pairs:,} pairs" if r.pairs else "two separate runs"
        change, sure, size = ratio_words(r.ratio, basis)
        subject = r.id if r.metric in ("time", "") else f"{r.id} {r.metric}"
        out.append(Finding(r.verdict or "info", f"{subject}: B vs A", change, sure, name, size))
    return out


def doctor_findings(document: dict[str, Any], name: str) -> list[Finding]:
    """A doctor document: one line per status (fail, warn) naming its checks; their
    evidence is in the doctor's section."""
    out = []
    checks = [c for c in document.get("checks") or [] if isinstance(c, dict)]
    for status, word in (("fail", "failed"), ("warn", "warned")):
        names = [str(c.get("name", "?")) for c in checks if c.get("status") == status]
        if names:
            out.append(
                Finding(
                    status,
                    f"doctor: {len(names)} of {len(checks)} checks {word}: {', '.join(names)}",
                    "",
                    "the machine's clocks and load; evidence and what to do in the doctor section",
                    name,
                )
            )
    return out


def fit_findings(document: dict[str, Any], name: str) -> list[Finding]:
    """A fit document: each fit's one-sentence reading."""
    out = []
    for fit in document.get("fits") or []:
        if isinstance(fit, dict):
            text = fit.get("sentence") or fit.get("reading") or ""
            if text:
                out.append(Finding("info", f"fit: {fit.get('series', '')}", "", str(text), name))
    return out


#: Findings of a results file of each kind (builders ``(results, figures, name)``).
RESULTS_FINDINGS: dict[str, list[Callable[[Results, ResultsFigures, str], list[Finding]]]] = {
    "run": [run_findings],
    "cmd": [cmd_findings],
    "http": [http_findings],
}

#: Findings of a perflab document of each ``kind`` (builders ``(document, name)``).
DOCUMENT_FINDINGS: dict[str, list[Callable[[dict[str, Any], str], list[Finding]]]] = {
    "compare": [compare_findings],
    "doctor": [doctor_findings],
    "fit": [fit_findings],
}


def results_findings(results: Results, figures: ResultsFigures, name: str) -> list[Finding]:
    """The findings of one results file (see :data:`RESULTS_FINDINGS`)."""
    return [
        f for build in RESULTS_FINDINGS.get(results.kind, []) for f in build(results, figures, name)
    ]


def document_findings(document: dict[str, Any], name: str) -> list[Finding]:
    """The findings of one compare, doctor or fit document (see :data:`DOCUMENT_FINDINGS`)."""
    kind = str(document.get("kind"))
    return [f for build in DOCUMENT_FINDINGS.get(kind, []) for f in build(document, name)]


def _row(f: Finding) -> str:
    verdict = f'<td class="verdict {esc(f.verdict)}">{esc(f.verdict)}</td>'
    return (
        f'<tr data-verdict="{esc(f.verdict)}">{verdict}<td>{esc(f.subject)}</td>'
        f'<td class="r">{esc(f.change)}</td><td class="sure">{esc(f.sure)}</td>'
        f'<td class="n" title="{esc(f.source)}">{esc(PurePath(f.source).name or f.source)}</td></tr>'
    )


def _table(findings: Sequence[Finding]) -> str:
    head = "".join(
        f'<th class="{c}">{t}</th>'
        for t, c in (("verdict", ""), ("what", ""), ("change", "r"), ("how sure", ""), ("file", ""))
    )
    return (
        '<div class="tw"><table class="summary"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(_row(f) for f in findings)}</tbody></table></div>"
    )


def summary_section(findings: Sequence[Finding]) -> Section:
    """The page's first section: counts of each verdict, then the findings, most urgent
    and largest first (:data:`ORDER`, then size); "same" rows only counted; more than
    :data:`SHOWN` rows fold the rest."""
    rank = {v: i for i, v in enumerate(ORDER)}
    ordered = sorted(findings, key=lambda f: (rank.get(f.verdict, len(ORDER)), -f.size))
    counts: dict[str, int] = {}
    for f in ordered:
        counts[f.verdict] = counts.get(f.verdict, 0) + 1
    section = Section("Summary", kind="summary")
    judged = [
        v
        for v in (
            "failed",
            "slower",
            "faster",
            "more",
            "less",
            "same",
            "inconclusive",
            "fail",
            "warn",
        )
        if v in counts
    ]
    if judged:
        section.blocks.append(
            '<div class="counts">'
            + "".join(f'<span class="{v}"><b>{counts[v]:,}</b>{esc(v)}</span>' for v in judged)
            + "</div>"
        )
    shown = [f for f in ordered if f.verdict != "same"]
    if not shown:
        section.blocks.append(
            paragraph(
                "no difference beyond the noise threshold"
                if counts.get("same")
                else "no verdict: the files hold measurements only (see each section)"
            )
        )
        return section
    section.blocks.append(_table(shown[:SHOWN]))
    if len(shown) > SHOWN:
        section.blocks.append(
            folded(f"{len(shown) - SHOWN:,} more findings", _table(shown[SHOWN:]))
        )
    section.blocks.append(
        paragraph(
            "change: the ratio B/A (new over old, or over the baseline, reference or fastest) "
            "with the change in percent; a verdict is faster or slower only where its 95% CI "
            "lies wholly beyond the noise threshold, same where it lies wholly within, else "
            "inconclusive. Paired figures (samples taken back to back) are 10–20× tighter "
            "than figures from separate runs."
        )
    )
    return section
