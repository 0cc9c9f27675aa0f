"""Spawning the processes of ``perflab cmd``: the Spawner interface and its real one.

The command engine (:mod:`perflab.engines.cmd.commands`) hands batches of items (a run
or a hook each) to a :class:`Spawner` and gets back a :class:`SpawnOutcome` per item.
The real spawner, :class:`PosixSpawner`, runs them in the small helper program
:mod:`perflab.engines.cmd.spawn_helper`; tests use a :class:`SerialSpawner` that advances
a fake clock. Both follow the helper's batch rules (:func:`spawn_helper.stops`).

Protocol with the helper (two pipes, one request and one reply per batch):
    request: ``(items, ignore_all, codes)``, items as (argv tuple, timeout_s or None,
    is_run); reply: the list of outcome tuples in :class:`SpawnOutcome` field order.
    Each message is ``marshal`` data behind a 4-byte little-endian length.
"""

from __future__ import annotations

import abc
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import astuple, dataclass
from typing import Any, Protocol

from perflab.engines.cmd import spawn_helper
from perflab.engines.cmd.spawn_helper import receive, run_items, send

#: How long the spawning helper has to answer a stop (SIGTERM) before it is killed, s.
STOP_WAIT_S = 5.0

#: An item of a batch: (argv, timeout_s or None, is_run). Hooks are items with is_run False.
Item = tuple[tuple[str, ...], "float | None", bool]


@dataclass(frozen=True)
class SpawnOutcome:
    """What one spawned process did.

    Attributes:
        wall_ns: spawn → reap on the monotonic clock, ns.
        user_ns / sys_ns: CPU time from ``wait4``, ns.
        max_rss_bytes: peak resident set size from ``wait4``, bytes.
        exit_code: exit status; negative: killed by that signal.
        timed_out: True when the spawner killed it at the timeout.
        start_ns: monotonic clock at spawn, ns (None: unknown).
        error: why it could not be started (e.g. "Exec format error"); "" when it ran.
        memory: ``cmd --memory``: ([seconds since spawn], [summed RSS of the command and
            its descendants, bytes]) read every interval while it ran; None otherwise.
    """

    wall_ns: int
    user_ns: int = 0
    sys_ns: int = 0
    max_rss_bytes: int = 0
    exit_code: int = 0
    timed_out: bool = False
    start_ns: int | None = None
    error: str = ""
    memory: tuple[list[float], list[int]] | None = None


class Spawner(Protocol):
    """Runs batches of processes one after another and reports what each did."""

    def run_batch(
        self,
        items: Sequence[Item],
        ignore_all: bool,
        ignore_codes: frozenset[int],
        outcomes: list[SpawnOutcome],
    ) -> None:
        """Run ``items`` in order, appending each one's outcome to ``outcomes`` as it ends.

        The batch stops after the first item that fails (:func:`spawn_helper.stops`),
        so a failed prepare hook or run is never followed by more processes.

        Raises:
            KeyboardInterrupt: Ctrl-C; the running process is killed, and
                ``outcomes`` holds every item that finished before it.
        """
        ...


class SerialSpawner(abc.ABC):
    """A :class:`Spawner` from a one-process ``run(argv, timeout_s) -> SpawnOutcome``, in
    this process (for fakes in tests; the batch rules are the helper's)."""

    @abc.abstractmethod
    def run(self, argv: Sequence[str], timeout_s: float | None) -> SpawnOutcome:
        """Run one process. Raises OSError when it can't be started."""

    def run_batch(
        self,
        items: Sequence[Item],
        ignore_all: bool,
        ignore_codes: frozenset[int],
        outcomes: list[SpawnOutcome],
    ) -> None:
        """See :meth:`Spawner.run_batch`."""

        def one(argv: Sequence[str], timeout: float | None) -> tuple[Any, ...]:
            try:
                outcome = self.run(argv, timeout)
            except OSError as exc:
                outcome = SpawnOutcome(0, error=exc.strerror or str(exc))
            outcomes.append(outcome)
            return astuple(outcome)

        run_items(one, items, ignore_all, ignore_codes, [])


class PosixSpawner:
    """Spawns commands from the small helper process and reaps them with ``wait4``.

    Why a helper: ``posix_spawn`` (vfork) and ``fork`` both hand the child the
    parent's memory until ``exec``, and Linux records that memory's peak in
    the child's ``ru_maxrss`` (``setmax_mm_hiwater_rss`` at exec). Spawned from
    perflab itself (numpy, rich: ~50 MB) every command would "use" 50 MB; from
    a bare ``python -I -S`` helper (~10 MB) the floor is low, and perflab
    measures and reports it. The helper runs whole batches (several blocks of
    runs, with their hooks) per request, so the pipe round trip to it is paid
    once per batch, not per run, and never inside a timing. How it spawns, times
    and kills is in :mod:`perflab.engines.cmd.spawn_helper`. Output goes to /dev/null
    unless ``show_output`` (then it streams to our stdout/stderr, never buffered);
    stdin is /dev/null or ``input_path``.

    Each run gets :data:`spawn_helper.ENV_OFFSET_VAR` set to 0–4,095 ``X`` characters, drawn
    afresh per run: the size of the environment moves the initial stack, and
    with it the alignment of everything on it, which can bias a command's time
    by several percent one way for a whole benchmark (Mytkowicz et al. 2009,
    "Producing wrong data without doing anything obviously wrong!"); varying it
    turns that bias into noise that the medians average over. hyperfine does
    the same with HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET.

    Args:
        show_output: let commands write to our stdout and stderr.
        output_to_stderr: with ``show_output``, the commands' stdout goes to our stderr
            too (our stdout carries a results file: ``--json -``).
        input_path: a file fed to each run's stdin (opened afresh per run).
        seed: seed of the environment offsets (None: a random one).
        memory_interval_s: ``--memory``: read each command's tree's RSS this often, s.
    """

    def __init__(
        self,
        show_output: bool = False,
        input_path: str | None = None,
        seed: int | None = None,
        memory_interval_s: float | None = None,
        output_to_stderr: bool = False,
    ) -> None:
        self.show_output = show_output
        self.output_to_stderr = output_to_stderr
        self.input_path = input_path
        self.seed = seed
        self.memory_interval_s = memory_interval_s
        self._proc: Any = None

    def _start(self) -> None:
        requests_r, self._requests = os.pipe()
        self._replies, replies_w = os.pipe()
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                spawn_helper.__file__,
                str(requests_r),
                str(replies_w),
                "1" if self.show_output else "0",
                self.input_path or "",
                "" if self.seed is None else str(self.seed),
                "" if self.memory_interval_s is None else repr(self.memory_interval_s),
            ],
            stdin=subprocess.DEVNULL,
            stdout=2 if self.output_to_stderr else None,
            pass_fds=(requests_r, replies_w),
        )
        os.close(requests_r)
        os.close(replies_w)

    def run_batch(
        self,
        items: Sequence[Item],
        ignore_all: bool,
        ignore_codes: frozenset[int],
        outcomes: list[SpawnOutcome],
    ) -> None:
        """See :meth:`Spawner.run_batch`.

        Raises:
            KeyboardInterrupt: Ctrl-C; the helper kills the running command,
                hands back the items that finished, and exits.
            OSError: the helper died (e.g. killed from outside).
        """
        if self._proc is None:
            self._start()
        try:
            send(self._requests, ([tuple(i) for i in items], ignore_all, frozenset(ignore_codes)))
            replies = receive(self._replies)
        except BaseException:
            outcomes.extend(SpawnOutcome(*r) for r in self._stop() or [])
            raise
        if replies is None:
            self._stop()
            raise OSError("perflab's spawning helper process died; run again")
        outcomes.extend(SpawnOutcome(*r) for r in replies)  # type: ignore[union-attr]

    def run(self, argv: Sequence[str], timeout_s: float | None) -> SpawnOutcome:
        """Run one process (a batch of one); its ``error`` says when it could not start."""
        outcomes: list[SpawnOutcome] = []
        self.run_batch([(tuple(argv), timeout_s, False)], True, frozenset(), outcomes)
        return outcomes[0]

    def _stop(self) -> Any:
        """Stop the helper; return the replies it flushed on its way out (None if none).

        Bounded: a helper that has not answered :data:`STOP_WAIT_S` after SIGTERM (stopped,
        or deaf to it) is killed, and its replies are waited for as long again."""
        import select

        proc, self._proc = self._proc, None
        if proc.poll() is None:
            proc.terminate()
        try:
            os.close(self._requests)
            if not select.select([self._replies], [], [], STOP_WAIT_S)[0]:
                proc.kill()
                if not select.select([self._replies], [], [], STOP_WAIT_S)[0]:
                    return None
            return receive(self._replies)
        finally:
            os.close(self._replies)
            try:
                proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def close(self) -> None:
        """Stop the helper (it kills a running command first); a later batch starts a new one."""
        if self._proc is not None:
            self._stop()
