"""The real spawner: exit codes, signals, timeouts, rusage, stdin, output, Ctrl-C.

These run real processes; time bounds are generous (several seconds for
things that take milliseconds) because the test machine is shared and slow.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perflab.engines.cmd.spawn import PosixSpawner
from perflab.engines.cmd.spawn_helper import ENV_OFFSET_VAR

SH = shutil.which("sh") or "/bin/sh"
TRUE = shutil.which("true") or "/bin/true"
PY = sys.executable


@pytest.fixture
def spawner() -> Iterator[PosixSpawner]:
    s = PosixSpawner()
    yield s
    s.close()


def sh(script: str) -> tuple[str, ...]:
    return (SH, "-c", script)


def test_exit_codes_and_signals(spawner: PosixSpawner) -> None:
    ok = spawner.run((TRUE,), 10)
    assert ok.exit_code == 0 and ok.wall_ns > 0 and not ok.timed_out
    assert spawner.run(sh("exit 3"), 10).exit_code == 3
    assert spawner.run(sh("kill -9 $$"), 10).exit_code == -signal.SIGKILL


def _gone(pid: int, within_s: float = 30.0) -> bool:
    """True once ``pid`` is gone or a zombie: a killed process exits when the kernel
    next runs it, which on a busy machine is not within a fixed 0.2 s; bounded."""
    stat, deadline = Path(f"/proc/{pid}/stat"), time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if stat.read_text().split(")")[1].split()[0] in ("Z", "X"):
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.01)
    return False


def test_timeout_kills_the_whole_process_group(spawner: PosixSpawner, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    began = time.monotonic()
    outcome = spawner.run(sh(f"sleep 600 & echo $! > {pid_file}; wait"), 0.5)
    assert outcome.timed_out and outcome.exit_code == -signal.SIGKILL
    assert time.monotonic() - began < 60  # 0.5 s timeout, not the 600 s sleep
    assert _gone(int(pid_file.read_text()))


def test_max_rss_and_cpu_time_come_from_wait4(spawner: PosixSpawner) -> None:
    floor = spawner.run((TRUE,), 10).max_rss_bytes
    big = spawner.run((PY, "-c", "b = b'x' * 150_000_000"), 30)
    assert floor < 40e6, "the helper spawns from a small process"
    assert big.max_rss_bytes > 150e6 > floor
    busy = spawner.run(
        (
            PY,
            "-c",
            "import time\nt = time.process_time()\n"
            "while time.process_time() - t < 0.3: sum(range(20000))",
        ),
        30,
    )
    assert busy.user_ns + busy.sys_ns >= 0.25e9 and busy.user_ns > busy.sys_ns


def test_commands_start_with_default_signal_dispositions(spawner: PosixSpawner) -> None:
    # The helper ignores SIGINT (perflab handles Ctrl-C) and Python ignores
    # SIGPIPE; ignored signals survive exec, so without a reset `yes | head`
    # would see EPIPE errors instead of dying quietly, as under a shell.
    for sig in (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ):
        bit = 1 << (sig - 1)
        check = sh(f"test $(( 0x$(grep SigIgn /proc/$$/status | cut -f2) & {bit} )) -eq 0")
        assert spawner.run(check, 10).exit_code == 0, sig.name


def test_each_run_gets_an_environment_offset_of_random_length(tmp_path: Path) -> None:
    def lengths(seed: int | None, runs: int = 20) -> list[int]:
        log = tmp_path / f"log-{len(list(tmp_path.iterdir()))}"
        spawner = PosixSpawner(seed=seed)
        try:
            for _ in range(runs):
                spawner.run(sh(f"echo ${{#{ENV_OFFSET_VAR}}} >> {log}"), 10)
        finally:
            spawner.close()
        return [int(x) for x in log.read_text().split()]

    drawn = lengths(None)
    assert all(0 <= n < 4096 for n in drawn) and len(set(drawn)) >= 15
    assert lengths(7) == lengths(7), "the same seed draws the same offsets"


def test_input_file_feeds_stdin_else_it_is_empty(tmp_path: Path) -> None:
    data = tmp_path / "in.txt"
    data.write_text("hello\n")
    check = sh('read x; test "$x" = hello')
    fed = PosixSpawner(input_path=str(data))
    try:
        assert fed.run(check, 10).exit_code == 0
        assert fed.run(check, 10).exit_code == 0, "the file is opened afresh for each run"
    finally:
        fed.close()
    plain = PosixSpawner()
    try:
        assert plain.run(check, 10).exit_code == 1
    finally:
        plain.close()


@pytest.mark.parametrize("show", [False, True])
def test_output_is_discarded_unless_shown(show: bool, capfd: pytest.CaptureFixture[str]) -> None:
    spawner = PosixSpawner(show_output=show)
    try:
        spawner.run(sh("echo out-text; echo err-text >&2"), 10)
    finally:
        spawner.close()
    out, err = capfd.readouterr()
    assert ("out-text" in out, "err-text" in err) == (show, show)


def test_shown_output_goes_to_stderr_when_stdout_carries_results(
    capfd: pytest.CaptureFixture[str],
) -> None:
    # cmd --show-output --json -: the commands' output made the JSON on stdout invalid
    spawner = PosixSpawner(show_output=True, output_to_stderr=True)
    try:
        spawner.run(sh("echo out-text; echo err-text >&2"), 10)
    finally:
        spawner.close()
    out, err = capfd.readouterr()
    assert out == "" and "out-text" in err and "err-text" in err


def test_unrunnable_file_is_an_os_error(spawner: PosixSpawner, tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\x01\x02 not a program")
    junk.chmod(0o755)
    assert spawner.run((str(junk),), 10).error
    assert spawner.run((TRUE,), 10).exit_code == 0, "the helper survives a failed spawn"


def test_ctrl_c_kills_the_running_command(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    spawner = PosixSpawner()
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        began = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            spawner.run(sh(f"echo $$ > {pid_file}; exec sleep 600"), None)
        assert time.monotonic() - began < 60  # interrupted after 1 s, not 600 s
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        spawner.close()
    assert _gone(int(pid_file.read_text()))
    assert os.path.exists(TRUE)
