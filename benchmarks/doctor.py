"""perflab doctor and the per-sample clock check beside their peers (issue 3).

Usage: python benchmarks/doctor.py   (a release build of the native core: `make bench`,
       or `maturin develop --release` first; libfaketime for the fault rows)

Writes benchmarks/results/doctor.md. Measured here, side by side in one run:
    * the cost of the integrity bracket each sample pays, against time.perf_counter_ns
      (the call that times the sample) and the default shortest sample;
    * the wall time of a default `perflab doctor` run, beside `pyperf system show`;
    * agreement: doctor's Python read cost of MONOTONIC against timeit's, and its
      calibrated TSC rate against the kernel's (/proc/cpuinfo "cpu MHz" on a VM with
      tsc_known_freq, which is the TSC frequency);
    * faults: what doctor and perflab run report under libfaketime ×2.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, machine, timed, write_section  # noqa: E402

TRIALS = 7
DOCTOR_RUNS = 5
FAKETIME = next(iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))), None)
MIN_SAMPLE_NS = 2e6  # perflab run's default floor on one sample

BRACKET_CODE = textwrap.dedent("""
    import json, statistics, sys
    from perflab import _core
    from perflab.engines import clocks, integrity
    monitor = integrity.Monitor()
    monitor.ready()
    def trial():
        return {"perf_counter_ns": clocks.python_read_cost_ns(200_000),
                "snapshot": clocks.python_call_cost_ns(_core.clock_snapshot, calls=200_000),
                "bracket": clocks.python_call_cost_ns(monitor.start, calls=200_000)
                           + clocks.python_call_cost_ns(monitor.stop, calls=200_000)}
    rows = [trial() for _ in range(int(sys.argv[1]))]
    native = {c: _core.clock_read_cost_ns(c, 2_000_000)
              for c in ("monotonic", "realtime", "monotonic_raw", "boottime", "tsc")}
    print(json.dumps({"build": _core.build_profile(), "native": native,
                      **{k: statistics.median(r[k] for r in rows) for k in rows[0]}}))
""")


def bracket_costs() -> dict[str, object]:
    """Per-call costs from Python in a fresh process: perf_counter_ns, snapshot, bracket."""
    return json.loads(timed([PYTHON, "-c", BRACKET_CODE, str(TRIALS)])[1].stdout)


def timeit_net_ns(stmt: str, setup: str = "import time") -> float:
    """timeit's best-of-7 per-loop cost of ``stmt`` minus that of ``pass``, ns."""

    def best(s: str) -> float:
        out = timed([PYTHON, "-m", "timeit", "-r", "7", "-n", "1000000", "-s", setup, s])[1]
        value, unit = re.search(r"best of 7: ([\d.]+) (\w+)", out.stdout).groups()  # type: ignore[union-attr]
        return float(value) * {"nsec": 1, "usec": 1e3, "msec": 1e6}[unit]

    return best(stmt) - best("pass")


def doctor_runs() -> tuple[list[float], list[float], dict[str, object]]:
    """Process wall times and reported ``elapsed_s`` of default `perflab doctor` runs,
    and the last run's JSON."""
    walls, elapsed, doc = [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "d.json"
        for _ in range(DOCTOR_RUNS):
            t0 = time.monotonic()
            proc = subprocess.run(
                [PYTHON, "-m", "perflab", "doctor", "--json", str(out), "--format", "csv"],
                capture_output=True,
                text=True,
                check=False,
            )
            walls.append(time.monotonic() - t0)
            assert proc.returncode in (0, 1), proc.stderr
            doc = json.loads(out.read_text())
            elapsed.append(doc["elapsed_s"])
    return walls, elapsed, doc


def pyperf_show_walls() -> list[float]:
    """Wall times of `python -m pyperf system show` (reads system state; no clock probe)."""
    walls = []
    for _ in range(DOCTOR_RUNS):
        t0 = time.monotonic()
        subprocess.run([PYTHON, "-m", "pyperf", "system", "show"], capture_output=True, check=False)
        walls.append(time.monotonic() - t0)
    return walls


def kernel_tsc_mhz() -> float | None:
    """The kernel's 'cpu MHz' of cpu0 (the TSC frequency on a tsc_known_freq VM)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("cpu MHz"):
            return float(line.split(":")[1])
    return None


def faults() -> dict[str, object] | None:
    """Doctor and perflab run under libfaketime ×2 (None without libfaketime)."""
    if FAKETIME is None:
        return None
    env = {**os.environ, "LD_PRELOAD": str(FAKETIME), "FAKETIME": "+0 x2"}
    doctor = subprocess.run(
        [PYTHON, "-m", "perflab", "doctor", "--duration", "1s", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    doc = json.loads(doctor.stdout)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "b.py").write_text(
            "import perflab\n\n@perflab.bench()\ndef add():\n    return sum(range(200))\n"
        )
        subprocess.run(
            [
                PYTHON,
                "-m",
                "perflab",
                "run",
                "b.py",
                "--min-processes",
                "3",
                "--max-processes",
                "3",
                "--no-alloc",
                "--quiet",
                "--json",
                "r.json",
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp,
            check=True,
        )
        results = json.loads(Path(tmp, "r.json").read_text())
    samples = [s for p in results["benchmarks"][0]["processes"] for s in p["samples"]]
    check = next(c for c in doc["checks"] if c["name"] == "rate_vs_tsc")
    return {
        "rate": doc["cross_checks"]["rates"]["monotonic"],
        "check": check,
        "exit": doctor.returncode,
        "samples": len(samples),
        "flagged": sum(1 for s in samples if s["flagged"] == "clock:tsc"),
    }


def _ns(value: float) -> str:
    return f"{value:,.0f} ns" if value >= 100 else f"{value:.1f} ns"


def main() -> int:
    costs = bracket_costs()
    timeit_mono = timeit_net_ns("time.clock_gettime_ns(time.CLOCK_MONOTONIC)")
    walls, elapsed, doc = doctor_runs()
    pyperf_walls = pyperf_show_walls()
    fault = faults()
    mono = doc["clocks"]["monotonic"]  # type: ignore[index]
    ghz, mhz = doc["clocksource"]["tsc_ghz"], kernel_tsc_mhz()  # type: ignore[index]
    native = costs["native"]  # type: ignore[index]
    snapshot_native = (
        sum(native[c] for c in ("monotonic", "realtime", "monotonic_raw", "boottime"))
        + 2 * native["tsc"]
    )
    bracket, perf = float(costs["bracket"]), float(costs["perf_counter_ns"])  # type: ignore[arg-type]
    lines = [
        "## perflab doctor and the per-sample clock check (issue 3)",
        "",
        f"Machine: {machine()}; native core: {costs['build']} build. Shared 2-core machine "
        "with other jobs running: medians of several trials taken in one run; read ratios "
        "rather than absolutes.",
        "",
        "Command: `python benchmarks/doctor.py`.",
        "",
        "### Cost of the integrity bracket (per sample)",
        "",
        f"Median of {TRIALS} trials, each the fastest of 5 loops of 40,000 calls from Python "
        "minus the fastest bare loop, in a fresh process.",
        "",
        "| what | cost | × perf_counter_ns | share of a 2 ms sample |",
        "|---|---:|---:|---:|",
        f"| `time.perf_counter_ns()` (times every sample) | {_ns(perf)} | 1.00 | "
        f"{perf / MIN_SAMPLE_NS:.4%} |",
        f"| `_core.clock_snapshot()` (one snapshot) | {_ns(float(costs['snapshot']))} | "
        f"{float(costs['snapshot']) / perf:.2f} | {float(costs['snapshot']) / MIN_SAMPLE_NS:.4%} |",
        f"| integrity bracket: `Monitor.start()` + `Monitor.stop()` | **{_ns(bracket)}** | "
        f"{bracket / perf:.2f} | {bracket / MIN_SAMPLE_NS:.4%} |",
        "",
        f"Native reads inside one snapshot (Rust, 2,000,000-read loops): MONOTONIC "
        f"{native['monotonic']:.1f} ns, REALTIME {native['realtime']:.1f} ns, RAW "
        f"{native['monotonic_raw']:.1f} ns, BOOTTIME {native['boottime']:.1f} ns, rdtsc "
        f"{native['tsc']:.1f} ns; one snapshot (4 reads + 2 rdtsc) ≈ {snapshot_native:.0f} ns "
        "natively. Target: bracket under 1 µs — " + ("met." if bracket < 1000 else "**not met**."),
        "",
        "### Default `perflab doctor` run",
        "",
        "| tool | what it does | median wall | runs |",
        "|---|---|---:|---:|",
        f"| `perflab doctor` | 3 s clock probe + sleeps + per-clock figures + verdicts | "
        f"{statistics.median(walls):.2f} s (max {max(walls):.2f} s; probes alone "
        f"{statistics.median(elapsed):.2f} s) | {len(walls)} |",
        f"| `pyperf system show` | reads system state; no clock probe | "
        f"{statistics.median(pyperf_walls):.2f} s | {len(pyperf_walls)} |",
        "",
        "Target: default doctor run under 10 s — "
        + ("met." if max(walls) < 10 else "**not met**.")
        + " (Wall times are of the whole "
        'process, interpreter start-up included; "probes alone" is doctor\'s own `elapsed_s`.)',
        "",
        "### Agreement with peers",
        "",
        "| figure | perflab doctor | peer | ratio |",
        "|---|---:|---:|---:|",
        f"| Python read cost of MONOTONIC | {_ns(mono['python_read_cost_ns'])} | timeit "
        f"(best of 7, minus `pass`): {_ns(timeit_mono)} | "
        f"{mono['python_read_cost_ns'] / timeit_mono:.2f} |",
    ]
    if ghz and mhz:
        lines.append(
            f"| TSC rate | {ghz * 1000:.3f} MHz | kernel `cpu MHz`: {mhz:.3f} MHz | "
            f"{(ghz * 1000 / mhz - 1) * 1e6:+.0f} ppm |"
        )
    lines += [
        "",
        "Both are best-of-N figures (doctor: fastest of 5 loops minus the fastest "
        "bare loop; timeit: best of 7 minus best of 7 for `pass`).",
    ]
    if fault:
        lines += [
            "",
            '### Faults (libfaketime `FAKETIME="+0 x2"`)',
            "",
            f"- `perflab doctor --duration 1s`: MONOTONIC rate vs TSC "
            f"{fault['rate']:.3f}×, check `rate_vs_tsc` {fault['check']['status']} "
            f"(exit code {fault['exit']}).",
            f"- `perflab run` (3 processes): {fault['flagged']} of {fault['samples']} "
            "samples flagged `clock:tsc` and excluded.",
        ]
    write_section("doctor", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
