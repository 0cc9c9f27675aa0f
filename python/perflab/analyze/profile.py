"""Figures of a profile (:class:`perflab.model.profile.Profile`): each function's self and
total share, the flame graph's tree, and what changed between two profiles.

* **self** share: the part of the weight (samples, or instructions) whose stack ends in
  the function: time spent in its own code.
* **total** share: the part whose stack holds the function anywhere: time spent in it
  and everything it called (a recursive function counted once per stack).
* **change** (``compare``): B's share minus A's, in percentage points, of each function's
  self and total share; the functions are ranked by the larger change. Shares, not
  sample counts, so two profiles of different lengths compare.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from perflab.model import Benchmark
from perflab.model.profile import Profile

#: the top functions shown by default (``show --profile``, the report)
TOP = 15


@dataclass(frozen=True)
class FunctionShare:
    """One function of a profile.

    Attributes:
        frame: the function as the profile names it, ``name (file:line)``.
        self_weight / total_weight: weight of stacks ending in it / holding it.
        self_share / total_share: those weights over the profile's total, 0..1.
    """

    frame: str
    self_weight: int
    total_weight: int
    self_share: float
    total_share: float


@dataclass
class FlameNode:
    """One box of a flame graph: a frame reached by one path from the root.

    Attributes:
        frame: the function ("" for the root).
        weight: weight of every stack through this path.
        self_weight: weight of stacks ending here.
        children: the callees, heaviest first (ties by name: a stable layout).
        delta: with two profiles, B's share minus A's share of this path (−1..1); 0.
    """

    frame: str
    weight: int = 0
    self_weight: int = 0
    children: list[FlameNode] = field(default_factory=list)
    delta: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any], depth: int = 0) -> FlameNode:
        """The inverse of :func:`tree_dict` (a document read back: levels past
        :data:`MAX_KEPT_DEPTH` are dropped). Raises TypeError/ValueError when malformed."""
        kids = (data.get("c") or []) if depth < MAX_KEPT_DEPTH else []
        return cls(
            str(data.get("f", "")),
            int(data.get("w", 0)),
            int(data.get("s", 0)),
            [cls.from_dict(c, depth + 1) for c in kids if isinstance(c, dict)],
            float(data.get("d", 0.0)),
        )


@dataclass(frozen=True)
class ShareChange:
    """One function's change between two profiles (``compare``).

    Attributes:
        frame: the function.
        self_a / self_b / total_a / total_b: its shares in A and B, 0..1.
    """

    frame: str
    self_a: float
    self_b: float
    total_a: float
    total_b: float

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShareChange:
        """From the JSON form (:func:`dataclasses.asdict`). Raises KeyError/ValueError."""
        return cls(
            str(data["frame"]),
            *(float(data[k]) for k in ("self_a", "self_b", "total_a", "total_b")),
        )

    @property
    def self_change(self) -> float:
        """B's self share minus A's (−1..1)."""
        return self.self_b - self.self_a

    @property
    def total_change(self) -> float:
        """B's total share minus A's (−1..1)."""
        return self.total_b - self.total_a


@dataclass(frozen=True)
class ProfileFigures:
    """What ``show --profile`` and the report show of one benchmark's profile.

    Attributes:
        profile: the profile itself (sampler, rate, processes, note).
        functions: every function, heaviest self share first.
        flame: the flame graph's root.
    """

    profile: Profile
    functions: list[FunctionShare]
    flame: FlameNode

    def top_self(self, n: int = TOP) -> list[FunctionShare]:
        """The ``n`` functions with the largest self share."""
        return self.functions[:n]

    def top_total(self, n: int = TOP) -> list[FunctionShare]:
        """The ``n`` functions with the largest total share."""
        return sorted(self.functions, key=lambda f: (-f.total_weight, f.frame))[:n]


def function_shares(stacks: dict[str, int]) -> list[FunctionShare]:
    """Each function's self and total weight and share, heaviest self first.

    Args:
        stacks: weight per collapsed stack (frames root first, ``;``-joined).
    """
    total = sum(stacks.values())
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    for stack, weight in stacks.items():
        frames = stack.split(";")
        own[frames[-1]] = own.get(frames[-1], 0) + weight
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + weight
    scale = 1.0 / total if total else 0.0
    out = [
        FunctionShare(f, own.get(f, 0), w, own.get(f, 0) * scale, w * scale)
        for f, w in inclusive.items()
    ]
    return sorted(out, key=lambda f: (-f.self_weight, -f.total_weight, f.frame))


def flame_tree(stacks: dict[str, int]) -> FlameNode:
    """The flame graph's tree of ``stacks``: one node per distinct path from the root."""
    root = FlameNode("")
    index: dict[tuple[int, str], FlameNode] = {}
    for stack, weight in stacks.items():
        node = root
        node.weight += weight
        for frame in stack.split(";"):
            key = (id(node), frame)
            child = index.get(key)
            if child is None:
                child = index[key] = FlameNode(frame)
                node.children.append(child)
            child.weight += weight
            node = child
        node.self_weight += weight
    _sort(root)
    return root


def _sort(node: FlameNode) -> None:
    """Children heaviest first, recursively (iterative: stacks may be deep)."""
    todo = [node]
    while todo:
        current = todo.pop()
        current.children.sort(key=lambda c: (-c.weight, c.frame))
        todo.extend(current.children)


_LINE = re.compile(r":\d+\)$")


def unlined(stacks: dict[str, int]) -> dict[str, int]:
    """``stacks`` with each frame's line number dropped (``f (a.py:12)`` → ``f (a.py)``),
    equal stacks merged: how two versions of one code base are matched."""
    out: dict[str, int] = {}
    for stack, weight in stacks.items():
        key = ";".join(_LINE.sub(")", f) for f in stack.split(";"))
        out[key] = out.get(key, 0) + weight
    return out


def figures(profile: Profile) -> ProfileFigures:
    """The :class:`ProfileFigures` of ``profile``."""
    return ProfileFigures(profile, function_shares(profile.stacks), flame_tree(profile.stacks))


def share_changes(a: Profile, b: Profile, top: int = TOP) -> list[ShareChange]:
    """The ``top`` functions whose share changed most from ``a`` to ``b`` (by the larger
    of the self and total change, in absolute value; ties by name).

    A function absent from one side has share 0 there. Functions are matched by name
    and file, without the line (:func:`unlined`): an edit above a function moves it.
    """
    fa = {f.frame: f for f in function_shares(unlined(a.stacks))}
    fb = {f.frame: f for f in function_shares(unlined(b.stacks))}
    rows = []
    for frame in set(fa) | set(fb):
        x, y = fa.get(frame), fb.get(frame)
        rows.append(
            ShareChange(
                frame,
                x.self_share if x else 0.0,
                y.self_share if y else 0.0,
                x.total_share if x else 0.0,
                y.total_share if y else 0.0,
            )
        )
    rows.sort(key=lambda r: (-max(abs(r.self_change), abs(r.total_change)), r.frame))
    return rows[:top]


def differential_tree(a: Profile, b: Profile) -> FlameNode:
    """B's flame graph with each box's ``delta``: B's share of that path minus A's
    (a path absent from A has A's share 0), the differential flame graph's colour."""
    tree = flame_tree(unlined(b.stacks))
    total_a, total_b = a.total or 1, b.total or 1
    paths_a: dict[tuple[str, ...], int] = {}
    for stack, weight in unlined(a.stacks).items():
        frames = tuple(stack.split(";"))
        for depth in range(1, len(frames) + 1):
            paths_a[frames[:depth]] = paths_a.get(frames[:depth], 0) + weight
    todo: list[tuple[FlameNode, tuple[str, ...]]] = [(c, (c.frame,)) for c in tree.children]
    while todo:
        node, path = todo.pop()
        node.delta = node.weight / total_b - paths_a.get(path, 0) / total_a
        todo.extend((c, (*path, c.frame)) for c in node.children)
    return tree


def total_share(profile: Profile, function: str) -> float:
    """The share (0..1) of ``profile``'s weight in stacks through a frame whose function
    name (the part before `` (``) is ``function``; 0 for an empty profile."""
    total = profile.total
    hits = sum(w for s, w in profile.stacks.items() if function in _names(s.split(";")))
    return hits / total if total else 0.0


def _names(frames: Iterable[str]) -> set[str]:
    """The function names of ``frames`` (``name (file:line)`` → ``name``)."""
    return {f.split(" (", 1)[0] for f in frames}


def profiled(benches: Iterable[Benchmark]) -> list[tuple[str, ProfileFigures]]:
    """(label, figures) of every benchmark with a non-empty profile, in file order."""
    return [(b.label, figures(b.profile)) for b in benches if b.profile and b.profile.total]


#: a differential tree keeps boxes of at least this share of B (what a 1000-pixel graph
#: can draw) and this many levels, so a comparison document stays small
MIN_KEPT_SHARE = 1 / 3000
MAX_KEPT_DEPTH = 80


def profile_changes(a: Iterable[Benchmark], b: Iterable[Benchmark]) -> list[dict[str, Any]]:
    """The benchmarks profiled in both runs (matched by id), each as the JSON record a
    comparison document keeps: ``id``, ``label``, ``kind``, ``total_a``, ``total_b``,
    ``changes`` (:func:`share_changes`, as dicts) and ``tree`` (the differential tree,
    :func:`tree_dict`). Profiles of different kinds (time, instructions) are not compared.
    """
    before = {x.id: x.profile for x in a if x.profile is not None and x.profile.total}
    out = []
    for bench in b:
        pa, pb = before.get(bench.id), bench.profile
        if pa is None or pb is None or not pb.total or pa.kind != pb.kind:
            continue
        out.append(
            {
                "id": bench.id,
                "label": bench.label,
                "kind": pb.kind,
                "total_a": pa.total,
                "total_b": pb.total,
                "changes": [asdict(c) for c in share_changes(pa, pb)],
                "tree": tree_dict(differential_tree(pa, pb)),
            }
        )
    return out


def tree_dict(root: FlameNode) -> dict[str, Any]:
    """A flame tree as nested JSON (``f`` frame, ``w`` weight, ``s`` self weight, ``d``
    delta, ``c`` children), boxes under :data:`MIN_KEPT_SHARE` of the root and levels
    past :data:`MAX_KEPT_DEPTH` left out (their weight stays in their parent's ``w``)."""
    floor = root.weight * MIN_KEPT_SHARE

    def walk(node: FlameNode, depth: int) -> dict[str, Any]:
        kids = [c for c in node.children if c.weight >= floor] if depth < MAX_KEPT_DEPTH else []
        return {
            "f": node.frame,
            "w": node.weight,
            "s": node.self_weight,
            "d": round(node.delta, 6),
            "c": [walk(c, depth + 1) for c in kids],
        }

    return walk(root, 0)
