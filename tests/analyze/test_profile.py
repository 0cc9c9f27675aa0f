"""A profile's figures on synthetic stacks: self and total shares, the flame tree, the
changes between two profiles and the differential tree; the bounded stacks and the
speedscope document of the results model."""

from __future__ import annotations

import pytest

from perflab.analyze.profile import (
    differential_tree,
    flame_tree,
    function_shares,
    share_changes,
    total_share,
)
from perflab.model.profile import (
    Profile,
    bounded,
    collapsed_text,
    speedscope_document,
)

A = {"main (a.py:1);parse (a.py:5)": 60, "main (a.py:1);emit (a.py:9)": 30, "main (a.py:1)": 10}
B = {"main (a.py:1);parse (a.py:5)": 30, "main (a.py:1);emit (a.py:9)": 60, "main (a.py:1)": 10}


def test_self_and_total_shares() -> None:
    shares = {f.frame.split(" (")[0]: f for f in function_shares(A)}
    assert shares["parse"].self_share == pytest.approx(0.6)
    assert shares["main"].self_share == pytest.approx(0.1)
    assert shares["main"].total_share == pytest.approx(1.0)
    assert [f.frame.split(" (")[0] for f in function_shares(A)] == ["parse", "emit", "main"]


def test_recursion_counts_a_function_once_per_stack() -> None:
    shares = {f.frame: f for f in function_shares({"f;f;f": 4, "g": 4})}
    assert shares["f"].total_share == pytest.approx(0.5)
    assert total_share(Profile(stacks={"f;f;f": 4, "g": 4}), "f") == pytest.approx(0.5)


def test_flame_tree_weights_and_order() -> None:
    root = flame_tree(A)
    assert root.weight == 100
    (main,) = root.children
    assert main.self_weight == 10
    assert [c.frame.split(" (")[0] for c in main.children] == ["parse", "emit"]
    assert [c.weight for c in main.children] == [60, 30]


def test_share_changes_rank_the_largest_change_first() -> None:
    rows = share_changes(Profile(stacks=A), Profile(stacks=B))
    assert {r.frame.split(" (")[0] for r in rows[:2]} == {"parse", "emit"}
    parse = next(r for r in rows if r.frame.startswith("parse"))
    assert parse.self_change == pytest.approx(-0.3)
    main = next(r for r in rows if r.frame.startswith("main"))
    assert main.total_change == pytest.approx(0.0)


def test_a_function_new_in_b_has_share_zero_in_a() -> None:
    rows = share_changes(Profile(stacks={"x": 10}), Profile(stacks={"x": 5, "y": 5}))
    y = next(r for r in rows if r.frame == "y")
    assert (y.self_a, y.self_b) == (0.0, 0.5)


def test_differential_tree_colours_by_change_of_share() -> None:
    root = differential_tree(Profile(stacks=A), Profile(stacks=B))
    (main,) = root.children
    deltas = {c.frame.split(" (")[0]: c.delta for c in main.children}
    assert deltas["emit"] == pytest.approx(0.3) and deltas["parse"] == pytest.approx(-0.3)
    assert main.delta == pytest.approx(0.0)


def test_bounded_folds_the_rarest_stacks_into_their_callers_keeping_the_total() -> None:
    stacks = {f"main;f{i}": i + 1 for i in range(50)}
    kept, note = bounded(stacks, max_stacks=10)
    assert len(kept) == 10 and sum(kept.values()) == sum(stacks.values())
    assert "main" in kept and "folded" in note
    deep, _ = bounded({";".join(["f"] * 1000): 1})
    assert len(next(iter(deep)).split(";")) == 200


def test_collapsed_and_speedscope_forms() -> None:
    profile = Profile(sampler="py-spy 0.4.3", rate_hz=1000.0, stacks=A)
    lines = collapsed_text(profile).splitlines()
    assert lines[0] == "main (a.py:1);parse (a.py:5) 60" and len(lines) == 3
    doc = speedscope_document(profile, "bench")
    frames = doc["shared"]["frames"]
    assert {"name": "parse", "file": "a.py", "line": 5} in frames
    (prof,) = doc["profiles"]
    assert prof["unit"] == "seconds" and prof["endValue"] == pytest.approx(0.1)
    for sample in prof["samples"]:
        assert frames[sample[0]]["name"] == "main"
