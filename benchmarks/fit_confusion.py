"""Which growth class `perflab fit --model complexity` chooses: the confusion matrix (issues 11, 28).

For each true class O(1) … O(n²): 200 seeded synthetic sweeps of 4–8 sizes, 2–10%
lognormal noise, costs over 1–6 decades (tests/analyze/cost_trials.py), with and
without per-point SEs, clean and with one outlier point; then what `perflab fit`
says of the issues' repros (four sizes with a noisy smallest point; five sizes
rising 335×; issue 11's five sizes). No timing is involved: the figures are the
same on any machine.

Usage: python benchmarks/fit_confusion.py [TRIALS]   (default 200)
Writes benchmarks/results/fit_confusion.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, ROOT, untimed_head, write_section  # noqa: E402

sys.path.insert(0, str(ROOT))
from tests.analyze.cost_trials import TRUE_CLASSES, study  # noqa: E402

#: Columns of the confusion matrix: confident picks, ties, and "no class fits".
CHOICES = [
    "O(1)",
    "O(log n)",
    "O(n)",
    "O(n log n)",
    "O(n^2)",
    "O(n^3)",
    "tied, truth named",
    "tied, truth missing",
    "no class fits, slope names truth",
    "no class fits",
]
#: The repros: name → (n, cost, se or None).
REPROS = {
    "issue 28: four sizes, the smallest noisy, no SEs": (
        [10, 100, 1000, 10000],
        [80e-6, 43e-6, 200e-6, 1.5e-3],
        None,
    ),
    "issue 28: four sizes, the smallest noisy, with SEs": (
        [10, 100, 1000, 10000],
        [80e-6, 43e-6, 200e-6, 1.5e-3],
        [40e-6, 2e-6, 10e-6, 60e-6],
    ),
    "issue 28: five sizes rising 335×, no SEs": (
        [10, 100, 1000, 10000, 100000],
        [9e-6, 4.5e-6, 2e-5, 1.6e-4, 1.5e-3],
        None,
    ),
    "issue 11: five sizes, cost per n jumping past 10,000": (
        [10, 100, 1000, 10000, 100000],
        [5.65179e-07, 2.71269e-06, 2.04432e-05, 0.000173292, 0.00324726],
        None,
    ),
}


def matrix(trials: int, known: bool, outlier: bool) -> list[str]:
    """One confusion matrix as Markdown lines, with the verdict of each row."""
    start = time.perf_counter()
    results = study(trials, known, outlier=outlier)
    took = time.perf_counter() - start
    what = "costs with their SEs" if known else "costs only (no SEs)"
    what += ", one outlier point" if outlier else ", no outlier"
    lines = [
        f"**{what}**, {trials} trials per class ({took:.1f} s):",
        "",
        "| true class | " + " | ".join(CHOICES) + " | right | wrong | verdict |",
        "|---|" + "---:|" * (len(CHOICES) + 3),
    ]
    for true in TRUE_CLASSES:
        c = results[true]
        right = c["right"] / trials
        verdict = "met" if right >= 0.95 and c["wrong"] == 0 else "not met"
        lines.append(
            f"| {true} | "
            + " | ".join(str(c[k]) for k in CHOICES)
            + f" | {right:.1%} | {c['wrong']} | {verdict} |"
        )
    return [*lines, ""]


def repro_lines(folder: Path) -> list[str]:
    """What `perflab fit FILE --model complexity --json` says of each repro."""
    lines = ["| repro | verdict | reading |", "|---|---|---|"]
    for name, (n, cost, se) in REPROS.items():
        path = folder / "repro.csv"
        head = "n,cost,se\n" if se else "n,cost\n"
        rows = [f"{a},{b}" + (f",{s}" if se else "") for a, b, s in zip(n, cost, se or n)]
        path.write_text(head + "\n".join(rows) + "\n")
        out = folder / "fit.json"
        subprocess.run(
            [
                PYTHON,
                "-m",
                "perflab",
                "fit",
                str(path),
                "--model",
                "complexity",
                "--json",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
        fit = json.loads(out.read_text())
        fit = fit["fits"][0] if "fits" in fit else fit
        reading = fit["reading"].replace("|", "\\|")
        lines.append(f"| {name} | {fit['verdict']} | {reading} |")
    return lines


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    parts = untimed_head(
        "Which growth class: confusion matrix of the complexity fit (issues 11 and 28)",
        f"python benchmarks/fit_confusion.py {trials}",
    )
    for known in (False, True):
        for outlier in (False, True):
            parts += matrix(trials, known, outlier)
    parts.append(
        "Rule: a trial is *right* when the fit chooses the true class, names it among "
        "classes it says it cannot tell apart, or, when no class fits, the log-log slope's "
        "range names it; *wrong* when it chooses another class, or a tie without the truth; "
        "the target is met for a class when right ≥ 95% of its trials and none is wrong. "
        "Sweeps: 4–8 sizes from 10–1,000 up, lognormal noise of 2–10% per point, costs "
        "spanning 1–6 decades (O(log n): what n up to 10¹² gives, under 1.5 decades), a "
        "constant term of 0–50% of the smallest cost; the outlier: one point ×/÷ 1.35–2.0, "
        "its SE 1–5× a normal one's; seeds fixed (tests/analyze/cost_trials.py)."
    )
    with tempfile.TemporaryDirectory() as tmp:
        parts += ["", "### The repros, through `perflab fit FILE --model complexity`", ""]
        parts += repro_lines(Path(tmp))
    write_section("fit_confusion", "\n".join(parts))


if __name__ == "__main__":
    main()
