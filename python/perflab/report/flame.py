"""Static SVG flame graphs (Brendan Gregg's layout) for the HTML report: no script, so
the page's Content-Security-Policy stays ``default-src 'none'``.

Each box is one function reached by one path from the root; its width is its share of
the samples (or instructions), callers below callees, siblings heaviest first. A box's
``<title>`` (the browser's tooltip, no script) holds the full frame and its shares; a
box too narrow for its name shows none. In a differential flame graph
(:func:`differential_svg`) the boxes are B's and the colour is the change of the path's
share from A to B: red grew, blue shrank, white unchanged (Gregg's "differential flame
graphs", 2014).
"""

from __future__ import annotations

import zlib

from perflab.analyze.profile import FlameNode
from perflab.report import escape

WIDTH = 1000
ROW = 16
#: boxes narrower than this many pixels are left out (their weight stays in the parent)
MIN_WIDTH = 0.3
#: rows drawn at most (deeper frames are cut, with a note in the caption's tooltip)
MAX_ROWS = 80
#: boxes drawn at most, heaviest paths first (a page stays small)
MAX_BOXES = 3000
CHAR_PX = 6.6
FONT = "font-family:monospace;font-size:11px"


def _warm(frame: str) -> str:
    """A stable warm colour for ``frame`` (the same function, the same colour)."""
    h = zlib.crc32(frame.encode())
    return f"rgb({205 + h % 50},{80 + (h >> 8) % 130},{(h >> 16) % 55})"


def _diverging(delta: float, scale: float) -> str:
    """Red for a grown share, blue for a shrunk one, white for none (``scale``: the
    largest |delta| of the graph, the full colour)."""
    x = max(-1.0, min(1.0, delta / scale)) if scale else 0.0
    fade = int(255 * (1 - abs(x)))
    return f"rgb(255,{fade},{fade})" if x > 0 else f"rgb({fade},{fade},255)"


def _boxes(root: FlameNode) -> list[tuple[FlameNode, float, int]]:
    """(node, x in pixels, depth) of every box to draw, parents before children."""
    if root.weight <= 0:
        return []
    px = WIDTH / root.weight
    out: list[tuple[FlameNode, float, int]] = []
    todo: list[tuple[FlameNode, float, int]] = [(root, 0.0, 0)]
    while todo and len(out) < MAX_BOXES:
        node, x, depth = todo.pop(0)
        out.append((node, x, depth))
        if depth + 1 >= MAX_ROWS:
            continue
        cx = x
        for child in node.children:
            if child.weight * px >= MIN_WIDTH:
                todo.append((child, cx, depth + 1))
            cx += child.weight * px
    return out


def _svg(root: FlameNode, title: str, colour: object, unit: str) -> str:
    """The SVG of ``root``'s tree (``colour(node) -> css colour``)."""
    boxes = _boxes(root)
    depth = max((d for _, _, d in boxes), default=0) + 1
    height = depth * ROW + 4
    total = root.weight or 1
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="flame" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        f'style="{FONT};max-width:100%;height:auto">',
        f"<title>{escape.html(title)}</title>",
    ]
    for node, x, d in boxes:
        w = node.weight * WIDTH / total
        y = height - (d + 1) * ROW
        name = node.frame.partition(" (")[0] if node.frame else "all"
        share = node.weight / total
        tip = f"{node.frame or 'all'}: {share:.1%} of {unit}"
        if node.frame and node.self_weight:
            tip += f", {node.self_weight / total:.1%} in its own code"
        if node.delta:
            tip += f", {node.delta * 100:+.1f} pt from A"
        fill = "rgb(230,230,230)" if not node.frame else colour(node)  # type: ignore[operator]
        parts.append(
            f'<g class="frame"><title>{escape.html(tip)}</title>'
            f'<rect x="{x:.2f}" y="{y}" width="{max(w - 0.4, 0.1):.2f}" height="{ROW - 1}" '
            f'fill="{fill}" stroke="rgb(190,190,190)" stroke-width="0.4" rx="1"/>'
        )
        chars = int((w - 6) / CHAR_PX)
        if chars >= 3:
            label = name if len(name) <= chars else name[: chars - 2] + ".."
            parts.append(f'<text x="{x + 3:.2f}" y="{y + ROW - 4}">{escape.html(label)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def flame_svg(root: FlameNode, title: str, unit: str = "samples") -> str:
    """A flame graph of ``root`` (:func:`perflab.analyze.profile.flame_tree`) as an SVG
    element; ``title``: its accessible name; ``unit``: what the weights count."""
    return _svg(root, title, lambda n: _warm(n.frame), unit)


def differential_svg(root: FlameNode, title: str, unit: str = "samples") -> str:
    """A differential flame graph: B's tree with each box's ``delta``
    (:func:`perflab.analyze.profile.differential_tree`) as its colour."""
    scale = _max_delta(root)
    return _svg(root, title, lambda n: _diverging(n.delta, scale), unit)


def _max_delta(root: FlameNode) -> float:
    """The largest |delta| of the tree (the full colour)."""
    best, todo = 0.0, [root]
    while todo:
        node = todo.pop()
        best = max(best, abs(node.delta))
        todo.extend(node.children)
    return best
