"""The HTML report's slowest-samples section of a run: each benchmark's slowest samples
and what happened during them (:mod:`perflab.report.slow_table`), the tail share under
each. A file without timed samples adds no section."""

from __future__ import annotations

from perflab.analyze.results_figures import ResultsFigures
from perflab.model import Results
from perflab.report.html.page import Section, table_html
from perflab.report.slow_table import slow_table


def slow_sections(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """One section with a table per benchmark of ``figures.slow`` ([] when empty)."""
    if not figures.slow:
        return []
    return [Section(f"slowest samples: {name}", [table_html(slow_table(c)) for c in figures.slow])]
