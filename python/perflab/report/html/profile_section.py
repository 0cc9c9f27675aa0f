"""The HTML report's profile section: each profiled benchmark's static SVG flame graph
(:mod:`perflab.report.flame`) and its top functions by self and total share, as
``show --profile`` prints them. A file without profiles adds no section."""

from __future__ import annotations

from perflab.analyze.results_figures import ResultsFigures
from perflab.model import Results
from perflab.report.flame import flame_svg
from perflab.report.html.page import Section, figure_html, table_html
from perflab.report.profile_table import describe, function_table


def profile_sections(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """One subsection per profiled benchmark of ``results`` ([] when none was profiled);
    ``figures``: the file's figures, whose ``profiles`` hold each profile's tree and
    function shares (:func:`perflab.analyze.profile.profiled`)."""
    if not figures.profiles:
        return []
    out = [Section(f"profiles: {name}")]
    for label, figs in figures.profiles:
        unit = "instructions" if figs.profile.kind == "instructions" else "samples"
        svg = flame_svg(figs.flame, f"flame graph of {label}", unit)
        caption = (
            f"{label}: {describe(figs.profile)}. Width: share of the {unit}; callers "
            "below their callees; hover a box for its function and shares."
        )
        out.append(
            Section(
                f"profile: {label}",
                [figure_html(svg, caption, "flame"), table_html(function_table(label, figs))],
                level=3,
            )
        )
    return out
