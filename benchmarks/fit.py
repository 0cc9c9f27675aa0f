"""perflab fit and threads mode: published fits, known curves, class choice, contention.

Measures, on this machine, in one run:
  * published USL fits through the real entry point (`perflab fit CSV --json`):
    R usl (specsdm91, raytracer) and usl4j / Schwartz 2015 (cisco); the
    coefficients must agree within 1%. The peer programs themselves (R usl is
    on CRAN only; usl4j was not resolvable from Maven Central here) are not
    run: their published outputs are quoted, with sources in
    tests/analyze/data/README.md. Also the wall time of one `perflab fit`.
  * known curves: `perflab fit` on CSVs generated from cost = a + b·g(n) and
    from two "cold + n·warm" curves with 2% noise (seeded): is the truth inside
    the 95% CIs?
  * (which class the complexity fit chooses, its confusion matrix: see
    benchmarks/fit_confusion.py)
  * threads mode: examples/contention.py (shared stack by lock, spin lock,
    deque, LifoQueue at 1–12 threads) with perflab, beside a hand-rolled
    `threading` loop (what people write today: N threads, a barrier, a shared
    counter of calls, no per-call timing) on the same functions and durations;
    then the USL fitted to each perflab sweep.

Usage: python benchmarks/fit.py [PROCESS_TIME]   (default 50ms)
Writes benchmarks/results/fit.md.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, ROOT, machine, timed, write_section  # noqa: E402

sys.path.insert(0, str(ROOT))
from perflab.analyze.fit.models.words import fmt_number, fmt_time  # noqa: E402

DATA = ROOT / "tests" / "analyze" / "data"
#: (dataset, coefficient, published value, source)
PUBLISHED = [
    ("specsdm91", "alpha", 0.0277285, "R usl ≥ 2.0, tests/summary.Rout.save"),
    ("specsdm91", "beta", 0.0001044, "R usl ≥ 2.0, tests/summary.Rout.save"),
    ("specsdm91", "gamma", 89.9952330, "R usl ≥ 2.0, tests/summary.Rout.save"),
    ("raytracer", "alpha", 0.057771, "R usl ≥ 2.0, tests/confint.Rout.save"),
    ("raytracer", "gamma", 21.848843, "R usl ≥ 2.0, tests/confint.Rout.save"),
    ("cisco", "alpha", 0.02671591, "usl4j ModelTest (Schwartz 2015)"),
    ("cisco", "beta", 7.690945e-4, "usl4j ModelTest (Schwartz 2015)"),
    ("cisco", "gamma", 995.6486, "usl4j ModelTest (Schwartz 2015)"),
]
#: known curves (a, b) of cost = a + b·g(n), seconds
KNOWN = {"O(n)": (2e-6, 5e-8), "O(n log n)": (1e-6, 4e-9), "O(n^2)": (1e-5, 1e-11)}
STRATEGIES = ["lock", "spin", "deque", "lifoqueue"]
THREADS = [1, 2, 4, 8, 12]
E2E_CONNECTIONS = "1,2,3,4,6,8,12,16,24,32"
E2E_CHART = ROOT / "docs" / "fit-usl-serve.png"


def fit_json(args: list[str]) -> tuple[float, dict]:
    """Run `perflab fit ARGS --json`; (wall seconds, the JSON)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fit.json"
        wall, _ = timed([PYTHON, "-m", "perflab", "fit", *args, "--json", str(out)])
        return wall, json.loads(out.read_text())


def nx_csv(name: str, folder: Path) -> Path:
    """The published dataset with an N,X header."""
    rows = (DATA / f"{name}.csv").read_text().splitlines()[1:]
    path = folder / f"{name}.csv"
    path.write_text("N,X\n" + "\n".join(rows) + "\n")
    return path


def published_section(folder: Path) -> str:
    fits = {
        name: fit_json([str(nx_csv(name, folder)), "--model", "usl"])
        for name in ("specsdm91", "raytracer", "cisco")
    }
    lines = [
        "| dataset | coefficient | perflab fit | published | ratio | source |",
        "|---|---|---:|---:|---:|---|",
    ]
    for name, coef, value, source in PUBLISHED:
        got = fits[name][1][coef]
        lines.append(
            f"| {name} | {coef} | {got:.6g} | {value:.6g} | {got / value:.4f} | {source} |"
        )
    walls = [
        timed([PYTHON, "-m", "perflab", "fit", str(nx_csv("specsdm91", folder))])[0]
        for _ in range(5)
    ]
    lines.append(
        f"\nWall time of `perflab fit specsdm91.csv` (process start, scipy import, "
        f"fit, table): median {statistics.median(walls):.2f} s of 5 runs."
    )
    return "\n".join(lines)


def _noisy_cost(model: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sizes and costs a + b·g(n) of a known curve with 2% lognormal noise."""
    from perflab.analyze.fit.models import COMPLEXITY_MODELS

    a, b = KNOWN[model]
    n = np.array([100, 300, 1000, 3000, 10000, 30000, 100000], dtype=float)
    return n, (a + b * COMPLEXITY_MODELS[model](n)) * rng.lognormal(0, 0.02, n.size)


def _coverage(model: str, seeds: int) -> tuple[float, float]:
    """Over ``seeds`` noisy draws: share with the class right, share with b in its 95% CI.

    Uses the library (the same fit perflab fit runs on a CSV without se:
    relative errors) because 200 command-line runs would take minutes. "Right"
    means the class chosen, not merely ranked first.
    """
    from perflab.analyze.fit.models import fit_complexity

    right = inside = 0
    for seed in range(seeds):
        n, cost = _noisy_cost(model, np.random.default_rng(seed))
        fit = fit_complexity(n, cost)
        right += fit.verdict == "fits" and fit.model == model
        inside += fit.model == model and fit.b.contains(KNOWN[model][1])
    return right / seeds, inside / max(right, 1)


def known_curves_section(folder: Path) -> str:
    lines = [
        "| true curve | `perflab fit` chose (seed 0) | runner-up (Δ AICc) | b true (s per "
        "unit of g) | b fitted (95% CI) | class right, 200 seeds | b in its 95% CI, 200 seeds |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for model, (_, b) in KNOWN.items():
        n, cost = _noisy_cost(model, np.random.default_rng(0))
        path = folder / "cost.csv"
        path.write_text("n,cost\n" + "".join(f"{x:g},{float(y)!r}\n" for x, y in zip(n, cost)))
        fit = fit_json([str(path), "--model", "complexity"])[1]
        right, inside = _coverage(model, 200)
        lines.append(
            f"| {model} | {fit['model']} ({fit['verdict']}) | {fit['runner_up']} "
            f"({fit['delta']:.1f}) | {fmt_time(b)} | {fmt_time(fit['b'])} "
            f"({fmt_time(fit['b_ci_low'])} – {fmt_time(fit['b_ci_high'])}) "
            f"| {right:.0%} | {inside:.0%} |"
        )
    rng = np.random.default_rng(7)
    # cold + n·warm: A 85 ms one-off + 0.8 µs/object, B 24 ms + 4.4 µs/object → n* ≈ 16,900
    sizes = np.array([1, 10, 100, 1000, 10000, 100000, 1000000], dtype=float)
    rows = []
    for name, cold, warm in (("A", 0.085, 0.8e-6), ("B", 0.024, 4.4e-6)):
        cost = (1e-6 + warm * sizes) * rng.lognormal(0, 0.02, sizes.size)
        rows += [f"{name},{x:g},{float(y)!r},{cold}\n" for x, y in zip(sizes, cost)]
    path = folder / "be.csv"
    path.write_text("name,n,cost,cold\n" + "".join(rows))
    be = fit_json([str(path), "--between", "A", "B", "--growth", "O(n)"])[1]
    true_n = (0.085 - 0.024) / (4.4e-6 - 0.8e-6)
    lines.append(
        f"\nBreak-even of cold + n·warm curves (A: 85 ms + 0.8 µs·n, B: 24 ms + "
        f'4.4 µs·n, 2% noise): true n* = {true_n:,.0f}; perflab: "{be["sentence"]}" '
        f"— truth inside the CI: "
        f"{'yes' if be['ci_low'] <= true_n <= be['ci_high'] else 'NO'}."
    )
    return "\n".join(lines)


def hand_rolled(name: str, threads: int, seconds: float) -> float:
    """ops/s of N plain threads calling the example's function, counted, not timed per call."""
    sys.path.insert(0, str(ROOT / "examples"))
    import perflab.engines.run.suite as suite

    spec = next(
        s for s in suite.load_file(ROOT / "examples" / "contention.py").benches if s.name == name
    )
    state = spec.setup()
    counts = [0] * threads
    running = [True]
    barrier = threading.Barrier(threads + 1)

    def body(i: int) -> None:
        barrier.wait()
        func, n = spec.func, 0
        while running[0]:
            func(state)
            n += 1
        counts[i] = n

    workers = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(threads)]
    for w in workers:
        w.start()
    barrier.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    running[0] = False
    for w in workers:
        w.join()
    return sum(counts) / (time.perf_counter() - t0)


def contention_section(folder: Path, process_time: str) -> str:
    out = folder / "contention.json"
    cmd = [
        PYTHON,
        "-m",
        "perflab",
        "run",
        str(ROOT / "examples" / "contention.py"),
        "--filter",
        "stack/*",
        "--min-processes",
        "3",
        "--max-processes",
        "3",
        "--process-time",
        process_time,
        "--no-alloc",
        "--quiet",
        "--json",
        str(out),
    ]
    wall, _ = timed(cmd)
    data = json.loads(out.read_text())
    perflab_rate = {
        (b["name"], b["threads"]): 1 / b["summary"]["median_s"]
        for b in data["benchmarks"]
        if b.get("summary", {}).get("median_s")
    }
    cpu = {(b["name"], b["threads"]): b["summary"]["cpu_wall"] for b in data["benchmarks"]}
    seconds = float(process_time.rstrip("ms")) / 1000 if process_time.endswith("ms") else 0.05
    lines = [
        "| strategy | threads | perflab ops/s | hand-rolled ops/s (median of 3) | "
        "perflab / hand-rolled | CPU/wall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in STRATEGIES:
        for n in THREADS:
            plain = statistics.median(hand_rolled(name, n, seconds) for _ in range(3))
            mine = perflab_rate.get((name, n), float("nan"))
            lines.append(
                f"| {name} | {n} | {mine:,.0f} | {plain:,.0f} | {mine / plain:.2f} | "
                f"{cpu.get((name, n), float('nan')):.2f} |"
            )
    lines += ["", "| strategy | α (95% CI) | β | N* | reading |", "|---|---|---:|---:|---|"]
    for name in STRATEGIES:
        fit = fit_json([str(out), "--model", "usl", "--series", name])[1]
        peak = "∞" if fit["peak_load"] is None else fmt_number(fit["peak_load"])
        reading = fit["warnings"][0] if fit["degenerate"] else fit["reading"]
        lines.append(
            f"| {name} | {fmt_number(fit['alpha'])} ({fmt_number(fit['alpha_ci_low'])}"
            f"–{fmt_number(fit['alpha_ci_high'])}) | {fmt_number(fit['beta'])} | "
            f"{peak} | {reading} |"
        )
    overhead = statistics.median(
        p["loop_overhead_ns"]
        for b in data["benchmarks"]
        for p in b["processes"]
        if p.get("loop_overhead_ns")
    )
    lines.append(
        f"\nperflab run wall time for the 20 cases: {wall:.0f} s. Timer cost of threads "
        f"mode (timed loop around an empty call, median): {overhead:.0f} ns per call; "
        "the hand-rolled loop does not time calls, which explains the steady gap "
        "for the cheapest operation (deque, ~50 ns); for the others the ratios "
        "scatter around 1 with the noise of this shared machine and of GIL "
        "scheduling, which decides which thread runs for 5 ms at a time."
    )
    return "\n".join(lines)


def end_to_end_section(folder: Path) -> str:
    """perflab serve with a 0.2 ms global lock per request, swept in closed loop, USL fitted."""
    import re

    serve = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "perflab",
            "serve",
            "--port",
            "0",
            "--delay",
            "1ms",
            "--serialize",
            "0.2ms",
            "--threads",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = re.search(r"http://[0-9.]+:[0-9]+/", serve.stdout.readline()).group(0)
        sweep = folder / "sweep.json"
        timed(
            [
                PYTHON,
                "-m",
                "perflab",
                "http",
                url,
                "--connections",
                E2E_CONNECTIONS,
                "--duration",
                "2s",
                "--warmup",
                "0.4s",
                "--threads",
                "1",
                "--quiet",
                "--json",
                str(sweep),
            ]
        )
    finally:
        serve.terminate()
        serve.wait(timeout=10)
    fit = fit_json([str(sweep), "--chart", str(E2E_CHART)])[1]
    lines = ["| N (connections) | X measured (responses/s) | X fitted |", "|---:|---:|---:|"]
    for n, x, f in zip(fit["points"]["N"], fit["points"]["X"], fit["fitted"]):
        lines.append(f"| {n:g} | {x:,.0f} | {f:,.0f} |")
    lines.append(
        f"\nTarget: `perflab serve --delay 1ms --serialize 0.2ms --threads 2` (a global lock "
        f"held 0.2 ms per request: at most 5,000 responses/s). Sweep: `perflab http URL "
        f"--connections {E2E_CONNECTIONS} --duration 2s --warmup 0.4s --threads 1`. "
        f"Fit: α = {fmt_number(fit['alpha'])} ({fmt_number(fit['alpha_ci_low'])}–"
        f"{fmt_number(fit['alpha_ci_high'])}), β = {fmt_number(fit['beta'])}, "
        f"γ = {fit['gamma']:,.0f}/s, N* = {fmt_number(fit['peak_load'])}, "
        f"X(N*) = {fit['peak_throughput']:,.0f}/s, R² = {fit['r_squared']:.3f}. "
        f"Reading: {fit['reading']}. Chart: docs/{E2E_CHART.name}."
    )
    plateau = max(fit["points"]["X"])
    lines.append(
        f"\nThe lock makes a hard knee (throughput grows linearly, then stays flat at "
        f"≈ {plateau:,.0f}/s); the USL's smooth curve bends earlier and, to follow the knee, "
        f"takes a small β that predicts a mild decline past N* which a lock alone does not "
        f'cause. Read N* as "no gain past here" and X(N*) as the ceiling: '
        f"{fit['peak_throughput'] / plateau:.2f}× the highest measured throughput."
    )
    return "\n".join(lines)


def main() -> None:
    process_time = sys.argv[1] if len(sys.argv) > 1 else "50ms"
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        text = "\n\n".join(
            [
                "## perflab fit and threads mode (issues 7 and 11)",
                f"Machine: {machine()} (`nproc` = {nproc}); shared with other engineers' "
                "builds and tests while this ran, so timings are noisy: read ratios, not "
                "absolute rates.",
                f"Command: `python benchmarks/fit.py {process_time}`",
                "### Published USL fits, through `perflab fit`",
                published_section(folder),
                "### Known curves: complexity and break-even",
                known_curves_section(folder),
                "### Threads mode: examples/contention.py (group stack) against a hand-rolled "
                "threading loop",
                contention_section(folder, process_time),
                "### End to end: USL of a `perflab http` closed-loop sweep against `perflab serve` "
                "with a serialization point",
                end_to_end_section(folder),
            ]
        )
    write_section("fit", text)


if __name__ == "__main__":
    main()
