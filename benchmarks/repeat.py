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
over every pair again with the CI perflab printed before (a hierarchical bootstrap
over the processes, same raw data: perflab.analyze.stats.median_ci), and over
the runs in which perflab did not warn of a busy machine (over 5% of samples with
under 90% of a core: another program took the CPU), and over the runs that found
the machine at its usual speed (a fixed loop timed before each run, within ±5% of
its median): these two tell the CI's own quality apart from the machine's swings.
A second table asks the same of the machine-speed reference (perflab.analyze.reference:
a fixed loop timed between the samples of every worker process), used in the two ways
one could: divided out (the speed-normalized median ``cpu_vs_reference``, CPU time per op
÷ reference, and its CI) or
added to the seconds CI (its between-process variance added to the squared SE), with
the width each gives, so the choice between them is made on these figures.
`--no-randomize` runs (the harness before layout randomization: every worker
of a run shares one layout) are measured the same way for comparison.

Usage: python benchmarks/repeat.py [--quick] [--runs N] [--baseline-runs N] [--workloads a,b]
           [--save PART.json]          (measure; with --save, write the figures, not the table)
       python benchmarks/repeat.py --merge PART.json [PART.json …]   (the table from parts)
On a shared machine the measurement can be split by workload into parts, each run in
its own quiet window, and merged. Writes benchmarks/results/repeat.md; every verdict is
printed by the rule above.
"""

from __future__ import annotations

import argparse
import json
import math
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
from perflab.analyze.run.summary import RESAMPLES, summarize, timing_groups  # noqa: E402

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
        folder = folder / "".join(
            rng.choice(string.ascii_lowercase) for _ in range(rng.randint(1, 40))
        )
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERFLAB_")}
    env["USER_PADDING"] = "x" * rng.randrange(4096)
    out = folder / "r.json"
    wall, _ = timed(
        [PYTHON, "-m", "perflab", "run", str(BENCH_FILE), "--json", str(out), "--quiet", *extra],
        cwd=folder,
        env=env,
    )
    return figures_of(out, speed, wall)


def figures_of(out: Path, speed: float, wall: float) -> dict[str, dict]:
    """Per workload, the figures of one run's results file ``out`` (``speed``: the machine
    speed probe before it, s; ``wall``: the run's wall time, s; nan when not recorded)."""
    figures = {}
    for bench in model.load(out).benchmarks:
        s = summarize(bench).to_dict()  # recomputed from the raw data, by this perflab
        plain = bootstrap_ci(bench)
        figures[bench.name] = {
            "median": s["median_s"],
            "low": s["ci_low_s"],
            "high": s["ci_high_s"],
            "processes": s["processes"],
            "stop": s["stop_reason"],
            "raw_low": plain.ci_low,
            "raw_high": plain.ci_high,
            "busy": any(w["kind"] == "busy machine" for w in s["warnings"]),
            "speed": speed,
            "cpu": cpu_median(bench),
            **reference_figures(s),
        }
    figures["_wall"] = {"s": wall}
    figures["_speed"] = speed_modes(model.load(out))
    return figures


#: a reference timing above this multiple of its run's fast level counts as slow
SLOW_MODE = 1.4


def speed_modes(results: model.Results) -> dict:
    """How the machine's speed moved inside one run, from every reference timing of every
    worker: the fast level (10th percentile, ns), the median of the timings above
    SLOW_MODE × it (the slow level, ns), the share of timings in that slow mode, and the
    median over processes of (slowest ÷ fastest timing) inside one process."""
    import numpy as np

    per_process = [
        p.reference_ns for b in results.benchmarks for p in b.processes if len(p.reference_ns) >= 2
    ]
    timings = np.asarray([t for r in per_process for t in r], dtype=float)
    if timings.size < 10:
        return {}
    fast = float(np.percentile(timings, 10))
    slow = timings[timings > SLOW_MODE * fast]
    return {
        "fast_ns": fast,
        "slow_ns": float(np.median(slow)) if slow.size else math.nan,
        "slow_share": slow.size / timings.size,
        "within": float(np.median([max(r) / min(r) for r in per_process])),
    }


def speed_mode_lines(results: list[dict], names: list[str]) -> list[str]:
    """Why seconds move between runs on this machine, from the reference timings."""
    modes = [r.get("_speed") or {} for r in results]
    if len(results) < 3 or not all(m.get("fast_ns") for m in modes):
        return []
    shares = [m["slow_share"] for m in modes]
    factors = [math.log(f) for f in machine_factors(results, names)]
    slow = [m["slow_ns"] for m in modes if math.isfinite(m["slow_ns"])]
    fast = statistics.median(m["fast_ns"] for m in modes)
    corr = statistics.correlation(shares, factors) if statistics.pstdev(shares) > 0 else math.nan
    return [
        "",
        "Where the machine factor comes from: the reference loop, timed between the "
        "samples of every worker, runs at two speeds on this machine — "
        f"{fast / 1e3:.0f} µs (the 10th percentile) or about "
        f"{statistics.median(slow) / 1e3 if slow else math.nan:.0f} µs (the median of "
        f"timings above {SLOW_MODE}× that) — and switches between them within one process "
        f"(slowest ÷ fastest timing of a process: {statistics.median(m['within'] for m in modes):.1f}×, "
        f"median). The share of slow timings was {min(shares):.0%}–{max(shares):.0%} from "
        f"run to run, and it tracks the runs' machine factor (correlation {corr:+.2f}). "
        "With nothing else running inside the VM (the load averages below), the slow mode "
        "comes from outside it — the host and its other tenants: seconds measured on this "
        "VM move with it, no CI computed inside one run can foresee how much of the next "
        "run it will take, and the CPU time ÷ reference (below) divides it out.",
    ]


def cpu_median(bench: model.Benchmark) -> float:
    """The median CPU time per op, s, by the statistic of the seconds (the geometric mean of
    the processes' medians: perflab.analyze.stats.process_location)."""
    groups = [
        [s.cpu_ns / s.iterations / bench.ops_per_call * 1e-9 for s in p.samples if not s.flagged]
        for p in bench.processes
    ]
    location = stats.process_location([g for g in groups if g])
    return location.value if location else math.nan


def reference_figures(summary: dict) -> dict:
    """A run's machine-speed reference figures for one workload (perflab.analyze.reference):
    the speed-normalized median and CI (``norm``…, unitless), the reference time (s), its
    spread between processes, and the seconds CI widened by that spread (``wide_``…: the
    next run's machine modelled as one more draw of the machine states this run saw)."""
    vs = summary.get("cpu_vs_reference")
    spread = summary.get("reference_spread")
    out = {"ref_s": summary.get("reference_s"), "ref_spread": spread}
    if vs:
        out.update(norm=vs[0], norm_low=vs[1], norm_high=vs[2])
    if spread is not None and math.isfinite(spread):
        median = summary["median_s"]
        se = math.log(summary["ci_high_s"] / summary["ci_low_s"]) / 2 / 1.96
        half = 1.96 * math.sqrt(se * se + spread * spread)
        out.update(wide_low=median * math.exp(-half), wide_high=median * math.exp(half))
    return out


def bootstrap_ci(bench: model.Benchmark) -> stats.Estimate:
    """The CI perflab printed before the random-effects interval: the hierarchical
    bootstrap over processes, then samples (same raw data)."""
    import zlib

    import numpy as np

    rng = np.random.default_rng([0, zlib.crc32(bench.id.encode())])
    return stats.median_ci(timing_groups(bench), 0.95, RESAMPLES, rng)


def agreement(
    runs: list[dict], low: str = "low", high: str = "high", median: str = "median"
) -> tuple[float, float]:
    """(share of runs 2.. inside run 1's CI, share over every ordered pair of runs)."""
    inside = [runs[0][low] <= r[median] <= runs[0][high] for r in runs[1:]]
    pairs = [
        a[low] <= b[median] <= a[high]
        for i, a in enumerate(runs)
        for j, b in enumerate(runs)
        if i != j
    ]
    return sum(inside) / len(inside), sum(pairs) / len(pairs)


def series(count: int, extra: list[str], rng: random.Random, label: str, keep: Path) -> list[dict]:
    """``count`` runs, their results files kept under ``keep``."""
    out = []
    for i in range(count):
        out.append(run_once(keep / label.strip("-") / f"run{i}", rng, extra))
        print(
            f"  {label}: run {i + 1}/{count} ({out[-1]['_wall']['s']:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
    return out


def wilson(hits: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a share hits/trials (Wilson 1927): how far a share of
    19 tries can be from the share a long series would give."""
    if trials == 0:
        return 0.0, 1.0
    p = hits / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * (p * (1 - p) / trials + z * z / (4 * trials * trials)) ** 0.5 / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def machine_factors(results: list[dict], names: list[str]) -> list[float]:
    """Each run's speed factor common to all its workloads: the geometric mean over the
    workloads of (its median ÷ that workload's geometric mean over the runs). A run that
    met a slower machine has a factor above 1 for every workload alike."""
    centre = {n: statistics.geometric_mean([r[n]["median"] for r in results]) for n in names}
    return [statistics.geometric_mean([r[n]["median"] / centre[n] for n in names]) for r in results]


def common_factor_lines(results: list[dict], names: list[str]) -> list[str]:
    """How much of the run-to-run variation all workloads share, in words and figures."""
    if len(names) < 2 or len(results) < 3:
        return []
    logs = {n: [math.log(r[n]["median"]) for r in results] for n in names}
    corr = [
        statistics.correlation(logs[a], logs[b])
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    factors = [math.log(f) for f in machine_factors(results, names)]
    resid = {n: [x - f for x, f in zip(logs[n], factors)] for n in names}
    se = {
        n: statistics.mean(math.log(r[n]["high"] / r[n]["low"]) / 2 / 1.96 for r in results)
        for n in names
    }
    return [
        "",
        f"Between runs, the workloads' medians move together: their logs correlate "
        f"{min(corr):.2f}–{max(corr):.2f} across the runs. The part they share (each run's "
        f"machine factor) varies by {statistics.stdev(factors):.1%} (SD) from run to run; "
        "what is left of each workload's run-to-run variation varies by "
        f"{min(statistics.stdev(v) for v in resid.values()):.1%}–"
        f"{max(statistics.stdev(v) for v in resid.values()):.1%}, against a standard error "
        f"of {min(se.values()):.1%}–{max(se.values()):.1%} that the runs' CIs imply. "
        '"every pair, machine factor removed" is the agreement once each run\'s median '
        "and CI are divided by its run's factor: the share a CI can reach when the machine "
        "runs at one speed from run to run (slightly optimistic: the factor is estimated "
        f"from the same {len(names)} workloads). No single run can see that factor: all its "
        "benchmarks share it, so it cancels in ratios between benchmarks of one run.",
    ]


def table(title: str, results: list[dict], with_verdict: bool) -> list[str]:
    names = [k for k in results[0] if not k.startswith("_")]
    factors = machine_factors(results, names)
    speeds = [r[names[0]]["speed"] for r in results]
    lines = [
        f"### {title}",
        "",
        "| workload | median of run 1 | its 95% CI | runs 2.. inside it (95% CI of the share) | every pair | "
        "every pair, bootstrap CI (before) | every pair, machine factor removed | "
        "every pair of runs perflab did not call "
        f"busy | every pair of runs at the usual machine speed (±{STEADY:.0%}) | run medians "
        "min–max | median CI ± | processes (median) |" + (" verdict |" if with_verdict else ""),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        + ("---|" if with_verdict else ""),
    ]
    for name in names:
        runs = [r[name] for r in results]
        first, pairs = agreement(runs)
        raw_pairs = agreement(runs, "raw_low", "raw_high")[1]
        steady_runs = [
            {**r, **{k: r[k] / f for k in ("median", "low", "high")}} for r, f in zip(runs, factors)
        ]
        steady_pairs = agreement(steady_runs)[1]
        quiet = [r for r in runs if not r["busy"]]
        quiet_pairs = (
            f"{agreement(quiet)[1]:.0%} ({len(quiet)} runs)"
            if len(quiet) > 2
            else f"– ({len(quiet)} runs)"
        )
        usual_speed = statistics.median(r["speed"] for r in runs)
        usual = [r for r in runs if abs(r["speed"] / usual_speed - 1) <= STEADY]
        usual_pairs = (
            f"{agreement(usual)[1]:.0%} ({len(usual)} runs)"
            if len(usual) > 2
            else f"– ({len(usual)} runs)"
        )
        meds = [r["median"] for r in runs]
        half = statistics.median((r["high"] - r["low"]) / 2 / r["median"] for r in runs)
        inside = round(first * (len(runs) - 1))
        low, high = wilson(inside, len(runs) - 1)
        row = (
            f"| {name} | {runs[0]['median'] * 1e3:.3f} ms | {runs[0]['low'] * 1e3:.3f}–"
            f"{runs[0]['high'] * 1e3:.3f} | {first:.0%} ({inside}/{len(runs) - 1}; "
            f"{low:.0%}–{high:.0%}) | {pairs:.0%} | {raw_pairs:.0%} | {steady_pairs:.0%} | "
            f"{quiet_pairs} | "
            f"{usual_pairs} | "
            f"{min(meds) * 1e3:.3f}–{max(meds) * 1e3:.3f} | "
            f"±{half:.1%} | {statistics.median(r['processes'] for r in runs):.0f} |"
        )
        if with_verdict:
            row += f" {'met' if first >= TARGET else 'not met'} (≥ {TARGET:.0%}) |"
        lines.append(row)
    walls = [r["_wall"]["s"] for r in results if math.isfinite(r["_wall"]["s"])]
    speeds = [v for v in speeds if math.isfinite(v)]
    if walls and speeds:
        usual_speed = statistics.median(speeds)
        steady = sum(abs(v / usual_speed - 1) <= STEADY for v in speeds)
        lines += [
            "",
            f"Wall time per run (all {len(names)} workloads): median "
            f"{statistics.median(walls):.0f} s, range {min(walls):.0f}–{max(walls):.0f} s. "
            f"Machine speed before each run (best of 5 of a fixed loop): "
            f"{min(speeds) * 1e3:.1f}–{max(speeds) * 1e3:.1f} ms, {steady} of "
            f"{len(speeds)} runs within ±{STEADY:.0%} of the median.",
        ]
    else:
        lines += [
            "",
            "Wall times and the speed probe before each run were not kept (rebuilt "
            "from the results files).",
        ]
    return lines + common_factor_lines(results, names) + speed_mode_lines(results, names)


def reference_table(results: list[dict]) -> list[str]:
    """The two ways of using the machine-speed reference, side by side: the speed-normalized
    median (time ÷ reference, with its own CI) and the seconds CI widened by the reference's
    spread between processes. Each gets the same agreement figures as the seconds."""
    names = [k for k in results[0] if not k.startswith("_")]
    if not any("norm" in r[n] for r in results for n in names):
        return ["", "(No machine-speed reference in these results: measured before it existed.)"]
    lines = [
        "",
        "### The machine-speed reference: divided out, or added to the CI",
        "",
        "| workload | reference (run 1) | its spread between processes (median) | "
        "CPU time ÷ reference, run 1 | its 95% CI | runs 2.. inside it "
        "(95% CI of the share) | every pair | its CI ± (median) | run-to-run SD: "
        "seconds → CPU time → CPU time ÷ reference | seconds CI widened: runs 2.. inside | "
        "every pair | "
        "widened CI ± (median) | verdict, normalized |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name in names:
        runs = [r[name] for r in results]
        if not all("norm" in r and "wide_low" in r for r in runs):
            lines.append(
                f"| {name} | – (a run had fewer than 2 processes with the reference) |" + " |" * 11
            )
            continue
        first, pairs = agreement(runs, "norm_low", "norm_high", "norm")
        wide_first, wide_pairs = agreement(runs, "wide_low", "wide_high")
        inside = round(first * (len(runs) - 1))
        low, high = wilson(inside, len(runs) - 1)
        half = statistics.median((r["norm_high"] - r["norm_low"]) / 2 / r["norm"] for r in runs)
        wide = statistics.median((r["wide_high"] - r["wide_low"]) / 2 / r["median"] for r in runs)
        sd_s = statistics.stdev(math.log(r["median"]) for r in runs)
        sd_c = statistics.stdev(math.log(r["cpu"]) for r in runs)
        sd_n = statistics.stdev(math.log(r["norm"]) for r in runs)
        lines.append(
            f"| {name} | {runs[0]['ref_s'] * 1e3:.3f} ms | "
            f"{statistics.median(r['ref_spread'] for r in runs):.1%} | {runs[0]['norm']:.2f} | "
            f"{runs[0]['norm_low']:.2f}–{runs[0]['norm_high']:.2f} | {first:.0%} "
            f"({inside}/{len(runs) - 1}; {low:.0%}–{high:.0%}) | {pairs:.0%} | ±{half:.1%} | "
            f"{sd_s:.1%} → {sd_c:.1%} → {sd_n:.1%} | {wide_first:.0%} | {wide_pairs:.0%} | "
            f"±{wide:.1%} | "
            f"{'met' if first >= TARGET else 'not met'} (≥ {TARGET:.0%}) |"
        )
    return lines + [
        "",
        '"CPU time ÷ reference" (`cpu_vs_reference`): each process\'s median CPU time per '
        "op ÷ the median of the reference loop timed in that same process between its "
        "samples; the run's figure is the geometric mean over processes with the "
        'random-effects t-interval (perflab.analyze.reference). "seconds CI '
        "widened\": the seconds CI with the reference's between-process variance added to its "
        "squared standard error (the next run's machine as one more draw of the states this run "
        'saw). "run-to-run SD": the SD of the logs of the run medians: seconds, CPU '
        "seconds per op (same statistic), CPU time ÷ reference.",
    ]


def rebuild(
    keep: Path,
    command: str,
    budget: str | None,
    loads: tuple[float, float],
    probes: dict | None = None,
) -> dict:
    """A part from the results files kept under ``keep`` (``keep/default/runN/…/r.json``),
    every figure recomputed by this perflab from the raw data: for a measurement cut short
    before it saved its figures (e.g. at the end of a quiet window), or to re-analyse a
    saved one (``probes``: that part, whose speed probes, wall times, loads and duration
    are kept; without it they are nan)."""
    runs = sorted((keep / "default").glob("run*"), key=lambda d: int(d.name[3:]))
    found = [next(d.rglob("r.json"), None) for d in runs]
    files = [f for f in found if f is not None]
    times = [f.stat().st_mtime for f in files]
    old = (probes or {}).get("randomized", [])
    measured = []
    for i, f in enumerate(files):
        speed = (
            next(iter(v["speed"] for k, v in old[i].items() if not k.startswith("_")))
            if i < len(old)
            else math.nan
        )
        wall = old[i]["_wall"]["s"] if i < len(old) else math.nan
        measured.append(figures_of(f, speed, wall))
    if probes:
        return {
            **probes,
            "randomized": measured,
            "command": probes["command"] + "; figures recomputed from its results files",
        }
    return {
        "randomized": measured,
        "baseline": [],
        "quick": False,
        "load_start": loads[0],
        "load_end": loads[1],
        "minutes": (max(times) - min(times)) / 60 if times else 0.0,
        "keep": str(keep),
        "command": command + f" (cut short: {len(files)} runs finished; rebuilt from "
        "their results files)",
        "budget": budget,
    }


def merge(parts: list[dict]) -> dict:
    """Parts measured in separate windows (disjoint workloads, the same number of runs) as
    one measurement: run i of the whole is run i of every part; its wall time is their sum."""

    def join(key: str) -> list[dict]:
        count = min(len(p[key]) for p in parts)
        out = []
        for i in range(count):
            run: dict = {
                "_wall": {"s": sum(p[key][i]["_wall"]["s"] for p in parts)},
                "_speed": next((p[key][i]["_speed"] for p in parts if p[key][i].get("_speed")), {}),
            }
            for p in parts:
                run.update({k: v for k, v in p[key][i].items() if not k.startswith("_")})
            out.append(run)
        return out

    return {
        "randomized": join("randomized"),
        "baseline": join("baseline"),
        "quick": any(p["quick"] for p in parts),
        "loads": [(p["load_start"], p["load_end"]) for p in parts],
        "minutes": [p["minutes"] for p in parts],
        "keep": [p["keep"] for p in parts],
        "commands": [p["command"] for p in parts],
        "budgets": [p.get("budget") for p in parts],
    }


def budget_text(m: dict) -> str:
    """ ", --budget 8s" when the parts ran with a budget other than perflab's default."""
    budgets = sorted({b for b in m["budgets"] if b})
    return f"; but --budget {' / '.join(budgets)}" if budgets else ""


def render(m: dict) -> str:
    """The results section from a (merged) measurement."""
    runs, baseline = m["randomized"], m["baseline"]
    loads = "; ".join(f"{a:.2f} at the start, {b:.2f} at the end" for a, b in m["loads"])
    where = machine().rsplit(", load average", 1)[0]  # the loads of the parts come below
    lines = [
        "## Repeat-run agreement (issue 11)",
        "",
        f"Machine: {where}.",
        "",
        "Command: "
        + "; then ".join(f"`{c}`" for c in m["commands"])
        + (
            "; then `python benchmarks/repeat.py --merge` of the parts"
            if len(m["commands"]) > 1
            else ""
        )
        + ": `perflab run "
        "benchmarks/workloads/classic_bench.py` with default settings "
        f"(--precision 1%{budget_text(m)}), {len(runs)} times, each in a "
        "different environment (a variable of 0–4 KiB) and working directory (0–4 "
        "folders deep, names of 1–40 characters).",
        "",
        f"Rule: a workload **meets** the target when at least {TARGET:.0%} of runs 2.. "
        "have their median inside run 1's 95% CI (≈ 83% is ideal for equal standard "
        f"errors; with {len(runs) - 1} tries the share itself is uncertain, its 95% Wilson "
        'interval is given). "every pair" is the same share over every ordered pair of runs.',
        "",
    ]
    lines += table(f"With layout randomization (default), {len(runs)} runs", runs, True)
    lines += reference_table(runs)
    if len(baseline) > 1:
        lines += [""] + table(
            f"Without it (`--no-randomize`), {len(baseline)} runs, for comparison", baseline, False
        )
    lines += [
        "",
        f"Load average {loads}; the measurement took "
        f"{' + '.join(f'{x:.0f}' for x in m['minutes'])} min; the results files are in "
        + ", ".join(f"`{k}`" for k in m["keep"])
        + ".",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="4 runs, short budgets: to try the script, not to conclude",
    )
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--baseline-runs",
        type=int,
        default=10,
        help="runs with --no-randomize for comparison (0: none)",
    )
    parser.add_argument("--workloads", help="only these workloads (comma-separated)")
    parser.add_argument(
        "--budget",
        help="perflab's --budget per benchmark (default: its own, "
        "10s), to fit the runs in a quiet window",
    )
    parser.add_argument(
        "--save",
        metavar="PART.json",
        help="write the figures here instead of the results file (merge the parts with --merge)",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        metavar="PART.json",
        help="write the results file from parts measured with --save",
    )
    parser.add_argument(
        "--rebuild",
        metavar="KEPT_FOLDER",
        help="write a part (--save) from the results files of a measurement cut short",
    )
    parser.add_argument(
        "--loads",
        default="nan,nan",
        help="with --rebuild: the load averages at its start and end, as START,END",
    )
    parser.add_argument(
        "--probes",
        metavar="PART.json",
        help="with --rebuild: the part it saved, for its speed probes, wall times and loads",
    )
    args = parser.parse_args(argv)
    if args.rebuild:
        start, end = (float(x) for x in args.loads.split(","))
        part = rebuild(
            Path(args.rebuild),
            "python benchmarks/repeat.py "
            + (f"--budget {args.budget} " if args.budget else "")
            + "--baseline-runs 0",
            args.budget,
            (start, end),
            json.loads(Path(args.probes).read_text()) if args.probes else None,
        )
        Path(args.save or "repeat-part.json").write_text(json.dumps(part))
        return 0
    if args.merge:
        write_section(
            "repeat", render(merge([json.loads(Path(p).read_text()) for p in args.merge]))
        )
        return 0
    runs, baseline_runs = (4, 3) if args.quick else (args.runs, args.baseline_runs)
    budget = "2s" if args.quick else args.budget
    extra = ["--budget", budget] if budget else []
    if args.workloads:
        for name in args.workloads.split(","):
            extra += ["--filter", f"{name}/*"]
    load = os.getloadavg()
    t0 = time.monotonic()
    rng = random.Random(2026)
    keep = Path(tempfile.mkdtemp(prefix="perflab-repeat-"))
    randomized = series(runs, extra, rng, "default", keep)
    baseline = (
        series(baseline_runs, extra + ["--no-randomize"], rng, "--no-randomize", keep)
        if baseline_runs > 1
        else []
    )
    part = {
        "randomized": randomized,
        "baseline": baseline,
        "quick": args.quick,
        "load_start": load[0],
        "load_end": os.getloadavg()[0],
        "minutes": (time.monotonic() - t0) / 60,
        "keep": str(keep),
        "command": " ".join(["python benchmarks/repeat.py", *argv]),
        "budget": budget,
    }
    if args.save:
        Path(args.save).write_text(json.dumps(part))
        print(f"figures saved to {args.save}", file=sys.stderr)
    else:
        write_section("repeat", render(merge([part])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
