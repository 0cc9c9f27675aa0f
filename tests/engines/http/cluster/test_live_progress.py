"""Live progress of distributed load: agents' snapshots merged exactly and drawn as
`perflab http` draws them (no Ray needed)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from perflab import _core
from tests.conftest import http_args

#: Three real steps' latency histograms (V2-encoded), as agents' snapshots would hold.
GOLDEN_STEPS = Path(__file__).parents[3] / "golden" / "data" / "http-open.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _agent_snapshots() -> list[tuple[str, dict[str, Any]]]:
    steps = json.loads(GOLDEN_STEPS.read_text())["benchmarks"][0]["steps"]
    return [
        (
            f"agent {k + 1} (node-{k + 1})",
            {
                "in_warmup": False,
                "wall_s": 1.0 + k / 10,
                "achieved_rate": 100.0 * (k + 1),
                "failures": k,
                "p99_us": s["latency"]["p99_us"],
                "latency_b64": s["latency"]["encoded"],
            },
        )
        for k, s in enumerate(steps)
    ]


def _drawn(draw: Any) -> str:
    """What ``perflab http``'s live progress draws on a 200-column terminal while
    ``draw(live)`` feeds it, escape sequences removed."""
    from rich.console import Console

    from perflab.commands.http import _Live
    from perflab.commands.options import http_plan

    plan = http_plan(
        http_args("http://127.0.0.1:9/", "--rate", "600,1200", "--duration", "2s"), check=False
    )
    console = Console(file=io.StringIO(), force_terminal=True, width=200, color_system=None)
    with _Live(plan, console) as live:
        draw(live)
    return ANSI.sub("", console.file.getvalue())


def test_live_progress_merges_the_agents_snapshots_exactly() -> None:
    from perflab.engines.http.cluster.merge import merge_snapshots

    snaps = _agent_snapshots()
    merged = merge_snapshots(snaps)
    assert merged is not None
    assert (merged["achieved_rate"], merged["failures"], merged["wall_s"]) == (600.0, 3, 1.2)
    union = _core.hdr_merge([s["latency_b64"] for _, s in snaps])
    assert merged["p99_us"] == union["p99_us"]  # of the merged histogram, not a mean of p99s
    slowest_label, slowest = max(snaps, key=lambda x: x[1]["p99_us"])
    assert merged["slowest"] == f"{slowest_label} p99 {slowest['p99_us'] / 1e3:,.2f} ms"
    assert merge_snapshots(
        [(label, {**s, "in_warmup": label == snaps[1][0]}) for label, s in snaps]
    )["in_warmup"]
    assert merge_snapshots([]) is None
    assert merge_snapshots([(snaps[0][0], {**snaps[0][1], "latency_b64": ""})])["p99_us"] == 0


def test_live_progress_draws_the_merged_rate_p99_and_slowest_agent() -> None:
    from perflab.engines.http.cluster.merge import merge_snapshots

    merged = merge_snapshots(_agent_snapshots())
    assert merged is not None
    text = _drawn(lambda live: live.update(1, 2, merged))
    p99_ms = merged["p99_us"] / 1e3
    assert "step 2/2 1,200/s" in text
    assert f"achieved 600/s, 3 failed, p99 {p99_ms:,.2f} ms, slowest {merged['slowest']}" in text
    # one machine: the same line without a slowest agent; warmup says so
    one = {k: v for k, v in merged.items() if k != "slowest"}
    text = _drawn(lambda live: live.update(0, 2, one))
    assert f"achieved 600/s, 3 failed, p99 {p99_ms:,.2f} ms" in text and "slowest" not in text
    assert "warmup" in _drawn(lambda live: live.update(0, 2, {**merged, "in_warmup": True}))
