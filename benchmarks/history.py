"""History at scale: query times at 10,000 runs, size per run, change-point detection rates.

Usage: python benchmarks/history.py [RUNS] [SEEDS] [--db PATH]   (defaults 10000 and 500)

With --db PATH the database is built there once and reused by later invocations
with the same RUNS (its per-insert time is then the one measured when it was built),
so on a shared machine the build can run any time and the timed queries in a quiet
window.

* A database of RUNS synthetic runs (12 benchmarks each, 10 processes × 30 samples,
  one results document per run, values drifting with three real steps) is built
  with the store's own insert; then `perflab history` (run list) and `perflab
  history BENCHMARK` (a trend of RUNS points with change points) are timed end to
  end as a user runs them, median of 5, and the store's queries in-process.
* Change points: SEEDS synthetic flat histories per length and noise (no false
  change allowed in ≥ 95%), and histories with one known step (found at the right
  run ±1, and nothing else).

Verdicts, one rule: a target is met when the median figure is within it.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PERFLAB, machine, timed, write_section  # noqa: E402

from perflab.history import changepoints, record, trend  # noqa: E402
from perflab.history.rows import recompute, summary_rows  # noqa: E402
from perflab.history.store import Store  # noqa: E402
from perflab.model import Benchmark, Process, Results, Sample  # noqa: E402

BENCHES = 12


def synthetic_results(rng: np.random.Generator) -> Results:
    """One run: BENCHES benchmarks, 10 processes × 30 samples of ~1 µs per op."""
    benches = []
    for b in range(BENCHES):
        procs = []
        for p in range(10):
            centre = 1e-6 * (1 + b / 10) * math.exp(rng.normal(0, 0.005))
            samples = [
                Sample(100, int(centre * math.exp(rng.normal(0, 0.02)) * 1e11), int(centre * 1e11))
                for _ in range(30)
            ]
            procs.append(
                Process(
                    index=p,
                    pid=1000 + p,
                    started_s=float(p),
                    iterations=100,
                    cold_ns=5000,
                    loop_overhead_ns=10.0,
                    timer_error_ns=50.0,
                    samples=samples,
                )
            )
        benches.append(Benchmark(name=f"b{b}", group="g", processes=procs))
    return Results(
        "run",
        ["perflab", "run", "bench.py"],
        "2026-01-01T00:00:00+00:00",
        "0.1.0",
        environment={"hostname": "bench", "cpu_model": "synthetic"},
        settings={"precision": 0.01},
        benchmarks=benches,
    )


def build(path: Path, runs: int) -> tuple[float, int]:
    """Fill a database with ``runs`` runs; return (seconds per insert, document bytes)."""
    rng = np.random.default_rng(0)
    base = synthetic_results(rng)
    summaries = recompute(base)
    rows = summary_rows(base, summaries)
    steps = {runs // 4: 1.1, runs // 2: 0.8, 3 * runs // 4: 1.2}
    level, elapsed = 1.0, 0.0
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    with Store(path) as store:
        for i in range(runs):
            level *= steps.get(i, 1.0)
            noise = np.exp(rng.normal(0, 0.02, len(rows)))
            moved = [
                type(r)(
                    r.bench,
                    r.metric,
                    r.unit,
                    r.value * level * n,
                    r.ci_low * level * n,
                    r.ci_high * level * n,
                    r.units,
                )
                for r, n in zip(rows, noise)
            ]
            base.created = (start + dt.timedelta(minutes=i)).isoformat()
            made = record.make_record("run", base.to_dict(summaries), moved, [], None, git=False)
            made.git_commit, made.git_time = f"{i:040x}", base.created
            t0 = time.perf_counter()
            store.add(made)
            elapsed += time.perf_counter() - t0
    return elapsed / runs, len(made.document)


def cli_median(args: list[str], repeats: int = 5) -> float:
    """Median wall seconds of ``perflab ARGS`` (start-up included)."""
    return statistics.median(timed([*PERFLAB, *args])[0] for _ in range(repeats))


def report_figures(folder: Path, db: Path) -> dict[str, float]:
    """Write a report of one synthetic run (12 benchmarks) plus the 12 trends of the
    database; time its writing (median of 3) and its loading in headless chromium."""
    import shutil

    from perflab import model
    from perflab.analyze.run.ratios import summarize_benchmarks

    run = synthetic_results(np.random.default_rng(1))
    grouped = summarize_benchmarks(run.benchmarks, precision=0.01)
    model.save(run, folder / "run.json", {s.id: s.to_dict() for g in grouped.values() for s in g})
    out = folder / "report.html"
    argv = ["report", str(folder / "run.json"), "--history", "--database", str(db), "-o", str(out)]
    write_s = cli_median(argv, 3)
    figures = {
        "write_s": write_s,
        "bytes": out.stat().st_size,
        "charts": out.read_text().count("<figure"),
        "load_s": math.nan,
    }
    browser = shutil.which("chromium")
    if browser:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=browser, args=["--no-sandbox"])
            page = chromium.new_page()
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                page.goto(out.as_uri(), wait_until="load")
                times.append(time.perf_counter() - t0)
            figures["load_s"] = statistics.median(times)
            chromium.close()
    return figures


def detection(seeds: int) -> tuple[list[str], list[str]]:
    """Markdown rows: flat histories (false change share), one-step histories (found share)."""
    flat, step = [], []
    for n in (10, 30, 100, 200):
        for noise in ("gaussian", "t(3)"):
            rng = np.random.default_rng(n)
            false = 0
            for _ in range(seeds):
                e = 0.03 * (rng.standard_t(3, n) if noise == "t(3)" else rng.normal(0, 1, n))
                false += bool(changepoints.detect(np.exp(e)))
            share = false / seeds
            flat.append(
                f"| {n} | {noise}, σ 3% | {false} of {seeds} ({share:.1%}) | "
                f"{share:.1%} ≤ 5%: {'met' if share <= 0.05 else 'not met'} |"
            )
    for n in (20, 60):
        for size in (0.05, 0.10, 0.20):
            rng = np.random.default_rng(int(n * 100 + size * 100))
            found = 0
            for _ in range(seeds):
                e = rng.normal(0, 0.03, n)
                e[n // 2 :] += math.log1p(size)
                got = changepoints.detect(np.exp(e))
                found += len(got) == 1 and abs(got[0].index - n // 2) <= 1
            step.append(
                f"| {n} | +{size:.0%} at run {n // 2}, σ 3% | {found} of {seeds} "
                f"({found / seeds:.1%}) |"
            )
    return flat, step


def built(db: Path, runs: int) -> tuple[float, int]:
    """:func:`build` ``runs`` runs into ``db``, or reuse it when an earlier invocation built
    it with as many runs (its figures are kept beside it in ``<db>.json``)."""
    import json

    figures = db.with_name(db.name + ".json")
    if db.exists() and figures.exists():
        kept = json.loads(figures.read_text())
        if kept.get("runs") == runs:
            return kept["per_insert_s"], kept["document_bytes"]
    for stale in (db, figures):
        stale.unlink(missing_ok=True)
    per_insert, doc_bytes = build(db, runs)
    figures.write_text(
        json.dumps({"runs": runs, "per_insert_s": per_insert, "document_bytes": doc_bytes})
    )
    return per_insert, doc_bytes


def main(argv: list[str]) -> int:
    keep = None
    if "--db" in argv:
        at = argv.index("--db")
        keep, argv = Path(argv[at + 1]), argv[:at] + argv[at + 2 :]
    runs = int(argv[0]) if argv else 10000
    seeds = int(argv[1]) if len(argv) > 1 else 500
    with tempfile.TemporaryDirectory() as tmp:
        db = keep or Path(tmp) / "history.sqlite"
        per_insert, doc_bytes = built(db, runs) if keep else build(db, runs)
        size = db.stat().st_size + sum(p.stat().st_size for p in Path(tmp).glob("*-wal"))
        with Store(db) as store:
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            size = db.stat().st_size
            t0 = time.perf_counter()
            store.runs(limit=30)
            q_list = time.perf_counter() - t0
            t0 = time.perf_counter()
            got = trend.build(store, "g/b3", "time")
            q_trend = time.perf_counter() - t0
        changes = ", ".join(f"run {c.index} ({c.point.ratio - 1:+.1%})" for c in got.changes)
        report = report_figures(Path(tmp), db)
        list_s = cli_median(["history", "--history", str(db)])
        trend_s = cli_median(["history", "g/b3", "--history", str(db)])
        help_s = cli_median(["--version"])
    flat, step = detection(seeds)

    def verdict(value: float, target: float) -> str:
        return "met" if value <= target else "not met"

    text = f"""## perflab history: queries at {runs:,} runs, size per run, change points

Machine: {machine()}.

Command: `python benchmarks/history.py {runs} {seeds}`.

Database: {runs:,} synthetic runs of {BENCHES} benchmarks (10 processes × 30 samples each; a
results document of {doc_bytes / 1024:,.0f} KiB per run, stored zlib-compressed), the medians
drifting with steps of +10%, −20% and +20% at runs {runs // 4}, {runs // 2} and {3 * runs // 4}.
End-to-end times are medians of 5 invocations and include Python start-up
(`perflab --version` alone: {help_s:.2f} s).

| check | target | measured | verdict |
|---|---|---:|---|
| `perflab history` (list, 30 newest of {runs:,}) | ≤ 1 s | {list_s:.2f} s | {verdict(list_s, 1.0)} |
| `perflab history g/b3` (trend of {runs:,} runs + change points) | ≤ 1 s | {trend_s:.2f} s | {verdict(trend_s, 1.0)} |
| in-process: run list query | | {q_list * 1e3:.1f} ms | |
| in-process: trend query + change points | | {q_trend * 1e3:.0f} ms | |
| insert of one run (one transaction) | | {per_insert * 1e3:.1f} ms | |
| database size per run | ≤ 64 KiB | {size / runs / 1024:.1f} KiB | {verdict(size / runs, 65536)} |

Change points found in the {runs:,}-run trend of g/b3: {changes or "none"}.

### The HTML report

`perflab report run.json --history --database <that database> -o report.html`: one run of
{BENCHES} benchmarks (its tables and {report["charts"]} charts in all, with one trend per
benchmark over the newest 200 of the {runs:,} runs, change points from all of them).

| check | target | measured | verdict |
|---|---|---:|---|
| report size | ≤ 5 MB | {report["bytes"] / 2**20:.2f} MB | {verdict(report["bytes"], 5 * 2**20)} |
| writing it (`perflab report`, median of 3) | | {report["write_s"]:.1f} s | |
| loading it in headless chromium (to the load event, median of 3) | | {report["load_s"] * 1e3:.0f} ms | |

### Change points on synthetic histories

Flat histories (no step): share reporting any change point, {seeds} seeds each.

| runs | noise | false change points | verdict |
|---:|---|---:|---|
{chr(10).join(flat)}

One step of known size in the middle: share where exactly one change is reported, at the
right run ±1.

| runs | step | found |
|---:|---|---:|
{chr(10).join(step)}
"""
    write_section("history", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
