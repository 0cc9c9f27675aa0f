"""Issue 12 §5: credential headers and URL passwords never reach a file or the terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perflab import _core, redact
from tests.reliability.samples import clean_failure, perflab

FAST = ["--duration", "0.5s", "--warmup", "0.1s", "--threads", "1", "--quiet"]


@pytest.fixture
def server() -> Any:
    with _core.serve({"host": "127.0.0.1", "port": 0, "delay": "1ms"}) as s:
        yield s


def test_secret_headers_are_redacted_everywhere(tmp_path: Path, server: Any) -> None:
    # was: -H 'Authorization: Bearer …' saved twice (command line and settings)
    out = tmp_path / "r.json"
    result = perflab(
        "http",
        f"http://{server.address}/",
        "--rate",
        "50",
        *FAST,
        "-H",
        "Authorization: Bearer SECRET-1",
        "--header=Cookie: id=SECRET-2",
        "-HX-Api-Token: SECRET-3",
        "--redact",
        "x-api-token",
        "-H",
        "Accept: text/plain",
        "--json",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    saved = out.read_text()
    for text in (saved, result.stdout, result.stderr):
        assert "SECRET" not in text
    assert "text/plain" in saved and saved.count(redact.REDACTED) >= 6
    assert perflab("show", str(out), "--env").stdout.count("SECRET") == 0


def test_url_passwords_never_echo(tmp_path: Path) -> None:
    # was: the password of user:password@ came back in the error
    line = clean_failure(perflab("http", "http://user:hunter2@127.0.0.1:9/", "--rate", "1"))
    assert "hunter2" not in line and "user:<redacted>@" in line


def test_redaction_rules() -> None:
    assert (
        redact.url("see https://a:b@h:1/x and ftp://u:p@q/")
        == "see https://a:<redacted>@h:1/x and ftp://u:<redacted>@q/"
    )
    assert redact.url("http://h/a@b") == "http://h/a@b"
    assert redact.headers(
        [["proxy-authorization", "x"], ["X-Mine", "y"], ["Accept", "z"]], ["x-mine"]
    ) == [["proxy-authorization", redact.REDACTED], ["X-Mine", redact.REDACTED], ["Accept", "z"]]
    assert redact.argv(["-H", "Cookie: a=b", "-HAuthorization:x", "--header=Accept: y"]) == [
        "-H",
        f"Cookie: {redact.REDACTED}",
        f"-HAuthorization: {redact.REDACTED}",
        "--header=Accept: y",
    ]


def test_http_json_dash_writes_one_document_on_stdout(server: Any) -> None:
    # a stream gets the whole results once, at the end (files are saved after every step)
    result = perflab("http", f"http://{server.address}/", "--rate", "50,100", *FAST, "--json", "-")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["benchmarks"][0]["steps"]) == 2
