"""Issue 12 §3: results files are untrusted input. Each crafted file ends in exit 2 and one
line naming the JSON path, never an internal error, a hang or unbounded memory."""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from perflab import _core, model
from perflab.errors import ResultsFileError
from tests.reliability.samples import clean_failure, document, perflab, write_valid


def write(tmp_path: Path, doc: Any, name: str = "x.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


@pytest.mark.parametrize("kind", ["bogus", "serve", "../../etc", "doctor", 3, None])
def test_kind_is_checked_before_anything_is_dispatched(tmp_path: Path, kind: Any) -> None:
    # was: importlib.import_module(f"perflab.commands.{kind}") → internal errors
    doc = document("run")
    doc["kind"] = kind
    line = clean_failure(perflab("show", str(write(tmp_path, doc))))
    assert (
        "kind: must be one of 'run', 'cmd', 'http'" in line
        or "the file was damaged or edited: use the file perflab doctor wrote" in line
    )


def test_run_data_labelled_cmd_is_refused(tmp_path: Path) -> None:
    # was: rows of "0 runs" and exit 0
    doc = document("run")
    doc["kind"] = "cmd"
    line = clean_failure(perflab("show", str(write(tmp_path, doc))))
    assert "benchmarks[0].kind: is 'python' in a 'cmd' file" in line


@pytest.mark.parametrize(
    "value, words",
    [
        ("12", "must be a non-negative integer"),
        (-5, "must be a non-negative integer"),
        (1.5, "must be a non-negative integer"),
        (2**70, "must be a non-negative integer at most"),
        (True, "must be a non-neg"),
    ],
)
def test_bad_raw_numbers_name_their_json_path(tmp_path: Path, value: Any, words: str) -> None:
    # was: TypeError / silently accepted
    doc = document("run")
    doc["benchmarks"][0]["processes"][1]["samples"][3]["wall_ns"] = value
    line = clean_failure(perflab("show", str(write(tmp_path, doc))))
    assert "benchmarks[0].processes[1].samples[3].wall_ns: " + words in line


def test_missing_keys_are_named(tmp_path: Path) -> None:
    doc = document("run")
    del doc["benchmarks"][0]["processes"][0]["pid"]
    line = clean_failure(perflab("show", str(write(tmp_path, doc))))
    assert "benchmarks[0].processes[0]: missing key 'pid'" in line
    doc = document("cmd")
    del doc["benchmarks"]
    assert "missing key 'benchmarks'" in clean_failure(perflab("show", str(write(tmp_path, doc))))


def _hdr(digits: int, lowest: int, highest: int, payload: bytes = b"\x02") -> str:
    inner = struct.pack(">iiiiqqd", 0x1C849313, len(payload), 0, digits, lowest, highest, 1.0)
    body = zlib.compress(inner + payload)
    return base64.b64encode(struct.pack(">iI", 0x1C849314, len(body)) + body).decode()


@pytest.mark.parametrize(
    "encoded, words",
    [
        ("not base64!", "is not base64 text"),
        ("QUJ", "not valid base64"),
        ("QUJD", "too short"),
        (base64.b64encode(b"\x00" * 48).decode(), "not an HdrHistogram"),
        (_hdr(5, 1, 2**62), "beyond the 2^53"),
        (_hdr(5, 1, 2**52), "more than 2097152 buckets"),
        (_hdr(3, 1, 3_600_000_000, b"\xff" * 9), "impossible run length"),
        (_hdr(3, 1, 3_600_000_000, b"\x02" * 10**6), "longer than it should be"),
    ],
)
def test_crafted_histograms_are_refused_within_bounds(
    tmp_path: Path, encoded: str, words: str
) -> None:
    # was: ZeroDivisionError / TypeError, or a 2^62 range silently accepted
    doc = document("http")
    doc["benchmarks"][0]["steps"][1]["latency"]["encoded"] = encoded
    path = write(tmp_path, doc)
    for argv in (["show", str(path)], ["compare", str(path), str(path)], ["fit", str(path)]):
        line = clean_failure(perflab(*argv))
        assert "benchmarks[0].steps[1].latency.encoded" in line and words in line


def test_a_deflate_bomb_is_cut_at_the_payload_bound() -> None:
    inner = struct.pack(">iiiiqqd", 0x1C849313, 64 << 20, 0, 3, 1, 3_600_000_000, 1.0)
    body = zlib.compress(inner + b"\x00" * (64 << 20), 9)
    bomb = base64.b64encode(struct.pack(">iI", 0x1C849314, len(body)) + body).decode()
    with pytest.raises(ValueError, match="inflates beyond"):
        _core.hdr_decode(bomb)


def test_stored_summaries_are_recomputed_not_trusted(tmp_path: Path) -> None:
    # was: a tampered file printed p50 > p90 without complaint
    doc = document("http")
    step = doc["benchmarks"][0]["steps"][0]
    step["latency"].update(p50_us=9e9, p90_us=1.0, count=7)
    results = model.load(write(tmp_path, doc))
    latency = results.benchmarks[0].steps[0].latency
    assert latency.count == 400 and latency.p50_us <= latency.p90_us < 1e6


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"a": NaN}', "not a JSON number"),
        ("[" * 100_000, "nested too deeply"),
        ('{"tool": "perflab", "schema_version": "one"}', "not a version number"),
        ('{"tool": "perflab", "schema_version": 99}', "newer than this perflab"),
        (
            '{"tool": "perflab", "schema_version": 1, "kind": "run", "benchmarks": [], "x": 1e999}',
            "out of range",
        ),
        ("1" * 5000, "not valid JSON"),
        ('{"truncated": ', "truncated"),
        ("", "not valid JSON"),
    ],
)
def test_malformed_json_gets_one_line(tmp_path: Path, text: str, words: str) -> None:
    assert words in clean_failure(perflab("show", str(write(tmp_path, text))))


def test_binary_files_are_named_binary(tmp_path: Path) -> None:
    # was: a raw "'utf-8' codec can't decode" message
    path = tmp_path / "x.json"
    path.write_bytes(b"{\xff\xfe\x00binary")
    assert "not text (a binary file?)" in clean_failure(perflab("show", str(path)))


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo", "folder", "huge"])
def test_special_files_give_a_clear_error_within_a_second(tmp_path: Path, special: str) -> None:
    # was: perflab show /dev/zero grew to 6 GB and ignored SIGINT
    path = Path(special) if special.startswith("/") else tmp_path / special
    if special == "fifo":
        os.mkfifo(path)
    elif special == "folder":
        path.mkdir()
    elif special == "huge":
        with open(path, "wb") as fh:
            fh.truncate(600 * 2**20)  # sparse: takes no disk
    for argv in (["show", str(path)], ["compare", str(path), str(path)], ["fit", str(path)]):
        # a read that does not stop (/dev/zero, a fifo no one writes) hangs: the bound
        # (generous for a busy machine's interpreter start) turns that into a failure
        line = clean_failure(perflab(*argv, timeout=120))
        # refused from the file's kind and size alone (stat), never by reading it
        assert {"folder": "is a folder", "huge": "is 600 MiB, more than the 256 MiB"}.get(
            special, "is not a regular file"
        ) in line, line


def test_every_file_input_is_capped(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for argv in (
        ["run", str(fifo)],
        ["cmd", "true", "--input", str(fifo)],
        ["http", "http://127.0.0.1:9/", "--rate", "1", "--requests", str(fifo)],
        ["http", "http://127.0.0.1:9/", "--rate", "1", "--body-file", "/dev/zero"],
        ["fit", "/dev/zero"],
        ["run", "/dev/urandom"],
    ):
        line = clean_failure(perflab(*argv, timeout=20))
        assert "regular file" in line, line


def test_load_in_process_raises_the_house_error(tmp_path: Path) -> None:
    path = write_valid(tmp_path, "cmd")
    path.write_text(path.read_text().replace('"wall_ns": ', '"wall_ns": -', 1))
    with pytest.raises(ResultsFileError, match=r"runs\[0\]\.wall_ns"):
        model.load(path)


def test_published_schemas_describe_what_perflab_writes(tmp_path: Path) -> None:
    from perflab import schema

    run = write_valid(tmp_path, "run")
    http = write_valid(tmp_path, "http")
    for kind in ("run", "cmd", "http"):
        assert schema.validate(json.loads(write_valid(tmp_path, kind).read_text())) is None
    for name, argv in (
        ("compare", ["compare", str(run), str(run)]),
        ("fit", ["fit", str(http)]),
        ("doctor", ["doctor", "--duration", "100ms"]),
    ):
        out = tmp_path / f"{name}.json"
        result = perflab(*argv, "--json", str(out))
        assert result.returncode in (0, 1), result.stderr
        assert schema.validate(json.loads(out.read_text()), name) is None
        # show renders every document (tests/golden: the same tables as their command)
        shown = perflab("show", str(out))
        words = {"doctor": "verdicts", "compare": "geometric mean", "fit": "USL fit"}
        assert shown.returncode == 0 and words[name] in shown.stdout, shown.stderr
