"""The tables of a profile (``run --profile``, ``show --profile``, ``cmd --profile``):
each benchmark's top functions by self and by total share, and ``compare``'s functions
whose share changed most. Renders figures of :mod:`perflab.analyze.profile`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.analyze.profile import TOP, ProfileFigures, ShareChange
from perflab.model.profile import Profile
from perflab.report import console, escape
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_time


def _pct(share: float) -> str:
    return f"{share:.1%}"


def _signed(points: float) -> str:
    """A change of share in percentage points, signed."""
    return f"{points * 100:+.1f} pt"


def _unit(profile: Profile) -> str:
    return "instructions" if profile.kind == "instructions" else "samples"


def describe(profile: Profile) -> str:
    """One line on how a profile was taken: sampler, rate, samples, processes."""
    if profile.kind == "instructions":
        head = f"{profile.total:,} instructions (Ir) counted by {profile.sampler}"
    else:
        rate = f" at {profile.rate_hz:g} Hz" if profile.rate_hz else ""
        head = f"{profile.total:,} samples by {profile.sampler}{rate}"
    where = f" in {len(profile.pids)} process{'es' if len(profile.pids) != 1 else ''}"
    pids = " (pid " + ", ".join(str(p) for p in profile.pids[:6]) + ")" if profile.pids else ""
    calls = ""
    if profile.calls:
        runs = all(stack.startswith("process: ") for stack in profile.stacks)
        word = ("run" if runs else "call") + ("" if profile.calls == 1 else "s")
        calls = f", {profile.calls:,} {word} in {format_time(profile.seconds)}"
    text = head + (where + pids if profile.pids else "") + calls
    text += ", apart from the timed processes" if profile.kind == "time" else ""
    return text + (f"; {profile.note}" if profile.note else "")


def function_table(label: str, figures: ProfileFigures, top: int = TOP) -> Table:
    """The top functions of one benchmark's profile by self share, with their total share,
    then those heaviest by total share that are not already listed."""
    shown = figures.top_self(top)
    names = {f.frame for f in shown}
    extra = [f for f in figures.top_total(top) if f.frame not in names][: max(0, top // 3)]
    table = Table(
        title=f"profile: {escape.terminal(label, one_line=True)}",
        columns=["function", "self", "total", "where"],
        align=["l", "r", "r", "l"],
        fold=[KEY, KEY, KEY, NOTE],
        footnotes=[
            describe(figures.profile),
            f"self: share of the {_unit(figures.profile)} in the function's own code; "
            "total: with everything it called",
        ],
    )
    for f in [*shown, *extra]:
        name, _, where = f.frame.partition(" (")
        table.rows.append(
            [
                escape.terminal(name, one_line=True),
                _pct(f.self_share),
                _pct(f.total_share),
                escape.terminal(where.rstrip(")"), one_line=True),
            ]
        )
    return table


def profile_tables(profiles: Sequence[tuple[str, ProfileFigures]], top: int = TOP) -> list[Table]:
    """One :func:`function_table` per profiled benchmark (``(label, figures)`` pairs)."""
    return [function_table(label, figs, top) for label, figs in profiles]


def profile_records(profiles: Sequence[tuple[str, ProfileFigures]]) -> list[dict[str, Any]]:
    """CSV records: one per benchmark and function (every function, heaviest self first)."""
    return [
        {
            "benchmark": label,
            "function": f.frame,
            "self_share": f.self_share,
            "total_share": f.total_share,
            "self_weight": f.self_weight,
            "total_weight": f.total_weight,
        }
        for label, figs in profiles
        for f in figs.functions
    ]


def print_profiles(profiles: Sequence[tuple[str, ProfileFigures]], fmt: str) -> None:
    """Print the profile tables in ``fmt`` (table, markdown, csv)."""
    console.emit(fmt, lambda: profile_tables(profiles), lambda: profile_records(profiles))


def change_table(label: str, changes: Sequence[ShareChange]) -> Table:
    """``compare``'s functions whose share changed most from A to B for one benchmark."""
    table = Table(
        title=f"profile change: {escape.terminal(label, one_line=True)}",
        columns=["function", "self A", "self B", "Δ self", "total A", "total B", "Δ total"],
        align=["l", "r", "r", "r", "r", "r", "r"],
        fold=[KEY, 2, 2, KEY, 1, 1, KEY],
        footnotes=["Δ: B's share minus A's, in percentage points of each profile's samples"],
    )
    for c in changes:
        table.rows.append(
            [
                escape.terminal(c.frame.partition(" (")[0], one_line=True),
                _pct(c.self_a),
                _pct(c.self_b),
                _signed(c.self_change),
                _pct(c.total_a),
                _pct(c.total_b),
                _signed(c.total_change),
            ]
        )
    return table


def print_changes(records: Sequence[dict[str, Any]], fmt: str) -> None:
    """Print ``compare``'s profile changes (the records of
    :func:`perflab.analyze.profile.profile_changes`, or a document's ``profiles``)."""
    changes = [
        (str(r.get("label", r["id"])), [ShareChange.from_dict(c) for c in r["changes"]])
        for r in records
    ]
    console.emit(fmt, lambda: [change_table(label, rows) for label, rows in changes])
