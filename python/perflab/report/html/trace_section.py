"""The HTML report's section for a ``trace`` results file (``perflab.trace.dump``).

The per-span table ``perflab show`` prints (:mod:`perflab.report.trace_table`), and
the duration percentile spectrum of the spans that took the most time in total, from
their HdrHistograms (values in ns, 2 significant digits).
"""

from __future__ import annotations

from perflab.model import Results
from perflab.report.html import charts
from perflab.report.html.page import Section, command_html, figure_html, paragraph, table_html

#: Spans drawn in the spectrum chart: the ones with the most total time.
SPECTRUM_SPANS = 8


def trace_sections(results: Results, name: str) -> list[Section]:
    """A ``trace`` file: where it came from, its per-span table and duration spectra."""
    from perflab.analyze.hdr import decode_histogram
    from perflab.report.trace_table import trace_table

    settings = results.settings
    section = Section(
        f"trace: {name}",
        [
            paragraph(
                f"trace results from {name}: pid {settings.get('pid', '?')}, recorded from "
                f"{results.created} to {settings.get('dumped', '?')}, perflab "
                f"{results.perflab_version}"
            ),
            command_html(results.command_line),
        ],
    )
    table = trace_table(results)
    spans = sorted(
        (b for b in results.benchmarks if b.span is not None and b.span.count),
        key=lambda b: -b.span.total_ns,
    )  # type: ignore[union-attr]
    data = [
        {
            "span": b.name,
            "count": b.span.count,
            "total-s": b.span.total_ns / 1e9,
            "p50-s": b.span.duration.p50_ns / 1e9,
            "p99-s": b.span.duration.p99_ns / 1e9,
        }
        for b in spans
    ]  # type: ignore[union-attr]
    section.blocks.append(
        table_html(table, data if len(data) == len(table.rows) else None, "figures")
    )
    spectra = []
    for bench in spans[:SPECTRUM_SPANS]:
        try:
            counts = decode_histogram(bench.span.duration.encoded)  # type: ignore[union-attr]
        except ValueError:
            continue
        if counts.counts.size:  # ns → µs, the unit the chart draws (as ms)
            spectra.append((bench.name, counts.values / 1000, counts.counts))
    if spectra:
        more = len(spans) - len(spectra)
        section.blocks.append(
            figure_html(
                charts.to_svg(charts.spectrum_figure("span duration by percentile", spectra)),
                "each span's duration percentile spectrum from its HdrHistogram, the "
                f"{len(spectra)} spans with the most total time"
                + (f" ({more} more in the table)" if more > 0 else ""),
                "spectrum",
            )
        )
    return [section]
