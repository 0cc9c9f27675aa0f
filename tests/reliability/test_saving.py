"""Issue 12 §1: nothing measured is lost when saving fails, and perflab never writes over
anything that is not its own results file. Each test names the failure it reproduces."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
from pathlib import Path

import pytest

from perflab import files, model
from perflab.errors import UsageError
from tests.reliability.samples import clean_failure, perflab, write_valid

CMD = ["cmd", "true", "--runs", "3", "--quiet"]


def leftovers(folder: Path) -> list[str]:
    """Files other than the ones a test made itself (temp files, partial results)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_json_naming_a_folder_is_refused_before_measuring(tmp_path: Path) -> None:
    # was: measured, then IsADirectoryError as an internal error, data only in adir.tmp
    folder = tmp_path / "adir"
    folder.mkdir()
    ran = tmp_path / "ran"  # each run of the measured command adds a line: none may
    argv = ["cmd", f"echo x >> {ran}", "--runs", "50", "--quiet", "--json", str(folder)]
    line = clean_failure(perflab(*argv))
    assert "is a folder" in line and not ran.exists()
    assert list(folder.iterdir()) == [] and leftovers(tmp_path) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "{a}", "{a}", "--json", "{dir}"],
        ["fit", "{a}", "--json", "{dir}"],
        ["fit", "{a}", "--chart", "{dir}"],
        ["doctor", "--duration", "100ms", "--json", "{dir}"],
    ],
)
def test_every_writer_refuses_a_folder(tmp_path: Path, argv: list[str]) -> None:
    # was: doctor and compare left 0-byte files or internal errors; fit exited 1 after its table
    a = write_valid(tmp_path, "run")
    words = [w.format(a=a, dir=tmp_path) for w in argv]
    result = perflab(*words)
    assert "is a folder" in clean_failure(result)
    assert result.stdout == ""  # refused before anything was computed or printed


def test_a_device_or_a_link_to_one_is_never_replaced(tmp_path: Path) -> None:
    # was: "results saved", and the device node or link was replaced by a regular file
    link = tmp_path / "link.json"
    link.symlink_to("/dev/zero")
    assert "not a regular file" in clean_failure(perflab(*CMD, "--json", str(link)))
    assert link.is_symlink() and os.readlink(link) == "/dev/zero"


def test_dev_null_and_dev_stdout_are_written_in_place() -> None:
    result = perflab(*CMD, "--json", "/dev/null")
    assert result.returncode == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    result = perflab(*CMD, "--json", "/dev/stdout", "--format", "csv")
    assert result.returncode == 0 and '"tool": "perflab"' in result.stdout


def test_json_dash_is_stdout_everywhere(tmp_path: Path) -> None:
    # was: stdout for compare and doctor, a file named "-" for run and cmd
    a = write_valid(tmp_path, "run")
    for argv in (
        [*CMD, "--json", "-"],
        ["compare", str(a), str(a), "--json", "-"],
        ["fit", str(a), "--json", "-"],
    ):
        result = perflab(*argv, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["tool"] == "perflab"
    assert not (tmp_path / "-").exists()


def test_a_file_perflab_did_not_write_is_never_overwritten(tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text("my notes\n")
    assert "not written by perflab" in clean_failure(perflab(*CMD, "--json", str(notes)))
    assert notes.read_text() == "my notes\n"
    own = write_valid(tmp_path, "cmd")
    assert perflab(*CMD, "--json", str(own)).returncode == 0  # its own file: replaced
    assert model.load(own).benchmarks[0].name == "true"


def test_a_folder_that_cannot_be_made_is_refused_first(tmp_path: Path) -> None:
    # was: doctor --json /proc/nope/x.json failed after the whole probe
    (tmp_path / "afile").write_text("x")
    line = clean_failure(perflab(*CMD, "--json", str(tmp_path / "afile" / "r.json")))
    assert "can't use it" in line or "can't be made" in line
    # refused before the probe: a 10-minute probe would outlast the 120 s bound (which
    # leaves the interpreter's start-up on a busy machine all the time it needs)
    line = clean_failure(
        perflab("doctor", "--duration", "600s", "--json", "/proc/nope/x.json", timeout=120)
    )
    assert "/proc/nope" in line


def _file_size_limit(limit: int):  # type: ignore[no-untyped-def]
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_disk_full_after_measuring_prints_the_table_and_leaves_no_partial_file(
    tmp_path: Path,
) -> None:
    # was: no table, exit 1 "internal error OSError [Errno 28]", data lost or in PATH.tmp
    out = tmp_path / "r.json"
    result = perflab(
        *CMD, "--json", str(out), "--format", "markdown", preexec_fn=_file_size_limit(1000)
    )
    line = clean_failure(result, files.EXIT_SAVE_FAILED)
    assert "can't write the cmd results" in line and "printed on stderr" in line
    assert "| true |" in result.stdout  # the table is printed anyway
    assert not out.exists() and leftovers(tmp_path) == []
    # no file can be written at all (the limit holds for the temp folder too): the
    # results are on stderr, the last place they can go
    body = result.stderr.split("'perflab: end'\n")[1].split("perflab: end")[0]
    assert json.loads(body)["benchmarks"][0]["name"] == "true"


def test_a_save_that_fails_after_measuring_goes_to_a_rescue_file(tmp_path: Path) -> None:
    # the folder is usable when checked, then a file takes its name while commands run
    out = tmp_path / "sub" / "r.json"
    result = perflab(*CMD, "--json", str(out), "--shell", "--prepare", f"touch {tmp_path / 'sub'}")
    line = clean_failure(result, files.EXIT_SAVE_FAILED)
    rescue = Path(line.split("saved to ")[1].split(" instead")[0])
    try:
        assert model.load(rescue).benchmarks[0].name == "true"
        assert "runs" in result.stdout
    finally:
        rescue.unlink()


def test_atomic_write_keeps_the_old_file_when_the_write_fails(tmp_path: Path) -> None:
    path = write_valid(tmp_path, "cmd")
    before = path.read_text()
    destination = files.Destination.check(path, "--json")
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, old[1]))
        with pytest.raises(OSError):
            destination.write(b"x" * 1000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, handler)
    assert path.read_text() == before and leftovers(tmp_path) == []


def test_http_chart_and_fit_chart_follow_one_rule_for_missing_folders(tmp_path: Path) -> None:
    # was: fit --chart made a missing folder, http --chart failed on one
    a = write_valid(tmp_path, "http")
    chart = tmp_path / "new" / "deeper" / "usl.png"
    assert perflab("fit", str(a), "--chart", str(chart)).returncode == 0
    assert chart.read_bytes().startswith(b"\x89PNG")
    with pytest.raises(UsageError, match="not a regular file"):
        files.Destination.check("/dev/zero", "--chart", "png")
