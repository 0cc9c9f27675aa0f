"""Run every benchmark script (or those named) and assemble BENCHMARKS.md from their sections.

Usage: python benchmarks/run_all.py [harness cmd http doctor compare ...]
       python benchmarks/run_all.py --assemble   (only rebuild BENCHMARKS.md from results/)

Each script writes benchmarks/results/<name>.md; BENCHMARKS.md is their
concatenation under a common header, in the order of SECTIONS.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTIONS = [
    "harness",
    "layout",
    "repeat",
    "repeat_alternatives",
    "peers",
    "doctor",
    "speed_states",
    "cmd",
    "http",
    "http_wrk",
    "http_wrk_t2",
    "http_wrk_t4",
    "http_capacity",
    "http_shapes",
    "http2",
    "http3",
    "http2_h2load",
    "http2_h2load_t2",
    "http2_h2load_t4",
    "http2_open",
    "http2_open_loaded",
    "cluster",
    "cluster_stop",
    "compare",
    "paired",
    "fit",
    "fit_confusion",
    "history",
    "history_robust",
    "trace",
    "trace_app",
    "workloads",
    "memory",
    "count",
]
#: sections whose script re-analyses another's kept files: not run here (their usage says how)
REANALYSES = {"repeat_alternatives"}
HEADER = """# perflab benchmarks

perflab measured beside its peers (timeit, pyperf, hyperfine, wrk, nginx) on the
same workloads, in one run per section. Every number here was measured on the
machine named in its section; the machines are shared and noisy, so sections
quote medians and side-by-side ratios. Regenerate with `make bench` (all) or
`python benchmarks/<name>.py` (one section), then `python benchmarks/run_all.py --assemble`.
"""


def assemble() -> Path:
    """Concatenate benchmarks/results/*.md into BENCHMARKS.md."""
    parts = [HEADER]
    names = SECTIONS + sorted(
        p.stem for p in (HERE / "results").glob("*.md") if p.stem not in SECTIONS
    )
    for name in names:
        path = HERE / "results" / f"{name}.md"
        if path.exists():
            parts.append(path.read_text().rstrip() + "\n")
    out = HERE.parent / "BENCHMARKS.md"
    out.write_text("\n".join(parts))
    return out


def main(argv: list[str]) -> int:
    if argv != ["--assemble"]:
        for name in argv or SECTIONS:
            script = HERE / f"{name}.py"
            if name in REANALYSES:
                print(f"== {name}: not run (it re-analyses kept results files; see its usage)")
            elif script.exists():
                print(f"== {name}", flush=True)
                subprocess.run([sys.executable, str(script)], check=True)
    print(f"wrote {assemble()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
