"""``perflab run --compare-to FILE`` where FILE was measured on a much faster machine
(its samples and its machine-speed reference timings scaled down 1,000×, as if the machine
ran 1,000× faster then): the seconds read ~1,000× slower, but the runs are not paired, so the
verdict is inconclusive and ``--fail-on slower`` does not fail, saying why in one line.
A 1,000× change of machine is far beyond any noise, so the outcome doesn't depend on how
busy this machine is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FAST = [
    "--budget",
    "3s",
    "--min-processes",
    "4",
    "--max-processes",
    "4",
    "--process-time",
    "20ms",
    "--quiet",
    "--no-alloc",
    "--no-history",
]


def _faster_machine(path: Path, factor: int) -> None:
    """Rewrite a results file as if measured on a machine ``factor`` times faster."""
    doc = json.loads(path.read_text())
    for bench in doc["benchmarks"]:
        bench.pop("summary", None)
        for proc in bench["processes"]:
            proc["reference_ns"] = [max(1, ns // factor) for ns in proc["reference_ns"]]
            for sample in proc["samples"]:
                sample["wall_ns"] = max(1, sample["wall_ns"] // factor)
                sample["cpu_ns"] = max(1, sample["cpu_ns"] // factor)
    path.write_text(json.dumps(doc))


def test_a_baseline_file_from_a_faster_machine_gives_no_slower_verdict(
    tmp_path: Path, perflab_cli: Any
) -> None:
    bench = tmp_path / "bench.py"
    bench.write_text(
        "import perflab\n@perflab.bench(group='g')\ndef work():\n    return sum(range(2000))\n"
    )
    baseline = tmp_path / "a.json"
    first = perflab_cli("run", str(bench), *FAST, "--json", str(baseline))
    assert first.returncode == 0, first.stderr
    _faster_machine(baseline, 1000)
    done = perflab_cli(
        "run",
        str(bench),
        *FAST,
        "--compare-to",
        str(baseline),
        "--fail-on",
        "slower",
        "--format",
        "markdown",
    )
    assert done.returncode == 0, done.stderr
    gates = [line for line in done.stderr.splitlines() if line.startswith("gate:")]
    assert len(gates) == 1, done.stderr
    assert re.fullmatch(
        r"gate: --fail-on slower not applied to 1 benchmark\(s\) \(g/work\): inconclusive, "
        r"the machine ran \d+% slower during B than during A; measure paired with "
        r"--compare-to REF",
        gates[0],
    ), gates[0]
    row = next(line for line in done.stdout.splitlines() if line.startswith("| g/work |"))
    assert "| inconclusive |" in row
    # the row's note is a footnote shared by the rows it concerns: [1] … measure paired
    key = re.search(r"\\\[(\d+)\\\]", row)
    assert key, row
    text = " ".join(done.stdout.split())
    assert re.search(
        rf"\\?\[{key.group(1)}\\?\][^\[]*measure paired with --compare-to REF", text
    ), text
    assert "their slower/faster verdicts are held as inconclusive" in done.stdout
