"""Repeat-run agreement: does a second `perflab run`, on another day, land inside the first CI?

For every classic workload (benchmarks/workloads/classic.py: Richards, n-body, a
sudoku constraint solver, fannkuch-redux, a JSON round trip; 5–30 ms a call),
`perflab run` with default settings runs RUNS times, each run in a different
environment, as a user's shells and days differ: an environment variable of
random length (0–4 KiB) and a working directory of random depth and name
length. A run's figure per workload is its median and 95% CI.

Agreement (the issue's rule): the fraction of runs 2..RUNS whose median falls
inside run 1's CI. With equal standard errors the ideal is ≈ 83% (two medians
differ by more than a 95% half-width with probability 2·Φ(−1.96/√2) ≈ 17%);
target ≥ 80% on every workload. Because run 1 may be a lucky or unlucky
reference, the same fraction is also given over every ordered pair of runs, and
over every pair again with the CI perflab printed before it widened CIs for the
number of processes (same raw data: perflab.analyze.stats.expansion), and over
the runs in which perflab did not warn of a busy machine (over 5% of samples with
under 90% of a core: another program took the CPU), and over the runs that found
the machine at its usual speed (a fixed loop timed before each run, within ±5% of
its median): these two tell the CI's own quality apart from the machine's swings.
`--no-randomize` runs (the harness before layout randomization: every worker
of a run shares one layout) are measured the same way for comparison.

Usage: python benchmarks/repeat.py [--quick] [--runs N] [--baseline-runs N]
Writes benchmarks/results/repeat.md; every verdict is printed by the rule above.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, ROOT, machine, timed, write_section  # noqa: E402

from perflab import model  # noqa: E402
from perflab.analyze import stats  # noqa: E402
from perflab.analyze.summary import RESAMPLES, timing_groups  # noqa: E402

BENCH_FILE = ROOT / "benchmarks" / "workloads" / "classic_bench.py"
TARGET = 0.80
#: a run met the machine at its usual speed when the speed probe was within this of its median
STEADY = 0.05


def machine_speed() -> float:
    """How fast this machine runs Python right now: the best of 5 timings of a fixed
    10 ms loop, s (lower is faster). On a shared machine it swings with other programs'
    load, which no benchmark's CI can foresee."""
    def loop() -> float:
        t0 = time.perf_counter()
        for _ in range(100):
            sum(range(1000))
        return time.perf_counter() - t0

    return min(loop() for _ in range(5))


def run_once(workdir: Path, rng: random.Random, extra: list[str]) -> dict[str, dict]:
    """One `perflab run` in a fresh environment and folder; per workload its summary."""
    speed = machine_speed()
    depth = rng.randint(0, 4)
    folder = workdir
    for _ in range(depth):
        folder = folder / "".join(rng.choice(string.ascii_lowercase)
                                  for _ in range(rng.randint(1, 40)))
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFLAB_")}
    env["USER_PADDING"] = "x" * rng.randrange(4096)
    out = folder / "r.json"
    wall, _ = timed([PYTHON, "-m", "perflab", "run", str(BENCH_FILE), "--json", str(out),
                     "--quiet", *extra], cwd=folder, env=env)
    data = json.loads(out.read_text())
    figures = {}
    for bench, raw in zip(model.load(out).benchmarks, data["benchmarks"]):
        s = raw["summary"]
        plain = unexpanded(bench)
        figures[bench.name] = {"median": s["median_s"], "low": s["ci_low_s"],
                               "high": s["ci_high_s"], "processes": s["processes"],
                               "stop": s["stop_reason"], "raw_low": plain.low,
                               "raw_high": plain.high,
                               "busy": any(w["kind"] == "busy machine" for w in s["warnings"])}
    figures["_wall"] = {"s": wall, "speed": speed}
    return figures


def unexpanded(bench: "model.Benchmark") -> "stats.Estimate":
    """The CI perflab printed before the small-sample expansion (same bootstrap draws)."""
    import zlib

    import numpy as np

    rng = np.random.default_rng([0, zlib.crc32(bench.id.encode())])
    return stats.median_ci(timing_groups(bench), 0.95, RESAMPLES, rng)


def agreement(runs: list[dict], low: str = "low", high: str = "high") -> tuple[float, float]:
    """(share of runs 2.. inside run 1's CI, share over every ordered pair of runs)."""
    inside = [runs[0][low] <= r["median"] <= runs[0][high] for r in runs[1:]]
    pairs = [a[low] <= b["median"] <= a[high]
             for i, a in enumerate(runs) for j, b in enumerate(runs) if i != j]
    return sum(inside) / len(inside), sum(pairs) / len(pairs)


def series(count: int, extra: list[str], rng: random.Random, label: str, keep: Path
           ) -> list[dict]:
    """``count`` runs, their results files kept under ``keep``."""
    out = []
    for i in range(count):
        out.append(run_once(keep / label.strip("-") / f"run{i}", rng, extra))
        print(f"  {label}: run {i + 1}/{count} ({out[-1]['_wall']['s']:.0f} s)",
              file=sys.stderr, flush=True)
    return out


def table(title: str, results: list[dict], with_verdict: bool) -> list[str]:
    names = [k for k in results[0] if not k.startswith("_")]
    speeds = [r["_wall"]["speed"] for r in results]
    usual_speed = statistics.median(speeds)
    steady = [abs(v / usual_speed - 1) <= STEADY for v in speeds]
    lines = [f"### {title}", "",
             "| workload | median of run 1 | its 95% CI | runs 2.. inside it | every pair | "
             "every pair, CI without the expansion | every pair of runs perflab did not call "
             f"busy | every pair of runs at the usual machine speed (±{STEADY:.0%}) | run medians "
             "min–max | median CI ± | processes (median) |"
             + (" verdict |" if with_verdict else ""),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
             + ("---|" if with_verdict else "")]
    for name in names:
        runs = [r[name] for r in results]
        first, pairs = agreement(runs)
        raw_pairs = agreement(runs, "raw_low", "raw_high")[1]
        quiet = [r for r in runs if not r["busy"]]
        quiet_pairs = (f"{agreement(quiet)[1]:.0%} ({len(quiet)} runs)" if len(quiet) > 2
                       else f"– ({len(quiet)} runs)")
        usual = [r for r, ok in zip(runs, steady) if ok]
        usual_pairs = (f"{agreement(usual)[1]:.0%} ({len(usual)} runs)" if len(usual) > 2
                       else f"– ({len(usual)} runs)")
        meds = [r["median"] for r in runs]
        half = statistics.median((r["high"] - r["low"]) / 2 / r["median"] for r in runs)
        row = (f"| {name} | {runs[0]['median'] * 1e3:.3f} ms | {runs[0]['low'] * 1e3:.3f}–"
               f"{runs[0]['high'] * 1e3:.3f} | {first:.0%} ({round(first * (len(runs) - 1))}/"
               f"{len(runs) - 1}) | {pairs:.0%} | {raw_pairs:.0%} | {quiet_pairs} | "
               f"{usual_pairs} | "
               f"{min(meds) * 1e3:.3f}–{max(meds) * 1e3:.3f} | "
               f"±{half:.1%} | {statistics.median(r['processes'] for r in runs):.0f} |")
        if with_verdict:
            row += f" {'met' if first >= TARGET else 'not met'} (≥ {TARGET:.0%}) |"
        lines.append(row)
    walls = [r["_wall"]["s"] for r in results]
    lines += ["", f"Wall time per run (all five workloads): median {statistics.median(walls):.0f} s, "
              f"range {min(walls):.0f}–{max(walls):.0f} s. Machine speed before each run "
              f"(best of 5 of a fixed loop): {min(speeds) * 1e3:.1f}–{max(speeds) * 1e3:.1f} ms, "
              f"{sum(steady)} of {len(speeds)} runs within ±{STEADY:.0%} of the median."]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="4 runs, short budgets: to try the script, not to conclude")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--baseline-runs", type=int, default=10,
                        help="runs with --no-randomize for comparison (0: none)")
    args = parser.parse_args(argv)
    runs, baseline_runs = (4, 3) if args.quick else (args.runs, args.baseline_runs)
    extra = ["--budget", "2s"] if args.quick else []
    load = os.getloadavg()
    t0 = time.monotonic()
    rng = random.Random(2026)
    keep = Path(tempfile.mkdtemp(prefix="perflab-repeat-"))
    randomized = series(runs, extra, rng, "default", keep)
    baseline = series(baseline_runs, extra + ["--no-randomize"], rng, "--no-randomize", keep) \
        if baseline_runs > 1 else []
    end = os.getloadavg()
    lines = ["## Repeat-run agreement (issue 11)", "", f"Machine: {machine()}.", "",
             f"Command: `python benchmarks/repeat.py{' --quick' if args.quick else ''}`: "
             f"`perflab run benchmarks/workloads/classic_bench.py` with default settings "
             f"({'--budget 2s, ' if args.quick else ''}--precision 1%), {runs} times, each in a "
             "different environment (a variable of 0–4 KiB) and working directory (0–4 "
             "folders deep, names of 1–40 characters).", "",
             f"Rule: a workload **meets** the target when at least {TARGET:.0%} of runs 2.. "
             "have their median inside run 1's 95% CI (≈ 83% is ideal for equal standard "
             "errors). \"every pair\" is the same share over every ordered pair of runs.", ""]
    lines += table(f"With layout randomization (default), {runs} runs", randomized, True)
    if baseline:
        lines += [""] + table(f"Without it (`--no-randomize`), {len(baseline)} runs, for "
                              "comparison", baseline, False)
    lines += ["", f"Load average {load[0]:.2f} at the start, {end[0]:.2f} at the end; the "
              f"script took {(time.monotonic() - t0) / 60:.0f} min; the results files are in "
              f"`{keep}`."]
    write_section("repeat", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
