"""Why perflab's median could differ from a plain loop's: one hypothesis at a time (issue 11).

The observation to explain: on some workloads perflab's median came out 5–10%
below pyperf's and below a plain ``perf_counter_ns`` loop in fresh processes, and
the size of the environment moved medians by up to 8% while back-to-back runs in
one environment agreed.

The method. On a shared machine, two processes run one after the other can differ
by 30–100% because another program took the core or the host was busy; that
drowns any effect of a few percent. So every comparison here is made in
**lockstep**: the two processes compared are started together and pass a token
back and forth, each making two timed calls while it holds it
(benchmarks/workloads/layout_probe.py, ring mode). Both meet the machine's swings
alike, and their ratio keeps what differs between them: the hypothesis under test,
plus the layout that ASLR gives each process. Each process reports its median
*CPU* time per call (process CPU clock), which also leaves out time spent waiting
for a core. Each comparison is repeated over PAIRS pairs of fresh processes; its
figure is the median ratio with a bootstrap 95% CI.

Experiments (workloads from benchmarks/workloads/classic.py):

0. **null**: plain loop against plain loop, same environment: how far two
   processes that differ only by ASLR's layout disagree;
1. **ladder**: the plain loop against the same loop with one part of perflab's
   worker switched on (imports, the benchmark-file loader, functools.partial, the
   worker's ``time_loop``, the GC callback, the clock bracket, the warmup, event
   streaming), and with all of them; and 1b, the parts that can be switched inside
   one process, alternated in blocks of calls within one process;
2. **environment size**: a padding variable of 0 bytes against 512–4,000 bytes;
3. **hash seed**: PYTHONHASHSEED=1 against 2–6;
4. **heap**: no small objects against 37–4,001 allocated before the import
   (perflab's layout randomization does this);
5. **randomized layouts**: two processes that each draw perflab's layout
   randomization (padding, hash seed, heap objects), against the null: how much
   process-to-process spread the randomization adds;
6. **statistic**: per process, the mean of single-call CPU times and the median
   of 100 ms batches (pyperf's values are means over ≥ 100 ms), against the median
   of single calls (perflab's statistic when a call lasts over 2 ms).

Usage: python benchmarks/layout.py [--quick] [--pairs N] [--workloads a,b] [--only …]
       [--perflab PATH]   (the python/ folder of the perflab to test; default this one)
       python benchmarks/layout.py --findings-only   (the findings again, from the tables)
Writes benchmarks/results/layout.md; every verdict is printed by the rules stated in it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, ROOT, machine, write_section  # noqa: E402

from perflab.engines.run.runner import Settings  # noqa: E402

WORKLOADS_DIR = ROOT / "benchmarks" / "workloads"
PROBE = WORKLOADS_DIR / "layout_probe.py"
FEATURES = ["imports", "loader", "partial", "time_loop", "gc_callback", "monitor", "warmup", "emit"]
#: the parts that can be switched on and off inside one process (experiment 1b)
IN_PROCESS = ["partial", "time_loop", "gc_callback", "monitor", "emit"]
#: the perflab under test (its python/ folder); --perflab changes it
PERFLAB_PATH = [str(ROOT / "python")]
#: a ratio is called a difference only when its 95% CI lies beyond 1 ± this
NEGLIGIBLE = 0.01
#: token passes per process in a lockstep pair (each pass: two timed calls)
BLOCKS = 12

Config = tuple[list[str], dict[str, str]]  # (probe features, environment)
#: every lockstep or in-process ratio measured: (experiment, comparison, workload, ratio CI)
RECORDS: list[tuple[str, str, str, tuple[float, float, float]]] = []
#: experiment 5: workload → (spread with a fixed layout, spread with perflab's draws)
SPREADS: dict[str, tuple[float, float]] = {}
#: experiment 6: workload → (mean ÷ median, 100 ms batches ÷ median) ratio CIs
STATISTIC: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {}


def env_of(padding: int = 0, hashseed: str = "", heap: int = 0) -> dict[str, str]:
    """Our environment without PERFLAB_*/PADDING/PYTHONHASHSEED, plus the given ones."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PERFLAB_") and k not in ("PADDING", "PYTHONHASHSEED")
    }
    env["PYTHONPATH"] = PERFLAB_PATH[0]
    if padding:
        env["PADDING"] = "x" * padding
    if hashseed:
        env["PYTHONHASHSEED"] = hashseed
    if heap:
        env["PERFLAB_PROBE_HEAP"] = str(heap)
    return env


def lockstep(workload: str, configs: list[Config]) -> list[dict]:
    """Run one probe per config in lockstep (a token ring); each probe's JSON output."""
    rings = [os.pipe() for _ in configs]  # probe i reads rings[i], writes rings[i + 1]
    ready_r, ready_w = os.pipe()
    procs = []
    for i, (features, env) in enumerate(configs):
        token_in, token_out = rings[i][0], rings[(i + 1) % len(configs)][1]
        ring = f"{token_in},{token_out},{ready_w},{BLOCKS}"
        procs.append(
            subprocess.Popen(
                [PYTHON, str(PROBE), workload, "0", ",".join(features)],
                env={**env, "PERFLAB_PROBE_RING": ring},
                stdout=subprocess.PIPE,
                text=True,
                pass_fds=(token_in, token_out, ready_w),
            )
        )
    os.close(ready_w)
    for _ in configs:  # every probe warmed up
        if os.read(ready_r, 1) != b"R":
            raise RuntimeError("a probe died before it was ready")
    os.write(rings[0][1], b"T")
    outputs = [json.loads(p.communicate()[0]) for p in procs]
    for fd in [ready_r, *(fd for pair in rings for fd in pair)]:
        os.close(fd)
    if any(p.returncode for p in procs):
        raise RuntimeError("a probe failed")
    return outputs


def pair_ratios(workload: str, a: Config, b: Config, pairs: int, label: str) -> list[float]:
    """``pairs`` lockstep pairs: each pair's CPU median per call of a ÷ that of b."""
    ratios = []
    for i in range(pairs):
        first, second = lockstep(workload, [a, b] if i % 2 == 0 else [b, a])
        if i % 2:
            first, second = second, first
        ratios.append(first["cpu_median_ns"] / second["cpu_median_ns"])
    print(f"  {label}: {statistics.median(ratios):.3f}", file=sys.stderr, flush=True)
    return ratios


def ratio_ci(ratios: list[float], rng: np.random.Generator) -> tuple[float, float, float]:
    """Median ratio with a bootstrap 95% CI (resampling pairs)."""
    logs = np.log(np.asarray(ratios))
    reps = np.median(logs[rng.integers(0, logs.size, (4000, logs.size))], axis=1)
    low, high = np.percentile(reps, [2.5, 97.5])
    return math.exp(float(np.median(logs))), math.exp(low), math.exp(high)


def verdict(ratio: tuple[float, float, float]) -> str:
    """The stated rule: lower/higher when the CI lies wholly beyond 1 ∓ 1%; no effect when
    it lies within 1 ± 1%; otherwise unclear."""
    _, low, high = ratio
    if high < 1 - NEGLIGIBLE:
        return "lower"
    if low > 1 + NEGLIGIBLE:
        return "higher"
    if low >= 1 - NEGLIGIBLE and high <= 1 + NEGLIGIBLE:
        return "no effect"
    return "unclear"


def spread(ratios: list[float]) -> float:
    """Process-to-process spread of one process's figure: robust SD (1.4826 × MAD) of the
    log ratios ÷ √2 (a ratio of two processes carries two processes' variation)."""
    logs = np.log(ratios)
    return float(1.4826 * np.median(np.abs(logs - np.median(logs))) / math.sqrt(2))


def cell(
    ratios: list[float], rng: np.random.Generator, record: tuple[str, str, str] | None = None
) -> str:
    """A ratio cell; ``record`` (experiment, comparison, workload) keeps it for the findings."""
    r = ratio_ci(ratios, rng)
    if record:
        RECORDS.append((*record, r))
    return f"{r[0]:.3f} ({r[1]:.3f}–{r[2]:.3f}) **{verdict(r)}**"


def comparison_table(
    title: str,
    intro: str,
    rows: list[tuple[str, Config, Config]],
    workloads: list[str],
    pairs: int,
    rng: np.random.Generator,
) -> str:
    """One row per (label, a, b): ratio a ÷ b per workload."""
    lines = [
        f"### {title}",
        "",
        intro,
        "",
        "| comparison | " + " | ".join(workloads) + " |",
        "|---|" + "---:|" * len(workloads),
    ]
    for label, a, b in rows:
        cells = [
            cell(pair_ratios(wl, a, b, pairs, f"{title}: {label} {wl}"), rng, (title, label, wl))
            for wl in workloads
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def within_section(workloads: list[str], repeats: int, rng: np.random.Generator) -> str:
    """Experiment 1b: in-process parts, alternated in blocks inside one process."""
    lines = [
        "### 1b. The same parts, switched on and off inside one process",
        "",
        "Blocks of three calls with and without the part alternate inside one process "
        f"for 1.2 s; each process gives median CPU per call with ÷ without; median over "
        f"{repeats} processes, 95% bootstrap CI.",
        "",
        "| part | " + " | ".join(workloads) + " |",
        "|---|" + "---:|" * len(workloads),
    ]
    for feature in IN_PROCESS:
        cells = []
        for wl in workloads:
            ratios = []
            for _ in range(repeats):
                out = subprocess.run(
                    [PYTHON, str(PROBE), "--alternate", wl, "1.2", feature],
                    capture_output=True,
                    text=True,
                    check=True,
                    env=env_of(),
                )
                ratios.append(json.loads(out.stdout)["ratio"])
            cells.append(cell(ratios, rng, ("1b", f"{feature}, inside one process", wl)))
        lines.append(f"| {feature} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def layout_draw(rng: random.Random) -> Config:
    """A plain-loop config with one draw of perflab's layout randomization."""
    return [], env_of(
        padding=rng.randrange(4096),
        hashseed=str(rng.randint(1, 2**32 - 1)),
        heap=rng.randrange(4096),
    )


def randomized_section(workloads: list[str], pairs: int, rng: random.Random) -> str:
    """Experiment 5: spread between processes with and without perflab's randomization."""
    lines = [
        "### 5. How much process-to-process spread layout randomization adds",
        "",
        "Spread of one process's CPU median per call (robust SD, 1.4826 × MAD, of the log "
        "ratio of a lockstep pair ÷ √2), over twice as many pairs as elsewhere: two plain "
        "processes with one fixed environment (ASLR alone), and two whose environment "
        "padding, hash seed and heap objects are drawn as perflab draws them.",
        "",
        "| workload | fixed layout (ASLR only) | perflab's randomization | "
        "added spread (√ of the difference of squares) |",
        "|---|---:|---:|---:|",
    ]
    plain = ([], env_of())
    for wl in workloads:
        fixed = spread(pair_ratios(wl, plain, plain, 2 * pairs, f"spread fixed {wl}"))
        drawn = []
        for _ in range(2 * pairs):
            a, b = lockstep(wl, [layout_draw(rng), layout_draw(rng)])
            drawn.append(a["cpu_median_ns"] / b["cpu_median_ns"])
        randomized = spread(drawn)
        SPREADS[wl] = (fixed, randomized)
        added = math.sqrt(max(randomized**2 - fixed**2, 0.0))
        lines.append(f"| {wl} | {fixed:.2%} | {randomized:.2%} | {added:.2%} |")
    return "\n".join(lines)


def statistic_section(workloads: list[str], repeats: int, rng: np.random.Generator) -> str:
    """Experiment 6: the mean and 100 ms batches against the median of single calls."""
    lines = [
        "### 6. The statistic: median of single calls, their mean, 100 ms batches",
        "",
        "Per plain-loop process sampling 1.5 s (CPU time per call): the mean of single "
        "calls ÷ their median, and the median of 100 ms batches (pyperf's values) ÷ the "
        f"median of single calls; median over {repeats} processes, 95% bootstrap CI.",
        "",
        "| workload | mean ÷ median | 100 ms batches ÷ median |",
        "|---|---:|---:|",
    ]
    for wl in workloads:
        means, batches = [], []
        for _ in range(repeats):
            out = subprocess.run(
                [PYTHON, str(PROBE), wl, "1.5", ""],
                capture_output=True,
                text=True,
                check=True,
                env=env_of(),
            )
            calls = json.loads(out.stdout)["cpu_samples"]
            med = statistics.median(calls)
            groups, acc, n = [], 0, 0
            for c in calls:
                acc, n = acc + c, n + 1
                if acc >= 100e6:
                    groups.append(acc / n)
                    acc, n = 0, 0
            means.append(statistics.mean(calls) / med)
            batches.append(statistics.median(groups) / med)
        STATISTIC[wl] = (ratio_ci(means, rng), ratio_ci(batches, rng))
        lines.append(f"| {wl} | {cell(means, rng)} | {cell(batches, rng)} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few pairs, to try the script")
    parser.add_argument("--pairs", type=int, default=None, help="pairs per comparison (10)")
    parser.add_argument("--workloads", default="richards,sudoku,json_roundtrip")
    parser.add_argument(
        "--only", default="null,ladder,within,environment,hashseed,heap,randomized,statistic"
    )
    parser.add_argument(
        "--perflab", help="the python/ folder of the perflab to test (default: this checkout's)"
    )
    parser.add_argument(
        "--findings-only",
        action="store_true",
        help="rewrite the findings "
        "of benchmarks/results/layout.md from its tables, without measuring",
    )
    args = parser.parse_args(argv)
    if args.findings_only:
        return refresh_findings()
    if args.perflab:
        PERFLAB_PATH[0] = str(Path(args.perflab).resolve())
    pairs = args.pairs or (2 if args.quick else 10)
    rng, nrng = random.Random(11), np.random.default_rng(11)
    load, t0 = os.getloadavg(), time.monotonic()
    wls = args.workloads.split(",")
    only = set(args.only.split(","))
    plain: Config = ([], env_of())
    sections = [header(load, pairs, args)]
    if "null" in only or "ladder" in only:
        rows = [("plain ÷ plain (the null: ASLR alone)", plain, plain)] if "null" in only else []
        if "ladder" in only:
            rows += [(f"{f} ÷ plain", ([f], env_of()), plain) for f in FEATURES]
            rows += [("all of them ÷ plain", (FEATURES, env_of()), plain)]
        sections.append(
            comparison_table(
                "0–1. The null, and the ladder: one part of perflab's worker at a time",
                "Median CPU per call of the first ÷ the second of each lockstep pair.",
                rows,
                wls,
                pairs,
                nrng,
            )
        )
    if "within" in only:
        sections.append(within_section(wls, pairs, nrng))
    if "environment" in only:
        sections.append(
            comparison_table(
                "2. Environment size",
                "A padding variable of N bytes ÷ none (plain loops).",
                [
                    (f"{n} bytes ÷ 0", ([], env_of(padding=n)), plain)
                    for n in (512, 1024, 1536, 2048, 3072, 4000)
                ],
                wls,
                pairs,
                nrng,
            )
        )
    if "hashseed" in only:
        sections.append(
            comparison_table(
                "3. Hash seed",
                "PYTHONHASHSEED=k ÷ PYTHONHASHSEED=1 (plain loops).",
                [
                    (
                        f"seed {k} ÷ seed 1",
                        ([], env_of(hashseed=str(k))),
                        ([], env_of(hashseed="1")),
                    )
                    for k in range(2, 7)
                ],
                wls,
                pairs,
                nrng,
            )
        )
    if "heap" in only:
        sections.append(
            comparison_table(
                "4. Small objects allocated before the import",
                "N objects (perflab.engines.layout.heap_padding) ÷ none (plain loops).",
                [(f"{n} ÷ 0", (["heap"], env_of(heap=n)), plain) for n in (37, 501, 2003, 4001)],
                wls,
                pairs,
                nrng,
            )
        )
    if "randomized" in only:
        sections.append(randomized_section(wls, pairs, rng))
    if "statistic" in only:
        sections.append(statistic_section(wls, max(4, pairs // 2), nrng))
    sections.insert(1, findings(load))
    end = os.getloadavg()
    sections.append(
        f"Wall time of the script: {(time.monotonic() - t0) / 60:.0f} min; load "
        f"average {load[0]:.2f} at the start, {end[0]:.2f} at the end."
    )
    write_section("layout", "\n\n".join(sections))
    return 0


#: a comparison "bounds" its effect when its CI lies within 1 ± this
BOUND = 0.03


def findings(load: tuple[float, float, float]) -> str:
    """The findings in words, each sentence computed from the figures below it."""
    lines = ["### Findings (computed from the tables below)", ""]
    if SPREADS:
        fixed = [v[0] for v in SPREADS.values()]
        drawn = [v[1] for v in SPREADS.values()]
        added = max(math.sqrt(max(b * b - a * a, 0.0)) for a, b in SPREADS.values())
        lines.append(
            f"- **Two processes in one environment differ**: one process's median "
            f"varies by {min(fixed):.1%}–{max(fixed):.1%} (robust SD) from process to "
            f"process with ASLR alone, and by {min(drawn):.1%}–{max(drawn):.1%} with "
            f"perflab's layout draws (added spread at most {added:.1%})."
        )
    tested = [r for r in RECORDS if not r[1].startswith("plain ÷ plain")]
    if tested:
        biggest = max(tested, key=lambda r: abs(math.log(r[3][0])))
        resolved = [r for r in tested if verdict(r[3]) in ("lower", "higher")]
        bounded = [r for r in tested if 1 - BOUND <= r[3][1] and r[3][2] <= 1 + BOUND]
        if resolved:
            lines.append(
                f"- **{len(resolved)} of {len(tested)} comparisons moved the median "
                f"beyond ±{NEGLIGIBLE:.0%}**: "
                + "; ".join(f"{r[1]} on {r[2]} {r[3][0]:.3f}" for r in resolved)
                + "."
            )
        else:
            lines.append(
                f"- **None of the {len(tested)} comparisons (parts of the worker, environment "
                f"size, hash seed, heap objects) moved the median beyond ±{NEGLIGIBLE:.0%} "
                f"by its CI**; {len(bounded)} of them bound the effect within ±{BOUND:.0%}, "
                f"the others are too noisy to bound it (largest point effect "
                f"{biggest[3][0] - 1:+.1%}, {biggest[1]} on {biggest[2]}, CI "
                f"{biggest[3][1]:.3f}–{biggest[3][2]:.3f})."
            )
    if STATISTIC:
        batch = [v[1] for v in STATISTIC.values()]
        within = all(1 - 2 * NEGLIGIBLE <= b[1] and b[2] <= 1 + 2 * NEGLIGIBLE for b in batch)
        lines.append(
            f"- **The statistic**: at load average {load[0]:.1f} the median of 100 ms "
            f"batches (pyperf's values) was {min(b[0] for b in batch):.3f}–"
            f"{max(b[0] for b in batch):.3f}× the median of single calls"
            + (
                f", every CI within ±{2 * NEGLIGIBLE:.0%}."
                if within
                else "; some CIs reach beyond ±2%."
            )
        )
    if SPREADS and tested and not resolved:
        lines.append(
            "- **So the cause found is the process, not a part of perflab**: no factor tested "
            "was shown to bias a process, but every process carries its own offset of "
            f"{min(fixed):.1%}–{max(fixed):.1%}. A run of a few processes inherits their "
            "average offset, and a CI that resamples those few processes (the bootstrap) "
            "does not show it. The fix in `perflab run`: at least "
            f"{Settings().min_processes} processes, each with "
            "its own layout, and a CI from the spread between the processes' medians "
            "(random effects, P − 1 degrees of freedom); see the repeat-run agreement."
        )
    return "\n".join(lines)


_CELL = re.compile(r"([0-9.]+) \(([0-9.]+)–([0-9.]+)\)")


def reread(text: str) -> tuple[float, float, float]:
    """Fill RECORDS, SPREADS and STATISTIC from the tables of a results file written by
    this script (for --findings-only); return the load average it started at."""
    section, workloads = "", []
    for line in text.splitlines():
        if line.startswith("### "):
            section, workloads = line[4:].split(".", 1)[0], []
        elif line.startswith("| comparison |") or line.startswith("| part |"):
            workloads = [c.strip() for c in line.strip("|").split("|")[1:]]
        elif line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if section == "5" and cells[0] != "workload":
                SPREADS[cells[0]] = (
                    float(cells[1].rstrip("%")) / 100,
                    float(cells[2].rstrip("%")) / 100,
                )
            elif section == "6" and cells[0] != "workload":
                got = [_CELL.search(c) for c in cells[1:3]]
                if all(got):
                    STATISTIC[cells[0]] = tuple(  # type: ignore[assignment]
                        tuple(float(x) for x in g.groups()) for g in got
                    )  # type: ignore[union-attr]
            elif workloads:
                for wl, c in zip(workloads, cells[1:]):
                    if m := _CELL.search(c):
                        label = cells[0] if section != "1b" else f"{cells[0]}, inside one process"
                        RECORDS.append((section, label, wl, tuple(float(x) for x in m.groups())))  # type: ignore[arg-type]
    load = re.search(r"load average ([0-9.]+) when the script started", text)
    return (float(load.group(1)) if load else math.nan, 0.0, 0.0)


def refresh_findings() -> int:
    """Rewrite the findings of benchmarks/results/layout.md from its own tables."""
    path = ROOT / "benchmarks" / "results" / "layout.md"
    text = path.read_text()
    start = text.index("### Findings")
    end = text.index("\n### ", start + 1)
    new = text[:start] + findings(reread(text)) + "\n" + text[end:]
    write_section("layout", new)
    return 0


def header(load: tuple[float, float, float], pairs: int, args: argparse.Namespace) -> str:
    command = "python benchmarks/layout.py" + (" --quick" if args.quick else "")
    tested = "this checkout" if PERFLAB_PATH[0] == str(ROOT / "python") else "`--perflab`"
    return "\n".join(
        [
            "## Finding the cause: what moves a median between perflab and a plain loop (issue 11)",
            "",
            f"Machine: {machine()}.",
            "",
            f"Command: `{command}` (perflab under test: {tested}). {pairs} lockstep pairs of "
            f"fresh processes per comparison, {BLOCKS} turns of two calls each per process, after "
            "warmup; figures are CPU time per call. Workloads: benchmarks/workloads/classic.py.",
            "",
            f"Rule: a ratio is **lower**/**higher** when its 95% CI lies wholly below/above "
            f"1 ∓ {NEGLIGIBLE:.0%}, **no effect** when it lies within 1 ± {NEGLIGIBLE:.0%}, "
            "otherwise **unclear**.",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
