"""Counted mode (``perflab run --count instructions``, issue 27): how well do counts repeat
on a busy machine, do counted comparisons call identical code the same and 1% more work
slower, do they agree with Callgrind run by hand, and what does counting cost?

While a busy loop keeps one CPU loaded the whole time:

* **spread**: the five classic workloads (benchmarks/workloads/classic.py, 1–100 ms a
  call) counted in ``--runs`` separate ``perflab run --count instructions`` invocations
  (default seed): the run-to-run spread (max − min) ÷ median of each one's Ir per op,
  with the layout band (the spread between the 3 layouts of one run) beside it. Target:
  ≤ 0.05%;
* **A/A and +1%**: ``loop(work=100)`` and ``loop(work=101)``
  (benchmarks/workloads/count_bench.py: the same body, 1% more iterations) counted in
  ``--ab-runs`` invocations; every pair of runs of the same code is an A/A comparison
  (target: 0 verdicts other than "same" at the default threshold), every (100, 101)
  pair a +1% one (target: "slower" in all). The comparisons are ``perflab compare``'s
  own ``compare_results`` on the saved files;
* **agreement**: Ir per call of the five classic workloads counted by hand against
  perflab's Ir per op. The hand count is a plain program, as a user writes it (no
  perflab in it): Python started under ``setarch -R valgrind --tool=callgrind
  --toggle-collect=_operator_call`` (PYTHONHASHSEED=0) imports the workload, makes 12
  warm calls, then K calls through ``operator.call``, each after ``gc.collect()`` and
  ``sys._clear_type_cache()`` (what perflab does, uncounted, before each counted
  sample); Callgrind counts only inside those calls. Target: within 0.5% of it, on every
  workload (the rule, :data:`AGREEMENT_RULE`, was fixed before the measurement). The
  same count of the function loaded as perflab's counted worker loads it is printed
  beside, as a figure only;
* **cost**: the wall time of ``perflab run --count instructions`` of a ~10 ms call with
  the default settings (target ≤ 60 s) and its ratio to the timed run.

Every verdict is printed from the figures by the rule stated beside it.

Usage: python benchmarks/count.py [--runs 10] [--ab-runs 11] [--quick] [--stage NAME]...
Writes benchmarks/results/count.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PERFLAB, PYTHON, ROOT, machine, write_section  # noqa: E402

WORKLOADS = ROOT / "benchmarks" / "workloads"
CLASSIC = WORKLOADS / "classic_bench.py"
COUNT_BENCH = WORKLOADS / "count_bench.py"
#: workloads counted by hand for the agreement check (name, calls K): the five classic ones
BY_HAND = [("json_roundtrip", 3), ("richards", 2), ("nbody", 2), ("sudoku", 2), ("fannkuch", 2)]
SPREAD_TARGET = 0.0005
AGREEMENT_TARGET = 0.005
#: the agreement verdict, fixed before the run it judges (commit "benchmarks/count.py:
#: the agreement rule ..."); printed under the table
AGREEMENT_RULE = (
    "a workload is **met** when perflab's Ir per op is within ±0.5% of the plain program's "
    "hand count (|perflab ÷ by hand − 1| ≤ 0.5%); the stage is met when every workload is. "
    "The as-worker count is a figure beside it, not a verdict"
)
COST_TARGET_S = 60.0


def run_counted(bench: Path, out: Path, *extra: str) -> float:
    """One ``perflab run --count instructions``; its wall time, s (NaN when ``out`` was
    kept from an earlier invocation and is reused)."""
    if out.exists():
        return float("nan")
    t0 = time.monotonic()
    subprocess.run(
        [
            *PERFLAB,
            "run",
            str(bench),
            "--count",
            "instructions",
            "--json",
            str(out),
            "--quiet",
            "--no-history",
            *extra,
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    return time.monotonic() - t0


def summaries(path: Path) -> dict[str, object]:
    """benchmark id → CountSummary of a saved counted run."""
    from perflab import model
    from perflab.analyze.counts import summarize_counts

    return {b.id: summarize_counts(b) for b in model.load(path).benchmarks}


def spread(values: list[float]) -> float:
    """(max − min) ÷ median."""
    return (max(values) - min(values)) / statistics.median(values)


#: warm calls the hand count makes before its counted calls: at least as many as a
#: counted worker makes before its samples when a call is ≥ 20 M Ir (one sample = one
#: call): the cold call and 10 warm-up calls (perflab.engines.run.counting; the first
#: sample calibrates)
HAND_WARM_CALLS = 12
#: the plain program's way to the workload: import it (no perflab)
PLAIN = "sys.path.insert(0, {w!r}); from classic import WORKLOADS as W; f = W[{n!r}]\n"
#: the figure beside: the modules perflab's counted worker imports before its samples,
#: then the benchmark file through perflab's own loader (as
#: perflab.engines.run.counted_worker does), and what it registered
AS_WORKER = (
    "import json, perflab.engines.run.counting, perflab.engines.run.empty, "
    "perflab.engines.run.aio\n"
    "from perflab import _core\n"
    "from perflab.engines.run.suite import load_file\n"
    "f = next(s.func for s in load_file({b!r}).benches if s.name == {n!r})\n"
)


def hand_script(prelude: str, calls: int) -> str:
    """The hand count's program: ``prelude`` binds the function to ``f``; then
    :data:`HAND_WARM_CALLS` warm calls; then ``calls`` calls, each after what perflab does
    (uncounted) before each counted sample: a full collection and an emptied type
    attribute cache. Run it under ``setarch -R valgrind --tool=callgrind
    --toggle-collect=_operator_call`` with PYTHONHASHSEED=0 (docs/count.md shows it)."""
    return (
        "import gc, operator, sys\n"
        + prelude
        + f"for _ in range({HAND_WARM_CALLS}): f()\n"
        + f"for _ in range({calls}):\n"
        + "    gc.collect()\n"
        + "    sys._clear_type_cache()\n"
        + "    operator.call(f)\n"
    )


def by_hand(name: str, calls: int, folder: Path, as_worker: bool) -> float:
    """Ir per warm call of classic workload ``name`` counted by Callgrind run by hand
    (:func:`hand_script`; ``as_worker``: with the :data:`AS_WORKER` prelude, else
    :data:`PLAIN`). Callgrind counts only inside ``operator.call``'s C function
    (``--toggle-collect=_operator_call``): the calls and nothing else, with no client
    request and no subtraction. (The earlier method, the whole program's count minus
    that of the same script without the calls, ÷ K, also counted how the two scripts'
    heaps differ afterwards: 28.11 M for json_roundtrip against 29.22 M by this one.)
    """
    prelude = (AS_WORKER if as_worker else PLAIN).format(w=str(WORKLOADS), b=str(CLASSIC), n=name)
    script = folder / f"{name}.{int(as_worker)}.hand.py"
    script.write_text(hand_script(prelude, calls))
    out = folder / f"{name}.{int(as_worker)}.hand.out"
    subprocess.run(
        [
            "setarch",
            os.uname().machine,
            "-R",
            "valgrind",
            "--tool=callgrind",
            "-q",
            "--toggle-collect=_operator_call",
            f"--callgrind-out-file={out}",
            PYTHON,
            str(script),
        ],
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    summary = next(line for line in out.read_text().splitlines() if line.startswith("summary:"))
    return int(summary.split()[1]) / calls


STAGES = ("spread", "ab", "agreement", "cost")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--ab-runs", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="3 runs and 4 A/B runs")
    parser.add_argument(
        "--workload",
        action="append",
        help="the spread runs count only this classic workload (repeatable; default all)",
    )
    parser.add_argument(
        "--stage",
        action="append",
        choices=STAGES,
        help="run only this stage (repeatable; default all); the section keeps the "
        "other stages' blocks from the previous run, marked as not re-run",
    )
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="keep the counted results files here and reuse those already there "
        "(a stopped script resumes); default: a temp dir",
    )
    args = parser.parse_args()
    if args.quick:
        args.runs, args.ab_runs = 3, 4
    if not shutil.which("valgrind"):
        sys.exit("error: Valgrind is not installed (apt-get install valgrind)")
    busy = subprocess.Popen([PYTHON, "-c", "while True: pass"])
    lines = [
        "## Counted mode: instruction counts on a busy machine (issue 27)",
        "",
        f"Machine: {machine()}. A busy loop (`python -c 'while True: pass'`) kept one of "
        "the CPUs loaded for the whole script. Command: "
        "`python benchmarks/count.py"
        + (f" --runs {args.runs}" if "spread" in (args.stage or STAGES) else "")
        + (f" --ab-runs {args.ab_runs}" if "ab" in (args.stage or STAGES) else "")
        + "".join(f" --workload {w}" for w in args.workload or [])
        + "".join(f" --stage {st}" for st in args.stage or [])
        + "`.",
        "",
    ]
    try:
        with tempfile.TemporaryDirectory(prefix="perflab-count-bench-") as tmp:
            folder = Path(args.keep or tmp)
            folder.mkdir(parents=True, exist_ok=True)
            stages = set(args.stage or STAGES)
            if "spread" in stages:
                lines += spread_section(folder, args.runs, args.workload or [])
            if "ab" in stages and args.ab_runs:
                lines += ab_section(folder, args.ab_runs)
            if "agreement" in stages:
                lines += agreement_section(folder)
            if "cost" in stages:
                lines += cost_section(folder)
    finally:
        busy.kill()
        busy.wait()
    write_section("count", "\n".join(_keep_earlier(lines)))


NOT_RERUN = "(Not re-run this time: from the previous run of this script.)"


def _keep_earlier(lines: list[str]) -> list[str]:
    """The section, with the blocks (### headings) of the previous count.md that this
    run did not write again (a reduced run), kept after it and marked as such."""
    from common import RESULTS

    old = RESULTS / "count.md"
    if not old.exists():
        return lines
    written = {line.strip() for line in lines if line.startswith("### ")}
    kept = []
    for part in old.read_text().split("\n### ")[1:]:
        heading = ("### " + part.splitlines()[0]).strip()
        if heading not in written:
            kept.append("### " + part.replace(NOT_RERUN, "").rstrip() + "\n\n" + NOT_RERUN + "\n")
    return [*lines, *kept]


def spread_section(folder: Path, runs: int, workloads: list[str]) -> list[str]:
    """Run-to-run spread of the classic workloads (``workloads``: those only; [] all),
    with the layout band beside."""
    if runs == 0:
        return []
    per_run: list[dict[str, object]] = []
    walls = []
    only = [f for w in workloads for f in ("--filter", w)]
    for r in range(runs):
        out = folder / f"classic-{r}.json"
        walls.append(run_counted(CLASSIC, out, *only))
        per_run.append(summaries(out))
        print(f"classic run {r + 1}/{runs}: {walls[-1]:.0f} s", file=sys.stderr)
    lines = [
        f"### Run-to-run spread of Ir per op ({runs} runs of `perflab run "
        "benchmarks/workloads/classic_bench.py --count instructions"
        + "".join(f" --filter {w}" for w in workloads)
        + "`, default seed)",
        "",
        "| workload | Ir/op (median of runs) | run-to-run spread | layout band (run 1) | verdict |",
        "|---|---:|---:|---:|---|",
    ]
    for bench_id in per_run[0]:
        values = [s[bench_id].ir_per_op for s in per_run]  # type: ignore[attr-defined]
        s_run = spread(values)
        band = per_run[0][bench_id].band_spread  # type: ignore[attr-defined]
        verdict = "met" if s_run <= SPREAD_TARGET else "not met"
        lines.append(
            f"| {bench_id} | {statistics.median(values):,.0f} | {s_run:.4%} | {band:.3%} | "
            f"{verdict} |"
        )
    lines += [
        "",
        f"Rule: the run-to-run spread (max − min) ÷ median is **met** at ≤ "
        f"{SPREAD_TARGET:.2%}. One invocation counting all five took "
        f"{statistics.median([w for w in walls if w == w] or [float('nan')]):.0f} s "
        "(median).",
        "",
    ]
    return lines


def ab_section(folder: Path, runs: int) -> list[str]:
    """A/A false verdicts and +1% detection on the loop workload."""
    from perflab import model
    from perflab.analyze.compare.suite import compare_results

    files = []
    for r in range(runs):
        out = folder / f"loop-{r}.json"
        run_counted(COUNT_BENCH, out, "--filter", "loop")
        files.append(model.load(out))
        print(f"loop run {r + 1}/{runs}", file=sys.stderr)

    def verdict(a: object, b: object, left: str, right: str) -> str:
        sub_a, sub_b = _only(a, left), _only(b, right)
        suite = compare_results(sub_a, sub_b, names=("A", "B"))
        [row] = [r for r in suite.rows if r.metric == "instructions"]
        return row.verdict

    aa = [
        verdict(a, b, w, w)
        for a, b in itertools.combinations(files, 2)
        for w in ("loop(work=100)", "loop(work=101)")
    ]
    plus = [verdict(a, b, "loop(work=100)", "loop(work=101)") for a in files for b in files]
    false_aa = sum(v != "same" for v in aa)
    caught = sum(v == "slower" for v in plus)
    return [
        f"### A/A and +1% ({runs} counted runs of `count_bench.py --filter loop`)",
        "",
        "| comparisons | what | verdicts | target | verdict |",
        "|---:|---|---|---|---|",
        f"| {len(aa)} | identical code (A/A) | {json.dumps(_tally(aa))} | 0 other than same | "
        f"{'met' if false_aa == 0 else 'not met'} |",
        f"| {len(plus)} | 1% more iterations | {json.dumps(_tally(plus))} | all slower | "
        f"{'met' if caught == len(plus) else 'not met'} |",
        "",
        "Each comparison is `perflab compare`'s `compare_results` on two saved counted runs "
        "at the default threshold (max(0.5%, 1.5 × the layout band)).",
        "",
    ]


def _only(results: object, bench_id: str) -> object:
    """A copy of ``results`` with one benchmark, renamed to a common id."""
    import copy

    out = copy.copy(results)
    bench = copy.copy(next(b for b in results.benchmarks if b.id == bench_id))  # type: ignore[attr-defined]
    bench.params = {}
    bench.name = "loop"
    out.benchmarks = [bench]  # type: ignore[attr-defined]
    return out


def _tally(verdicts: list[str]) -> dict[str, int]:
    return {v: verdicts.count(v) for v in sorted(set(verdicts))}


def agreement_section(folder: Path) -> list[str]:
    """perflab's Ir per op against Callgrind run by hand on a plain program (the verdict,
    :data:`AGREEMENT_RULE`), and the same count as perflab's worker loads the function
    (a figure beside)."""
    agree = folder / "agree.json"  # the hand count's layout: hash seed 0, no padding
    run_counted(
        CLASSIC, agree, "--no-randomize", *[f for name, _ in BY_HAND for f in ("--filter", name)]
    )
    first = {k.split("/")[0]: v for k, v in summaries(agree).items()}
    lines = [
        "### Agreement with Callgrind run by hand",
        "",
        "| workload | by hand, plain program (Ir/call) | perflab (Ir/op) | perflab vs by "
        "hand | verdict | figure beside: by hand, loaded as perflab's worker loads it "
        "(Ir/call) | perflab vs that |",
        "|---|---:|---:|---:|---|---:|---:|",
    ]
    met = 0
    for name, calls in BY_HAND:
        plain = by_hand(name, calls, folder, as_worker=False)
        same = by_hand(name, calls, folder, as_worker=True)
        ours = first[name].ir_per_op  # type: ignore[attr-defined]
        diff = ours / plain - 1
        ok = abs(diff) <= AGREEMENT_TARGET
        met += ok
        lines.append(
            f"| {name} | {plain:,.0f} | {ours:,.0f} | {diff:+.3%} | "
            f"{'met' if ok else 'not met'} | {same:,.0f} | {ours / same - 1:+.3%} |"
        )
    lines += [
        "",
        f"Agreement: **{'met' if met == len(BY_HAND) else 'not met'}** ({met} of "
        f"{len(BY_HAND)} workloads within ±{AGREEMENT_TARGET:.1%}). Rule (fixed before this "
        f"run): {AGREEMENT_RULE}.",
        "",
        "By hand: the plain program below, run as `PYTHONHASHSEED=0 setarch -R valgrind "
        "--tool=callgrind --toggle-collect=_operator_call python hand.py`: it imports the "
        f"workload (no perflab), makes {HAND_WARM_CALLS} warm calls (at least as many as a "
        "counted worker makes before its samples: the cold call, 10 warm-up), then K calls "
        "through `operator.call`, each after `gc.collect()` and `sys._clear_type_cache()` "
        "(what perflab does, uncounted, before each counted sample): Callgrind counts only "
        "inside `operator.call`'s C function, i.e. the calls and nothing else (no client "
        "request, no subtraction), ÷ K. perflab: `perflab run classic_bench.py --count "
        "instructions --no-randomize` (the same hash seed 0, no padding; Ir per op is the "
        "median over its 3 processes). The figure beside imports what perflab's counted "
        "worker imports before its samples and loads classic_bench.py with perflab's "
        "`load_file`, as the worker does.",
        "",
        # the program byte for byte as the stage runs it: a text block, which ruff's
        # Markdown formatting (`make lint` checks benchmarks/) leaves as it is
        "```text",
        hand_script(PLAIN.format(w="benchmarks/workloads", n="<workload>"), 2).rstrip(),
        "```",
        "",
    ]
    return lines


def _children_cpu_s() -> float:
    """CPU time (user + system) of this process's finished children so far, s."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def cost_section(folder: Path) -> list[str]:
    """Wall and CPU time of a counted run of a ~10 ms call, and its ratio to the timed run."""
    load = os.getloadavg()[0]
    cpu0 = _children_cpu_s()
    counted = run_counted(COUNT_BENCH, folder / "ten.json", "--filter", "ten_ms")
    counted_cpu = _children_cpu_s() - cpu0
    t0 = time.monotonic()
    subprocess.run(
        [
            *PERFLAB,
            "run",
            str(COUNT_BENCH),
            "--filter",
            "ten_ms",
            "--json",
            str(folder / "ten-timed.json"),
            "--quiet",
            "--no-history",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    timed = time.monotonic() - t0
    per_op = summaries(folder / "ten.json")["ten_ms"].ir_per_op  # type: ignore[attr-defined]
    return [
        "### Cost",
        "",
        "| benchmark | counted (default settings) | CPU time of the counted run | timed "
        "(default settings) | counted ÷ timed | verdict |",
        "|---|---:|---:|---:|---:|---|",
        f"| ten_ms ({per_op / 1e6:,.1f} M Ir/op) | {counted:.1f} s | {counted_cpu:.1f} s | "
        f"{timed:.1f} s | {counted / timed:.1f}× | "
        f"{'met' if counted <= COST_TARGET_S else 'not met'} |",
        "",
        f"Rule: **met** when the counted run takes ≤ {COST_TARGET_S:.0f} s of wall time. "
        f"Load average {load:.1f} on {os.cpu_count()} CPUs when it started (the busy "
        "loop and other programs): the wall time is the CPU time stretched by the "
        "machine's load; the counted workers run at once, one per CPU and never fewer than "
        "the benchmark's 3 layouts (counts do not "
        "depend on the load).",
        "",
    ]


if __name__ == "__main__":
    main()
