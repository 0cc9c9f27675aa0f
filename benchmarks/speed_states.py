"""The machine's speed states as `perflab doctor` measures them, quiet and under load
(issue 26, item 5).

Usage: python benchmarks/speed_states.py [PROBES]   (default 5 probes per condition)

Writes benchmarks/results/speed_states.md. Runs doctor's speed-state probe
(perflab.engines.speed_states.probe: a ≈ 50 µs loop timed back to back for 1 s alone,
then 1 s on two CPUs at once) PROBES times in each condition:
    * quiet: nothing added (whatever else the machine runs);
    * busy: one competing process spinning a pure-Python loop for the whole condition.
and prints each probe's figures, then per condition the medians over probes and two
verdicts by stated rules (the doctor's own): pairing helps when the median over probes of
adjacent-pair spread ÷ single-timing spread is at most 0.7; two CPUs share the machine's
state when the median Cohen's κ of their states is at least 0.4 (moderate agreement
beyond chance), and can't be judged when the median chance agreement exceeds 95%
(nearly all timings in one state).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, machine, write_section  # noqa: E402

from perflab.analyze.speed_states import (
    CHANCE_TOO_HIGH,
    PAIRING_HELPS,
    SHARED_KAPPA,
    SpeedStates,
    percent,
)
from perflab.engines.speed_states import probe

PROBES = int(sys.argv[1]) if len(sys.argv) > 1 else 5
SPIN = "while True: pass"


def one_condition(busy: bool) -> list[SpeedStates]:
    """PROBES probes, with a spinning competitor throughout when ``busy``."""
    spinner = subprocess.Popen([PYTHON, "-c", SPIN]) if busy else None
    try:
        return [probe() for _ in range(PROBES)]
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


def fixed(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def row(i: int, s: SpeedStates) -> str:
    a, two = s.alone, s.two_cpus
    length = f"{a.mean_state_ms:.2g}" if a.states == 2 else "–"
    pair = (
        f"{two.same_state_share:.0%} ({two.chance_same_share:.0%}, κ {fixed(two.kappa)}) | "
        f"{percent(two.side_by_side_spread)} | {two.pairs:,}"
        if two is not None
        else f"– | – | – ({s.two_cpus_note})"
    )
    return (
        f"| {i} | {a.timings:,} | {a.states} | {a.slow_share:.0%} | {length} | "
        f"{fixed(a.lag1_autocorrelation)} | {percent(a.single_spread)} | "
        f"{percent(a.adjacent_spread)} | {pair} |"
    )


def summary(name: str, probes: list[SpeedStates]) -> list[str]:
    def med(values: list[float]) -> float:
        return statistics.median(values) if values else float("nan")

    alone = [p.alone for p in probes]
    ratio = med([a.adjacent_spread / a.single_spread for a in alone if a.single_spread > 0])
    twos = [p.two_cpus for p in probes if p.two_cpus is not None]
    same, chance = med([t.same_state_share for t in twos]), med([t.chance_same_share for t in twos])
    kappa = med([t.kappa for t in twos if t.kappa is not None])
    helps = "pairing helps" if ratio <= PAIRING_HELPS else "pairing does not help"
    shared = (
        "no two-CPU figures"
        if not twos
        else "too few slow timings to tell whether two CPUs share the state"
        if chance > CHANCE_TOO_HIGH or kappa != kappa
        else (
            "two CPUs share the state"
            if kappa >= SHARED_KAPPA
            else "two CPUs do not share the state beyond chance"
        )
    )
    return [
        f"- **{name}**: slow share median {med([a.slow_share for a in alone]):.0%} "
        f"(range {min(a.slow_share for a in alone):.0%}–{max(a.slow_share for a in alone):.0%}), "
        f"single timings spread {percent(med([a.single_spread for a in alone]))}, adjacent "
        f"pairs {percent(med([a.adjacent_spread for a in alone]))} (ratio {ratio:.2f}): "
        f"**{helps}**; same state on two CPUs {same:.0%} against {chance:.0%} by chance "
        f"(κ {kappa:.2f}): "
        f"**{shared}**.",
        f"  - advice doctor printed in the last probe: “{probes[-1].advice}”",
    ]


def main() -> int:
    conditions = {"quiet": one_condition(False), "one busy process": one_condition(True)}
    lines = [
        "## Speed states (`perflab doctor`)",
        "",
        f"Machine: {machine()}.",
        "",
        f"Command: `python benchmarks/speed_states.py {PROBES}`: doctor's speed-state probe "
        f"(a {probes_loop(conditions)} loop timed back to back for 1 s alone, then 1 s on "
        f"two CPUs at once), {PROBES} times quiet and {PROBES} times beside one process "
        "spinning a Python loop.",
        "",
        "Columns: timings (alone, undisturbed), states found, slow share of the time, "
        "mean state length (ms), lag-1 autocorrelation, spread of single timings and of "
        "the ratio of adjacent timings (robust relative SD), the share of simultaneous "
        "timings on two CPUs in the same state (chance and Cohen's κ in brackets), the "
        "spread of their "
        "ratio, and how many such pairs there were.",
        "",
    ]
    for name, probes in conditions.items():
        lines += [
            f"### {name}",
            "",
            "| # | timings | states | slow | state ms | lag-1 | single | adjacent "
            "| two CPUs same (chance, κ) | side by side | pairs |",
            "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
            *(row(i, p) for i, p in enumerate(probes, 1)),
            "",
        ]
    lines += [
        "Verdicts (rules: pairing helps when the median of adjacent ÷ single spread is "
        f"≤ {PAIRING_HELPS}; two CPUs share the state when the median Cohen's κ is "
        f"≥ {SHARED_KAPPA}, not judged when the median chance agreement is over "
        f"{CHANCE_TOO_HIGH:.0%}):",
        "",
    ]
    for name, probes in conditions.items():
        lines += summary(name, probes)
    write_section("speed_states", "\n".join(lines))
    return 0


def probes_loop(conditions: dict[str, list[SpeedStates]]) -> str:
    """The loop's median length over every probe, e.g. "50 µs"."""
    ns = statistics.median(p.loop_ns for ps in conditions.values() for p in ps)
    return f"{ns / 1000:.0f} µs"


if __name__ == "__main__":
    raise SystemExit(main())
