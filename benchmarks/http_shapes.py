"""perflab http's load shapes and timeline: a ramp's capacity against a stepped sweep,
and what the timeline costs (issue 30, "Shapes" and "Cost of the timeline").

Usage: python benchmarks/http_shapes.py [--rounds 5] [--rss-seconds 600]
[--only capacity|cost|rss] (use a release build of perflab._core, as `make bench` does.)
Also run by benchmarks/http.py. Writes benchmarks/results/http_shapes.md; with `--only`,
measures that stage alone and replaces its subsection of that file (each subsection
names the command and machine that measured it). Measured here, in one run:

* **capacity**: `perflab serve --serialize 0.2ms --threads 2` (one global lock held
  0.2 ms per request: at most 5,000 responses/s, less when the 2 cores are shared with
  the load generator), each run on a fresh server. A ramp `--rate 1k..10k/20s` gives the
  capacity read off its timeline (the median achieved rate of the 3 intervals from the
  knee on, docs/http.md "Load shapes and the timeline"); a stepped sweep `--rate
  2500:6000:250 --duration 4s` gives the heaviest ok step; `--rounds` pairs. Both
  estimate the highest rate the server serves in full. Verdict by one rule: **met** when the median of
  the rounds' ratios ramp ÷ sweep lies within 1 ± 0.10.
* **CPU per request of the timeline**: `--rate 3000 --duration 10s` with `--interval
  1s` and with `--interval 0` (no timeline), alternating in random order per round,
  engine-thread CPU ÷ requests; the ratio with/without with its 95% paired bootstrap CI
  (by round). Verdict by the ratio rule of benchmarks/common.py, target ≤ 1.05.
* **memory**: the RSS of one `--rate 1k~500/60s` (sine) run of `--rss-seconds`,
  sampled every 10 s; growth = last sample ÷ the first after 20 s − 1. **met** when ≤ 5%.
  A run without the timeline (`--interval 0`) goes at the same time as the control.
"""

from __future__ import annotations

import argparse
import os
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
    RESULTS,
    machine,
    perflab_http_document,
    perflab_serve,
    ratio_verdict,
    sample_rss,
    write_section,
)

from perflab.analyze.http import (  # noqa: E402
    GENERATOR_LIMITED,
    OK,
    first_saturated,
    saturation_reasons,
    summarize_results,
)
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
    (the ramp's: its step summary's ``ramp``), with the load average before each."""
    load = [os.getloadavg()[0]]
    with perflab_serve(*SERVER) as url:
        ramp = summarize_results(run(url, "--rate", RAMP)).steps[0]
    load.append(os.getloadavg()[0])
    with perflab_serve(*SERVER) as url:
        sweep = summarize_results(run(url, "--rate", SWEEP, "--duration", SWEEP_STEP_S))
    return {"ramp": ramp.ramp, "sweep": sweep, "load": load}


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


def rss(seconds: int) -> dict[str, list[tuple[float, int]]]:
    """(s since start, RSS bytes) of two shaped `perflab http` runs of ``seconds`` at
    once, each against its own `perflab serve`: with the timeline (``"timeline"``,
    ``--interval 1s``) and without (``"none"``, ``--interval 0``: the control)."""
    import threading

    out: dict[str, list[tuple[float, int]]] = {}

    def one(name: str, interval: str) -> None:
        with perflab_serve() as url, tempfile.TemporaryDirectory() as tmp:
            out[name] = sample_rss(
                [*PERFLAB, "http", url, "--rate", "1k~500/60s", "--threads", "1"]
                + ["--duration", f"{seconds}s", "--warmup", "0s", "--quiet"]
                + ["--interval", interval, "--json", str(Path(tmp) / "r.json")]
            )

    arms = [threading.Thread(target=one, args=a) for a in (("timeline", "1s"), ("none", "0"))]
    for t in arms:
        t.start()
    for t in arms:
        t.join()
    return out


def served_in_full(sweep: Any) -> float | None:
    """The offered rate of the heaviest sweep step below the first saturated one that
    the server served in full: ok, or generator-limited (perflab late) with no sign of
    saturation in its own figures. None when there is none."""
    knee = first_saturated(sweep.steps)
    kept = [
        s
        for s in sweep.steps
        if (knee is None or s.load < knee.load)
        and (
            s.verdict == OK or (s.verdict == GENERATOR_LIMITED and not saturation_reasons(s, None))
        )
    ]
    return max((s.offered_rate for s in kept), default=None)


def capacity_section(pairs: list[dict[str, Any]], command: str) -> str:
    lines = [
        "### A ramp's capacity against a stepped sweep",
        "",
        f"Command: `{command}`. Machine: {machine()}.",
        "",
        f"Target `perflab serve {' '.join(SERVER)}`, a fresh one per run; ramp `--rate "
        f"{RAMP}`; sweep `--rate {SWEEP} --duration {SWEEP_STEP_S}`; one engine thread; "
        f"{len(pairs)} rounds (ramp, then sweep). Both estimate the highest rate the "
        "server serves in full: the sweep its heaviest ok step, the ramp the median "
        "achieved rate of the 3 intervals from its knee on (docs/http.md).",
        "",
        "| round | load avg (ramp, sweep) | ramp estimate | knee | last served in full | "
        "median after knee | p99 before → after knee | sweep capacity (heaviest ok step) | "
        "sweep's saturated steps' median achieved | ramp ÷ sweep | sweep served in full, "
        "perflab late or not | ramp ÷ that |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lenient = []
    ratios = []
    for i, c in enumerate(pairs, 1):
        ramp, sweep = c["ramp"], c["sweep"]
        best = sweep.capacity.step.offered_rate if sweep.capacity else None
        sat = [s.achieved_rate for s in sweep.steps if s.verdict == "saturated"]
        load = " / ".join(f"{x:.1f}" for x in c.get("load", []))
        if ramp is None or best is None:
            why = "no ramp estimate" if ramp is None else "no ok sweep step"
            counts = {v: sum(s.verdict == v for s in sweep.steps) for v in ("ok", "saturated")}
            limited = len(sweep.steps) - sum(counts.values())
            why += f" ({counts['ok']} ok, {counts['saturated']} saturated, {limited} generator-limited)"
            estimate = "—" if ramp is None else f"{ramp.estimate_rate:,.0f}/s"
            full = served_in_full(sweep)
            tail = "— | — |"
            if ramp is not None and full:
                lenient.append(ramp.estimate_rate / full)
                tail = f"{full:,.0f}/s | {lenient[-1]:.3f} |"
            lines.append(f"| {i} | {load} | {estimate} | {why} | — | — | — | — | — | — | {tail}")
            continue
        ratios.append(ramp.estimate_rate / best)
        full = served_in_full(sweep)
        if full:
            lenient.append(ramp.estimate_rate / full)
        lines.append(
            f"| {i} | {load} | {ramp.estimate_rate:,.0f}/s | {ramp.knee_t_s} s | "
            f"{ramp.tracked_rate or 0:,.0f}/s | {ramp.plateau_rate or 0:,.0f}/s | "
            f"{(ramp.p99_before_us or 0) / 1e3:,.1f} → {(ramp.p99_after_us or 0) / 1e3:,.0f} ms | "
            f"{best:,.0f}/s | {sorted(sat)[len(sat) // 2] if sat else 0:,.0f}/s | "
            f"{ratios[-1]:.3f} | {full or 0:,.0f}/s | "
            + (f"{lenient[-1]:.3f} |" if full else "— |")
        )
    lines.append("")
    if not ratios:
        lines.append("**not met**: no capacity from the ramp or the sweep")
        return "\n".join(lines)
    median = statistics.median(ratios)
    lines.append(
        f"- median ramp ÷ sweep = {median:.3f} over {len(ratios)} rounds with both estimates "
        f"(range {min(ratios):.3f}–{max(ratios):.3f}, quartiles "
        f"{_quartiles(ratios)}): "
        f"**{'met' if abs(median - 1) <= 0.10 else 'not met'}** (rule: the median within ±10%)"
    )
    if lenient:
        lines.append(
            f"- beside it, not a verdict: ramp ÷ the sweep's heaviest step served in full "
            f"counting steps where perflab sent late (generator-limited, no sign of "
            f"saturation): median {statistics.median(lenient):.3f} over {len(lenient)} rounds "
            f"(range {min(lenient):.3f}–{max(lenient):.3f})"
        )
    return "\n".join(lines)


def _quartiles(values: list[float]) -> str:
    if len(values) < 2:
        return "—"
    q = statistics.quantiles(values, n=4, method="inclusive")
    return f"{q[0]:.3f}–{q[2]:.3f}"


def cost_section(cpu: dict[str, list[float]], command: str) -> str:
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
            f"Command: `{command}`. Machine: {machine()}.",
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


def _growth(samples: list[tuple[float, int]]) -> tuple[float, float] | None:
    """(first kept sample's s, growth from it to the last), samples from 20 s on."""
    kept = [(t, b) for t, b in samples if t >= 20]
    if len(kept) < 2:
        return None
    return kept[0][0], kept[-1][1] / kept[0][1] - 1


def rss_section(arms: dict[str, list[tuple[float, int]]], seconds: int, command: str) -> str:
    title = "### Memory over a shaped run"
    found = _growth(arms.get("timeline", []))
    if found is None:
        return f"{title}\n\nCommand: `{command}`.\n\nnot enough RSS samples: **not met**"
    start, growth = found
    lines = [
        title,
        "",
        f"Command: `{command}`. Machine: {machine()}.",
        "",
        f"`--rate 1k~500/60s --duration {seconds}s`, RSS of the whole `perflab http` "
        "process every 10 s, two runs at once (each against its own `perflab serve`): "
        "with the timeline (`--interval 1s`) and without it (`--interval 0`, the control).",
        "",
    ]
    for name, label in (("timeline", "--interval 1s"), ("none", "--interval 0")):
        samples = arms.get(name, [])
        g = _growth(samples)
        lines.append(
            f"- `{label}`: "
            + ", ".join(f"{b / 2**20:.1f}" for _, b in samples)
            + " MiB"
            + (f"; growth from {g[0]:.0f} s to the end {g[1]:+.2%}" if g else "")
        )
    lines += [
        "",
        f"- growth with the timeline from {start:.0f} s to the end: {growth:+.2%}: "
        f"**{'met' if growth <= 0.05 else 'not met'}** (rule: ≤ 5%)",
    ]
    return "\n".join(lines)


HEAD = "## perflab http: load shapes and the timeline (issue 30)"
TITLES = {
    "capacity": "### A ramp's capacity against a stepped sweep",
    "cost": "### CPU per request of the timeline",
    "rss": "### Memory over a shaped run",
}


def stage_text(stage: str, rounds: int, rss_seconds: int) -> str:
    """One subsection (Markdown), measured now; ``stage`` a key of :data:`TITLES`."""
    command = f"python benchmarks/http_shapes.py --only {stage} " + (
        f"--rss-seconds {rss_seconds}" if stage == "rss" else f"--rounds {rounds}"
    )
    if stage == "capacity":
        text = capacity_section([capacities() for _ in range(rounds)], command)
    elif stage == "cost":
        text = cost_section(cost(rounds), command)
    else:
        text = rss_section(rss(rss_seconds), rss_seconds, command)
    print(text, flush=True)
    return text


def shapes_text(rounds: int, rss_seconds: int) -> str:
    """The whole section (Markdown), every stage measured now."""
    return "\n\n".join(
        [
            HEAD,
            "A shared 2-core VM: the server and the load generator share the cores, so the "
            "server's capacity is below its 5,000/s lock limit, and it moves with the "
            "machine's other load.",
            *(stage_text(stage, rounds, rss_seconds) for stage in TITLES),
        ]
    )


def replace_stage(old: str, stage: str, text: str) -> str:
    """``old`` (the section as written) with ``stage``'s subsection replaced by ``text``
    (appended when absent; the whole section started when ``old`` is empty)."""
    if not old.strip():
        old = HEAD + "\n"
    title = TITLES[stage]
    start = old.find(title)
    if start < 0:
        return old.rstrip() + "\n\n" + text + "\n"
    ends = [j for t in ("\n### ", "\n## ") if (j := old.find(t, start + len(title))) >= 0]
    end = min(ends) if ends else len(old)
    return old[:start] + text.rstrip() + "\n" + old[end:]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rss-seconds", type=int, default=600)
    parser.add_argument("--only", choices=sorted(TITLES), help="measure this stage alone")
    args = parser.parse_args(argv)
    if args.only is None:
        write_section("http_shapes", shapes_text(args.rounds, args.rss_seconds))
        return 0
    text = stage_text(args.only, args.rounds, args.rss_seconds)
    path = RESULTS / "http_shapes.md"
    old = path.read_text() if path.exists() else ""
    write_section("http_shapes", replace_stage(old, args.only, text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
