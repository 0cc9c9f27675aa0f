"""The console script's exit (``perflab.cli.run``): no interpreter teardown when nothing
needs one (issue 30: start-up and exit count in `perflab http`'s whole-process CPU), yet
the atexit handlers run and everything printed arrives; with another thread alive the
normal exit (which waits for it) is kept. No timing is asserted."""

from __future__ import annotations

import subprocess
import sys

#: runs perflab's entry point with ARGV; prints on stderr "teardown" when the interpreter
#: tears ``__main__`` down, and from an atexit handler whether the collector is on and
#: how many objects start-up froze
SCRIPT = """
import atexit, gc, sys, threading, time
class Witness:
    def __del__(self):
        sys.stderr.write("teardown\\n")
witness = Witness()
atexit.register(lambda: sys.stderr.write(
    f"atexit gc={gc.isenabled()} frozen={gc.get_freeze_count() > 0}\\n"))
if sys.argv[1] == "thread":
    threading.Thread(target=time.sleep, args=(0.2,)).start()
sys.argv = ["perflab", *sys.argv[2:]]
from perflab.cli import run
run()
"""


def entry(*argv: str, thread: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, "thread" if thread else "-", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_finished_command_skips_the_teardown_not_the_atexit_handlers() -> None:
    done = entry("show", "--help")  # argparse exits: the normal way, teardown included
    assert done.returncode == 0 and "usage: perflab show" in done.stdout
    assert "teardown" in done.stderr and "atexit gc=True" in done.stderr

    done = entry("--version")
    assert done.returncode == 0 and done.stdout == "perflab 0.1.0\n"
    assert "atexit gc=True" in done.stderr and "teardown" not in done.stderr


def test_the_command_runs_with_the_collector_on_and_start_up_frozen(tmp_path) -> None:
    report = tmp_path / "missing.json"
    done = entry("show", str(report))  # an error exit code, returned by main: no teardown
    assert done.returncode == 2 and done.stderr.startswith("error: ")
    assert "atexit gc=True frozen=True" in done.stderr and "teardown" not in done.stderr


def test_another_live_thread_keeps_the_normal_exit() -> None:
    done = entry("--version", thread=True)
    assert done.returncode == 0 and done.stdout == "perflab 0.1.0\n"
    assert "atexit gc=True" in done.stderr and "teardown" in done.stderr


def test_python_dash_m_perflab_uses_the_same_exit() -> None:
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-m", "perflab", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "perflab 0.1.0\n" and done.stderr == ""
