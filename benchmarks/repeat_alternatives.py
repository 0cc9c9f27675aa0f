"""Repeat-run agreement of other ways to divide the machine's speed out (issue 11).

benchmarks/repeat.py found that this VM runs Python at two speeds about 2× apart and
that the share of time in the slow one changes from run to run; perflab's answer is
``cpu_vs_reference`` (each process's median CPU time per op ÷ its median reference
timing; perflab.analyze.reference). Its CI held the later runs by the issue's rule
(run 1's CI), but over every pair of runs less often than the ≈ 83% that equal standard
errors would give. This script asks whether another use of the same raw data does
better, recomputed from the results files that repeat.py kept (no new measurement):

- ``per process`` — perflab's ``cpu_vs_reference``, as shipped (the yardstick);
- ``per sample`` — each sample's CPU time per op ÷ the reference timed just before it
  (the worker's schedule is rebuilt from its rule: before each of the first
  REFERENCE_MIN samples, then while the reference took at most REFERENCE_SHARE of the
  sampled time), so a mode switch inside a process no longer mixes speeds in one quotient;
- ``fast-mode samples`` — only the samples whose reference timings before and after both
  lie in the fast mode (under SLOW_MODE × the run's 5th percentile), CPU time per op ÷
  the mean of those two timings;
- ``regressed to the fast mode`` — across a run's processes, log CPU time per op against
  log reference (least squares), predicted at the run's 5th-percentile reference timing,
  with the t-interval of that prediction (P − 2 df): CPU seconds at the fast speed.

Each gives, per run and workload, a value with a 95% CI; the table reports, per kept
folder (e.g. one measured on a quiet machine and one under load), the share of runs
2.. inside run 1's CI (the issue's rule, target ≥ 80%), the share over every ordered pair,
the median CI half-width and the run-to-run SD of the logs. Verdict (one rule, printed
by this script): a method is "met" on a folder when both shares are ≥ 80% on every
workload (and every run has a figure), "not met" otherwise.

Usage: python benchmarks/repeat_alternatives.py LABEL=KEPT_FOLDER [LABEL=KEPT_FOLDER …]
(KEPT_FOLDER: the folder repeat.py names under its table; writes
benchmarks/results/repeat_alternatives.md)
"""

from __future__ import annotations

import datetime as dt
import math
import shlex
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import write_section  # noqa: E402
from repeat import SLOW_MODE, TARGET, agreement  # noqa: E402

from perflab import model  # noqa: E402
from perflab.analyze import reference, stats  # noqa: E402
from perflab.engines.run.worker import REFERENCE_MIN, REFERENCE_SHARE  # noqa: E402

#: the fast mode's level: this percentile of every reference timing of a run
FAST_PERCENTILE = 5
LEVEL = 0.95


def schedule(process: model.Process) -> list[int] | None:
    """For each sample of ``process``, the index of the reference timing taken just before
    it, by the worker's rule (perflab.engines.run.worker._sample); None when the rebuilt
    schedule does not account for every timing (another perflab version wrote the file)."""
    count, spent_ns, sampled_ns, out = 0, 0, 0, []
    timings = process.reference_ns
    for k, sample in enumerate(process.samples):
        if count < len(timings) and (k < REFERENCE_MIN or spent_ns <= REFERENCE_SHARE * sampled_ns):
            spent_ns += timings[count]
            count += 1
        out.append(count - 1)
        sampled_ns += sample.wall_ns
    return out if count == len(timings) and count else None


def cpu_per_op(bench: model.Benchmark, sample: model.Sample) -> float:
    """A sample's CPU seconds per op."""
    return sample.cpu_ns / sample.iterations / bench.ops_per_call * 1e-9


def estimate(location: stats.LogLocation | None) -> tuple[float, float, float] | None:
    """(value, CI low, CI high) of a location, or None."""
    if location is None:
        return None
    ci = location.ci(LEVEL)
    return ci.value, ci.ci_low, ci.ci_high


def per_process(bench: model.Benchmark, fast_ns: float) -> tuple[float, float, float] | None:
    """perflab's cpu_vs_reference, as shipped."""
    return estimate(reference.normalized_location(reference.cpu_reference_pairs(bench)))


def scheduled(bench: model.Benchmark):
    """(process, :func:`schedule` of it) for each process whose schedule could be rebuilt."""
    for process in bench.processes:
        before = schedule(process)
        if before is not None:
            yield process, before


def per_sample(bench: model.Benchmark, fast_ns: float) -> tuple[float, float, float] | None:
    """Each sample ÷ the reference timed just before it; geometric mean over processes."""
    groups = []
    for process, before in scheduled(bench):
        group = [
            cpu_per_op(bench, s) / (process.reference_ns[i] * 1e-9)
            for s, i in zip(process.samples, before)
            if not s.flagged
        ]
        if group:
            groups.append(group)
    return estimate(stats.process_location(groups))


def fast_samples(bench: model.Benchmark, fast_ns: float) -> tuple[float, float, float] | None:
    """Only samples with both neighbouring reference timings in the fast mode."""
    groups = []
    for process, before in scheduled(bench):
        timings = process.reference_ns
        group = []
        for sample, i in zip(process.samples, before):
            after = min(i + 1, len(timings) - 1)
            pair = (timings[i], timings[after])
            if not sample.flagged and max(pair) <= SLOW_MODE * fast_ns:
                group.append(cpu_per_op(bench, sample) / (sum(pair) / 2 * 1e-9))
        if group:
            groups.append(group)
    return estimate(stats.process_location(groups))


def regressed(bench: model.Benchmark, fast_ns: float) -> tuple[float, float, float] | None:
    """log CPU per op on log reference across processes, predicted at the fast mode."""
    x, y = [], []
    for process in bench.processes:
        good = [cpu_per_op(bench, s) for s in process.samples if not s.flagged]
        ref_s = reference.reference_median_s(process.reference_ns)
        if good and ref_s is not None:
            x.append(math.log(ref_s / (fast_ns * 1e-9)))
            y.append(math.log(float(np.median(good))))
    if len(x) < 4 or statistics.pstdev(x) == 0:
        return None
    design = np.column_stack([np.ones(len(x)), x])
    coef, *_ = np.linalg.lstsq(design, np.asarray(y), rcond=None)
    residual = np.asarray(y) - design @ coef
    variance = float(residual @ residual) / (len(x) - 2)
    se = math.sqrt(variance * np.linalg.inv(design.T @ design)[0, 0])
    half = float(sps.t.ppf((1 + LEVEL) / 2, len(x) - 2)) * se
    return math.exp(coef[0]), math.exp(coef[0] - half), math.exp(coef[0] + half)


METHODS: dict[str, Callable] = {
    "per process (shipped)": per_process,
    "per sample": per_sample,
    "fast-mode samples": fast_samples,
    "regressed to the fast mode": regressed,
}


def run_files(folder: Path) -> list[Path]:
    """The results files of one repeat.py series, in run order."""

    def number(path: Path) -> int:
        part = next(p for p in path.relative_to(folder).parts if p.startswith("run"))
        return int(part[3:])

    return sorted(folder.glob("default/run*/**/r.json"), key=number)


def figures(folder: Path) -> tuple[int, dict[str, dict[str, list[dict]]]]:
    """(the number of runs; method → workload → per run {median, low, high}, runs without
    a figure left out)."""
    out: dict[str, dict[str, list[dict]]] = {m: {} for m in METHODS}
    files = run_files(folder)
    for path in files:
        results = model.load(path)
        timings = [t for b in results.benchmarks for p in b.processes for t in p.reference_ns]
        if not timings:
            continue
        fast_ns = float(np.percentile(timings, FAST_PERCENTILE))
        for bench in results.benchmarks:
            for name, method in METHODS.items():
                got = method(bench, fast_ns)
                if got is not None:
                    value, low, high = got
                    out[name].setdefault(bench.name, []).append(
                        {"median": value, "low": low, "high": high}
                    )
    return len(files), out


def rows(label: str, folder: Path) -> tuple[list[str], list[str]]:
    """The table rows of one folder, and the verdict lines."""
    lines, verdicts = [], []
    count, per_method = figures(folder)
    for name, per_workload in per_method.items():
        ok = bool(per_workload)
        for workload, runs in per_workload.items():
            ok = ok and len(runs) == count  # a method that gives no figure fails that run
            if len(runs) < 3:
                continue
            first, every = agreement(runs)
            half = statistics.median((r["high"] - r["low"]) / 2 / r["median"] for r in runs)
            sd = statistics.stdev(math.log(r["median"]) for r in runs)
            ok = ok and first >= TARGET and every >= TARGET
            lines.append(
                f"| {label} | {name} | {workload} | {len(runs)} | {first:.0%} | "
                f"{every:.0%} | ±{half:.1%} | {sd:.1%} |"
            )
        verdicts.append((name, ok))
    return lines, verdicts


def main(argv: list[str]) -> int:
    pairs = [a.split("=", 1) for a in argv]
    if not pairs or any(len(p) != 2 or not Path(p[1]).is_dir() for p in pairs):
        print(
            "error: give LABEL=KEPT_FOLDER pairs (the folders repeat.py keeps its results "
            "files in)",
            file=sys.stderr,
        )
        return 2
    table = [
        "| series | method | workload | runs | runs 2.. inside run 1's CI | every pair "
        "| CI ± (median) | run-to-run SD |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    verdicts: dict[str, list[str]] = {name: [] for name in METHODS}
    for label, folder in pairs:
        lines, said = rows(label, Path(folder))
        table += lines
        for name, ok in said:
            verdicts[name].append(f"{label}: **{'met' if ok else 'not met'}**")
    summary = [f"- {name}: " + "; ".join(said) for name, said in verdicts.items()]
    robust = [name for name, said in verdicts.items() if all("**met**" in s for s in said)]
    text = "\n".join(
        [
            "### Other ways to divide the machine's speed out (issue 11)",
            "",
            f"Recomputed on {dt.date.today().isoformat()} from the results files of repeat.py's "
            "series (no new measurement; measured on the machine named above): "
            f"`python benchmarks/repeat_alternatives.py {shlex.join(argv)}`. Methods "
            "(details in the script's docstring): perflab's per-process quotient as shipped; "
            "each sample ÷ the reference timed just before it; only samples between two "
            "fast-mode reference timings; log CPU time per op regressed on log reference across "
            "processes and predicted at the fast mode (the run's "
            f"{FAST_PERCENTILE}th-percentile reference timing).",
            "",
            f"Verdict rule: **met** when every run has a figure and both shares are ≥ "
            f"{TARGET:.0%} on every workload of the series, otherwise **not met**.",
            "",
            *table,
            "",
            *summary,
            "",
            "Met in every series: " + (", ".join(robust) if robust else "none") + ".",
        ]
    )
    write_section("repeat_alternatives", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
