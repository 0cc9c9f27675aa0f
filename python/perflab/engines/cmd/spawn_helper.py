"""The spawning helper of ``perflab cmd``: a small program that runs batches of commands.

:class:`perflab.engines.cmd.spawn.PosixSpawner` starts it by path, as
``python -I -S spawn_helper.py REQ_FD REPLY_FD SHOW_OUTPUT INPUT SEED``, and talks to
it over two pipes (the protocol is :mod:`perflab.engines.cmd.spawn`'s: length-prefixed
``marshal`` messages). Why a helper, and why so small: Linux counts the memory of the
process that spawns a command in the command's max RSS until ``exec``; perflab itself
(numpy, rich) holds ~50 MB, this helper ~10 MB, and that floor is what every max RSS
can't read below.

So this module is self-contained: it imports only modules built into the interpreter
(never perflab, ``typing`` or ``collections``), because ``-I`` keeps its folder off
``sys.path`` and every import would add to the floor. The batch rules
(:func:`stops`, :func:`run_items`) also serve in-process spawners, which import them
from here.

Each command runs with ``posix_spawn`` (glibc: clone(CLONE_VFORK) + exec, as Rust's
std::process and so hyperfine), no shell, in its own process group so that a timeout
or Ctrl-C kills all it started; the wall time is the monotonic clock around spawn →
reap (``wait4``, which also gives user and system time and max RSS), and the timeout
is a SIGALRM timer armed before the clock starts, so only spawn and ``wait4`` are
inside a timing (as in hyperfine).

With a sampling interval (``cmd --memory``), the helper waits for the command in
``sigtimedwait(SIGCHLD, interval)`` steps instead of one blocking ``wait4``, and between
them reads the summed RSS of the command and its descendants with
:mod:`perflab.engines.memory` (loaded by path: it imports only ``os`` and ``time``). The
exit wakes the wait at once (SIGCHLD is blocked here and fetched, not handled), so the
wall time is not rounded up to an interval.
"""

from __future__ import annotations

import marshal
import os
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing would add to the helper's memory
    from collections.abc import Callable, Sequence

#: The environment variable whose random length varies each run's stack alignment.
ENV_OFFSET_VAR = "PERFLAB_RANDOMIZED_ENVIRONMENT_OFFSET"
#: Ignored signals survive exec: commands get these at their defaults (SIGINT is ignored
#: here, SIGPIPE and SIGXFSZ by Python), as subprocess's ``restore_signals`` does.
DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)
#: Environment offsets are 0 to this many bytes minus one.
MAX_ENV_OFFSET = 4096


def stops(reply: tuple, is_run: bool, ignore_all: bool, codes: frozenset[int]) -> bool:
    """True when a batch must stop after this reply (a spawn outcome as a tuple:
    wall_ns, user_ns, sys_ns, max_rss_bytes, exit_code, timed_out, start_ns, error,
    memory).

    A command that could not start stops the batch; a hook stops it when it failed
    or timed out; a run when it timed out, or exited non-zero with a code that is not
    accepted (``ignore_all``: every code is; ``codes``: these are).
    """
    code, timed_out, error = reply[4], reply[5], reply[7]
    if error:
        return True
    if not is_run:
        return code != 0 or timed_out
    if ignore_all:
        return False
    return timed_out or not (code == 0 or (code > 0 and code in codes))


def run_items(
    run: Callable[[Sequence[str], float | None], tuple],
    items: Sequence[tuple],
    ignore_all: bool,
    codes: frozenset[int],
    replies: list,
) -> None:
    """Run ``items`` (argv, timeout_s or None, is_run) with ``run(argv, timeout_s)``,
    appending each reply to ``replies``, until one :func:`stops` the batch."""
    for argv, timeout, is_run in items:
        reply = run(argv, timeout)
        replies.append(reply)
        if stops(reply, is_run, ignore_all, codes):
            return


def next_offset(state: int) -> int:
    """The next state of the 64-bit LCG (Knuth's MMIX constants) that draws environment
    offsets; the offset is ``(state >> 33) % MAX_ENV_OFFSET`` (``random`` would add to
    the helper's memory)."""
    return (state * 6364136223846793005 + 1442695040888963407) % 2**64


def send(fd: int, message: object) -> None:
    """Write one length-prefixed marshal message (4-byte little-endian length)."""
    data = marshal.dumps(message)
    os.write(fd, len(data).to_bytes(4, "little") + data)


def read_exact(fd: int, size: int) -> bytes | None:
    """Exactly ``size`` bytes from ``fd``, or None at end of file."""
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def receive(fd: int) -> object:
    """Read one length-prefixed marshal message; None at end of file. Only ever from
    perflab's own end of the pipe: marshal is not for untrusted data."""
    header = read_exact(fd, 4)
    if header is None:
        return None
    body = read_exact(fd, int.from_bytes(header, "little"))
    return None if body is None else marshal.loads(body)


class Helper:
    """The helper's state: the file actions, environment and signal handlers of its runs.

    Args:
        replies: the pipe replies are written to.
        show_output: let commands write to the helper's stdout and stderr (else /dev/null).
        stdin_path: a file each run reads as stdin ("" for /dev/null).
        seed: seed of the environment offsets (None: from os.urandom).
    """

    def __init__(self, replies: int, show_output: bool, stdin_path: str, seed: int | None) -> None:
        self.replies = replies
        self.lcg = seed if seed is not None else int.from_bytes(os.urandom(8), "little")
        devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        self.actions = [
            (os.POSIX_SPAWN_OPEN, 0, stdin_path, os.O_RDONLY, 0)
            if stdin_path
            else (os.POSIX_SPAWN_DUP2, devnull, 0)
        ]
        self.actions += [] if show_output else [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (1, 2)]
        self.rss_unit = 1 if sys.platform == "darwin" else 1024
        # bytes: posix_spawn then skips encoding the environment on every run
        self.env = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
        self.current = 0  # pid of the running command, 0 when none
        self.running = False  # between arming the timer and reaping
        self.timed_out = False
        self.batch: list | None = None  # replies of the batch in progress
        self.interval: float | None = None  # cmd --memory: seconds between readings
        self.memory = None  # the perflab.engines.memory module, when sampling

    def sample_memory(self, interval: float) -> None:
        """Sample each command's tree every ``interval`` s while it runs (``cmd --memory``)."""
        # perflab/engines/memory.py by path (see the module docstring); the folder leaves
        # sys.path at once so that its engine folders (cmd/, http/) shadow no module
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        try:
            import memory
        finally:
            del sys.path[0]

        self.memory, self.interval = memory, interval
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})

    def wait(self, pid: int, start: int) -> tuple:
        """Reap ``pid``: (status, rusage, timeline); the timeline of its tree's summed RSS
        is ([seconds since spawn], [bytes]), empty lists when not sampling."""
        times: list = []
        sizes: list = []
        if self.memory is None:
            return (*os.wait4(pid, 0)[1:], (times, sizes))
        tree = self.memory.Tree(pid, children=True)
        while True:
            signal.sigtimedwait((signal.SIGCHLD,), self.interval)
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return status, usage, (times, sizes)
            reading = tree.read()
            if reading is not None:
                times.append(round((time.monotonic_ns() - start) / 1e9, 4))
                sizes.append(reading[1])

    def kill_group(self, pid: int) -> None:
        """SIGKILL the process group of ``pid`` (it may have ended already)."""
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def on_sigterm(self, signum: int, frame: object) -> None:
        """Kill the running command's group, send the batch's replies so far, exit."""
        if self.current:
            self.kill_group(self.current)
        if self.batch is not None:
            send(self.replies, self.batch)
        os._exit(0)

    def on_alarm(self, signum: int, frame: object) -> None:
        """The timeout: kill the command's group. The timer is armed before the spawn (to
        keep it out of the timed window); if it fires before the pid is known, try again
        in a millisecond."""
        if self.current:
            self.timed_out = True
            self.kill_group(self.current)
        elif self.running:
            signal.setitimer(signal.ITIMER_REAL, 0.001)

    def run(self, argv: Sequence[str], timeout: float | None) -> tuple:
        """Spawn ``argv`` and reap it: the reply tuple (see :func:`stops`)."""
        self.lcg = next_offset(self.lcg)
        self.env[ENV_OFFSET_VAR.encode()] = b"X" * ((self.lcg >> 33) % MAX_ENV_OFFSET)
        self.timed_out, self.running = False, True
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        start = time.monotonic_ns()
        try:
            pid = os.posix_spawn(
                argv[0],
                argv,
                self.env,
                file_actions=self.actions,
                setpgroup=0,
                setsigdef=DEFAULT_SIGNALS,
                setsigmask=(),
            )
        except OSError as exc:
            self.running = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            return (0, 0, 0, 0, 0, False, start, exc.strerror or str(exc), None)
        self.current = pid
        status, usage, timeline = self.wait(pid, start)
        wall = time.monotonic_ns() - start
        self.current, self.running = 0, False
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return (
            wall,
            round(usage.ru_utime * 1e9),
            round(usage.ru_stime * 1e9),
            usage.ru_maxrss * self.rss_unit,
            os.waitstatus_to_exitcode(status),
            self.timed_out,
            start,
            "",
            timeline if self.memory is not None else None,
        )

    def serve(self, requests: int) -> None:
        """Answer batches (items, ignore_all, codes) with their replies until end of file."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self.on_sigterm)
        signal.signal(signal.SIGALRM, self.on_alarm)
        while (request := receive(requests)) is not None:
            items, ignore_all, codes = request
            self.batch = []
            run_items(self.run, items, ignore_all, codes, self.batch)
            done, self.batch = self.batch, None
            send(self.replies, done)


def main(argv: Sequence[str]) -> None:
    """``spawn_helper.py REQ_FD REPLY_FD SHOW_OUTPUT INPUT SEED [INTERVAL]``: serve until
    the request pipe closes (SHOW_OUTPUT "1" or "0"; INPUT and SEED may be ""; INTERVAL:
    seconds between memory readings, absent or "" for none)."""
    requests, replies, show, stdin_path, seed = argv[1:6]
    helper = Helper(int(replies), show == "1", stdin_path, int(seed) if seed else None)
    if len(argv) > 6 and argv[6]:
        helper.sample_memory(float(argv[6]))
    helper.serve(int(requests))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except (BrokenPipeError, KeyboardInterrupt):  # the parent is gone (SIGKILL) or stopping
        os._exit(0)
