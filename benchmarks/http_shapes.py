"""perflab http's load shapes and timeline: a ramp's capacity against a stepped sweep,
and what the timeline costs (issue 30, "Shapes" and "Cost of the timeline").

Usage: python benchmarks/http_shapes.py [--rounds 5] [--rss-seconds 600]
(use a release build of perflab._core, as `make bench` does.) Also run by
benchmarks/http.py. Writes benchmarks/results/http_shapes.md. Measured here, in one run:

* **capacity**: `perflab serve --serialize 0.2ms --threads 2` (one global lock held
  0.2 ms per request: at most 5,000 responses/s, less when the 2 cores are shared with
  the load generator), each run on a fresh server. A ramp `--rate 1k..10k/20s` gives the
  capacity read off its timeline (the plateau after the knee, docs/http.md "Load shapes
  and the timeline"); a stepped sweep `--rate 2500:6000:250 --duration 4s` gives the
  heaviest ok step; `--rounds` pairs. Verdict by one rule: **met** when the median of
  the rounds' ratios ramp ÷ sweep lies within 1 ± 0.10.
* **CPU per request of the timeline**: `--rate 3000 --duration 10s` with `--interval
  1s` and with `--interval 0` (no timeline), alternating in random order per round,
  engine-thread CPU ÷ requests; the ratio with/without with its 95% paired bootstrap CI
  (by round). Verdict by the ratio rule of benchmarks/common.py, target ≤ 1.05.
* **memory**: the RSS of one `--rate 1k~500/60s` (sine) run of `--rss-seconds`,
  sampled every 10 s; growth = last sample ÷ the first after 20 s − 1. **met** when ≤ 5%.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    PERFLAB,
    RATIO_RULE,
    machine,
    perflab_http_document,
    perflab_serve,
    ratio_verdict,
    sample_rss,
    write_section,
)

from perflab.analyze.http import summarize_results  # noqa: E402
from perflab.analyze.stats import block_ratio_ci  # noqa: E402
from perflab.model import Results  # noqa: E402

SERVER = ("--serialize", "0.2ms", "--threads", "2")
RAMP, SWEEP, SWEEP_STEP_S = "1k..10k/20s", "2500:6000:250", "4s"
COST_RATE, COST_S = 3000, 10


def run(url: str, *argv: str) -> Any:
    """One `perflab http` run (quiet, one engine thread) → its results (model)."""
    return Results.from_dict(perflab_http_document(url, *argv))


def capacities() -> dict[str, Any]:
    """The ramp's capacity estimate and the stepped sweep's, each on a fresh server
    (the ramp's: its step summary's ``ramp``)."""
    with perflab_serve(*SERVER) as url:
        ramp = summarize_results(run(url, "--rate", RAMP)).steps[0]
    with perflab_serve(*SERVER) as url:
        sweep = summarize_results(run(url, "--rate", SWEEP, "--duration", SWEEP_STEP_S))
    return {"ramp": ramp.ramp, "sweep": sweep}


def cost(rounds: int) -> dict[str, list[float]]:
    """Engine CPU per request with and without the timeline, one of each per round."""
    out: dict[str, list[float]] = {"timeline": [], "none": []}
    with perflab_serve() as url:
        for _ in range(rounds):
            arms = [("timeline", "1s"), ("none", "0")]
            random.shuffle(arms)
            for name, interval in arms:
                step = (
                    run(
                        url,
                        "--rate",
                        str(COST_RATE),
                        "--duration",
                        f"{COST_S}s",
                        "--interval",
                        interval,
                    )
                    .benchmarks[0]
                    .steps[0]
                )
                out[name].append(sum(step.thread_cpu_s) / max(1, step.ok_responses + step.failures))
    return out


def rss(seconds: int) -> list[tuple[float, int]]:
    """(s since start, RSS bytes) of one shaped `perflab http` run of ``seconds``."""
    with perflab_serve() as url, tempfile.TemporaryDirectory() as tmp:
        return sample_rss(
            [*PERFLAB, "http", url, "--rate", "1k~500/60s", "--threads", "1"]
            + ["--duration", f"{seconds}s", "--warmup", "0s", "--quiet"]
            + ["--json", str(Path(tmp) / "r.json")]
        )


def capacity_section(pairs: list[dict[str, Any]]) -> str:
    lines = [
        "### A ramp's capacity against a stepped sweep",
        "",
        f"Target `perflab serve {' '.join(SERVER)}`, a fresh one per run; ramp `--rate "
        f"{RAMP}`; sweep `--rate {SWEEP} --duration {SWEEP_STEP_S}`; one engine thread; "
        f"{len(pairs)} rounds (ramp, then sweep).",
        "",
        "| round | ramp estimate | knee | last served in full | median after knee | "
        "p99 before → after knee | sweep capacity (heaviest ok step) | sweep's saturated "
        "steps' median achieved | ramp ÷ sweep |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ratios = []
    for i, c in enumerate(pairs, 1):
        ramp, sweep = c["ramp"], c["sweep"]
        best = sweep.capacity.step.offered_rate if sweep.capacity else None
        sat = [s.achieved_rate for s in sweep.steps if s.verdict == "saturated"]
        if ramp is None or best is None:
            why = "no ramp estimate" if ramp is None else "no ok sweep step"
            lines.append(f"| {i} | {why} | — | — | — | — | — | — | — |")
            continue
        ratios.append(ramp.estimate_rate / best)
        lines.append(
            f"| {i} | {ramp.estimate_rate:,.0f}/s | {ramp.knee_t_s} s | "
            f"{ramp.tracked_rate or 0:,.0f}/s | {ramp.plateau_rate or 0:,.0f}/s | "
            f"{(ramp.p99_before_us or 0) / 1e3:,.1f} → {(ramp.p99_after_us or 0) / 1e3:,.0f} ms | "
            f"{best:,.0f}/s | {sorted(sat)[len(sat) // 2] if sat else 0:,.0f}/s | "
            f"{ratios[-1]:.3f} |"
        )
    lines.append("")
    if not ratios:
        lines.append("**not met**: no capacity from the ramp or the sweep")
        return "\n".join(lines)
    median = statistics.median(ratios)
    lines.append(
        f"- median ramp ÷ sweep = {median:.3f}: "
        f"**{'met' if abs(median - 1) <= 0.10 else 'not met'}** (rule: within ±10%)"
    )
    return "\n".join(lines)


def cost_section(cpu: dict[str, list[float]]) -> str:
    est = block_ratio_ci(
        cpu["timeline"],
        list(range(len(cpu["timeline"]))),
        cpu["none"],
        list(range(len(cpu["none"]))),
    )
    verdict = ratio_verdict(est.ci_low, est.ci_high, at_most=1.05)
    med = {k: sorted(v)[len(v) // 2] for k, v in cpu.items()}
    return "\n".join(
        [
            "### CPU per request of the timeline",
            "",
            f"`perflab serve` (no delay), `--rate {COST_RATE} --duration {COST_S}s`, "
            f"{len(cpu['none'])} rounds, arms in random order per round; engine-thread CPU "
            "÷ completed requests.",
            "",
            "| arm | median CPU/request | runs (µs) |",
            "|---|---:|---|",
            *(
                f"| {k} | {med[k] * 1e6:.2f} µs | {', '.join(f'{x * 1e6:.2f}' for x in v)} |"
                for k, v in cpu.items()
            ),
            "",
            f"- with ÷ without the timeline: {est.value:.3f} (95% CI {est.ci_low:.3f}–{est.ci_high:.3f}): "
            f"**{verdict}** (target ≤ 1.05; {RATIO_RULE})",
        ]
    )


def rss_section(samples: list[tuple[float, int]], seconds: int) -> str:
    kept = [(t, b) for t, b in samples if t >= 20]
    if len(kept) < 2:
        return "### Memory\n\nnot enough RSS samples: **not met**"
    growth = kept[-1][1] / kept[0][1] - 1
    return "\n".join(
        [
            "### Memory over a shaped run",
            "",
            f"`--rate 1k~500/60s --duration {seconds}s --interval 1s`, RSS every 10 s: "
            + ", ".join(f"{b / 2**20:.1f}" for _, b in samples)
            + " MiB.",
            "",
            f"- growth from {kept[0][0]:.0f} s to the end: {growth:+.2%}: "
            f"**{'met' if growth <= 0.05 else 'not met'}** (rule: ≤ 5%)",
        ]
    )


def shapes_text(rounds: int, rss_seconds: int) -> str:
    """The whole section (Markdown), measured now."""
    caps = [capacities() for _ in range(rounds)]
    print(capacity_section(caps), flush=True)
    cpu = cost(rounds)
    print(json.dumps(cpu), flush=True)
    samples = rss(rss_seconds)
    print(samples, flush=True)
    return "\n\n".join(
        [
            "## perflab http: load shapes and the timeline (issue 30)",
            f"Machine: {machine()}. A shared 2-core VM: the server and the load generator "
            "share the cores, so the server's capacity is below its 5,000/s lock limit.",
            f"Command: `python benchmarks/http_shapes.py --rounds {rounds} --rss-seconds "
            f"{rss_seconds}`.",
            capacity_section(caps),
            cost_section(cpu),
            rss_section(samples, rss_seconds),
        ]
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rss-seconds", type=int, default=600)
    args = parser.parse_args(argv)
    write_section("http_shapes", shapes_text(args.rounds, args.rss_seconds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
