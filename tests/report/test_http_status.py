"""issue 29 §4: errors named as errors, in a table of responses by status and error kind
per step, as oha prints its status code distribution."""

from __future__ import annotations

from types import SimpleNamespace

from perflab.report.http_status import status_table


def _step(label: str, completed: int, statuses: dict, errors: dict) -> SimpleNamespace:
    failed = sum(statuses.values()) + sum(errors.values())
    return SimpleNamespace(
        label=label,
        completed=completed,
        error_fraction=failed / completed,
        failed_statuses=statuses,
        errors=errors,
    )


def test_failures_by_status_and_kind_per_step() -> None:
    steps = [
        _step("500/s", 600, {"500": 8}, {}),
        _step("2,000/s", 2400, {"500": 30, "503": 2}, {"read_timeout": 5}),
    ]
    (table,) = status_table(steps)
    assert table.columns == ["responses", "500/s", "2,000/s"]
    assert table.rows == [
        ["ok", "592", "2,363"],
        ["status 500", "8", "30"],
        ["status 503", "0", "2"],
        ["read timeout", "0", "5"],
    ]
    assert status_table([_step("1/s", 10, {}, {})]) == []
