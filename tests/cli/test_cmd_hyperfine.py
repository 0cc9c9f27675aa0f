"""``perflab cmd`` takes hyperfine's options with hyperfine's meaning
(https://github.com/sharkdp/hyperfine, ``hyperfine --help``): -w/--warmup N untimed runs
first; -r/--runs N exactly; -m/--min-runs, -M/--max-runs; -s/--setup before the runs of
each command, -p/--prepare before each run, -c/--cleanup after them; -n/--command-name
names the commands in order; -N no shell; -i ignore failures; -P/-L parameters; the
--export-json/--export-markdown/--export-csv files, several at once."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any


def _runs(path: Path) -> list[list[dict[str, Any]]]:
    return [b["runs"] for b in json.loads(path.read_text())["benchmarks"]]


def test_warmup_runs_min_max(tmp_path: Path, perflab_cli: Any) -> None:
    out = tmp_path / "r.json"
    result = perflab_cli("cmd", "-w", "2", "-r", "3", "true", "--quiet", "--json", str(out))
    assert result.returncode == 0, result.stderr
    (runs,) = _runs(out)
    assert sum(r["warmup"] for r in runs) == 2 and sum(not r["warmup"] for r in runs) == 3
    result = perflab_cli("cmd", "-m", "4", "-M", "4", "true", "--quiet", "--json", str(out))
    assert result.returncode == 0, result.stderr
    assert sum(not r["warmup"] for r in _runs(out)[0]) == 4


def test_setup_prepare_cleanup(tmp_path: Path, perflab_cli: Any) -> None:
    log = tmp_path / "log"
    result = perflab_cli(
        "cmd",
        "-r",
        "3",
        "-s",
        f"echo s >> {log}",
        "-p",
        f"echo p >> {log}",
        "-c",
        f"echo c >> {log}",
        "true",
        "--quiet",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert result.returncode == 0, result.stderr
    lines = log.read_text().split()
    assert lines[0] == "s" and lines[-1] == "c"
    assert lines.count("s") == 1 and lines.count("c") == 1 and lines.count("p") >= 3


def test_names_no_shell_and_exports_at_once(tmp_path: Path, perflab_cli: Any) -> None:
    files = {k: tmp_path / f"e.{k}" for k in ("json", "md", "csv")}
    result = perflab_cli(
        "cmd",
        "-N",
        "-r",
        "3",
        "-w",
        "1",
        "-n",
        "empty",
        "-n",
        "nap",
        "true",
        "sleep 0.001",
        "--export-json",
        str(files["json"]),
        "--export-markdown",
        str(files["md"]),
        "--export-csv",
        str(files["csv"]),
        "--quiet",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert result.returncode == 0, result.stderr
    assert "empty" in result.stdout and "nap" in result.stdout
    hyperfine = json.loads(files["json"].read_text())["results"]
    assert [r["command"] for r in hyperfine] == ["empty", "nap"]
    for r in hyperfine:  # hyperfine's keys and units (seconds), warmup left out
        assert len(r["times"]) == 3 and r["exit_codes"] == [0, 0, 0]
        assert 0 < r["min"] <= r["median"] <= r["max"] < 5 and r["mean"] > 0
        assert {"stddev", "user", "system", "parameters"} <= set(r)
    assert hyperfine[1]["median"] >= 0.001
    markdown = files["md"].read_text()
    assert "| empty |" in markdown and "| nap |" in markdown
    rows = list(csv.DictReader(io.StringIO(files["csv"].read_text())))
    assert [r["label"] for r in rows] == ["empty", "nap"]
    # perflab replaces its own exports, never another file
    again = perflab_cli(
        "cmd",
        "-r",
        "3",
        "true",
        "--export-csv",
        str(files["csv"]),
        "--quiet",
        "--json",
        str(tmp_path / "r.json"),
    )
    assert again.returncode == 0, again.stderr
    foreign = tmp_path / "notes.md"
    foreign.write_text("my notes\n")
    refused = perflab_cli("cmd", "true", "--export-markdown", str(foreign), "--quiet")
    assert refused.returncode == 2 and "not written by perflab" in refused.stderr
    assert foreign.read_text() == "my notes\n"


def test_parameter_names_do_not_repeat_the_parameter(tmp_path: Path, perflab_cli: Any) -> None:
    out = tmp_path / "r.json"
    result = perflab_cli(
        "cmd",
        "-r",
        "2",
        "-P",
        "n",
        "1",
        "2",
        "sleep 0.00{n}",
        "--quiet",
        "--json",
        str(out),
        "--format",
        "csv",
    )
    assert result.returncode == 0, result.stderr
    labels = [r["label"] for r in csv.DictReader(io.StringIO(result.stdout))]
    assert labels == ["sleep 0.001", "sleep 0.002"]
    named = perflab_cli(
        "cmd",
        "-r",
        "2",
        "-L",
        "n",
        "1,2",
        "-n",
        "nap {n} ms",
        "-n",
        "plain",
        "--quiet",
        "--json",
        str(out),
        "--format",
        "csv",
        "sleep 0.00{n}",
        "true",
    )
    assert named.returncode == 0, named.stderr
    labels = [r["label"] for r in csv.DictReader(io.StringIO(named.stdout))]
    assert labels == ["nap 1 ms", "nap 2 ms", "plain"]


def test_contradictions_are_one_line(perflab_cli: Any) -> None:
    both = perflab_cli("cmd", "-N", "--shell", "true", "--quiet")
    assert both.returncode == 2 and "contradict" in both.stderr
    names = perflab_cli("cmd", "-n", "a", "-n", "b", "true", "--quiet")
    assert names.returncode == 2 and "2 names (-n) for 1 commands" in names.stderr


def test_errors_name_the_option_as_it_was_typed(tmp_path: Path, capsys: Any) -> None:
    """issue 14: `perflab cmd --markdown .` answered "error: --export-markdown .: is a
    folder", and `-r 1` answered about --min-runs: name what the user wrote."""
    from perflab import cli

    def error(*argv: str) -> str:
        assert cli.main(["cmd", "true", "--quiet", "--no-history", *argv]) == 2
        return capsys.readouterr().err

    assert error("--markdown", str(tmp_path)).startswith(f"error: --markdown {tmp_path}:")
    assert error("--export-csv", str(tmp_path)).startswith(f"error: --export-csv {tmp_path}:")
    assert error("--csv", str(tmp_path)).startswith(f"error: --csv {tmp_path}:")
    assert error("-r", "1").startswith("error: -r 1:")
    assert error("--runs=0").startswith("error: --runs 0:")
    assert error("-m", "1").startswith("error: -m 1:")
    assert error("-m", "5", "-M", "3").startswith("error: -M 3 is below -m 5")
    assert error("-w", "-1").startswith("error: -w -1:")


def test_parameter_step_size_and_shell_as_hyperfine_spells_them(
    tmp_path: Path, perflab_cli: Any
) -> None:
    """hyperfine: `-P NAME MIN MAX -D STEP` (--parameter-step-size) and `-S/--shell SHELL`
    (`-S none` = -N); perflab's own `-P NAME LO HI STEP` still works."""
    out = tmp_path / "r.json"
    result = perflab_cli(
        "cmd",
        "-r",
        "2",
        "-P",
        "n",
        "1",
        "5",
        "-D",
        "2",
        "sleep 0.00{n}",
        "-S",
        "bash",
        "--quiet",
        "--json",
        str(out),
        "--format",
        "csv",
    )
    assert result.returncode == 0, result.stderr
    labels = [r["label"] for r in csv.DictReader(io.StringIO(result.stdout))]
    assert labels == ["sleep 0.001", "sleep 0.003", "sleep 0.005"]
    assert json.loads(out.read_text())["settings"]["shell"].endswith("bash")
    none = perflab_cli("cmd", "-r", "2", "-S", "none", "true", "--quiet", "--json", str(out))
    assert none.returncode == 0, none.stderr
    assert json.loads(out.read_text())["settings"]["shell"] is None
    twice = perflab_cli(
        "cmd",
        "-r",
        "2",
        "-P",
        "n",
        "1",
        "5",
        "2",
        "-D",
        "2",
        "true {n}",
        "--quiet",
        "--json",
        str(out),
    )
    assert twice.returncode == 2 and "-D" in twice.stderr
    alone = perflab_cli("cmd", "-r", "2", "-D", "2", "true", "--quiet", "--json", str(out))
    assert alone.returncode == 2 and "-D" in alone.stderr and "-P" in alone.stderr


def test_hyperfines_output_options(tmp_path: Path, perflab_cli: Any) -> None:
    """issue 29 §6: -u/--time-unit, --style, --sort, --output, --export-asciidoc,
    --export-orgmode and --shell=none as hyperfine spells them."""
    adoc, org, out = tmp_path / "t.adoc", tmp_path / "t.org", tmp_path / "r.json"
    result = perflab_cli(
        "cmd",
        "--shell=none",
        "-r",
        "3",
        "-u",
        "microsecond",
        "--style",
        "basic",
        "--sort",
        "mean-time",
        "--output",
        "null",
        "sleep 0.02",
        "true",
        "--export-asciidoc",
        str(adoc),
        "--export-orgmode",
        str(org),
        "--json",
        str(out),
        "--format",
        "markdown",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["settings"]["shell"] is None
    rows = [line for line in result.stdout.splitlines() if line.startswith("| true")]
    rows += [line for line in result.stdout.splitlines() if line.startswith("| sleep")]
    assert len(rows) == 2 and result.stdout.index("| true") < result.stdout.index("| sleep")
    assert " ms" not in rows[1] and "µs" in rows[1]  # 20 ms printed as 20,000 µs
    text = adoc.read_text()
    assert text.startswith("// perflab cmd") and "|===" in text and "| sleep 0.02" in text
    text = org.read_text()
    assert text.startswith("# perflab cmd") and "|---" in text and "| sleep 0.02 |" in text
    quiet = perflab_cli("cmd", "-r", "2", "true", "--style", "none", "--json", str(out))
    assert quiet.returncode == 0 and quiet.stdout == ""
    for where, word in (("pipe", "--output inherit"), (str(tmp_path / "o.txt"), "redirect")):
        refused = perflab_cli("cmd", "-r", "2", "true", "--output", where)
        assert refused.returncode == 2 and word in refused.stderr
        assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
