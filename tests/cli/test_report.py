"""`perflab report` without a browser: cmd and doctor inputs, history only, bad input.
(The browser test is tests/report/test_html_report.py.)"""

from __future__ import annotations

import json
from pathlib import Path

from perflab import model
from perflab.history.store import Store
from perflab.model.comparison import MEMORY_METRICS
from tests.cli.test_cmd import one_error_line
from tests.history.helpers import add, results

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "data"


def test_cmd_and_doctor_files(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    cmd = perflab_cli(
        "cmd",
        "true",
        "sh -c 'exit 0' # <b>x</b>",
        "--min-runs",
        "5",
        "--max-runs",
        "8",
        "--quiet",
        "--json",
        str(tmp_path / "c.json"),
    )
    assert cmd.returncode == 0, cmd.stderr
    doctor = json.loads((GOLDEN / "doctor.json").read_text())  # a real doctor document
    doctor["checks"][0].update(status="fail", detail="<i>jumped</i>", action="use tsc")
    (tmp_path / "d.json").write_text(json.dumps(doctor))
    out = tmp_path / "r.html"
    proc = perflab_cli("report", str(tmp_path / "c.json"), str(tmp_path / "d.json"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.count('data-chart="distribution"') == 1 and 'data-chart="user-sys"' in text
    assert "# &lt;b&gt;x&lt;/b&gt;" in text and "&lt;i&gt;jumped&lt;/i&gt;" in text
    medians = {
        s["id"]: s["median_s"]
        for s in (b["summary"] for b in json.loads((tmp_path / "c.json").read_text())["benchmarks"])
    }
    for bench_id, median in medians.items():
        assert f'data-median-s="{median!r}"' in text, bench_id
    del doctor["environment"]  # a doctor document that is not what perflab wrote
    (tmp_path / "d.json").write_text(json.dumps(doctor))
    bad = perflab_cli("report", str(tmp_path / "d.json"), "-o", str(out))
    assert bad.returncode == 2 and "missing key 'environment'" in one_error_line(bad.stderr)


def test_history_only_newest_run_and_recent_doctor(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "h.sqlite"
    with Store(db) as store:
        add(store, results({"old": 1e-6}, created="2026-01-01T00:00:00+00:00"))
        add(store, results({"newest": 2e-6}, created="2026-01-02T00:00:00+00:00"))
        from perflab.history import record
        from tests.history.helpers import ENV

        store.add(
            record.make_record(
                "doctor",
                {
                    "tool": "perflab",
                    "kind": "doctor",
                    "environment": ENV,
                    "checks": [{"name": "tsc", "status": "ok", "detail": "stable", "action": ""}],
                },
                [],
                [],
                None,
                git=False,
            )
        )
    out = tmp_path / "r.html"
    proc = perflab_cli("report", "--history", "new*", "--database", str(db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "g/newest" in text and "g/old" not in text
    assert "doctor: can this machine" in text and "stable" in text
    assert text.count('data-chart="trend"') == 0  # pattern "new*" matches no id ("g/newest")
    assert "no recorded benchmark matches" in text


def test_bad_input_and_foreign_files(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    foreign = tmp_path / "notes.html"
    foreign.write_text("<html>my notes</html>")
    path = model.save(results({"a": 1e-6}), tmp_path / "a.json")
    proc = perflab_cli("report", str(path), "-o", str(foreign))
    assert proc.returncode == 2 and "not written by perflab" in one_error_line(proc.stderr)
    assert foreign.read_text() == "<html>my notes</html>"
    empty = perflab_cli(
        "report", "--database", str(tmp_path / "none.sqlite"), "-o", str(tmp_path / "r.html")
    )
    assert empty.returncode == 2 and "no such database" in one_error_line(empty.stderr)
    (tmp_path / "junk.json").write_text("[1, 2]")
    junk = perflab_cli("report", str(tmp_path / "junk.json"), "-o", str(tmp_path / "r.html"))
    assert junk.returncode == 2 and "junk.json" in one_error_line(junk.stderr)
    # a second report replaces the first (perflab's own file)
    out = tmp_path / "mine.html"
    for _ in range(2):
        assert perflab_cli("report", str(path), "-o", str(out)).returncode == 0


def test_chart_png_of_run_cmd_and_compare(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    a = model.save(results({"x": 1e-6, "y": 2e-6}, seed=1), tmp_path / "a.json")
    b = model.save(results({"x": 1.2e-6, "y": 2e-6}, seed=2), tmp_path / "b.json")
    cmp = perflab_cli("compare", str(a), str(b), "--chart", str(tmp_path / "cmp.png"))
    assert cmp.returncode == 0, cmp.stderr
    assert (tmp_path / "cmp.png").read_bytes().startswith(b"\x89PNG")
    bench = tmp_path / "bench.py"
    bench.write_text("import perflab\n@perflab.bench\ndef f():\n    return sum(range(50))\n")
    run = perflab_cli(
        "run",
        str(bench),
        "--budget",
        "0.5s",
        "--min-processes",
        "2",
        "--process-time",
        "20ms",
        "--quiet",
        "--no-alloc",
        "--json",
        str(tmp_path / "r.json"),
        "--chart",
        str(tmp_path / "run.png"),
    )
    assert run.returncode == 0, run.stderr
    assert f"chart saved to {tmp_path / 'run.png'}" in run.stderr
    cmd = perflab_cli(
        "cmd",
        "true",
        "--min-runs",
        "5",
        "--max-runs",
        "6",
        "--quiet",
        "--json",
        str(tmp_path / "c.json"),
        "--chart",
        str(tmp_path / "cmd.png"),
    )
    assert cmd.returncode == 0, cmd.stderr
    assert (tmp_path / "cmd.png").stat().st_size > 5000
    foreign = tmp_path / "photo.png"
    foreign.write_bytes(b"not a png of perflab's")
    bad = perflab_cli("compare", str(a), str(b), "--chart", str(foreign))
    assert bad.returncode == 2 and "not written by perflab" in one_error_line(bad.stderr)


def test_compare_and_fit_documents(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    """Both documents render their tables with the terminal's figures; a fit document
    written before the tables and curves were kept still shows each fit's reading."""
    table = perflab_cli(
        "compare",
        str(GOLDEN / "cmd-b.json"),
        str(GOLDEN / "cmd-c.json"),
        "--json",
        str(tmp_path / "c.json"),
        "--format",
        "markdown",
    )
    assert table.returncode == 0, table.stderr
    fit = perflab_cli(
        "fit", str(GOLDEN / "cost.csv"), "--model", "complexity", "--json", str(tmp_path / "f.json")
    )
    assert fit.returncode == 0, fit.stderr
    out = tmp_path / "r.html"
    proc = perflab_cli("report", str(tmp_path / "c.json"), str(tmp_path / "f.json"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    document = json.loads((tmp_path / "c.json").read_text())
    assert document["command_line"][:2] == ["perflab", "compare"]
    for row in document["rows"]:
        if row["metric"] in MEMORY_METRICS:  # the memory table: its figures as printed
            assert row["metric"] in text
            continue
        assert f'data-ratio="{row["ratio"]["value"]!r}"' in text
        assert f'data-verdict="{row["verdict"]}"' in text
    geomean = next(line for line in table.stdout.splitlines() if "geometric mean" in line)
    assert geomean.split("|")[2].strip() in text  # the same cell as the terminal's
    assert text.count('data-chart="forest"') == 1 and text.count('data-chart="fit"') >= 1
    old = json.loads((tmp_path / "f.json").read_text())
    for key in ("tables", "curves"):
        old.pop(key, None)
    for f in old["fits"]:
        f.pop("curves")
    (tmp_path / "old.json").write_text(json.dumps(old))
    proc = perflab_cli("report", str(tmp_path / "old.json"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert old["fits"][0]["reading"].split(":")[0] in out.read_text()
