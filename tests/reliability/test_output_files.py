"""``--markdown FILE`` / ``--csv FILE`` (cmd also under hyperfine's ``--export-*`` names):
every command (run, cmd, http, compare, fit, doctor) writes its tables and records beside
the printed table through one helper (report.outputs), and replaces such a file only when
perflab wrote it. Built from the golden results files, so
nothing is measured here; the options themselves are run end to end in
tests/cli/test_gates.py (run) and test_output_files_cli below (run, http)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perflab import files, model
from perflab.errors import UsageError
from perflab.report import outputs

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "data"


def _run(results: Any) -> tuple[Any, Any]:
    from perflab.analyze.run.groups import run_groups
    from perflab.analyze.run.ratios import summarize_benchmarks
    from perflab.report.run_table import run_tables, summary_records

    grouped = summarize_benchmarks(results.benchmarks, threshold=0.02)
    groups = run_groups(results.benchmarks, grouped)
    return lambda: run_tables(groups, threshold=0.02), lambda: summary_records(grouped)


def _cmd(results: Any) -> tuple[Any, Any]:
    from perflab.analyze.cmd import spawn_overhead, summarize_results
    from perflab.report.cmd_table import cmd_tables, summary_records

    summaries = summarize_results(results)
    overhead = spawn_overhead(results.spawn_overhead_ns)
    return lambda: cmd_tables(results, summaries, overhead), lambda: summary_records(summaries)


def _http(results: Any) -> tuple[Any, Any]:
    from perflab.analyze.http import summarize_results
    from perflab.report.http_table import http_tables, step_records

    sweep = summarize_results(results)
    return lambda: http_tables(results, sweep), lambda: step_records(sweep.steps)


def _compare(results: Any) -> tuple[Any, Any]:
    from perflab.analyze.compare.suite import compare_results
    from perflab.report.compare_table import comparison_tables, csv_records

    suite = compare_results(results, results, names=("A", "B"))
    return lambda: comparison_tables(suite), lambda: csv_records(suite)


def _doctor(document: Any) -> tuple[Any, Any]:
    from perflab.model.doctor import DoctorReport
    from perflab.report.doctor_table import check_records, doctor_tables

    report = DoctorReport.from_dict(document)
    return lambda: doctor_tables(report), lambda: check_records(report)


def _fit(model_name: str, path: str, between: list[str] | None = None) -> Any:
    def make(_: Any) -> tuple[Any, Any]:
        import argparse

        from perflab.analyze.fit.fits import fit_model
        from perflab.analyze.fit.inputs import read_source
        from perflab.commands.fit import _INPUTS
        from perflab.report.fit_report import fit_records, fit_report

        args = argparse.Namespace(little="latency", series=None, param=None, between=between)
        series = _INPUTS[model_name]([read_source(GOLDEN / path)], args)
        report = fit_report(model_name, series, fit_model(model_name, series))
        return lambda: report.tables, lambda: fit_records(report)

    return make


MAKERS = {
    "run-a": ("run", _run),
    "cmd-a": ("cmd", _cmd),
    "http-open": ("http", _http),
    "compare-run": ("compare", _compare),
    "doctor": ("doctor", _doctor),
    "fit-usl": ("fit", _fit("usl", "usl.csv")),
    "fit-complexity": ("fit", _fit("complexity", "cost.csv")),
    "fit-breakeven": ("fit", _fit("breakeven", "cost.csv", ["scan", "index"])),
}
SOURCES = {"compare-run": "run-a.json", "doctor": "doctor.json"}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("kind", outputs.KINDS)
def test_each_commands_file_is_recognized_as_perflabs_own(
    name: str, kind: str, tmp_path: Path
) -> None:
    """What perflab writes, it may replace on the next run (the CSV header and the
    Markdown comment line are what :func:`perflab.files.Destination.check` looks for)."""
    import json

    command, maker = MAKERS[name]
    source = GOLDEN / SOURCES.get(name, f"{name}.json")
    loaded = (
        json.loads(source.read_text())
        if name == "doctor"
        else model.load(source)
        if source.exists()
        else None
    )
    tables, records = maker(loaded)
    target = tmp_path / f"out.{kind}"
    later = files.Deferred()
    outputs.write(
        later, {kind: files.Destination.check(target, f"--{kind}", kind)}, command, tables, records
    )
    later.raise_()
    text = target.read_text()
    assert (
        text.startswith(f"<!-- perflab {command} -->\n###")
        if kind == "markdown"
        else text.split(",")[0] in ("id", "step", "series", "name")
    )
    assert files.Destination.check(target, f"--{kind}", kind).path == target


@pytest.mark.parametrize(
    "kind, text",
    [
        ("csv", "id,name\n1,a\n"),
        ("csv", "id,\n"),
        ("markdown", "# my notes\n"),
        ("markdown", "<!-- a comment -->\n"),
    ],
)
def test_a_file_perflab_did_not_write_is_refused(kind: str, text: str, tmp_path: Path) -> None:
    target = tmp_path / f"notes.{kind}"
    target.write_text(text)
    with pytest.raises(UsageError, match="not written by perflab"):
        files.Destination.check(target, f"--{kind}", kind)
    assert target.read_text() == text


def test_output_files_cli(tmp_path: Path, perflab_cli: Any) -> None:
    """run and http write --json, --markdown and --csv at once while printing the table,
    and replace them on the next run; a foreign file is refused before measuring."""
    from perflab import _core

    bench = tmp_path / "bench.py"
    bench.write_text("import perflab\n@perflab.bench\ndef noop():\n    pass\n")
    run = [
        "run",
        str(bench),
        "--budget",
        "1s",
        "--min-processes",
        "2",
        "--max-processes",
        "2",
        "--process-time",
        "20ms",
        "--quiet",
        "--no-alloc",
        "--no-history",
    ]
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as server:
        http = [
            "http",
            f"http://{server.address}/",
            "--rate",
            "20",
            "--duration",
            "0.3s",
            "--warmup",
            "0.1s",
            "--threads",
            "1",
            "--quiet",
            "--no-history",
        ]
        for argv, first in ((run, "id,group,benchmark,"), (http, "step,mode,")):
            out = {k: tmp_path / f"{argv[0]}.{k}" for k in ("json", "md", "csv")}
            paths = [
                "--json",
                str(out["json"]),
                "--markdown",
                str(out["md"]),
                "--csv",
                str(out["csv"]),
            ]
            for _ in range(2):  # the second run replaces perflab's own files
                done = perflab_cli(*argv, *paths)
                assert done.returncode == 0, done.stderr
                assert "─" in done.stdout or "━" in done.stdout  # the table still printed
                assert out["md"].read_text().startswith(f"<!-- perflab {argv[0]} -->\n### ")
                assert out["csv"].read_text().startswith(first)
                assert model.load(out["json"]).kind == argv[0]
            foreign = tmp_path / "notes.md"
            foreign.write_text("mine\n")
            refused = perflab_cli(*argv, "--markdown", str(foreign))
            assert refused.returncode == 2 and "not written by perflab" in refused.stderr
            assert foreign.read_text() == "mine\n" and "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    "kind, text",
    [
        ("json", '{\n  "name": "my-app",\n  "devDependencies": {"perflab": "^0.1"}\n}\n'),
        ("json", '{"results": [{"command": "perflab run b.py", "tool": "perflab"}]}\n'),
        ("export", "import perflab\n\n@perflab.bench\ndef f():\n    pass\n"),
        ("export", '[{"name": "mine", "extra": "measured by hand, not by perflab"}]\n'),
        ("export", '{"results": [], "notes": "compare with perflab"}\n'),
    ],
)
def test_a_file_that_only_mentions_perflab_is_refused(kind: str, text: str, tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.write_text(text)
    with pytest.raises(UsageError, match="not written by perflab"):
        files.Destination.check(target, "--out", kind)
    assert target.read_text() == text


def test_every_json_and_export_perflab_writes_is_its_own(tmp_path: Path) -> None:
    import json
    from types import SimpleNamespace

    from perflab.analyze.hdr import percentile_distribution
    from perflab.model import Benchmark, Results
    from perflab.report import peer_formats
    from perflab.report.cmd_table import hyperfine_json

    empty = Results(
        kind="http",
        command_line=[],
        created="2026-01-01T00:00:00+00:00",
        perflab_version="0",
        environment={},
        benchmarks=[Benchmark(name="x")],
    )
    figures = SimpleNamespace(median_s=1.0, ci_low_s=0.9, ci_high_s=1.1)
    texts = {
        "json": [
            json.dumps(model.load(GOLDEN / "run-a.json").to_dict({}), indent=1),
            hyperfine_json(empty, []),
        ],
        "export": [
            hyperfine_json(empty, []),
            peer_formats.hgrm(percentile_distribution("")),
            peer_formats.hlog(empty),
            json.dumps([peer_formats._entry('a "{b}"', "ms", 1e3, figures, "3 runs")], indent=1),
        ],
    }
    for kind, written in texts.items():
        for i, text in enumerate(written):
            target = tmp_path / f"{kind}{i}"
            target.write_text(text)
            assert files.Destination.check(target, "--out", kind).path == target, text[:80]


def test_an_empty_path_is_an_error_not_the_default_or_nothing() -> None:
    # --json "$OUT" with OUT unset wrote the default results file; --chart '' drew nothing
    from perflab.commands.fit import _chart_destinations

    for check in (
        lambda: files.results_destination("", "cmd"),
        lambda: files.Destination.check(" ", "--chart", "png"),
        lambda: _chart_destinations(None, ""),
    ):
        with pytest.raises(UsageError, match="'': an empty path"):
            check()


def test_two_outputs_on_one_place_are_an_error(tmp_path: Path, perflab_cli: Any) -> None:
    # `--json - --csv -` wrote two documents one after the other on stdout; two options
    # naming one file kept only the last.
    out = tmp_path / "x.json"
    for pair in (
        (files.Destination.check("-", "--json"), files.Destination.check("-", "--csv")),
        (
            files.Destination.check("-", "--json"),
            files.Destination.check("/dev/stdout", "--markdown", "markdown"),
        ),
        (files.Destination.check(out, "--json"), files.Destination.check(out, "--csv")),
    ):
        with pytest.raises(UsageError, match=f"{pair[0].option} and {pair[1].option} both"):
            files.distinct(pair)
    out.write_text("")  # empty, so both may replace it
    link = tmp_path / "link.json"
    link.symlink_to(out)
    with pytest.raises(UsageError, match="both write to"):
        files.distinct(
            [files.Destination.check(out, "--json"), files.Destination.check(link, "--csv")]
        )
    files.distinct(
        [
            files.Destination.check("/dev/null", "--json"),  # discarded: fine
            files.Destination.check("/dev/null", "--csv"),
            None,
            files.Destination.check(tmp_path / "a.csv", "--csv"),
        ]
    )
    csv = tmp_path / "p.csv"
    csv.write_text("N,X\n1,100\n2,190\n4,350\n8,600\n16,900\n")
    proc = perflab_cli("fit", str(csv), "--model", "usl", "--json", "-", "--csv", "-")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (
        "error: --json and --csv both write to stdout: each output "
        "needs its own place; give one of them another path"
    )
