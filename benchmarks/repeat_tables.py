"""The tables and the Markdown section of benchmarks/repeat.py (repeat-run agreement):
the agreement rule with its Wilson interval, the machine-speed lines, and the rendering
of the merged figures. Run benchmarks/repeat.py, not this module."""

from __future__ import annotations

import math
import statistics

from common import machine

TARGET = 0.80
#: a run met the machine at its usual speed when the speed probe was within this of its median
STEADY = 0.05
#: a reference timing above this multiple of its run's fast level counts as slow
SLOW_MODE = 1.4


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
