"""Paired verdicts (issue 26): false alarms (A/A), sensitivity, and --compare-to HEAD~1.

Measures, on this machine, with perflab's default settings unless stated:
  * A/A: a group of two identical benchmarks, the second against the first
    (``baseline=True``): its verdict comes from paired samples. Half the runs have a
    second process loading one CPU (``while True: pass``). Beside it, the same
    comparisons done unpaired: the baseline of run k against the twin of run k + 1,
    two separate runs compared as ``perflab compare`` does (pairs stripped).
  * sensitivity: the twin runs 3% more loop iterations (calibrated: the true ratio is
    measured once with a long timeit and printed); share called slower, paired and
    unpaired; optionally 1% with ``--budget 60s``.
  * --compare-to HEAD~1 on a scratch git repository whose last commit made f() 5%
    slower and left g() alone: f must be slower, g same or inconclusive.

Verdict rule (perflab's own, printed by this script from the figures): the 95% CI
of the ratio B/A against the ±2% threshold: slower/faster when the whole CI is
outside [0.98, 1.02], same when inside, inconclusive otherwise (a CI containing 1 is
never slower or faster). A target is **met** when its share is on the right side of
the stated bound.

Usage: python benchmarks/paired.py [--aa N] [--sens N] [--sens1 N] [--refs N]
       (defaults 200 40 0 20; smaller counts for a reduced run: the section states
       the counts). Writes benchmarks/results/paired.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
import timeit
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PERFLAB, PYTHON, machine, write_section  # noqa: E402

N = 2000
WORKLOAD = """
import perflab

N = {n}
EXTRA = {extra}  # loop iterations the twin runs on top (0: identical code)


def busy(n):
    total = 0
    for i in range(n):
        total += i
    return total


@perflab.bench(group="ab", baseline=True)
def base():
    return busy(N)


@perflab.bench(group="ab")
def twin():
    return busy(N + EXTRA)
"""
MOD_V1 = """
def busy(n):
    total = 0
    for i in range(n):
        total += i
    return total


def f():
    return busy({f_n})


def g():
    return busy(2000)
"""
BENCH = """
import perflab
from mod import f, g

perflab.bench(f)
perflab.bench(g)
"""
FALSE = ("slower", "faster")
#: one CPU busy until this script ends (it stops when its parent is gone, even killed)
LOAD = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


def calibrated_ratio(extra: int, rounds: int = 4001) -> float:
    """The true busy(N + extra) / busy(N): the median over ``rounds`` of the ratio of the
    two timed back to back (timeit, 2 calls each, ≈ 80 µs, the order alternating), so
    the machine's speed states cancel as they do in a pair. Short timings matter: two
    separate best-of timings on this machine are off by several percent, and ratios of
    50-call (≈ 2 ms) timings, which often straddle a switch, read 0.3% low."""
    ns: dict[str, object] = {}
    source = WORKLOAD.format(n=N, extra=0).split("@perflab")[0].replace("import perflab", "")
    exec(source, ns)  # noqa: S102
    busy = ns["busy"]
    ratios = []
    for k in range(rounds):
        times = {}
        for n in (N, N + extra) if k % 2 else (N + extra, N):
            times[n] = timeit.timeit(lambda n=n: busy(n), number=2)  # type: ignore[operator]
        ratios.append(times[N + extra] / times[N])
    return sorted(ratios)[rounds // 2]


def run(file: Path, out: Path, *extra: str, cwd: Path | None = None) -> tuple[dict, float]:
    """One `perflab run FILE --json OUT --quiet --no-history EXTRA`; (its JSON, wall s)."""
    start = time.monotonic()
    subprocess.run(
        [*PERFLAB, "run", str(file), "--json", str(out), "--quiet", "--no-history", *extra],
        check=False,
        capture_output=True,
        cwd=cwd,
    )
    return json.loads(out.read_text()), time.monotonic() - start


def summary(data: dict, bench_id: str) -> dict:
    """The saved summary of one benchmark of a results file."""
    return next(b["summary"] for b in data["benchmarks"] if _id(b) == bench_id)


def _id(raw: dict) -> str:
    return f"{raw.get('group') or ''}/{raw['name']}".lstrip("/")


def unpaired_verdict(path_a: Path, path_b: Path) -> str:
    """The verdict of run B's twin against run A's baseline: two separate runs compared
    as `perflab compare` does (pairs stripped, so nothing is paired)."""
    from perflab import model
    from perflab.analyze.compare.suite import compare_benchmark

    def one(path: Path, name: str):  # type: ignore[no-untyped-def]
        bench = next(b for b in model.load(path).benchmarks if b.name == name)
        bench.name, bench.baseline = "x", False
        for proc in bench.processes:
            proc.pair = None
        return bench

    return compare_benchmark(one(path_a, "base"), one(path_b, "twin"))[0].verdict


class Loader:
    """A second process loading one CPU while the block runs (``while True: pass``)."""

    def __init__(self, on: bool) -> None:
        self.on, self.proc = on, None

    def __enter__(self) -> Loader:
        if self.on:
            self.proc = subprocess.Popen([PYTHON, "-c", LOAD])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def series(folder: Path, name: str, count: int, extra: int, budget: list[str], loaded_share: float):
    """``count`` paired runs of the workload; (paired verdicts, unpaired verdicts, ratios,
    walls, loaded flags)."""
    file = folder / f"{name}.py"
    file.write_text(WORKLOAD.format(n=N, extra=extra))
    paired, unpaired, ratios, walls, loaded = [], [], [], [], []
    previous: Path | None = None
    for k in range(count):
        load = k < round(count * loaded_share)
        out = folder / f"{name}-{k}.json"
        with Loader(load):
            data, wall = run(file, out, *budget)
        s = summary(data, "ab/twin")
        paired.append(s.get("verdict") or "failed")
        ratios.append(s.get("ratio_baseline"))
        walls.append(wall)
        loaded.append(load)
        if previous is not None:
            unpaired.append(unpaired_verdict(previous, out))
        previous = out
        print(f"{name} {k + 1}/{count}: {paired[-1]} {ratios[-1]} ({wall:.0f} s, load {load})")
    return paired, unpaired, ratios, walls, loaded


def series_from(folder: Path, name: str, intended: int, loaded_share: float):  # type: ignore[no-untyped-def]
    """:func:`series` read back from the results files a run of this script left in
    ``folder`` (``NAME-K.json``; copied before a cut run's temp dir went away): the same
    verdicts, computed the same way; walls NaN (not recorded in the files); the loaded
    flags by the script's rule for ``intended`` comparisons."""
    files = sorted(folder.glob(f"{name}-*.json"), key=lambda f: int(f.stem.split("-")[-1]))
    paired, unpaired, ratios, loaded = [], [], [], []
    previous: Path | None = None
    for out in files:
        k = int(out.stem.split("-")[-1])
        s = summary(json.loads(out.read_text()), "ab/twin")
        paired.append(s.get("verdict") or "failed")
        ratios.append(s.get("ratio_baseline"))
        loaded.append(k < round(intended * loaded_share))
        if previous is not None:
            unpaired.append(unpaired_verdict(previous, out))
        previous = out
    return paired, unpaired, ratios, [float("nan")] * len(paired), loaded


def share(verdicts: list[str], wanted: tuple[str, ...]) -> str:
    """ "k of n (p%)" of the verdicts in ``wanted``."""
    k = sum(v in wanted for v in verdicts)
    return f"{k} of {len(verdicts)} ({k / max(len(verdicts), 1):.1%})"


def counts(verdicts: list[str]) -> str:
    return ", ".join(f"{v} {n}" for v, n in Counter(verdicts).most_common())


def scratch_repo(folder: Path) -> Path:
    """A git repository whose last commit made f() 5% slower (g unchanged)."""
    repo = folder / "repo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "bench@example.com")
    git("config", "user.name", "bench")
    (repo / "bench.py").write_text(BENCH)
    (repo / "mod.py").write_text(MOD_V1.format(f_n=2000))
    git("add", ".")
    git("commit", "-qm", "f and g")
    (repo / "mod.py").write_text(MOD_V1.format(f_n=2100))
    git("commit", "-qam", "f 5% slower")
    return repo


def compare_to_series(folder: Path, count: int) -> tuple[list[str], list[str], list[float]]:
    """``count`` runs of `perflab run bench.py --compare-to HEAD~1`: f's and g's verdicts."""
    repo = scratch_repo(folder)
    fs, gs, walls = [], [], []
    for k in range(count):
        out = folder / f"ref-{k}.json"
        data, wall = run(repo / "bench.py", out, "--compare-to", "HEAD~1", cwd=repo)
        verdicts = compare_to_verdicts(out) if data.get("baseline") else {}
        fs.append(verdicts.get("f", "failed"))
        gs.append(verdicts.get("g", "failed"))
        walls.append(wall)
        print(f"compare-to {k + 1}/{count}: f {fs[-1]}, g {gs[-1]} ({wall:.0f} s)")
    return fs, gs, walls


def compare_to_verdicts(path: Path) -> dict[str, str]:
    """The verdicts `perflab run --compare-to REF` printed, recomputed from its results
    file: its measured baseline against its benchmarks, paired."""
    from perflab import model
    from perflab.analyze.compare.suite import compare_results

    results = model.load(path)
    base = model.Results(
        kind="run",
        command_line=[],
        created=results.created,
        perflab_version=results.perflab_version,
        environment=results.environment,
        benchmarks=results.baseline["benchmarks"],
    )
    suite = compare_results(base, results, paired=True)
    return {row.id: row.verdict for row in suite.rows if row.metric == "time"}


def met(ok: bool) -> str:
    return "**met**" if ok else "**not met**"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--aa", type=int, default=200, help="A/A paired comparisons (200)")
    parser.add_argument("--sens", type=int, default=40, help="3%% comparisons (40)")
    parser.add_argument(
        "--sens1",
        type=int,
        default=40,
        help="1%% comparisons with --budget 60s --threshold 0.5%% (a 1%% change is inside "
        "the default ±2%% threshold: 'same' by definition)",
    )
    parser.add_argument("--refs", type=int, default=20, help="--compare-to HEAD~1 tries (20)")
    parser.add_argument(
        "--aa-from",
        metavar="DIR",
        help="the A/A block from the aa-K.json files a cut run of this script left "
        "(copied from its temp dir); --aa is then the count it was meant to run",
    )
    args = parser.parse_args(argv)
    lines = [
        "## Paired verdicts (benchmarks/paired.py)",
        "",
        f"Machine: {machine()}.",
        "",
        "Verdict rule: the 95% CI of B/A against ±2%: slower/faster when the whole CI is "
        "outside [0.98, 1.02], same when inside, inconclusive otherwise. Paired: "
        "A and B alternate sample by sample in each worker process (perflab's default "
        "wherever a verdict is drawn); unpaired: two separate runs compared "
        "(`perflab compare`), here run k's baseline against run k + 1's twin.",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.aa:
            started = time.monotonic()
            if args.aa_from:
                paired, unpaired, _, walls, loaded = series_from(
                    Path(args.aa_from), "aa", args.aa, 0.5
                )
            else:
                paired, unpaired, _, walls, loaded = series(folder, "aa", args.aa, 0, [], 0.5)
            false_paired = sum(v in FALSE for v in paired) / len(paired)
            loaded_false = [v for v, ld in zip(paired, loaded) if ld]
            lines += [
                f"### A/A: identical code, {len(paired)} paired comparisons "
                f"({sum(loaded)} while another process loaded a CPU)",
                "",
                "| design | false slower/faster | verdicts |",
                "|---|---|---|",
                f"| paired (one run) | {share(paired, FALSE)} | {counts(paired)} |",
                f"| paired, CPU loaded | {share(loaded_false, FALSE)} | {counts(loaded_false)} |",
                f"| unpaired (two runs compared) | {share(unpaired, FALSE)} | {counts(unpaired)} |",
                "",
                (
                    f"Read back from the {len(paired)} results files of a run meant to make "
                    f"{args.aa} comparisons, cut at the deadline (`--aa-from`); its CPU-loaded "
                    f"half was the first {round(args.aa * 0.5)}. "
                    if args.aa_from
                    else f"Median wall time per paired run: {sorted(walls)[len(walls) // 2]:.1f} s "
                    f"(series {time.monotonic() - started:.0f} s). "
                )
                + f"Target: false verdicts ≤ 1%: {met(false_paired <= 0.01)}.",
                "",
            ]
        for label, count, extra_share, budget, target in (
            ("3%", args.sens, 0.03, [], 0.95),
            ("1%", args.sens1, 0.01, ["--budget", "60s", "--threshold", "0.5%"], 0.80),
        ):
            if not count:
                continue
            extra = round(N * extra_share)
            truth = calibrated_ratio(extra)
            paired, unpaired, ratios, walls, _ = series(
                folder, f"s{extra}", count, extra, budget, 0.0
            )
            called = sum(v == "slower" for v in paired) / len(paired)
            lines += [
                f"### Sensitivity: the twin {label} slower ({extra} more loop iterations; "
                f"true ratio {truth:.4f}: median of 4,001 back-to-back timeit ratios), {count} comparisons"
                + (f", {' '.join(budget)}" if budget else ", default settings"),
                "",
                "| design | called slower | verdicts |",
                "|---|---|---|",
                f"| paired | {share(paired, ('slower',))} | {counts(paired)} |",
                f"| unpaired (two runs compared) | {share(unpaired, ('slower',))} "
                f"| {counts(unpaired)} |",
                "",
                f"Median paired ratio {sorted(r[0] for r in ratios if r)[len(ratios) // 2]:.4f}; "
                f"median wall time per run {sorted(walls)[len(walls) // 2]:.1f} s. "
                f"Target: called slower in ≥ {target:.0%}: {met(called >= target)}.",
                "",
            ]
        if args.refs:
            fs, gs, walls = compare_to_series(folder, args.refs)
            f_ok = sum(v == "slower" for v in fs)
            g_ok = sum(v in ("same", "inconclusive") for v in gs)
            both = sum(a == "slower" and b in ("same", "inconclusive") for a, b in zip(fs, gs))
            lines += [
                f"### `perflab run bench.py --compare-to HEAD~1`, {len(fs)} tries",
                "",
                "A scratch repository whose last commit made f() 5% slower (2,000 → 2,100 "
                "loop iterations) and left g() alone; the baseline is checked out into a "
                "temporary worktree and measured paired with the current code, in the same run.",
                "",
                f"- f: slower in {f_ok} of {len(fs)} ({counts(fs)})",
                f"- g: same or inconclusive in {g_ok} of {len(gs)} ({counts(gs)})",
                f"- both right in {both} of {len(fs)}; median wall time per run "
                f"{sorted(walls)[len(walls) // 2]:.1f} s. Target ≥ 19 of 20 (95%): "
                f"{met(both >= 0.95 * len(fs))}.",
                "",
            ]
    lines.append(
        textwrap.fill(
            "Counts are as run (the script's defaults are 200 A/A, 40 sensitivity and "
            "20 --compare-to tries; a reduced run says so in each heading).",
            100,
        )
    )
    write_section("paired", "\n".join(_keep_earlier(lines, args)))
    return 0


#: heading prefix of each series' block → the argument whose count 0 skips it
BLOCKS = {
    "### A/A": "aa",
    "### Sensitivity: the twin 3%": "sens",
    "### Sensitivity: the twin 1%": "sens1",
    "### `perflab run": "refs",
}


NOT_RERUN = "(Not re-run this time: from the previous run of this script.)"


def _keep_earlier(lines: list[str], args: argparse.Namespace) -> list[str]:
    """The section, with the blocks of series skipped this time (count 0) taken from the
    section the previous run of this script wrote, marked as such."""
    from common import RESULTS

    old = RESULTS / "paired.md"
    if not old.exists():
        return lines
    blocks: dict[str, str] = {}
    for part in old.read_text().split("\n### ")[1:]:
        text = "### " + part.split("\nCounts are as run")[0].rstrip()
        text = text.replace(NOT_RERUN, "").rstrip()  # marked again below, once
        key = next((k for k in BLOCKS if text.startswith(k)), None)
        if key:
            blocks[key] = text
    kept = [
        blocks[key] + "\n\n" + NOT_RERUN + "\n"
        for key, arg in BLOCKS.items()
        if not getattr(args, arg) and key in blocks
    ]
    return [*lines[:-1], *kept, lines[-1]]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
