"""hyperfine ``--export-json`` in.

hyperfine's documented export (its README and ``src/export/json.rs``): ``{"results":
[{"command", "mean", "stddev", "median", "user", "system", "min", "max", "times": [s, …],
"exit_codes": [int|null, …], "parameters": {name: value}}]}``. Each time is the wall time
of one run, seconds (with hyperfine's shell-spawn correction unless it ran with ``-N``).
hyperfine stops at a non-zero exit unless run with ``-i``, so a non-zero code in its file
is a run it kept (perflab cmd's ``--ignore-failure``): counted, not failed; a null code
(killed by a signal) is a failed run. hyperfine writes one exit code per time: a file
whose ``exit_codes`` and ``times`` differ in length cannot say which run had which code
and is refused (perflab's own export before 2026-11 kept failed runs' codes there: a
file marked ``"tool": "perflab"`` with more codes than times is read with its timed
runs as exit 0).
"""

from __future__ import annotations

from typing import Any

from perflab.errors import ResultsFileError

NOTES = [
    "each hyperfine time is one run of the command",
    "hyperfine keeps user and system CPU as means only: every run carries the mean, "
    "so their spread is unknown",
    "no max RSS, and no interleaving blocks: ratios are not paired by block",
]
#: replaces NOTES[1] when a result has no ``user``/``system`` (hand-made or summary files)
NO_CPU = "no user or system CPU time in the file: those columns show –"


def read(document: dict[str, Any], where: str, created: str) -> Any:
    """Results (kind "cmd") from a schema-checked hyperfine document.

    Raises:
        ResultsFileError: a result without times (summary statistics only).
    """
    from perflab.model.results import Benchmark, CommandRun, Results

    benchmarks, cpu_known = [], True
    for i, raw in enumerate(document["results"]):
        times = raw.get("times")
        if not times:
            raise ResultsFileError(
                f"{where}: results[{i}] has no 'times' (a summary-only "
                "export); pass the file hyperfine --export-json wrote"
            )
        codes = raw.get("exit_codes")
        if codes is None:
            codes = [0] * len(times)  # hand-made files: hyperfine always writes them
        elif len(codes) != len(times):
            if document.get("tool") != "perflab" or len(codes) < len(times):
                raise ResultsFileError(
                    f"{where}: results[{i}] has {len(times)} times but {len(codes)} exit "
                    "codes; hyperfine writes one exit code per run: pass the file "
                    "hyperfine --export-json wrote"
                )
            codes = [0] * len(times)  # perflab's older export: its times are the good runs
        user_ns, sys_ns = _cpu_ns(raw.get("user")), _cpu_ns(raw.get("system"))
        cpu_known = cpu_known and user_ns is not None and sys_ns is not None
        runs = [
            CommandRun(
                index=j,
                started_s=0.0,
                wall_ns=max(1, round(t * 1e9)),
                user_ns=user_ns,
                sys_ns=sys_ns,
                exit_code=-1 if code is None else int(code),
                ok=code is not None,
            )
            for j, (t, code) in enumerate(zip(times, codes))
        ]
        params = {str(k): v for k, v in (raw.get("parameters") or {}).items()}
        benchmarks.append(
            Benchmark(
                name=str(raw["command"]),
                kind="command",
                params=params,
                runs=runs,
                stop_reason="done",
            )
        )
    return Results(
        kind="cmd",
        command_line=[],
        created=created,
        perflab_version="",
        environment={},
        settings={
            "interleave": False,
            "imported": {
                "format": "hyperfine",
                "file": where,
                "notes": NOTES if cpu_known else [NOTES[0], NO_CPU, NOTES[2]],
            },
        },
        benchmarks=benchmarks,
    )


def _cpu_ns(seconds: Any) -> int | None:
    """A mean CPU time of hyperfine's (s) in ns; None when absent (unknown, not 0)."""
    return None if seconds is None else round(float(seconds) * 1e9)
