"""``perflab show FILE --env`` prints the fingerprint in words, and the table of a file
with flagged samples says they were excluded (through the real entry point)."""

from __future__ import annotations

from pathlib import Path

from perflab import environment, model
from tests.conftest import make_bench


def _results_file(tmp_path: Path, flagged: int) -> Path:
    bench = make_bench("f", [[1e-6] * 10, [1.1e-6] * 10])
    for sample in bench.processes[0].samples[:flagged]:
        sample.clock_skew_ns, sample.flagged = -1_000_000_000, "clock:tsc"
    results = model.Results(
        kind="run",
        command_line=["perflab", "run", "x.py"],
        created="2026-01-01T00:00:00+00:00",
        perflab_version="0.1.0",
        environment=environment.finish(environment.fingerprint("0.1.0")),
        benchmarks=[bench],
    )
    return model.save(results, tmp_path / "r.json")


def test_show_env_reads_as_words(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    done = perflab_cli("show", str(_results_file(tmp_path, 0)), "--env")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for label in (
        "CPU:",
        "kernel:",
        "python:",
        "perflab:",
        "clocksource:",
        "TSC flags:",
        "virtualization:",
        "governor:",
        "load average:",
        "clock checks:",
    ):
        assert f"\n  {label}" in out, label
    assert '"hostname"' not in out, "the fingerprint is not dumped as raw JSON"


def test_flagged_samples_are_kept_in_the_file_and_excluded_with_a_note(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    path = _results_file(tmp_path, 3)
    again = model.load(path)
    assert [s.flagged for s in again.benchmarks[0].processes[0].samples[:4]] == [
        "clock:tsc",
        "clock:tsc",
        "clock:tsc",
        None,
    ]
    done = perflab_cli("show", str(path))
    assert done.returncode == 0, done.stderr
    assert "S samples excluded" in done.stdout  # its code, in the one legend line
    verbose = perflab_cli("show", str(path), "--verbose")
    assert (
        "f: 3 samples excluded: the clocks disagreed during them; check this machine"
        in verbose.stdout
    )


def test_show_of_a_fit_document_without_its_series_says_what_to_do(
    tmp_path: Path, perflab_cli
) -> None:  # type: ignore[no-untyped-def]
    """Fit documents written before they kept their series can't be rebuilt: one error
    line naming the sources to fit again, exit 2 (the rebuilt tables: tests/golden)."""
    import json

    golden = Path(__file__).resolve().parents[1] / "golden" / "data" / "usl.csv"
    out = tmp_path / "fit.json"
    assert perflab_cli("fit", str(golden), "--json", str(out)).returncode == 0
    document = json.loads(out.read_text())
    assert document["inputs"][0]["x"] and document["growth"] is None
    del document["inputs"]
    out.write_text(json.dumps(document))
    shown = perflab_cli("show", str(out))
    errors = [line for line in shown.stderr.splitlines() if line.startswith("error:")]
    assert shown.returncode == 2 and len(errors) == 1, shown.stderr
    assert "keeps no input points" in errors[0] and str(golden) in errors[0]
    assert "Traceback" not in shown.stderr
