"""``perflab doctor`` through the real entry point: bad input, JSON, Markdown, speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflab import _core  # noqa: F401 - every build has the native core; missing is a failure
from perflab.engines import doctor


@pytest.mark.parametrize("duration", ["0", "0s", "--duration=-1s", "abc"])
def test_a_bad_duration_is_a_usage_error(duration: str, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    args = [duration] if duration.startswith("--") else ["--duration", duration]
    done = perflab_cli("doctor", *args, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--duration" in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_json_on_stdout_has_the_promised_keys(perflab_cli) -> None:  # type: ignore[no-untyped-def]
    done = perflab_cli("doctor", "--duration", "200ms", "--json", timeout=120)
    assert done.returncode in (0, 1), done.stderr
    data = json.loads(done.stdout)
    assert (data["tool"], data["kind"]) == ("perflab", "doctor")
    assert {"clocksource", "clocks", "checks", "environment"} <= set(data)
    mono = data["clocks"]["monotonic"]
    assert mono["read_cost_ns"] > 0 and mono["resolution_ns"] > 0
    assert mono["python_read_cost_ns"] > 0 and mono["backward_steps"] == 0
    checks = {c["name"]: c for c in data["checks"]}
    assert all(
        c["status"] in ("ok", "warn", "fail", "n/a") and c["detail"] for c in checks.values()
    )
    assert {
        "clock_steps",
        "rate_vs_tsc",
        "slewing",
        "suspend",
        "longest_gap",
        "sleep",
        "ntp",
        "governor",
        "steal",
        "load",
    } <= set(checks)
    assert done.returncode == (1 if any(c["status"] == "fail" for c in checks.values()) else 0)
    assert [s["request_ns"] for s in data["sleep"]] == [100_000, 1_000_000, 10_000_000]
    assert "cross-check probe" in done.stderr
    # speed states: present with their figures, or missing with the reason (a busy machine)
    assert "speed states (" in done.stderr and "speed_states" in checks
    speed = data["speed_states"]
    if speed is None:
        assert data["speed_states_note"] and checks["speed_states"]["status"] == "n/a"
    else:
        alone = speed["alone"]
        assert alone["states"] in (1, 2) and 0 <= alone["slow_share"] <= 1
        assert alone["timings"] >= 50 and alone["single_spread"] >= 0
        assert alone["adjacent_spread"] >= 0 and alone["mean_state_ms"] > 0
        assert speed["advice"].startswith(("one speed state", "two speed states"))
        assert speed["two_cpus"] is not None or speed["two_cpus_note"]
        assert checks["speed_states"]["detail"] == speed["advice"]


def test_json_file_and_markdown_tables(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "sub" / "doctor.json"
    done = perflab_cli(
        "doctor", "--duration", "200ms", "--json", str(out), "--format", "markdown", timeout=120
    )
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(out.read_text())["checks"]
    for title in (
        "clock source",
        "clocks",
        "cross-checks over the probe",
        "sleep accuracy",
        "CPU and load",
        "speed states",  # "(a fixed loop timed back to back)" when measured
        "verdicts",
    ):
        assert f"### {title}" in done.stdout, title
    assert "| MONOTONIC |" in done.stdout


def test_the_default_run_writes_csv(perflab_cli) -> None:  # type: ignore[no-untyped-def]
    # How long the default run takes is the native probes' true-time budgets, checked
    # without a clock in tests/measure/test_doctor.py; here the default run itself.
    done = perflab_cli("doctor", "--format", "csv", timeout=120)
    assert done.returncode in (0, 1), done.stderr
    assert done.stdout.startswith("name,status,detail,action\n")
    expected_s = doctor.expected_s(3.0)  # the default --duration
    assert f"probing this machine for about {expected_s:.0f} s" in done.stderr
