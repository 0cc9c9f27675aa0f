"""The examples' real workloads: a cache (examples/cache.py) and queues (examples/queues.py).

Runs, in one go on this machine:
  * cache.py: dict, functools.lru_cache, cachetools, memcached and Redis holding
    1k, 10k, 100k and 1M Northwind rows; one put and one get per call; serially
    and on 8 threads; ops/s, p50/p99 per operation, memory per key, allocations;
  * queues.py: queue.Queue, deque, asyncio.Queue, multiprocessing.Queue and Redis
    lists/streams, with and without transactions or acknowledgements, 1 and 4
    producers; messages per second.
The servers are started and stopped by the examples themselves.

The verdicts are printed from the figures by one rule: a ratio whose 95% CI
contains 1 is a tie; otherwise the claim is met when the whole CI lies on its
side of 1 (see common.ratio_verdict).

Usage: python benchmarks/workloads.py [--quick]   (--quick: n = 1,000 only, short runs)
Writes benchmarks/results/workloads.md and docs/workloads-cache.png, docs/workloads-queues.png.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, ROOT, machine, ratio_verdict, write_section  # noqa: E402

EXAMPLES = ROOT / "examples"
RUN_OPTIONS = [
    "--min-processes",
    "3",
    "--max-processes",
    "3",
    "--process-time",
    "100ms",
    "--budget",
    "10s",
    "--timeout",
    "120s",
    "--quiet",
]
QUICK_OPTIONS = [
    "--min-processes",
    "2",
    "--max-processes",
    "2",
    "--process-time",
    "30ms",
    "--budget",
    "2s",
    "--quiet",
]
CACHES = ["dict", "lru_cache", "cachetools", "memcached", "redis"]


def run_example(script: str, env: dict[str, str], options: list[str], out: Path) -> list[dict]:
    """Run examples/SCRIPT with perflab run OPTIONS; the results file's benchmarks."""
    cmd = [PYTHON, str(EXAMPLES / script), *options, "--json", str(out)]
    print("$", " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True, env={**os.environ, **env}, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())["benchmarks"]


def _latency_per_op(b: dict, key: str) -> float:
    """Median over processes of a call-latency percentile, per operation, seconds."""
    values = [p["latency_ns"][key] for p in b["processes"] if p.get("latency_ns", {}).get(key)]
    return statistics.median(values) * 1e-9 / b.get("ops_per_call", 1) if values else float("nan")


def _fmt_rate(x: float) -> str:
    for scale, unit in ((1e6, "M"), (1e3, "k")):
        if x >= scale:
            return f"{x / scale:.3g} {unit}/s"
    return f"{x:.3g} /s"


def _fmt_time(s: float) -> str:
    if s != s:
        return "–"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def _fmt_bytes(b: float | None) -> str:
    if b is None:
        return "–"
    return f"{b / 1024:.3g} KiB" if b >= 10_240 else f"{b:.0f} B"


def cache_section(benches: list[dict]) -> tuple[str, list[str]]:
    """Markdown tables of the cache run (one per size) and the verdict lines."""
    by = {(b["name"], b["params"]["n"], b["threads"]): b for b in benches}
    sizes = sorted({n for _, n, _ in by})
    lines, verdicts = [], []
    for n in sizes:
        lines += [
            f"**n = {n:,} keys**",
            "",
            "| cache | ops/s, 1 thread | ops/s, 8 threads | × 1 thread | p50 / p99 per op "
            "(1 thread) | memory/key | alloc/op | blocks/op |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name in CACHES:
            one, eight = by.get((name, n, 1)), by.get((name, n, 8))
            if not one or one["error"] or not eight or eight["error"]:
                lines.append(
                    f"| {name} | failed: {(one or eight or {}).get('error')} | | | | | | |"
                )
                continue
            s1, s8 = one["summary"], eight["summary"]
            mem = s1["metrics"].get("memory/key")
            lines.append(
                f"| {name} | {_fmt_rate(1 / s1['median_s'])} | {_fmt_rate(1 / s8['median_s'])} "
                f"| {s1['median_s'] / s8['median_s']:.2f}× "
                f"| {_fmt_time(_latency_per_op(one, 'p50'))} / "
                f"{_fmt_time(_latency_per_op(one, 'p99'))} "
                f"| {_fmt_bytes(mem)} | {_fmt_bytes(s1['alloc_peak_bytes'])} "
                f"| {format(s1['alloc_blocks'], 'g') if s1['alloc_blocks'] is not None else '–'} |"
            )
        lines.append("")
        for server in ("memcached", "redis"):
            b = by.get((server, n, 1))
            if b and b["summary"].get("ratio_baseline"):
                ratio, low, high = b["summary"]["ratio_baseline"]
                verdict = ratio_verdict(low, high, at_least=1.0)
                verdicts.append(
                    f"- n = {n:,}: {server} / dict time per op = {ratio:.0f}× "
                    f"(95% CI {low:.0f}–{high:.0f}): dict faster — **{verdict}**"
                )
    return "\n".join(lines), verdicts


def queue_section(benches: list[dict]) -> tuple[str, list[str]]:
    """A Markdown table of messages per second, 1 and 4 producers, and the verdict lines."""
    by = {(b["name"], b["params"]["producers"]): b for b in benches}
    names = list(dict.fromkeys(b["name"] for b in benches))
    counts = sorted({p for _, p in by})
    head = " | ".join(f"msg/s, {p} producer{'s' if p > 1 else ''} ± CI" for p in counts)
    lines = [f"| queue | {head} | alloc/msg |", "|---|" + "---:|" * (len(counts) + 1)]
    verdicts = []
    for name in names:
        cells = []
        for p in counts:
            b = by.get((name, p))
            if not b or b["error"]:
                cells.append("failed")
                continue
            s = b["summary"]
            half = (s["ci_high_s"] - s["ci_low_s"]) / 2 / s["median_s"]
            cells.append(f"{_fmt_rate(1 / s['median_s'])} ± {half:.0%}")
        alloc = by.get((name, counts[0]), {}).get("summary", {}).get("alloc_peak_bytes")
        lines.append(f"| {name} | {' | '.join(cells)} | {_fmt_bytes(alloc)} |")
    for plain, tx in (("redis-list", "redis-list-tx"), ("redis-stream", "redis-stream-ack")):
        for p in counts:
            a, b = by.get((plain, p)), by.get((tx, p))
            if a and b and not a["error"] and not b["error"]:
                ratio, low, high = _ratio(b, a)
                verdicts.append(
                    f"- {p} producer(s): {tx} / {plain} time per message = "
                    f"{ratio:.2f}× (95% CI {low:.2f}–{high:.2f}): the extra "
                    f"guarantee costs time — "
                    f"**{ratio_verdict(low, high, at_least=1.0)}**"
                )
    return "\n".join(lines), verdicts


def _ratio(num: dict, den: dict) -> tuple[float, float, float]:
    """Time-per-op ratio num/den with perflab's bootstrap CI (hierarchical, 95%, seeded)."""
    import numpy as np

    from perflab.analyze import stats
    from perflab.analyze.run.summary import timing_groups
    from perflab.model import Benchmark

    est = stats.ratio_ci(
        timing_groups(Benchmark.from_dict(num)),
        timing_groups(Benchmark.from_dict(den)),
        0.95,
        2000,
        np.random.default_rng(0),
    )
    return est.value, est.ci_low, est.ci_high


def charts(cache: list[dict], queues: list[dict]) -> list[str]:
    """PNG charts into docs/: cache ops/s vs n, queue messages/s; their Markdown links."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, name in enumerate(CACHES):
        for threads, style in ((1, "-"), (8, "--")):
            pts = sorted(
                (b["params"]["n"], 1 / b["summary"]["median_s"])
                for b in cache
                if b["name"] == name and b["threads"] == threads and not b["error"]
            )
            if pts:
                ax.plot(
                    *zip(*pts),
                    style,
                    marker="o",
                    color=f"C{i}",
                    label=f"{name}, {threads} thread{'s' if threads > 1 else ''}",
                )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="keys in the cache (n)",
        ylabel="operations/s (put or get)",
        title="examples/cache.py",
    )
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "workloads-cache.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    names = list(dict.fromkeys(b["name"] for b in queues))
    counts = sorted({b["params"]["producers"] for b in queues})
    width = 0.8 / len(counts)
    for j, p in enumerate(counts):
        rates = [
            next(
                (
                    1 / b["summary"]["median_s"]
                    for b in queues
                    if b["name"] == name and b["params"]["producers"] == p and not b["error"]
                ),
                0,
            )
            for name in names
        ]
        ax.bar(
            [i + j * width for i in range(len(names))],
            rates,
            width,
            label=f"{p} producer{'s' if p > 1 else ''}",
        )
    ax.set_xticks(
        [i + width * (len(counts) - 1) / 2 for i in range(len(names))],
        names,
        rotation=30,
        ha="right",
        fontsize=8,
    )
    ax.set(yscale="log", ylabel="messages/s", title="examples/queues.py")
    ax.legend()
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "workloads-queues.png", dpi=110)
    plt.close(fig)
    return [
        "![cache ops/s](../docs/workloads-cache.png)",
        "![queue messages/s](../docs/workloads-queues.png)",
    ]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    options = QUICK_OPTIONS if quick else RUN_OPTIONS
    sizes = "1000" if quick else "1000,10000,100000,1000000"
    with tempfile.TemporaryDirectory() as tmp:
        cache = run_example(
            "cache.py", {"PERFLAB_CACHE_SIZES": sizes}, options, Path(tmp) / "cache.json"
        )
        queues = run_example("queues.py", {}, options, Path(tmp) / "queues.json")
    cache_md, cache_verdicts = cache_section(cache)
    queue_md, queue_verdicts = queue_section(queues)
    links = charts(cache, queues)
    opts = " ".join(options)
    text = f"""## Workloads: a cache and queues with real servers (examples/cache.py, queues.py)

Machine: {machine()}.

Commands: `PERFLAB_CACHE_SIZES={sizes} python examples/cache.py {opts}` and
`python examples/queues.py {opts}` (this section: `python benchmarks/workloads.py`).
Each call of cache.py does one put and one get (`ops=2`), of queues.py moves 100
messages from the producers to one consumer (`ops=100`); every figure is per operation.
examples/cache.md and examples/queues.md read these results.

### Cache: put then get with n keys held

{cache_md}
{links[0]}

### Queues: messages per second

{queue_md}

{links[1]}

### Verdicts

Rule: a ratio whose 95% CI contains 1 is a tie; otherwise the claim is met when
the whole CI lies on its side of 1.

{chr(10).join(cache_verdicts + queue_verdicts)}
"""
    write_section("workloads", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
