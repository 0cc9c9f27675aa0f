"""perflab http's load shapes and timeline: a ramp's capacity against a stepped sweep,
and what the timeline costs (issue 30, "Shapes" and "Cost of the timeline").

Usage: python benchmarks/http_shapes.py [--rounds 5] [--rss-seconds 600]
[--only capacity|cost|rss] (use a release build of perflab._core, as `make bench` does.)
Also run by benchmarks/http.py. Writes benchmarks/results/http_shapes.md; with `--only`,
measures that stage alone and replaces its subsection of that file (each subsection
names the command and machine that measured it). Measured here, in one run:

* **capacity**: `perflab serve --serialize 0.2ms --threads 2` (one global lock held
  0.2 ms per request: at most 5,000 responses/s, less when the 2 cores are shared with
  the load generator), each run on a fresh server. On a shared machine the server's
  capacity moves with the others' load, so each round measures both estimates close
  together, A-B-A: a ramp `--rate 1k..10k/20s`, then a short stepped sweep around that
  ramp's estimate (11 steps of 3 s from 0.80× to 1.20× of it, 4% apart), then a second
  ramp; the ramp's figure for the round is the mean of its two ramps (a linear drift
  cancels). The ramp's capacity is read off its timeline (the median achieved rate of the
  3 intervals from the knee on, docs/http.md "Load shapes and the timeline"). One rule
  for "served in full" in both, whether perflab sent late or not: a ramp interval when
  it achieved ≥ 95% of its offered rate; a sweep step when it shows no sign of
  saturation (answered ≥ 95% of offered, ≤ 1% unanswered, not behind at its end); the
  knee is the first that is not, followed by another that is not, and the sweep's
  capacity is its heaviest step served in full below its knee (a lower bound, 4% steps).
  Verdict by one rule: **met** when over half of the rounds have both estimates in the
  bracket and the median over `--rounds` of ramp ÷ sweep lies within 1 ± 0.10, a round
  whose sweep capacity lies outside its ±20% bracket counting beyond ±10% on its side.
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
import math
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
    saturation_reasons,
    summarize_results,
)
from perflab.analyze.stats import block_ratio_ci  # noqa: E402
from perflab.model import Results  # noqa: E402

SERVER = ("--serialize", "0.2ms", "--threads", "2")
RAMP, SWEEP_STEP_S = "1k..10k/20s", "3s"
#: The sweep's steps as multiples of the first ramp's estimate: 0.80, 0.84, …, 1.20.
BRACKET = tuple(round(0.80 + 0.04 * k, 2) for k in range(11))
COST_RATE, COST_S = 3000, 10


def run(url: str, *argv: str) -> Any:
    """One `perflab http` run (quiet, one engine thread) → its results (model)."""
    return Results.from_dict(perflab_http_document(url, *argv))


def ramp_capacity() -> Any:
    """One ramp on a fresh server → its step summary's ``ramp`` (None: no estimate)."""
    with perflab_serve(*SERVER) as url:
        return summarize_results(run(url, "--rate", RAMP)).steps[0].ramp


def capacities() -> dict[str, Any]:
    """One A-B-A round: a ramp, a sweep over :data:`BRACKET` × its estimate, a ramp;
    each on a fresh server, with the load average before each."""
    load = [os.getloadavg()[0]]
    first = ramp_capacity()
    if first is None:
        return {"ramps": [None], "sweep": None, "rates": [], "load": load}
    rates = [round(first.estimate_rate * k) for k in BRACKET]
    load.append(os.getloadavg()[0])
    with perflab_serve(*SERVER) as url:
        sweep = summarize_results(
            run(url, "--rate", ",".join(map(str, rates)), "--duration", SWEEP_STEP_S)
        )
    load.append(os.getloadavg()[0])
    return {"ramps": [first, ramp_capacity()], "sweep": sweep, "rates": rates, "load": load}


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


def served_in_full(sweep: Any) -> tuple[float | None, bool]:
    """The sweep's capacity by the rule shared with the ramp: the offered rate of its
    heaviest step served in full (no sign of saturation, perflab late or not) below its
    knee (the first step not served in full that is followed by another one not served
    in full, or is the last). Returns (that rate or None, whether a knee was found)."""
    steps = sorted(sweep.steps, key=lambda s: s.offered_rate)
    served = [not saturation_reasons(s, None) for s in steps]
    knee = next(
        (i for i in range(len(steps)) if not served[i] and not any(served[i + 1 : i + 2])),
        len(steps),
    )
    best = max((s.offered_rate for s, ok in zip(steps[:knee], served) if ok), default=None)
    return best, knee < len(steps)


def capacity_section(pairs: list[dict[str, Any]], command: str) -> str:
    lines = [
        "### A ramp's capacity against a stepped sweep",
        "",
        f"Command: `{command}`. Machine: {machine()}.",
        "",
        f"Target `perflab serve {' '.join(SERVER)}`, a fresh one per run; {len(pairs)} "
        f"rounds, each A-B-A: ramp `--rate {RAMP}`, a sweep of {len(BRACKET)} steps of "
        f"`--duration {SWEEP_STEP_S}` from {BRACKET[0]:.2f}× to {BRACKET[-1]:.2f}× the "
        "first ramp's estimate, a second ramp; one engine thread. The ramp's estimate is the "
        "median achieved rate of the 3 intervals from its knee on (docs/http.md), the "
        "round's the mean of its two ramps. One rule for served in full, whether perflab "
        "sent late or not: a ramp interval achieved ≥ 95% of its offered rate; a sweep step "
        "shows no sign of saturation (answered ≥ 95% of offered, ≤ 1% unanswered, not "
        "behind at its end); the knee is the first not served in full followed by another; "
        "the sweep's capacity is its heaviest step served in full below the knee (a lower "
        "bound, up to one 4% step below the rate where serving in full ends).",
        "",
        "| round | load avg (ramp, sweep, ramp) | ramps' estimates | ramp estimate | "
        "sweep steps | sweep capacity | sweep steps served in full | ramp ÷ sweep |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    ratios: list[float] = []
    # Rounds outside the bracket, as ratios beyond either end: 0 when the sweep
    # served every step (capacity above it), inf when it served none (below it) or
    # the ramp gave no estimate (no measurement: a failure).
    outside: list[float] = []
    for i, c in enumerate(pairs, 1):
        load = " / ".join(f"{x:.1f}" for x in c["load"])
        ramps = [r.estimate_rate for r in c["ramps"] if r is not None]
        sweep = c["sweep"]
        if sweep is None or len(ramps) < 2:
            lines.append(f"| {i} | {load} | no ramp estimate | — | — | — | — | — |")
            outside.append(math.inf)
            continue
        estimate = statistics.mean(ramps)
        best, knee = served_in_full(sweep)
        served = sum(not saturation_reasons(s, None) for s in sweep.steps)
        span = f"{c['rates'][0]:,}–{c['rates'][-1]:,}/s"
        each = ", ".join(f"{r:,.0f}" for r in ramps)
        if best is None or not knee:
            why = "below the bracket" if best is None else "above the bracket"
            lines.append(
                f"| {i} | {load} | {each}/s | {estimate:,.0f}/s | {span} | {why} | "
                f"{served} of {len(sweep.steps)} | outside ±20% |"
            )
            outside.append(math.inf if best is None else 0.0)
            continue
        ratios.append(estimate / best)
        lines.append(
            f"| {i} | {load} | {each}/s | {estimate:,.0f}/s | {span} | {best:,.0f}/s | "
            f"{served} of {len(sweep.steps)} | {ratios[-1]:.3f} |"
        )
    lines.append("")
    rounds = len(pairs)
    if len(ratios) * 2 <= rounds:
        lines.append(
            f"- {len(ratios)} of {rounds} rounds with both estimates in the bracket: "
            "**not met** (rule: over half of the rounds in the bracket, and the median of "
            "ramp ÷ sweep over the rounds within ±10%)"
        )
        return "\n".join(lines)
    padded = sorted(ratios + outside)
    median = statistics.median(padded)
    lines.append(
        f"- median ramp ÷ sweep = {median:.3f} over {rounds} rounds ({len(ratios)} with "
        f"both estimates in the bracket, range {min(ratios):.3f}–{max(ratios):.3f}, "
        f"quartiles {_quartiles(ratios)}; {len(outside)} outside it, counted beyond ±10% on its side): "
        f"**{'met' if abs(median - 1) <= 0.10 else 'not met'}** (rule: over half of the "
        "rounds in the bracket, and the median within ±10%)"
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
