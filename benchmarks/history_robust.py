"""Change points that survive one bad run (issue 28 §2): seeded synthetic histories.

Each history: 10–40 runs, log-normal noise of 1–3% per run, a real step of ±10–60%
at a random run (at least 3 good runs on each side), and one bad run 1.5–10× off
(slower or faster) at a random place: inside, or as the newest run. Flat histories
(no step) with one bad run measure false change points. Each history is read two
ways: the detector alone on every run (before), and perflab's trend screening
(:func:`perflab.history.outliers.screen`: isolated outliers and a far newest run
left out) then the detector (now). No timing: the figures are the same on any
machine.

Usage: python benchmarks/history_robust.py [HISTORIES]   (default 1000 per case)
Writes benchmarks/results/history_robust.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, untimed_head, write_section  # noqa: E402

sys.path.insert(0, str(ROOT / "python"))
from perflab.history.changepoints import MIN_SEGMENT, detect  # noqa: E402
from perflab.history.outliers import screen  # noqa: E402

#: Where the bad run goes, by case name.
CASES = ("inside", "newest", "none")


def history(rng: np.random.Generator, step: bool, bad: str) -> tuple[np.ndarray, int | None]:
    """(values, index of the step or None)."""
    n = int(rng.integers(10, 41))
    x = rng.uniform(0.01, 0.03) * rng.standard_normal(n)
    at = None
    if step:
        last = n - MIN_SEGMENT - (bad == "newest")  # a step the good runs can confirm
        at = int(rng.integers(MIN_SEGMENT, last + 1))
        x[at:] += np.log1p(rng.uniform(0.10, 0.60) * rng.choice([-1, 1]))
    if bad != "none":
        where = n - 1 if bad == "newest" else int(rng.integers(1, n - 1))
        x[where] += np.log(rng.uniform(1.5, 10)) * rng.choice([-1, 1])
    return 1e-3 * np.exp(x), at


def read(values: np.ndarray, screened: bool) -> list[int]:
    """Indexes (in ``values``) of the change points found."""
    if not screened:
        return [c.index for c in detect(values)]
    kept = screen(values).kept
    return [kept[c.index] for c in detect(values[kept])]


def tally(count: int, step: bool, bad: str, screened: bool, seed: int) -> tuple[int, int, int]:
    """(histories whose step was found within ±1 run, histories with a false change, count)."""
    rng = np.random.default_rng([seed, int(step), CASES.index(bad)])
    found = false = 0
    for _ in range(count):
        values, at = history(rng, step, bad)
        got = read(values, screened)
        hit = at is not None and any(abs(i - at) <= 1 for i in got)
        found += hit
        false += any(at is None or abs(i - at) > 1 for i in got)
    return found, false, count


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    lines = untimed_head(
        "History: change points that survive one bad run (issue 28 §2)",
        f"python benchmarks/history_robust.py {count}",
    ) + [
        "| histories | bad run | read | step found (±1 run) | histories with a false "
        "change point | verdict |",
        "|---|---|---|---:|---:|---|",
    ]
    for step in (True, False):
        for bad in CASES:
            for screened in (False, True):
                found, false, n = tally(count, step, bad, screened, 28)
                how = "screened, then PELT (now)" if screened else "PELT on every run (before)"
                if step:
                    ok = found / n >= 0.95 and false / n <= 0.05
                else:
                    ok = false / n <= 0.05
                lines.append(
                    f"| {'with a step' if step else 'flat'} | {bad} | {how} | "
                    + (f"{found / n:.1%}" if step else "–")
                    + f" | {false / n:.1%} | {'met' if ok else 'not met'} |"
                )
    lines += [
        "",
        "Rule: with a step, the target is met when the step is found within one run of "
        "where it is in ≥ 95% of histories and ≤ 5% of histories report a change point "
        "elsewhere; flat, when ≤ 5% report any. Histories: 10–40 runs, 1–3% noise, a step "
        "of ±10–60% with at least 3 good runs on each side, one bad run 1.5–10× off (slower or "
        "faster) inside the history or as the newest run; seeds fixed. A newest bad run "
        'is reported on its own ("the last run is N× the trend: a regression or an '
        'outlier"), not as a change point.',
    ]
    write_section("history_robust", "\n".join(lines))


if __name__ == "__main__":
    main()
