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
import string
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, ROOT, timed, write_section  # noqa: E402
from repeat_tables import SLOW_MODE, render  # noqa: E402

from perflab import model  # noqa: E402
from perflab.analyze import stats  # noqa: E402
from perflab.analyze.run.summary import RESAMPLES, summarize, timing_groups  # noqa: E402

BENCH_FILE = ROOT / "benchmarks" / "workloads" / "classic_bench.py"


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
