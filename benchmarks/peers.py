"""Agreement with peers: perflab's median beside pyperf's and a plain loop's, and the wall time
each tool takes (issue 11).

On each classic workload (benchmarks/workloads/classic.py), ROUNDS rounds; in
each round three tools run once, in random order (interleaved, so the machine's
drift hits them alike):

* perflab: `perflab run classic_bench.py --filter NAME` with default settings;
* pyperf: the Runner script classic_pyperf.py with pyperf's default settings
  (20 worker processes × 3 values after 1 warmup, each value ≥ 100 ms);
* a plain loop: PLAIN_PROCESSES fresh processes, each timing PLAIN_CALLS calls
  one by one with perf_counter_ns after PLAIN_WARMUP untimed calls.

Each tool's figure per round is its median time per call (perflab: its median, the
geometric mean of its processes' medians; pyperf: the median of its values; plain
loop: the geometric mean of its processes' medians, perflab's statistic); pyperf's
mean (its headline), the plain loop's pooled median and mean are shown beside them.
The figures are averaged over the rounds. The ratio perflab / peer is the geometric
mean of the rounds' ratios (a round's tools ran minutes apart at most, so pairing them
takes out the machine's slower swings) with its 95% t-interval over the rounds
(rounds − 1 degrees of freedom).

Rules (printed by this script): agreement within ±3% is judged on that CI by
benchmarks.common.ratio_verdict, the one rule of every benchmark here: **tied** when the
CI contains 1 (no difference shown; read its width to see whether ±3% is shown too),
**met** when the CI lies within 0.97–1.03, **not met** otherwise. perflab's wall time
**meets** the cost target when it is at most ¼ of pyperf's and perflab reached its ±1%
CI; otherwise the table says which failed.

Usage: python benchmarks/peers.py [--quick] [--rounds N] [--workloads a,b] [--save F.json]
       python benchmarks/peers.py --merge F.json   (the table again from saved figures)
Writes benchmarks/results/peers.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, ROOT, machine, ratio_ci, ratio_verdict, timed, write_section  # noqa: E402

WORKLOADS_DIR = ROOT / "benchmarks" / "workloads"
AGREE = 0.03
COST = 0.25
PLAIN_PROCESSES, PLAIN_CALLS, PLAIN_WARMUP = 20, 10, 5


def perflab(tmp: Path, name: str, serial: int) -> dict[str, float]:
    out = tmp / f"perflab-{name}-{serial}.json"
    wall, _ = timed(
        [
            PYTHON,
            "-m",
            "perflab",
            "run",
            str(WORKLOADS_DIR / "classic_bench.py"),
            "--filter",
            f"{name}/*",
            "--json",
            str(out),
            "--quiet",
        ]
    )
    s = json.loads(out.read_text())["benchmarks"][0]["summary"]
    return {
        "wall_s": wall,
        "median_s": s["median_s"],
        "mean_s": float("nan"),
        "half": (s["ci_high_s"] - s["ci_low_s"]) / 2 / s["median_s"],
        "processes": s["processes"],
    }


def pyperf(tmp: Path, name: str, serial: int) -> dict[str, float]:
    import pyperf as pp

    out = tmp / f"pyperf-{name}-{serial}.json"  # pyperf never overwrites -o
    wall, _ = timed(
        [PYTHON, str(WORKLOADS_DIR / "classic_pyperf.py"), name, "--quiet", "-o", str(out)]
    )
    bench = pp.Benchmark.load(str(out))
    values = bench.get_values()
    # the 95% CI half-width of pyperf's mean (its headline), normal approximation
    half = 1.96 * statistics.stdev(values) / len(values) ** 0.5 / statistics.mean(values)
    return {
        "wall_s": wall,
        "median_s": bench.median(),
        "mean_s": bench.mean(),
        "half": half,
        "processes": len(bench.get_runs()),
    }


def plain(name: str) -> dict[str, float]:
    """PLAIN_PROCESSES fresh processes of the plain loop. Its figure is the same statistic
    as perflab's (the geometric mean of the processes' medians), so that a difference is
    the harness's, not the statistic's: on a machine whose speed swings from process to
    process, the pooled median of all calls (also kept) follows whichever speed most
    processes met."""
    t0 = time.monotonic()
    calls: list[float] = []
    medians: list[float] = []
    for _ in range(PLAIN_PROCESSES):
        _, done = timed(
            [
                PYTHON,
                str(WORKLOADS_DIR / "classic_plain.py"),
                name,
                str(PLAIN_CALLS),
                str(PLAIN_WARMUP),
            ]
        )
        mine = [ns * 1e-9 for ns in json.loads(done.stdout)]
        calls += mine
        medians.append(statistics.median(mine))
    return {
        "wall_s": time.monotonic() - t0,
        "median_s": statistics.geometric_mean(medians),
        "pooled_median_s": statistics.median(calls),
        "mean_s": statistics.mean(calls),
        "half": float("nan"),
        "processes": PLAIN_PROCESSES,
    }


def rounds_of(
    names: list[str],
    rounds: int,
    rng: random.Random,
    done: Callable[[dict[str, dict[str, list]], int], None] = lambda seen, r: None,
) -> dict[str, dict[str, list]]:
    """``rounds`` interleaved rounds; ``done(seen, r)`` after each finished round r (1-based)."""
    seen: dict[str, dict[str, list]] = {
        n: {"perflab": [], "pyperf": [], "plain": []} for n in names
    }
    serial = 0
    with tempfile.TemporaryDirectory(prefix="perflab-peers-") as tmp_name:
        tmp = Path(tmp_name)
        for r in range(rounds):
            jobs = [(n, t) for n in names for t in ("perflab", "pyperf", "plain")]
            rng.shuffle(jobs)
            for name, tool in jobs:
                serial += 1
                got = (
                    perflab(tmp, name, serial)
                    if tool == "perflab"
                    else pyperf(tmp, name, serial)
                    if tool == "pyperf"
                    else plain(name)
                )
                seen[name][tool].append(got)
                print(
                    f"  round {r + 1}/{rounds} {name} {tool}: {got['median_s'] * 1e3:.3f} ms "
                    f"in {got['wall_s']:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
            done(seen, r + 1)
    return seen


def mean_of(rows: list[dict[str, float]], key: str) -> float:
    return statistics.mean(r[key] for r in rows)


def paired_ratio(
    mine: list[dict[str, float]], peer: list[dict[str, float]]
) -> tuple[float, float, float]:
    """perflab / peer over paired rounds: the geometric mean of the rounds' ratios and its
    95% t-interval (rounds − 1 df); the CI is (nan, nan) with one round."""
    return ratio_ci([a["median_s"] / b["median_s"] for a, b in zip(mine, peer)])


def agreement(mine: list[dict[str, float]], peer: list[dict[str, float]]) -> str:
    """The "perflab ÷ peer" cell: ratio, CI and verdict by ratio_verdict within ±AGREE."""
    value, low, high = paired_ratio(mine, peer)
    if math.isnan(low):
        return f"{value:.3f} (one round: no CI)"
    word = ratio_verdict(low, high, at_most=1 + AGREE, at_least=1 - AGREE)
    return f"{value:.3f} ({low:.3f}–{high:.3f}) {word}"


def report(
    seen: dict[str, dict[str, list]],
    rounds: int,
    quick: bool,
    load: tuple[float, ...],
    end: tuple[float, ...],
    minutes: float,
    planned: int | None = None,
) -> str:
    """The results section from ``rounds`` finished rounds (of ``planned``, when fewer)."""
    lines = [
        "## perflab beside pyperf and a plain loop on the classic workloads (issue 11)",
        "",
        f"Machine: {machine()}.",
        "",
        f"Command: `python benchmarks/peers.py{' --quick' if quick else ''}`: {rounds} "
        + (
            f"rounds (of {planned} planned: stopped early, the rounds finished are kept)"
            if planned and planned > rounds
            else "rounds"
        )
        + "; in each, perflab (default settings), pyperf (a Runner script, default "
        f"settings) and a plain loop ({PLAIN_PROCESSES} fresh processes × {PLAIN_CALLS} "
        f"calls timed one by one after {PLAIN_WARMUP} untimed) run each workload once, "
        "in random order. Figures are means over the rounds of each run's median time "
        "per call; perflab's median and the plain loop's are the same statistic (the "
        "geometric mean of the processes' medians); pyperf's median is the median of its "
        "values (each the mean of a ≥ 100 ms batch).",
        "",
        f"Rules: agreement within ±{AGREE:.0%} is judged on the 95% CI of perflab ÷ peer "
        "(the geometric mean of the rounds' ratios, t-interval over the rounds): "
        "**tied** when it contains 1, **met** when it lies within "
        f"{1 - AGREE:.2f}–{1 + AGREE:.2f}, **not met** otherwise; "
        f"the cost **meets** the target when perflab's wall time is at most {COST:.0%} of "
        "pyperf's and it reached ±1%.",
        "",
        "### Medians",
        "",
        "| workload | perflab | pyperf median | pyperf mean | plain loop | plain pooled "
        "median | plain mean | perflab ÷ pyperf | perflab ÷ plain |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, tools in seen.items():
        p, q, r = (tools[t] for t in ("perflab", "pyperf", "plain"))
        mp, mq, mr = (mean_of(x, "median_s") for x in (p, q, r))
        lines.append(
            f"| {name} | {mp * 1e3:.3f} ms | {mq * 1e3:.3f} ms | "
            f"{mean_of(q, 'mean_s') * 1e3:.3f} ms | {mr * 1e3:.3f} ms | "
            f"{mean_of(r, 'pooled_median_s') * 1e3:.3f} ms | "
            f"{mean_of(r, 'mean_s') * 1e3:.3f} ms | {agreement(p, q)} | {agreement(p, r)} |"
        )
    lines += [
        "",
        "### Wall time",
        "",
        "| workload | perflab wall | perflab CI ± | perflab processes | pyperf wall | "
        "pyperf CI ± of its mean | plain loop wall | perflab ÷ pyperf wall | cost |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, tools in seen.items():
        p, q, r = (tools[t] for t in ("perflab", "pyperf", "plain"))
        pw, qw = mean_of(p, "wall_s"), mean_of(q, "wall_s")
        half = statistics.median(x["half"] for x in p)
        reached = all(x["half"] <= 0.01 for x in p)
        cost = (
            "meets"
            if pw <= COST * qw and reached
            else "does not meet: ±1% not reached in every run"
            if not reached
            else f"does not meet: over {COST:.0%} of pyperf's wall time"
        )
        lines.append(
            f"| {name} | {pw:.1f} s | ±{half:.2%} | "
            f"{statistics.median(x['processes'] for x in p):.0f} | {qw:.1f} s | "
            f"±{statistics.median(x['half'] for x in q):.2%} | "
            f"{mean_of(r, 'wall_s'):.1f} s | {pw / qw:.2f} | {cost} |"
        )
    lines += [
        "",
        f"Load average {load[0]:.2f} at the start, {end[0]:.2f} at the end; the "
        f"script took {minutes:.0f} min.",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of two workloads")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workloads", default="richards,nbody,sudoku,fannkuch,json_roundtrip")
    parser.add_argument(
        "--save",
        metavar="F.json",
        help="also keep every round's figures here (rewritten after each round)",
    )
    parser.add_argument(
        "--merge",
        metavar="F.json",
        help="write the results file from figures kept with --save, measuring nothing",
    )
    args = parser.parse_args(argv)
    if args.merge:
        kept = json.loads(Path(args.merge).read_text())
        write_section(
            "peers",
            report(
                kept["seen"],
                kept["finished"],
                kept["quick"],
                tuple(kept["load"]),
                tuple(kept["end"]),
                kept["minutes"],
                kept["rounds"],
            ),
        )
        return 0
    names = ["richards", "json_roundtrip"] if args.quick else args.workloads.split(",")
    rounds = 1 if args.quick else args.rounds
    load, t0 = os.getloadavg(), time.monotonic()

    def save(seen: dict[str, dict[str, list]], finished: int) -> None:
        """The results section of the rounds finished so far: a run stopped early (Ctrl-C,
        the end of a quiet window) keeps every whole round it measured."""
        complete = {n: {t: v[:finished] for t, v in tools.items()} for n, tools in seen.items()}
        end, minutes = os.getloadavg(), (time.monotonic() - t0) / 60
        write_section("peers", report(complete, finished, args.quick, load, end, minutes, rounds))
        if args.save:
            Path(args.save).write_text(
                json.dumps(
                    {
                        "seen": complete,
                        "finished": finished,
                        "quick": args.quick,
                        "load": load,
                        "end": end,
                        "minutes": minutes,
                        "rounds": rounds,
                    }
                )
            )

    try:
        rounds_of(names, rounds, random.Random(5), save)
    except KeyboardInterrupt:
        print("interrupted: the results file holds the rounds finished", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
