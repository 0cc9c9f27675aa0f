"""perflab cmd beside hyperfine -N: per-run overhead, agreement of medians, drift (issue 5).

Usage: python benchmarks/cmd.py   (needs hyperfine: `make system-deps` installs it)

Writes benchmarks/results/cmd.md. Every figure is measured here, side by side in
one run; the tools alternate round by round so that machine drift hits both.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from common import PYTHON, RATIO_RULE, machine, ratio_verdict, timed, write_section  # noqa: E402

from perflab.analyze.stats import median_ci  # noqa: E402

PERFLAB = [PYTHON, "-m", "perflab", "cmd", "--quiet"]
OVERHEAD_RUNS, OVERHEAD_TRIALS = (200, 2200), 11
AGREE_ROUNDS, AGREE_RUNS = 30, 20
DRIFT_RUNS, DRIFT_TRIALS = 40, 3
#: python3 itself, not a wrapper script such as a pyenv shim (which adds its own noise)
PYTHON3 = os.path.realpath(PYTHON)
DRIFT_CMD = "{py} -c 'sum(range(1500000))'"


def perflab_medians(
    commands: list[str], runs: int, *extra: str
) -> tuple[float, list[float], float]:
    """Run perflab cmd; (tool wall s, median wall s of each command, loop s per run).

    The loop time per run is the span of the first command's runs (first start →
    last end, from the results file) over the runs: the measuring loop alone,
    without start-up, analysis and saving.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        wall, _ = timed([*PERFLAB, "--runs", str(runs), "--json", str(out), *extra, *commands])
        data = json.loads(out.read_text())
    first = data["benchmarks"][0]["runs"]
    span = first[-1]["started_s"] + first[-1]["wall_ns"] * 1e-9 - first[0]["started_s"]
    return wall, [b["summary"]["median_s"] for b in data["benchmarks"]], span / len(first)


def hyperfine_medians(
    commands: list[str], runs: int, *extra: str
) -> tuple[float, list[float], float]:
    """Run hyperfine -N; (tool wall s, median wall s of each command, nan: no timestamps)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "h.json"
        wall, _ = timed(
            [
                "hyperfine",
                "-N",
                "--style",
                "none",
                "--runs",
                str(runs),
                "--export-json",
                str(out),
                *extra,
                *commands,
            ]
        )
        data = json.loads(out.read_text())
    return wall, [statistics.median(r["times"]) for r in data["results"]], math.nan


TOOLS = {"perflab": perflab_medians, "hyperfine": hyperfine_medians}


def overhead() -> dict[str, dict[str, float]]:
    """Per-run cost of each tool on `true` in paired trials (the tool going first alternates).

    End to end: Δ tool wall time / Δ runs (start-up cancels out; analysis and
    saving stay in). Loop: perflab's measuring loop alone (see :func:`perflab_medians`);
    hyperfine's is its end-to-end figure, its analysis being a few sums.
    """
    cost: dict[str, dict[str, list[float]]] = {
        n: {"end": [], "loop": [], "median": []} for n in TOOLS
    }
    low, high = OVERHEAD_RUNS
    for trial in range(OVERHEAD_TRIALS):
        for name in list(TOOLS) if trial % 2 == 0 else list(reversed(TOOLS)):
            wall_low, _, _ = TOOLS[name](["true"], low)
            wall_high, (median,), loop = TOOLS[name](["true"], high)
            end = (wall_high - wall_low) / (high - low)
            cost[name]["end"].append(end)
            cost[name]["loop"].append(end if math.isnan(loop) else loop)
            cost[name]["median"].append(median)
    out = {name: {k: statistics.median(v) for k, v in c.items()} for name, c in cost.items()}
    for kind in ("end", "loop"):
        ratios = [a / b for a, b in zip(cost["perflab"][kind], cost["hyperfine"][kind])]
        ci = median_ci([ratios], 0.95, 4000, np.random.default_rng(0))
        out[f"ratio_{kind}"] = {
            "median": statistics.median(ratios),
            "min": min(ratios),
            "max": max(ratios),
            "low": ci.ci_low,
            "high": ci.ci_high,
        }
    return out


def agreement(command: str) -> dict[str, float]:
    """Paired rounds (the tool going first alternates): medians of each tool, and the
    median and quartiles of the per-round perflab/hyperfine ratio (pairs cancel drift)."""
    medians: dict[str, list[float]] = {name: [] for name in TOOLS}
    for round_ in range(AGREE_ROUNDS):
        names = list(TOOLS) if round_ % 2 == 0 else list(reversed(TOOLS))
        for name in names:
            medians[name].append(TOOLS[name]([command], AGREE_RUNS)[1][0])
    ratios = [a / b for a, b in zip(medians["perflab"], medians["hyperfine"])]
    q1, q2, q3 = statistics.quantiles(ratios, n=4)
    ci = median_ci([ratios], 0.95, 4000, np.random.default_rng(0))
    return {
        **{name: statistics.median(v) for name, v in medians.items()},
        "ratio": statistics.median(ratios),
        "q1": q1,
        "q3": q3,
        "low": ci.ci_low,
        "high": ci.ci_high,
    }


def drift_trial(tool: str, interleave: bool) -> tuple[float, float, float]:
    """B/A ratio of two identical commands when CPU hogs start a third of the way through,
    with the tool's 95% CI of it (see :func:`_ratio`).

    Not halfway: each command would then have about as many fast runs as slow
    ones, and its median would flip between the two at random.
    """
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log"
        prepare = f"echo x >> {log}"
        if tool == "perflab":
            args = [
                *PERFLAB,
                "--runs",
                str(DRIFT_RUNS),
                "--prepare",
                prepare,
                "--json",
                str(Path(tmp) / "r.json"),
                "-L",
                "py",
                f"{PYTHON},{PYTHON}",
                DRIFT_CMD,
            ]
            args += [] if interleave else ["--no-interleave"]
        else:
            cmd = DRIFT_CMD.replace("{py}", PYTHON)
            # -N splits --prepare too, so the redirection needs its own shell
            args = [
                "hyperfine",
                "-N",
                "--style",
                "none",
                "--runs",
                str(DRIFT_RUNS),
                "--prepare",
                f"sh -c '{prepare}'",
                "--export-json",
                str(Path(tmp) / "h.json"),
                cmd,
                cmd,
            ]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hogs = _start_hogs(proc, log, 2 * DRIFT_RUNS // 3)
        proc.wait()
        for hog in hogs:
            hog.kill()
            hog.wait()
        return _ratio(tool, Path(tmp))


def _start_hogs(
    proc: subprocess.Popen[bytes], log: Path, runs: int
) -> list[subprocess.Popen[bytes]]:
    """Wait until ``runs`` runs are done (each logs two bytes), then start two busy loops
    per core: they outweigh whatever else the shared machine is running."""
    while proc.poll() is None and (not log.exists() or len(log.read_text()) < 2 * runs):
        time.sleep(0.01)
    return [
        subprocess.Popen([PYTHON, "-c", "while True: pass"])
        for _ in range(2 * (os.cpu_count() or 1))
    ]


def _ratio(tool: str, tmp: Path) -> tuple[float, float, float]:
    """(B/A, CI low, CI high); perflab's CI is its reported 95% CI of the ratio, hyperfine
    reports none (nan)."""
    if tool == "perflab":
        a, b = (
            bench["summary"] for bench in json.loads((tmp / "r.json").read_text())["benchmarks"]
        )
        value, low, high = (b if a["reference"] else a)["ratio"]
        return (value, low, high) if a["reference"] else (1 / value, 1 / high, 1 / low)
    a, b = json.loads((tmp / "h.json").read_text())["results"]
    return statistics.median(b["times"]) / statistics.median(a["times"]), math.nan, math.nan


def drift() -> dict[str, list[tuple[float, float, float]]]:
    """B/A ratios (with perflab's CI) per setup, trials alternating between setups."""
    setups = {
        "perflab (interleaved)": ("perflab", True),
        "perflab --no-interleave": ("perflab", False),
        "hyperfine -N (sequential)": ("hyperfine", False),
    }
    ratios: dict[str, list[tuple[float, float, float]]] = {name: [] for name in setups}
    for _ in range(DRIFT_TRIALS):
        for name, (tool, interleave) in setups.items():
            ratios[name].append(drift_trial(tool, interleave))
    return ratios


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def report(
    over: dict[str, dict[str, float]],
    agree: dict[str, dict[str, float]],
    ratios: dict[str, list[tuple[float, float, float]]],
    hyperfine_version: str,
) -> str:
    lines = [
        "## perflab cmd vs hyperfine -N (issue 5)",
        "",
        f"Machine: {machine()}. A shared 2-core machine (other engineers' builds and "
        "tests may run at the same time): absolute times are noisy, so the tools alternate "
        "round by round and the table quotes medians and side-by-side ratios.",
        "",
        f"Command: `python benchmarks/cmd.py` ({hyperfine_version}; perflab `--runs N --quiet`, "
        "hyperfine `-N --runs N`). perflab spawns from a small helper process and times "
        "spawn → reap on the monotonic clock; hyperfine -N spawns from itself.",
        "",
        "### Per-run overhead on `true`",
        "",
        f"Paired trials ({OVERHEAD_TRIALS}, the tool going first alternates), each tool run "
        f"with {OVERHEAD_RUNS[0]} and {OVERHEAD_RUNS[1]} runs of `true`; medians over trials. "
        "**Loop**: time per run of the measuring loop (perflab: first start → last end of its "
        "runs, from the results file; hyperfine: its end-to-end figure, as its analysis is a "
        "few sums). **End to end**: (tool wall time at the larger count − at the smaller) / "
        "the difference in runs, so start-up cancels out but analysis and saving stay in "
        "(perflab bootstraps the median and writes every run to JSON: O(runs) once at the "
        "end). **Reported median**: what the tool says `true` takes.",
        "",
        "| tool | loop per run | end to end per run | reported median of `true` |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {name} | {ms(over[name]['loop'])} | {ms(over[name]['end'])} | "
        f"{ms(over[name]['median'])} |"
        for name in TOOLS
    ]
    loop, end = over["ratio_loop"], over["ratio_end"]
    lines += [
        "",
        "perflab / hyperfine per paired trial: loop per run median "
        f"**{loop['median']:.3f}** (95% CI {loop['low']:.3f}–{loop['high']:.3f}, range "
        f"{loop['min']:.2f}–{loop['max']:.2f}); end to end median "
        f"**{end['median']:.3f}** (95% CI {end['low']:.3f}–{end['high']:.3f}, range "
        f"{end['min']:.2f}–{end['max']:.2f}).",
        "",
        "### Agreement of medians",
        "",
        f"{AGREE_ROUNDS} paired rounds of {AGREE_RUNS} runs per tool (which tool goes "
        "first alternates); medians of the round medians, and the median, its 95% "
        "bootstrap CI and the 25–75% range of the per-round perflab / hyperfine ratio. "
        "`python3` is "
        f"`{PYTHON3}` itself (on this machine the `python3` on PATH is a pyenv shim, "
        "a shell script that adds its own start-up noise).",
        "",
        "| command | perflab median | hyperfine -N median | perflab / hyperfine per round "
        "(median) | 95% CI | 25–75% |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for command, v in agree.items():
        lines.append(
            f"| `{command}` | {ms(v['perflab'])} | {ms(v['hyperfine'])} | "
            f"{v['ratio']:.4f} | {v['low']:.4f}–{v['high']:.4f} | "
            f"{v['q1']:.3f}–{v['q3']:.3f} |"
        )
    lines += [
        "",
        "### Drift: the same command twice, CPU hogs from a third of the way",
        "",
        f"A and B are the same command (`{DRIFT_CMD.replace('{py}', 'python3')}`), "
        f"{DRIFT_RUNS} runs each, with a `--prepare` hook that logs each run. When a third "
        "of all runs are done, the script starts two busy loops per core, so the rest of "
        "the runs compete for the CPU (a third, not half: with half the runs slow, a "
        "median flips between the fast and the slow runs at random). B/A should be "
        "1.00; sequential runs put most of A before the load and all of B under it. "
        "perflab also reports a 95% CI for B/A: interleaved, it pairs the runs of each "
        "block, so the load hits both sides of every pair; sequential, it cannot pair, "
        "and a CI that misses 1.00 is a false verdict (hyperfine gives no CI).",
        "",
        "| setup | B/A ratio per trial [perflab's 95% CI] | CIs that contain 1.00 |",
        "|---|---|---:|",
    ]
    for name, values in ratios.items():
        cells = [
            f"{r:.3f}" + ("" if math.isnan(lo) else f" [{lo:.3f}–{hi:.3f}]") for r, lo, hi in values
        ]
        covered = (
            "–"
            if all(math.isnan(lo) for _, lo, _ in values)
            else f"{sum(lo <= 1 <= hi for _, lo, hi in values)} of {len(values)}"
        )
        lines.append(f"| {name} | {', '.join(cells)} | {covered} |")
    return "\n".join(lines + ["", *targets(over, agree, ratios)])


def targets(
    over: dict[str, dict[str, float]],
    agree: dict[str, dict[str, float]],
    ratios: dict[str, list[tuple[float, float, float]]],
) -> list[str]:
    """The issue's three speed targets, each judged from the figures above by the stated
    rules (:func:`common.ratio_verdict` for the ratios with a CI)."""
    loop, end = over["ratio_loop"], over["ratio_end"]
    overhead = ratio_verdict(loop["low"], loop["high"], at_most=1.0)
    lines = [
        "### Targets (issue 5)",
        "",
        f"- Per-run overhead ≤ hyperfine -N's: **{overhead}** "
        f"(measuring loop per run ×{loop['median']:.3f}, 95% CI {loop['low']:.3f}–"
        f"{loop['high']:.3f}; end to end, with the analysis and the JSON of every run, "
        f"×{end['median']:.3f}, 95% CI {end['low']:.3f}–{end['high']:.3f}).",
    ]
    for command, v in agree.items():
        within = ratio_verdict(v["low"], v["high"], at_least=0.99, at_most=1.01)
        lines.append(
            f"- `{command}` medians within 1% of hyperfine -N: **{within}** "
            f"(×{v['ratio']:.4f}, 95% CI {v['low']:.4f}–{v['high']:.4f}; rounds "
            f"{v['q1']:.3f}–{v['q3']:.3f}, the spread of this shared machine)."
        )
    spread = {name: max(abs(r - 1) for r, _, _ in values) for name, values in ratios.items()}
    inter = spread["perflab (interleaved)"]
    stable = inter < min(v for k, v in spread.items() if "interleaved" not in k)
    lines.append(
        f"- Interleaving keeps A/B stable where sequential runs don't: "
        f"**{'met' if stable else 'not met'}**"
        f" (largest |B/A − 1|: interleaved {inter:.3f}, --no-interleave "
        f"{spread['perflab --no-interleave']:.3f}, hyperfine "
        f"{spread['hyperfine -N (sequential)']:.3f})."
    )
    return lines + [
        "",
        f"Rules: {RATIO_RULE}. Interleaving is **met** when its largest "
        "|B/A − 1| over the trials is below that of every sequential setup.",
    ]


def main() -> int:
    if shutil.which("hyperfine") is None:
        sys.stderr.write(
            "error: hyperfine not found; run `make system-deps` (installs it) and try again\n"
        )
        return 2
    version = subprocess.run(
        ["hyperfine", "--version"], capture_output=True, text=True
    ).stdout.strip()
    over = overhead()
    agree = {
        "sleep 0.05": agreement("sleep 0.05"),
        "python3 -c pass": agreement(f"{PYTHON3} -c pass"),
    }
    ratios = drift()
    write_section("cmd", report(over, agree, ratios, version))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
