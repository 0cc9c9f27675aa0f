"""perflab compare: does it cry wolf (A/A), does it hear a 5% slowdown, what does it cost (issue 6).

Measures, on this machine, in one run, with two measurement designs:
  * separate runs (what a CI job comparing main.json with branch.json does): A and
    B are two `perflab run` invocations one after the other;
  * interleaved: A and B are twin benchmarks of one `perflab run` (its runner
    interleaves their processes in randomized order), split afterwards into an
    A file and a B file; machine drift then hits both sides alike (Abedi &
    Brecht 2017).
For each design:
  * sensitivity: a busy loop of the suite is made 5% longer (loop count × 1.05)
    in B; `perflab compare A B` must call it "slower" in ≥ 9 of 10 repetitions;
  * A/A false alarms: the unchanged suite of 20 benchmarks; at most 5% of the
    verdicts may be "faster" or "slower" (also reported with --threshold 5%);
  * cost: processes, samples and wall time per run.
Beside perflab: the decision rules of pyperf (Student's t-test on all values, as
`pyperf compare_to` reports "significant"), benchstat (Mann–Whitney U on all
samples, p < 0.05) and "medians differ by more than 2%", applied to the same
raw samples (the peer tools themselves are not run), and a seeded simulation of
the interval's coverage.

Usage: python benchmarks/compare.py [REPS [TARGET_BUDGET [AA_RUNS [SUITE_BUDGET]]]]
       (defaults 10 20s 4 3s). Writes benchmarks/results/compare.md.
       python benchmarks/compare.py --more-budget REPS BUDGET
       adds an interleaved sensitivity pass with a larger budget to that file;
       python benchmarks/compare.py --aa-target RUNS BUDGET
       adds an A/A pass of the target benchmark alone, in separate runs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, machine, write_section  # noqa: E402

SLOWDOWN = 1.05
THRESHOLD = 0.02
WIDE = 0.05  # a threshold for noisy shared machines, reported beside the default
TARGET = "suite/busy_0"
TWIN = "~b"  # suffix of the B twin in interleaved runs
SUITE = """
import json
import perflab

SLOW = {slow!r}    # loop-count factor of busy_0 in B (the injected slowdown)
TWINS = {twins!r}  # register each benchmark twice, NAME and NAME~b, in one group


def _busy(n):
    total = 0
    for i in range(n):
        total += i
    return total


def _make(n):
    return lambda: _busy(n)


DATA = list(range(2000, 0, -1))
CASES = {{f"busy_{{i}}": 2000 + 1000 * i for i in range(10)}}
OTHERS = {{
    "sort": lambda: sorted(DATA), "dict": lambda: {{i: i for i in range(2000)}},
    "join": lambda: ",".join(map(str, range(1000))), "json_dumps": lambda: json.dumps(DATA[:500]),
    "listcomp": lambda: [x * 2 for x in DATA], "sum": lambda: sum(DATA),
    "set": lambda: set(DATA), "strmul": lambda: "abc" * 1000, "max": lambda: max(DATA),
    "reverse": lambda: DATA[::-1]}}
for name, n in CASES.items():
    factor = SLOW if name == "busy_0" else 1.0
    if TWINS:
        perflab.bench(_make(n), name=name, group="suite")
        perflab.bench(_make(round(n * factor)), name=name + "~b", group="suite")
    else:
        perflab.bench(_make(round(n * factor)), name=name, group="suite")
for name, func in OTHERS.items():
    perflab.bench(func, name=name, group="suite")
    if TWINS:
        perflab.bench(func, name=name + "~b", group="suite")
"""


@dataclass
class Args:
    """Command-line arguments: repetitions, budgets and A/A runs."""

    repetitions: int = 10
    target_budget: str = "20s"
    aa_runs: int = 4
    suite_budget: str = "3s"


@dataclass
class Design:
    """What one measurement design produced."""

    name: str
    pairs: list[dict] = field(default_factory=list)  # sensitivity comparisons
    aa: list[dict] = field(default_factory=list)  # A/A comparisons at ±2%
    aa_wide: list[dict] = field(default_factory=list)  # the same at ±5%
    peers_ab: list[dict] = field(default_factory=list)
    peers_aa: list[dict] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)  # sensitivity runs, s
    aa_walls: list[float] = field(default_factory=list)  # suite runs, s
    cost: list[dict] = field(default_factory=list)
    aa_cost: list[dict] = field(default_factory=list)


def run_suite(
    folder: Path,
    out: Path,
    budget: str,
    slow: float = 1.0,
    twins: bool = False,
    only: str | None = None,
) -> float:
    """One `perflab run` of the suite (or of benchmarks matching ``only``); wall seconds."""
    suite = folder / f"suite_{slow:g}_{twins}.py"
    suite.write_text(SUITE.format(slow=slow, twins=twins))
    extra = ["--max-processes", "200"] if only else []
    start = time.monotonic()
    subprocess.run(
        [
            PYTHON,
            "-m",
            "perflab",
            "run",
            str(suite),
            "--json",
            str(out),
            "--quiet",
            "--no-alloc",
            "--budget",
            budget,
            *extra,
            *(["--filter", only] if only else []),
        ],
        check=True,
        capture_output=True,
    )
    return time.monotonic() - start


def split_twins(path: Path) -> tuple[Path, Path]:
    """Split an interleaved run into A (NAME) and B (NAME~b, renamed NAME) files."""
    from perflab import model

    results = model.load(path)
    benches = results.benchmarks
    results.benchmarks = [b for b in benches if not b.name.endswith(TWIN)]
    a = model.save(results, path.with_name(path.stem + "-a.json"))
    results.benchmarks = [b for b in benches if b.name.endswith(TWIN)]
    for bench in results.benchmarks:
        bench.name = bench.name.removesuffix(TWIN)
    return a, model.save(results, path.with_name(path.stem + "-b.json"))


def compare(a: Path, b: Path, threshold: float = THRESHOLD) -> dict:
    """`perflab compare A B --json` through the real entry point."""
    proc = subprocess.run(
        [
            PYTHON,
            "-m",
            "perflab",
            "compare",
            str(a),
            str(b),
            "--json",
            "--threshold",
            str(threshold),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(proc.stdout)


def peer_rules(a: Path, b: Path) -> dict[str, dict[str, bool]]:
    """Per benchmark id: would each peer's rule flag a difference on these samples?"""
    from scipy import stats as sps

    from perflab import model
    from perflab.analyze.run.summary import timing_groups

    bench_a = {x.id: x for x in model.load(a).benchmarks}
    out = {}
    for bench in model.load(b).benchmarks:
        va = np.concatenate(timing_groups(bench_a[bench.id]))
        vb = np.concatenate(timing_groups(bench))
        out[bench.id] = {
            "pyperf t-test": bool(sps.ttest_ind(va, vb).pvalue < 0.05),
            "benchstat MWU": bool(sps.mannwhitneyu(va, vb).pvalue < 0.05),
            "medians ±2%": bool(abs(np.median(vb) / np.median(va) - 1) > THRESHOLD),
        }
    return out


def _record_aa(design: Design, a: Path, b: Path) -> None:
    result = compare(a, b)
    design.aa.append(result)
    design.aa_wide.append(compare(a, b, WIDE))
    design.aa_cost.append(result["cost"]["B"])
    design.peers_aa.append(peer_rules(a, b))
    print(
        f"{design.name} A/A: {sum(_alarm(r['verdict']) for r in result['rows'])} alarms", flush=True
    )


def _record_pair(design: Design, a: Path, b: Path) -> None:
    result = compare(a, b)
    design.pairs.append(result)
    design.cost.append(result["cost"]["A"])
    design.peers_ab.append(peer_rules(a, b))
    print(
        f"{design.name} rep {len(design.pairs)}: {TARGET} → {_row(result, TARGET)['verdict']}",
        flush=True,
    )


def measure_separate(args: Args, folder: Path) -> Design:
    """A and B from separate runs; the A/A runs compare each suite run with the previous."""
    design = Design("separate runs")
    for rep in range(args.repetitions):
        a, b = folder / f"a{rep}.json", folder / f"b{rep}.json"
        order = [(1.0, a), (SLOWDOWN, b)] if rep % 2 == 0 else [(SLOWDOWN, b), (1.0, a)]
        for slow, path in order:
            design.walls.append(run_suite(folder, path, args.target_budget, slow, only=TARGET))
        _record_pair(design, a, b)
    previous = None
    for i in range(args.aa_runs + 1):
        path = folder / f"aa{i}.json"
        design.aa_walls.append(run_suite(folder, path, args.suite_budget))
        if previous is not None:
            _record_aa(design, previous, path)
        previous = path
    return design


def measure_interleaved(args: Args, folder: Path) -> Design:
    """A and B as twins of one run, split into two files afterwards."""
    design = Design("interleaved")
    for rep in range(args.repetitions):
        path = folder / f"twin{rep}.json"
        # --budget is per benchmark: each twin gets what one side of a separate run gets
        design.walls.append(
            run_suite(folder, path, args.target_budget, SLOWDOWN, True, only=TARGET)
        )
        _record_pair(design, *split_twins(path))
    for i in range(args.aa_runs):
        path = folder / f"twin-aa{i}.json"
        design.aa_walls.append(run_suite(folder, path, args.suite_budget, twins=True))
        _record_aa(design, *split_twins(path))
    return design


def _row(result: dict, key: str) -> dict:
    return next(r for r in result["rows"] if r["id"] == key)


def _alarm(verdict: str) -> bool:
    return verdict in ("faster", "slower")


def _rate(results: list[dict]) -> tuple[int, int]:
    verdicts = [r["verdict"] for res in results for r in res["rows"]]
    return sum(map(_alarm, verdicts)), len(verdicts)


def _share(hits: int, total: int) -> str:
    return f"{hits} of {total} ({hits / max(total, 1):.1%})"


def peer_rates(design: Design) -> dict[str, tuple[float, float]]:
    """Rule → (A/A alarm rate, detection rate of the 5% slowdown)."""
    out = {}
    for rule in design.peers_ab[0][TARGET]:
        unchanged = [p[rule] for res in design.peers_aa for p in res.values()]
        hits = [res[TARGET][rule] for res in design.peers_ab]
        out[rule] = (sum(unchanged) / max(len(unchanged), 1), sum(hits) / len(hits))
    return out


def _cost_line(costs: list[dict], walls: list[float], what: str) -> str:
    return (
        f"{what}: median {statistics.median(c['processes'] for c in costs):,.0f} processes "
        f"and {statistics.median(c['samples'] for c in costs):,.0f} samples per side, "
        f"{statistics.median(walls):.0f} s wall per run (median of {len(walls)} runs)"
    )


def design_lines(design: Design) -> list[str]:
    """The Markdown lines of one measurement design."""
    target = [_row(res, TARGET) for res in design.pairs]
    slower = sum(r["verdict"] == "slower" for r in target)
    alarms, total = _rate(design.aa)
    unchanged = [r["verdict"] for res in design.aa for r in res["rows"]]
    lines = [
        f"### {design.name}",
        "",
        "| check | target | measured |",
        "|---|---|---:|",
        f"| sensitivity: 5% longer loop called slower | ≥ 9 of 10 | "
        f"**{slower} of {len(target)}** |",
        f"| A/A: unchanged benchmarks called faster or slower (±2%) | ≤ 5% | "
        f"**{_share(alarms, total)}** |",
        f"| A/A alarms per comparison of 20 (±2%) | | "
        f"{', '.join(str(_rate([res])[0]) for res in design.aa)} |",
        f"| A/A with `--threshold 5%` | ≤ 5% | {_share(*_rate(design.aa_wide))} |",
        "",
        "Slowed benchmark, B/A (95% CI) per repetition: "
        + "; ".join(
            f"{r['verdict']} {r['ratio']['value']:.3f} ({r['ratio']['ci_low']:.3f}–"
            f"{r['ratio']['ci_high']:.3f})"
            for r in target
            if r["ratio"]
        )
        + ".",
        "",
        "All A/A verdicts at ±2%: "
        + ", ".join(
            f"{sum(v == w for v in unchanged)} {w}"
            for w in ("same", "inconclusive", "slower", "faster", "failed")
        )
        + ".",
        "",
        "Cost:",
        "",
        "* " + _cost_line(design.cost, design.walls, f"sensitivity (`{TARGET}`)"),
        "* " + _cost_line(design.aa_cost, design.aa_walls, "A/A (the 20-benchmark suite)"),
        "",
        "Peers' decision rules on the same samples:",
        "",
        "| rule | A/A false alarms | 5% slowdown detected |",
        "|---|---:|---:|",
        f"| perflab compare (CI over processes vs ±2%) | {alarms / max(total, 1):.1%} | "
        f"{slower / max(len(target), 1):.0%} |",
    ]
    lines += [
        f"| {rule} | {false:.1%} | {hit:.0%} |" for rule, (false, hit) in peer_rates(design).items()
    ]
    return lines + [""]


def coverage_study(trials: int = 200) -> list[str]:
    """Synthetic: coverage and A/A alarms of the plain vs expanded percentile CI."""
    from perflab.analyze import decisions, stats

    lines = [
        "| processes per side | process-to-process spread | CI coverage plain / expanded "
        "| A/A alarms plain / expanded |",
        "|---:|---|---:|---:|",
    ]
    for processes in (3, 5, 10):
        for label, between in (
            ("lognormal 3%", 0.03),
            ("lognormal 20%", 0.2),
            ("bimodal: 30% of processes +25%", None),
        ):
            rng = np.random.default_rng(processes)
            hits = np.zeros((2, 2))
            for _ in range(trials):
                ga, gb = (_groups(rng, processes, between) for _ in range(2))
                point = stats.pooled_median(gb) / stats.pooled_median(ga)
                reps = stats.bootstrap_medians(gb, 1000, rng) / stats.bootstrap_medians(
                    ga, 1000, rng
                )
                for j, est in enumerate(
                    (
                        stats.percentile_ci(reps, point),
                        decisions.expanded_ratio_ci(point, reps, processes)[0],
                    )
                ):
                    hits[j] += [
                        est.ci_low <= 1 <= est.ci_high,
                        _alarm(decisions.verdict(est.ci_low, est.ci_high, THRESHOLD)),
                    ]
            hits /= trials
            lines.append(
                f"| {processes} | {label} | {hits[0, 0]:.1%} / {hits[1, 0]:.1%} | "
                f"{hits[0, 1]:.1%} / {hits[1, 1]:.1%} |"
            )
    return lines


def _groups(rng: np.random.Generator, processes: int, between: float | None) -> list:
    centres = (
        np.where(rng.random(processes) < 0.3, 1.25, 1.0)
        if between is None
        else np.exp(rng.normal(0, between, processes))
    )
    return [c * 1e-6 * np.exp(rng.normal(0, 0.04, 30)) for c in centres]


def report(designs: list[Design], args: Args, seconds: float) -> str:
    lines = [
        "## perflab compare: A/A false alarms, sensitivity to a 5% slowdown, cost",
        "",
        f"Machine: {machine()}. Shared with four other engineers' builds, tests and "
        "benchmarks while this ran (load average 3–8 on 2 CPUs): the numbers are noisy, "
        "and this machine is a hard case, not a typical one.",
        "",
        f"Command: `python benchmarks/compare.py {args.repetitions} {args.target_budget} "
        f"{args.aa_runs} {args.suite_budget}` ({seconds / 60:.0f} min in all).",
        "",
        f"* Sensitivity: `{TARGET}` (a loop of 2,000 additions, ~40 µs) as A, the same loop "
        f"5% longer as B; `perflab run --filter {TARGET} --budget {args.target_budget} "
        f"--max-processes 200`, {args.repetitions} repetitions.",
        f"* A/A: the suite of 20 benchmarks (10 busy loops, sort, dict, join, json, …), "
        f"`perflab run --budget {args.suite_budget}` (precision 1%, 5–60 processes), "
        f"{args.aa_runs} comparisons of 20.",
        "* Each comparison: `perflab compare A.json B.json --json` (threshold ±2%, 95% CI).",
        "* Separate runs: A and B are two invocations one after the other (run order "
        "alternates between repetitions); this is what a CI job comparing main.json with "
        "branch.json does.",
        "* Interleaved: A and B are twin benchmarks of one invocation, whose runner "
        "interleaves their processes in random order; the file is then split into A.json "
        "and B.json (same per-benchmark budget).",
        "",
    ]
    for design in designs:
        lines += design_lines(design)
    lines += [
        "The peer rules treat every sample as independent (pyperf's t-test, benchstat's "
        "U test on samples), so with thousands of samples they flag differences that "
        'are only process-to-process or run-to-run noise; "medians ±2%" has no '
        "interval at all.",
        "",
        "### Synthetic check of the expanded CI (seeded, no timing)",
        "",
        "200 A/A pairs per line, 30 samples per process with 4% noise; 'plain' is the "
        "hierarchical percentile bootstrap, 'expanded' widens it by "
        "sqrt(n/(n−1))·t/z (Hesterberg 2015) as perflab compare does.",
        "",
        *coverage_study(),
    ]
    return "\n".join(lines)


def more_budget(repetitions: int, budget: str) -> int:
    """Append an interleaved sensitivity pass with a larger budget: the price of 9 in 10."""
    args = Args(repetitions, budget, 0)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="perflab-compare-") as tmp:
        design = measure_interleaved(args, Path(tmp))
    target = [_row(res, TARGET) for res in design.pairs]
    lines = [
        f"### interleaved, `--budget {budget}`: what 9 in 10 costs",
        "",
        f"Command: `python benchmarks/compare.py --more-budget {repetitions} {budget}` "
        f"({(time.monotonic() - start) / 60:.0f} min), sensitivity only.",
        "",
        f"* 5% longer loop called slower: **{sum(r['verdict'] == 'slower' for r in target)} "
        f"of {len(target)}**",
        "* " + _cost_line(design.cost, design.walls, f"sensitivity (`{TARGET}`)"),
        "",
        "Slowed benchmark, B/A (95% CI) per repetition: "
        + "; ".join(
            f"{r['verdict']} {r['ratio']['value']:.3f} ({r['ratio']['ci_low']:.3f}–"
            f"{r['ratio']['ci_high']:.3f})"
            for r in target
            if r["ratio"]
        )
        + ".",
    ]
    _insert_section(lines)
    return 0


def aa_target(runs: int, budget: str) -> int:
    """Append an A/A pass of the target alone in separate runs: run-to-run noise vs tight CIs."""
    start = time.monotonic()
    design, previous = Design("separate"), None
    with tempfile.TemporaryDirectory(prefix="perflab-compare-") as tmp:
        for i in range(runs + 1):
            path = Path(tmp) / f"t{i}.json"
            design.aa_walls.append(run_suite(Path(tmp), path, budget, only=TARGET))
            if previous is not None:
                design.aa.append(compare(previous, path))
                design.aa_wide.append(compare(previous, path, WIDE))
            previous = path
    rows = [_row(res, TARGET) for res in design.aa]
    lines = [
        f"### separate runs, `{TARGET}` alone, `--budget {budget}`: A/A with tight CIs",
        "",
        f"Command: `python benchmarks/compare.py --aa-target {runs} {budget}` "
        f"({(time.monotonic() - start) / 60:.0f} min): {runs + 1} runs of the unchanged "
        "benchmark one after the other, each compared with the previous one.",
        "",
        f"* called faster or slower at ±2%: **{_share(*_rate(design.aa))}**; "
        f"at ±5%: {_share(*_rate(design.aa_wide))}",
        "* B/A (95% CI) per comparison: "
        + "; ".join(
            f"{r['verdict']} {r['ratio']['value']:.3f} ({r['ratio']['ci_low']:.3f}–"
            f"{r['ratio']['ci_high']:.3f})"
            for r in rows
            if r["ratio"]
        )
        + ".",
    ]
    _insert_section(lines)
    return 0


def _insert_section(lines: list[str]) -> None:
    """Insert a section before the synthetic check in results/compare.md, and echo it."""
    path = Path(__file__).resolve().parent / "results" / "compare.md"
    head, sep, tail = path.read_text().partition("### Synthetic check")
    path.write_text(head + "\n".join(lines) + "\n\n" + sep + tail)
    print("\n".join(lines))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--more-budget"]:
        return more_budget(int(argv[1]), argv[2])
    if argv[:1] == ["--aa-target"]:
        return aa_target(int(argv[1]), argv[2])
    defaults = Args()
    names = ("repetitions", "target_budget", "aa_runs", "suite_budget")
    args = Args(*[type(getattr(defaults, n))(v) for n, v in zip(names, argv)])
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="perflab-compare-") as tmp:
        designs = [measure_interleaved(args, Path(tmp)), measure_separate(args, Path(tmp))]
    write_section("compare", report(designs, args, time.monotonic() - start))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
