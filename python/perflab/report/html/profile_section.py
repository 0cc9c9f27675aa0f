"""The HTML report's profile sections: each profiled benchmark's static SVG flame graph
(:mod:`perflab.report.flame`) and its top functions by self and total share, as
``show --profile`` prints them; in a comparison, each benchmark profiled on both sides
as a differential flame graph with the functions whose share changed most. A file
without profiles adds no section."""

from __future__ import annotations

from typing import Any

from perflab.analyze.profile import FlameNode, ShareChange
from perflab.analyze.results_figures import ResultsFigures
from perflab.model import Results
from perflab.report.flame import differential_svg, flame_svg
from perflab.report.html.page import Section, figure_html, table_html
from perflab.report.profile_table import change_table, describe, function_table


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


def profile_change_sections(document: dict[str, Any], name: str) -> list[Section]:
    """The differential flame graphs of a ``compare --json`` document's ``profiles``
    (:func:`perflab.analyze.profile.profile_changes`); [] when it has none."""
    records = [r for r in document.get("profiles") or [] if isinstance(r, dict)]
    if not records:
        return []
    out = [Section(f"profile changes: {name}")]
    for record in records:
        label = str(record.get("label", record.get("id", "")))
        unit = "instructions" if record.get("kind") == "instructions" else "samples"
        tree = FlameNode.from_dict(record.get("tree") or {})
        changes = [ShareChange.from_dict(c) for c in record.get("changes") or []]
        svg = differential_svg(tree, f"differential flame graph of {label}", unit)
        caption = (
            f"{label}: B's profile ({record.get('total_b', 0):,} {unit}; A had "
            f"{record.get('total_a', 0):,}); colour: the change of each box's share from A "
            "to B, red grew, blue shrank, white unchanged."
        )
        out.append(
            Section(
                f"profile change: {label}",
                [figure_html(svg, caption, "flame-diff"), table_html(change_table(label, changes))],
                level=3,
            )
        )
    return out
