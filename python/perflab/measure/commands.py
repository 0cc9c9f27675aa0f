"""The command engine of ``perflab cmd``: spawn whole commands, time them, interleave, stop.

Design (DESIGN.md, "Statistical methods"):
    * each run is its own process, spawned with ``posix_spawn`` (glibc:
      ``clone(CLONE_VFORK)`` + ``exec``, the path Rust's ``std::process`` and
      so hyperfine take) without a shell; wall time is read from the monotonic
      clock around spawn → reap, user/system time and max RSS come from
      ``wait4`` (the rusage of the child and the descendants it waited for).
      Processes start from a small helper process (see :class:`PosixSpawner`:
      an honest max RSS) that runs whole batches of runs and hooks, so no
      round trip per run adds to the cost of a run;
    * commands run interleaved in randomized blocks, every block running each
      command once in a fresh random order, so that drift hits all commands
      alike (Abedi & Brecht 2017, randomized multiple interleaved trials);
      ``interleave=False`` measures them one after another, as hyperfine does;
    * adaptive stopping: the set stops when the bootstrap CI of every median
      and of every ratio against the reference (or the fastest) is within the
      target precision, or when the budget or the run limit is reached, and
      the reason is recorded;
    * the cost of spawning an empty process is measured once and kept beside
      the results; it is never subtracted.

Processes are started through the small :class:`Spawner` interface; the real
one is :class:`PosixSpawner`, tests use a fake that advances a fake clock.
"""

from __future__ import annotations

import abc
import math
import os
import random
import re
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import astuple, dataclass, field
from typing import Any, Protocol

from perflab.errors import UsageError
from perflab.measure import integrity
from perflab.measure.runner import NullProgress, Progress
from perflab.model import Benchmark, CommandRun

#: Never spend more than 1/_CHECK_SHARE of the time on stopping checks (bootstraps).
_CHECK_SHARE = 20
#: A batch of runs never plans more than this much time (or items) ahead: the
#: budget can't be overshot by more, and the progress display updates as often.
_MAX_BATCH_S = 0.25
_MAX_BATCH_ITEMS = 3000
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CODES_RE = re.compile(r"^\d+(,\d+)*$")
HOOKS = ("setup", "prepare", "conclude", "cleanup")


#: An item of a batch: (argv, timeout_s or None, is_run). Hooks are items with is_run False.
Item = tuple[tuple[str, ...], "float | None", bool]


@dataclass(frozen=True)
class Outcome:
    """What one spawned process did.

    Attributes:
        wall_ns: spawn → reap on the monotonic clock, ns.
        user_ns / sys_ns: CPU time from ``wait4``, ns.
        max_rss_bytes: peak resident set size from ``wait4``, bytes.
        exit_code: exit status; negative: killed by that signal.
        timed_out: True when the spawner killed it at the timeout.
        start_ns: monotonic clock at spawn, ns (None: unknown).
        error: why it could not be started (e.g. "Exec format error"); "" when it ran.
    """

    wall_ns: int
    user_ns: int = 0
    sys_ns: int = 0
    max_rss_bytes: int = 0
    exit_code: int = 0
    timed_out: bool = False
    start_ns: int | None = None
    error: str = ""


class Spawner(Protocol):
    """Runs batches of processes one after another and reports what each did."""

    def run_batch(self, items: Sequence[Item], ignore_all: bool, ignore_codes: frozenset[int],
                  outcomes: list[Outcome]) -> None:
        """Run ``items`` in order, appending each one's outcome to ``outcomes`` as it ends.

        The batch stops after the first item that fails (:func:`_stops`), so a
        failed prepare hook or run is never followed by more processes.

        Raises:
            KeyboardInterrupt: Ctrl-C; the running process is killed, and
                ``outcomes`` holds every item that finished before it.
        """
        ...


def _stops(reply: tuple[Any, ...], is_run: bool, ignore_all: bool, codes: Any) -> bool:
    """True when a batch must stop after this reply (an :class:`Outcome` as a tuple).

    Self-contained: its source also runs inside the spawning helper.
    """
    code, timed_out, error = reply[4], reply[5], reply[7]
    if error:
        return True
    if not is_run:
        return code != 0 or timed_out
    if ignore_all:
        return False
    return timed_out or not (code == 0 or (code > 0 and code in codes))


def _run_items(run: Callable[..., tuple[Any, ...]], items: Sequence[Item], ignore_all: bool,
               codes: Any, replies: list[Any]) -> None:
    """Run ``items`` with ``run(argv, timeout)``, appending replies, until one stops the batch.

    Self-contained: its source also runs inside the spawning helper.
    """
    for argv, timeout, is_run in items:
        reply = run(argv, timeout)
        replies.append(reply)
        if _stops(reply, is_run, ignore_all, codes):
            return


class SerialSpawner(abc.ABC):
    """A :class:`Spawner` from a one-process ``run(argv, timeout_s) -> Outcome``, in this
    process (for fakes in tests; the batch rules are the helper's, :func:`_run_items`)."""

    @abc.abstractmethod
    def run(self, argv: Sequence[str], timeout_s: float | None) -> Outcome:
        """Run one process. Raises OSError when it can't be started."""

    def run_batch(self, items: Sequence[Item], ignore_all: bool, ignore_codes: frozenset[int],
                  outcomes: list[Outcome]) -> None:
        """See :meth:`Spawner.run_batch`."""
        def one(argv: Sequence[str], timeout: float | None) -> tuple[Any, ...]:
            try:
                outcome = self.run(argv, timeout)
            except OSError as exc:
                outcome = Outcome(0, error=exc.strerror or str(exc))
            outcomes.append(outcome)
            return astuple(outcome)

        _run_items(one, items, ignore_all, ignore_codes, [])


#: the environment variable whose random length varies each run's stack alignment
ENV_OFFSET_VAR = "PERFLAB_RANDOMIZED_ENVIRONMENT_OFFSET"


class PosixSpawner:
    """Spawns commands from a small helper process and reaps them with ``wait4``.

    Why a helper: ``posix_spawn`` (vfork) and ``fork`` both hand the child the
    parent's memory until ``exec``, and Linux records that memory's peak in
    the child's ``ru_maxrss`` (``setmax_mm_hiwater_rss`` at exec). Spawned from
    perflab itself (numpy, rich: ~50 MB) every command would "use" 50 MB; from
    a bare ``python -I -S`` helper (~10 MB) the floor is low, and perflab
    measures and reports it. The helper runs whole batches (several blocks of
    runs, with their hooks) per request, so the pipe round trip to it is paid
    once per batch, not per run, and never inside a timing.

    In the helper each command runs with ``posix_spawn`` (glibc: clone(CLONE_VFORK)
    + exec, as Rust's std::process and so hyperfine), no shell, in its own
    process group so that a timeout or Ctrl-C kills all it started; the wall
    time is the monotonic clock around spawn → reap, and the timeout is a
    SIGALRM timer armed before the clock starts, so only spawn and ``wait4``
    are inside a timing (as in hyperfine). Output goes to /dev/null
    unless ``show_output`` (then it streams to our stdout/stderr, never
    buffered); stdin is /dev/null or ``input_path``.

    Each run gets :data:`ENV_OFFSET_VAR` set to 0–4,095 ``X`` characters, drawn
    afresh per run: the size of the environment moves the initial stack, and
    with it the alignment of everything on it, which can bias a command's time
    by several percent one way for a whole benchmark (Mytkowicz et al. 2009,
    "Producing wrong data without doing anything obviously wrong!"); varying it
    turns that bias into noise that the medians average over. hyperfine does
    the same with HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET.

    Args:
        show_output: let commands write to our stdout and stderr.
        input_path: a file fed to each run's stdin (opened afresh per run).
        seed: seed of the environment offsets (None: a random one).
    """

    def __init__(self, show_output: bool = False, input_path: str | None = None,
                 seed: int | None = None) -> None:
        self.show_output = show_output
        self.input_path = input_path
        self.seed = seed
        self._proc: Any = None

    def _start(self) -> None:
        import inspect
        import subprocess

        requests_r, self._requests = os.pipe()
        self._replies, replies_w = os.pipe()
        code = "from __future__ import annotations\n" + "".join(
            inspect.getsource(f) + "\n" for f in (_stops, _run_items, _helper_main))
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", code + "_helper_main()\n", str(requests_r),
             str(replies_w), "1" if self.show_output else "0", self.input_path or "",
             "" if self.seed is None else str(self.seed)],
            stdin=subprocess.DEVNULL, pass_fds=(requests_r, replies_w))
        os.close(requests_r)
        os.close(replies_w)

    def run_batch(self, items: Sequence[Item], ignore_all: bool, ignore_codes: frozenset[int],
                  outcomes: list[Outcome]) -> None:
        """See :meth:`Spawner.run_batch`.

        Raises:
            KeyboardInterrupt: Ctrl-C; the helper kills the running command,
                hands back the items that finished, and exits.
            OSError: the helper died (e.g. killed from outside).
        """
        if self._proc is None:
            self._start()
        try:
            _send(self._requests, ([tuple(i) for i in items], ignore_all, frozenset(ignore_codes)))
            replies = _receive(self._replies)
        except BaseException:
            outcomes.extend(Outcome(*r) for r in self._stop() or [])
            raise
        if replies is None:
            self._stop()
            raise OSError("perflab's spawning helper process died; run again")
        outcomes.extend(Outcome(*r) for r in replies)

    def run(self, argv: Sequence[str], timeout_s: float | None) -> Outcome:
        """Run one process (a batch of one); its ``error`` says when it could not start."""
        outcomes: list[Outcome] = []
        self.run_batch([(tuple(argv), timeout_s, False)], True, frozenset(), outcomes)
        return outcomes[0]

    def _stop(self) -> list[Any] | None:
        """Stop the helper; return the replies it flushed on its way out (None if none)."""
        proc, self._proc = self._proc, None
        if proc.poll() is None:
            proc.terminate()
        try:
            os.close(self._requests)
            return _receive(self._replies)
        finally:
            os.close(self._replies)
            proc.wait()

    def close(self) -> None:
        """Stop the helper (it kills a running command first); a later batch starts a new one."""
        if self._proc is not None:
            self._stop()


def _send(fd: int, message: Any) -> None:
    """Write one length-prefixed marshal message (our own helper only: never untrusted data)."""
    import marshal

    data = marshal.dumps(message)
    os.write(fd, len(data).to_bytes(4, "little") + data)


def _receive(fd: int) -> Any:
    """Read one length-prefixed marshal message; None at end of file."""
    import marshal

    header = _read_exact(fd, 4)
    if header is None:
        return None
    body = _read_exact(fd, int.from_bytes(header, "little"))
    return None if body is None else marshal.loads(body)


def _read_exact(fd: int, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _helper_main() -> None:  # pragma: no cover - runs in the helper process
    """The spawning helper: ``python -I -S -c <source> REQ_FD REPLY_FD SHOW_OUTPUT INPUT SEED``.

    Reads batches (items, ignore_all, codes), answers the list of replies
    (wall_ns, user_ns, sys_ns, max_rss_bytes, exit_code, timed_out, start_ns,
    error). On SIGTERM it kills the running command's group, sends the replies
    of the batch so far, and exits. Imports only built-in modules so that its
    memory (the floor of every max RSS) stays small.
    """
    import marshal
    import os
    import signal
    import sys
    import time

    requests, replies, show, stdin_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], \
        sys.argv[4]
    # a 64-bit LCG (Knuth's MMIX constants) draws each run's environment offset
    # (see PosixSpawner); `random` would add to the helper's memory
    lcg = [int(sys.argv[5]) if sys.argv[5] else int.from_bytes(os.urandom(8), "little")]
    devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    actions = [(os.POSIX_SPAWN_OPEN, 0, stdin_path, os.O_RDONLY, 0) if stdin_path
               else (os.POSIX_SPAWN_DUP2, devnull, 0)]
    actions += [] if show == "1" else [(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (1, 2)]
    rss_unit = 1 if sys.platform == "darwin" else 1024
    # bytes: posix_spawn then skips encoding the environment on every run
    env = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    current, batch, timed_out, running = [0], [None], [False], [False]
    # ignored signals survive exec: give commands SIGINT (ignored here) and SIGPIPE,
    # SIGXFSZ (ignored by Python) at their defaults, as subprocess's restore_signals does
    defaults = (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)

    def send(message):
        data = marshal.dumps(message)
        os.write(replies, len(data).to_bytes(4, "little") + data)

    def receive():
        header = os.read(requests, 4)
        if len(header) < 4:
            return None
        size, data = int.from_bytes(header, "little"), b""
        while len(data) < size:
            chunk = os.read(requests, size - len(data))
            if not chunk:
                return None
            data += chunk
        return marshal.loads(data)

    def kill_group(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def stop(signum, frame):
        if current[0]:
            kill_group(current[0])
        if batch[0] is not None:
            send(batch[0])
        os._exit(0)

    def alarm(signum, frame):
        # the timer is armed before the spawn (to keep it out of the timed window);
        # if it fires before the pid is known, try again in a millisecond
        if current[0]:
            timed_out[0] = True
            kill_group(current[0])
        elif running[0]:
            signal.setitimer(signal.ITIMER_REAL, 0.001)

    def run(argv, timeout):
        lcg[0] = (lcg[0] * 6364136223846793005 + 1442695040888963407) % 2**64
        env[b"PERFLAB_RANDOMIZED_ENVIRONMENT_OFFSET"] = b"X" * ((lcg[0] >> 33) % 4096)
        timed_out[0], running[0] = False, True
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        start = time.monotonic_ns()
        try:
            pid = os.posix_spawn(argv[0], argv, env, file_actions=actions, setpgroup=0,
                                 setsigdef=defaults)
        except OSError as exc:
            running[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            return (0, 0, 0, 0, 0, False, start, exc.strerror or str(exc))
        current[0] = pid
        _, status, usage = os.wait4(pid, 0)
        wall = time.monotonic_ns() - start
        current[0], running[0] = 0, False
        if timeout is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return (wall, round(usage.ru_utime * 1e9), round(usage.ru_stime * 1e9),
                usage.ru_maxrss * rss_unit, os.waitstatus_to_exitcode(status), timed_out[0],
                start, "")

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGALRM, alarm)
    while (request := receive()) is not None:
        items, ignore_all, codes = request
        batch[0] = []
        _run_items(run, items, ignore_all, codes, batch[0])
        done, batch[0] = batch[0], None
        send(done)


@dataclass(frozen=True)
class Parameter:
    """A benchmark parameter from ``-P`` (a numeric scan) or ``-L`` (a list).

    Attributes:
        name: the placeholder name; ``{name}`` in commands and hooks is replaced.
        values: the values in order (ints, floats or strings).
    """

    name: str
    values: tuple[Any, ...]


def _check_name(name: str, option: str) -> None:
    if not _NAME_RE.match(name):
        raise UsageError(f"{option} name {name!r} must be a word of letters, digits and _ "
                         f"(used as {{name}} in commands); e.g. {option} n 1 5")


def _number(text: str, option: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{option}: {text!r} is not a number; write e.g. "
                         f"{option} n 1 10 or {option} t 0.1 0.5 0.1") from None
    if not math.isfinite(value):
        raise UsageError(f"{option}: {text!r} is not a finite number")
    return value


def _decimals(text: str) -> int:
    return len(text.partition(".")[2]) if "e" not in text.lower() else 12


def parse_scan(tokens: Sequence[str], max_values: int = 10_000) -> Parameter:
    """Parse ``-P name lo hi [step]`` into a parameter: lo, lo+step, … ≤ hi (hyperfine's -P).

    Integers stay integers; with decimals each value is rounded to the most
    decimals written, so 0.1 0.3 0.1 gives 0.1, 0.2, 0.3 (not 0.30000000000000004).

    Args:
        tokens: [name, lo, hi] or [name, lo, hi, step] as typed.
        max_values: refuse scans longer than this.

    Returns:
        The parameter; ``hi`` is included when a whole number of steps reaches it.

    Raises:
        UsageError: wrong count, bad name, not numbers, lo > hi, step ≤ 0, too many values.
    """
    if len(tokens) not in (3, 4):
        raise UsageError(f"-P takes NAME LO HI [STEP], got {' '.join(tokens)!r}; "
                         "e.g. -P n 1 5 or -P t 0.1 0.5 0.1")
    name, *numbers = tokens
    _check_name(name, "-P")
    lo, hi, step = [_number(t, "-P") for t in numbers] + ([1] if len(numbers) == 2 else [])
    if lo > hi:
        raise UsageError(f"-P {name}: LO {lo} is above HI {hi}; swap them")
    if step <= 0:
        raise UsageError(f"-P {name}: STEP must be above zero, got {step}")
    count = math.floor((hi - lo) / step + 1e-9) + 1
    if count > max_values:
        raise UsageError(f"-P {name}: {count:,} values is too many (at most {max_values:,}); "
                         "use a larger STEP")
    digits = max(_decimals(t) for t in numbers)
    if all(isinstance(v, int) for v in (lo, hi, step)):
        return Parameter(name, tuple(lo + i * step for i in range(count)))
    return Parameter(name, tuple(round(lo + i * step, digits) for i in range(count)))


def parse_list(tokens: Sequence[str]) -> Parameter:
    """Parse ``-L name a,b,c`` into a parameter of string values (hyperfine's -L).

    Raises:
        UsageError: bad name, or an empty list or empty value.
    """
    name, text = tokens
    _check_name(name, "-L")
    values = tuple(text.split(","))
    if not text or any(v == "" for v in values):
        raise UsageError(f"-L {name}: empty value in {text!r}; write values separated by "
                         "commas, e.g. -L py python3.11,python3.12")
    return Parameter(name, values)


def parse_codes(text: str | None) -> frozenset[int] | None:
    """``--ignore-failure`` value: None → every code; "1,2" → {1, 2}.

    Raises:
        UsageError: anything but comma-separated non-negative integers.
    """
    if text is None:
        return None
    if not _CODES_RE.match(text):
        raise UsageError(f"--ignore-failure={text!r}: write exit codes separated by commas, "
                         "e.g. --ignore-failure=1,2, or no value to ignore every exit code")
    return frozenset(int(c) for c in text.split(","))


@dataclass(frozen=True)
class CommandSpec:
    """One command to benchmark, resolved and ready to spawn.

    Attributes:
        name: display name (the command text; ``#2``… appended to repeats).
        text: the command text after parameter substitution.
        argv: what is spawned; ``argv[0]`` is an absolute path.
        params: parameter values of this case.
        hooks: hook name ("setup", "prepare", "conclude", "cleanup") → argv (``sh -c``).
    """

    name: str
    text: str
    argv: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_benchmark(self) -> Benchmark:
        """An empty Benchmark of kind "command" for this spec."""
        return Benchmark(name=self.name, kind="command", params=dict(self.params))


def substitute(text: str, params: dict[str, Any]) -> str:
    """Replace each ``{name}`` of ``params`` in ``text``; other braces are left alone
    (so ``awk '{print $1}'`` keeps working, unlike ``str.format``)."""
    for name, value in params.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def resolve_executable(name: str, command: str) -> str:
    """Absolute path of the program ``name`` (searched on PATH when it has no slash).

    Raises:
        UsageError: not found, a directory, or not executable; says what to do.
    """
    if os.sep not in name:
        found = shutil.which(name)
        if found is None:
            raise UsageError(f"command {command!r}: {name!r} not found on PATH; check the "
                             "spelling, give its full path, or use --shell for shell "
                             "built-ins, pipes and redirections")
        return os.path.abspath(found)
    path = os.path.abspath(name)
    if not os.path.exists(path):
        raise UsageError(f"command {command!r}: {name!r} does not exist; check the path")
    if os.path.isdir(path):
        raise UsageError(f"command {command!r}: {name!r} is a folder, not a program; give "
                         "the path of the program to run")
    if not os.access(path, os.X_OK):
        raise UsageError(f"command {command!r}: permission denied running {name!r} "
                         f"(not an executable file); make it executable with chmod +x {name}")
    return path


def command_argv(text: str, shell: str | None) -> tuple[str, ...]:
    """The argv that runs ``text``: ``shlex.split`` without a shell, ``shell -c`` with one.

    Raises:
        UsageError: empty command, unbalanced quotes, or program not found.
    """
    if shell:
        return (resolve_executable(shell, text), "-c", text)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"command {text!r}: {exc}; check its quotes") from None
    if not words:
        raise UsageError("an empty command was given; write the command to run, "
                         "e.g. perflab cmd 'sleep 0.1'")
    return (resolve_executable(words[0], text), *words[1:])


def expand(commands: Sequence[str], parameters: Sequence[Parameter],
           hooks: dict[str, str | None], shell: str | None = None) -> list[CommandSpec]:
    """Every command × every combination of parameter values, resolved.

    Hooks always run through ``sh -c`` (they are untimed and often need pipes,
    e.g. ``sync; echo 3 | sudo tee /proc/sys/vm/drop_caches``).

    Args:
        commands: command texts, possibly with ``{name}`` placeholders.
        parameters: from ``-P``/``-L``; each must appear in a command or hook.
        hooks: hook name → text or None.
        shell: run commands through this shell (``--shell``), or None.

    Returns:
        Specs in order: command by command, parameters varying fastest; a
        command that uses no parameter (nor do the hooks) runs once.

    Raises:
        UsageError: no command, duplicate or unused parameter, program not found.
    """
    if not commands:
        raise UsageError("no command given; write the commands to compare, "
                         "e.g. perflab cmd 'sleep 0.1' 'sleep 0.2'")
    _check_parameters(commands, parameters, hooks)
    sh = resolve_executable("sh", "--setup/--prepare/--conclude/--cleanup")
    if not any(hooks.values()):
        sh = ""
    specs, seen = [], {}
    hook_texts = "".join(filter(None, hooks.values()))
    for text in commands:
        used = [p for p in parameters if "{" + p.name + "}" in text + hook_texts]
        for params in _combinations(used):
            concrete = substitute(text, params)
            key = (concrete, tuple(params.items()))
            seen[key] = seen.get(key, 0) + 1
            name = concrete if seen[key] == 1 else f"{concrete} #{seen[key]}"
            spec_hooks = {h: (sh, "-c", substitute(t, params)) for h, t in hooks.items() if t}
            specs.append(CommandSpec(name, concrete, command_argv(concrete, shell), params,
                                     spec_hooks))
    return specs


def _check_parameters(commands: Sequence[str], parameters: Sequence[Parameter],
                      hooks: dict[str, str | None]) -> None:
    names = [p.name for p in parameters]
    texts = [*commands, *filter(None, hooks.values())]
    for name in names:
        if names.count(name) > 1:
            raise UsageError(f"parameter {name!r} is given twice; give each -P/-L name once")
        if not any("{" + name + "}" in t for t in texts):
            raise UsageError(f"parameter {name!r} is not used: no command has {{{name}}}; "
                             f"put {{{name}}} where its value goes")


def _combinations(parameters: Sequence[Parameter]) -> list[dict[str, Any]]:
    combos: list[dict[str, Any]] = [{}]
    for param in parameters:
        combos = [{**c, param.name: v} for c in combos for v in param.values]
    return combos


@dataclass
class Settings:
    """Measurement settings of ``perflab cmd``.

    Attributes:
        precision: target relative 95% CI half-width of medians and ratios (0.01 = 1%).
        min_runs / max_runs: bounds on timed runs per command.
        budget_s: time each command may spend (its runs plus its prepare and
            conclude hooks), s; interleaved blocks stop when any command spent it.
        timeout_s: a run (or hook) lasting longer is killed and counts as failed; None: never.
        warmup: untimed runs per command before the timed ones.
        interleave: randomized blocks (True) or one command after another (False).
        ignore_all: non-zero exit codes don't fail the benchmark (--ignore-failure).
        ignore_codes: exit codes that don't fail it (--ignore-failure=1,2).
        reference: index of the command ratios are taken against; None: the fastest.
        overhead_runs: runs of the empty process for the spawn overhead.
        confidence: CI level.
        seed: seed of the block order and of the bootstrap (None: random).
    """

    precision: float = 0.01
    min_runs: int = 10
    max_runs: int = 1000
    budget_s: float = 10.0
    timeout_s: float | None = 600.0
    warmup: int = 0
    interleave: bool = True
    ignore_all: bool = False
    ignore_codes: frozenset[int] = frozenset()
    reference: int | None = None
    overhead_runs: int = 30
    confidence: float = 0.95
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {**self.__dict__, "ignore_codes": sorted(self.ignore_codes)}

    def accepts(self, exit_code: int) -> bool:
        """True when a run that exited with ``exit_code`` counts as a success."""
        if exit_code == 0:
            return True
        return exit_code > 0 and (self.ignore_all or exit_code in self.ignore_codes)


@dataclass
class _State:
    """The engine's bookkeeping for one command."""

    spec: CommandSpec
    bench: Benchmark
    spent_s: float = 0.0
    done: bool = False
    set_up: bool = False
    timed: int = 0
    ok_walls: list[float] = field(default_factory=list)
    ok_blocks: list[int | None] = field(default_factory=list)

    def add(self, run: CommandRun) -> None:
        """Keep the run and the counters the stopping rule reads every batch (O(1))."""
        self.bench.runs.append(run)
        if not run.warmup:
            self.timed += 1
            if run.ok:
                self.ok_walls.append(run.wall_ns * 1e-9)
                self.ok_blocks.append(run.block)


class CommandRunner:
    """Measures commands in randomized blocks (or one after another) until they stop.

    Blocks are sent to the spawner in batches that end before the next point
    where the stopping rule could fire (and within ``_MAX_BATCH_S``), so no
    per-run round trip adds to the cost of a run.

    Args:
        specs: the commands.
        settings: measurement settings.
        spawner: how processes run (default: :class:`PosixSpawner`).
        overhead_argv: the empty process timed for the spawn overhead
            (``true``, or ``sh -c ''`` with --shell); None skips it.
        progress: progress sink.
        clock: monotonic seconds (injectable for tests).

    Attributes:
        spawn_overhead_ns: wall times of the empty process, ns.
        rss_floor_bytes: the least max RSS the empty process reported, bytes (or None).
        interrupted: True when Ctrl-C (or SIGTERM) ended the measurement.
        start_errors: commands that could not be started (bad input, exit 2).
    """

    def __init__(self, specs: Sequence[CommandSpec], settings: Settings,
                 spawner: Spawner | None = None, overhead_argv: Sequence[str] | None = None,
                 progress: Progress | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.spawner = spawner or PosixSpawner()
        self.overhead_argv = overhead_argv
        self.progress = progress or NullProgress()
        self.clock = clock
        self.rng = random.Random(settings.seed)
        self.states = [_State(s, s.to_benchmark()) for s in specs]
        self.spawn_overhead_ns: list[int] = []
        self.rss_floor_bytes: int | None = None
        self.interrupted = False
        self.start_errors = 0
        self._t0 = clock()
        self._index = 0
        self._blocks_started = 0
        self._checks = 0
        self._next_check = -math.inf
        self._block_s: float | None = None
        self._half: float | None = None
        self._skew: tuple[int | None, str | None] = (None, None)
        self.monitor = integrity.Monitor(core) if (core := integrity.load_core()) else None

    def run(self) -> list[Benchmark]:
        """Measure every command; Ctrl-C stops early and keeps every finished run.

        Returns:
            One Benchmark per spec, in spec order; failed ones have ``error`` set.
        """
        try:
            self._probe_overhead()
            if self.settings.interleave:
                self._interleaved()
            else:
                for state in self.states:
                    self._sequential(state)
        except KeyboardInterrupt:
            self.interrupted = True
            for state in self.states:
                if not state.done:
                    state.done, state.bench.stop_reason = True, "interrupted"
            self._cleanup_all()
        return [s.bench for s in self.states]

    def _run_one(self, argv: Sequence[str]) -> Outcome:
        outcomes: list[Outcome] = []
        self.spawner.run_batch([(tuple(argv), self.settings.timeout_s, False)], True,
                               frozenset(), outcomes)
        return outcomes[0]

    def _probe_overhead(self) -> None:
        """Time the empty process a few times: the floor under every wall time."""
        if not self.overhead_argv:
            return
        item = (tuple(self.overhead_argv), self.settings.timeout_s, False)
        outcomes: list[Outcome] = []
        self.spawner.run_batch([item] * self.settings.overhead_runs, True, frozenset(), outcomes)
        ran = [o for o in outcomes if not o.error]
        self.spawn_overhead_ns = [o.wall_ns for o in ran]
        self.rss_floor_bytes = min((o.max_rss_bytes for o in ran), default=None)

    def _sequential(self, state: _State) -> None:
        """All runs of one command: setup, warmup, batches until it stops, cleanup."""
        self.progress.start_case(state.bench.id, self.settings.budget_s)
        self._setup(state)
        if self.settings.warmup:
            self._blocks([state], self.settings.warmup, warmup=True)
        while not state.done:
            self._blocks([state], self._blocks_ahead([state]))
            self._decide([state])
        self._cleanup(state)

    def _interleaved(self) -> None:
        """Every setup, warmup blocks, timed blocks in random order until all stop, cleanups."""
        for state in self.states:
            self.progress.start_case(state.bench.id, self.settings.budget_s)
            self._setup(state)
        if self.settings.warmup:
            self._blocks(self.states, self.settings.warmup, warmup=True)
        while active := [s for s in self.states if not s.done]:
            self._blocks(active, self._blocks_ahead(active))
            self._decide(active)
        self._cleanup_all()

    def _blocks_ahead(self, active: list[_State]) -> int:
        """Blocks to batch: up to the next point where the set could stop, within
        ``_MAX_BATCH_S``, the budget and the run limit (one block until timed once)."""
        s = self.settings
        left = s.max_runs - max(st.timed for st in active)
        below_min = s.min_runs - min(len(st.ok_walls) for st in active)
        if self._block_s is None:
            return 1
        horizon = min(_MAX_BATCH_S, s.budget_s - max(st.spent_s for st in active))
        if below_min <= 0:
            horizon = min(horizon, self._next_check - self.clock())
        blocks = int(horizon / self._block_s) if self._block_s > 0 else max(below_min, 1)
        if below_min > 0:
            blocks = min(blocks, below_min)
        return max(1, min(blocks, left, _MAX_BATCH_ITEMS // (3 * len(active))))

    def _blocks(self, states: list[_State], blocks: int, warmup: bool = False) -> None:
        """Run ``blocks`` blocks (each active command once, in a fresh random order) as
        one batch, then record what ran, even when Ctrl-C cut the batch short."""
        plan: list[tuple[_State, int | None]] = []
        for _ in range(blocks):
            active = [s for s in states if not s.done]
            self.rng.shuffle(active)
            block = self._blocks_started if self.settings.interleave else None
            self._blocks_started += 1
            plan += [(state, block) for state in active]
        items = [item for state, _ in plan for item in self._items(state)]
        outcomes: list[Outcome] = []
        began = self.clock()
        check = self._clock_check()
        try:
            self.spawner.run_batch(items, self.settings.ignore_all, self.settings.ignore_codes,
                                   outcomes)
        finally:
            self._skew = check()
            self._replay(plan, outcomes, warmup)
        self._block_s = (self.clock() - began) / blocks

    def _clock_check(self) -> Callable[[], tuple[int | None, str | None]]:
        """Start the clock cross-check of one batch (:mod:`perflab.measure.integrity`);
        the returned function ends it: (skew ns, flag). Runs are checked per batch
        because the spawning helper is kept free of the native core (its memory is the
        floor of every max RSS), so every run of a batch whose clocks disagreed is flagged."""
        if self.monitor is None:
            return lambda: (None, None)
        self.monitor.ready()
        self.monitor.start()
        return self.monitor.stop

    def _items(self, state: _State) -> list[Item]:
        """The batch items of one run: [prepare], the command, [conclude]."""
        hooks, timeout = state.spec.hooks, self.settings.timeout_s
        items: list[Item] = [(hooks["prepare"], timeout, False)] if "prepare" in hooks else []
        items.append((state.spec.argv, timeout, True))
        return items + ([(hooks["conclude"], timeout, False)] if "conclude" in hooks else [])

    def _replay(self, plan: list[tuple[_State, int | None]], outcomes: list[Outcome],
                warmup: bool) -> None:
        """Fold a batch's outcomes into the runs, in the order they ran."""
        pending = iter(outcomes)
        for state, block in plan:
            if not self._replay_run(state, pending, warmup, block):
                return

    def _replay_run(self, state: _State, pending: Iterator[Outcome], warmup: bool,
                    block: int | None) -> bool:
        """One run's outcomes (prepare, command, conclude); False where the batch ended."""
        hooks = state.spec.hooks
        if "prepare" in hooks and not self._hook_ok(state, "prepare", next(pending, None)):
            return False
        outcome = next(pending, None)
        if outcome is None:
            return False
        if outcome.error:
            self.start_errors += 1
            self._fail(state, f"can't be started: {outcome.error}; check that it is a program "
                       "for this machine (scripts need a #! line) or use --shell")
            return False
        run = self._record(state, outcome, warmup, block)
        if not run.ok and not self.settings.ignore_all:
            self._fail(state, self._run_failure(outcome))
            return False
        return "conclude" not in hooks or self._hook_ok(state, "conclude", next(pending, None))

    def _record(self, state: _State, outcome: Outcome, warmup: bool,
                block: int | None = None) -> CommandRun:
        ok = not outcome.timed_out and self.settings.accepts(outcome.exit_code)
        started = self.clock() if outcome.start_ns is None else outcome.start_ns * 1e-9
        run = CommandRun(index=self._index, started_s=started - self._t0,
                         wall_ns=outcome.wall_ns, user_ns=outcome.user_ns,
                         sys_ns=outcome.sys_ns, max_rss_bytes=outcome.max_rss_bytes,
                         exit_code=outcome.exit_code, ok=ok, warmup=warmup,
                         timed_out=outcome.timed_out, clock_skew_ns=self._skew[0],
                         flagged=self._skew[1], block=block)
        self._index += 1
        state.spent_s += outcome.wall_ns * 1e-9
        state.add(run)
        return run

    def _run_failure(self, outcome: Outcome) -> str:
        """Plain-words reason a run failed, with what to do."""
        if outcome.timed_out:
            return (f"run timed out after {self.settings.timeout_s:g} s and was killed (hung?); "
                    "raise --timeout or fix the command")
        if outcome.exit_code < 0:
            name = signal.Signals(-outcome.exit_code).name
            return (f"run was killed by {name}; fix the command, or pass --ignore-failure to "
                    "keep measuring and count such runs apart")
        hint = " (the shell could not find the command)" if outcome.exit_code == 127 else ""
        return (f"run exited with status {outcome.exit_code}{hint}; fix it, or pass "
                f"--ignore-failure (or --ignore-failure={outcome.exit_code}) if that is expected;"
                " --show-output shows what it printed")

    def _setup(self, state: _State) -> None:
        state.set_up = True
        if "setup" in state.spec.hooks:
            self._hook_ok(state, "setup", self._run_one(state.spec.hooks["setup"]))

    def _hook_ok(self, state: _State, hook: str, outcome: Outcome | None) -> bool:
        """True when the hook ran cleanly; otherwise the command fails (None: batch cut)."""
        if outcome is None:
            return False
        if hook in ("prepare", "conclude"):
            state.spent_s += outcome.wall_ns * 1e-9
        if not outcome.error and outcome.exit_code == 0 and not outcome.timed_out:
            return True
        status = (f"could not start ({outcome.error})" if outcome.error
                  else "timed out" if outcome.timed_out
                  else f"exited with status {outcome.exit_code}")
        self._fail(state, f"--{hook} {state.spec.hooks[hook][-1]!r} {status}; fix it "
                   "(--show-output shows what it printed)")
        return False

    def _fail(self, state: _State, message: str) -> None:
        state.bench.error = f"{state.spec.name!r}: {message}"
        state.done, state.bench.stop_reason = True, "failed"
        self.progress.finish_case(state.bench.id, "failed")

    def _cleanup(self, state: _State) -> None:
        if not state.set_up:
            return
        state.set_up = False
        argv = state.spec.hooks.get("cleanup")
        outcome = self._run_one(argv) if argv else None
        failed = outcome and (outcome.error or outcome.exit_code or outcome.timed_out)
        if failed and argv and not state.bench.failed:
            state.bench.error = (f"{state.spec.name!r}: --cleanup {argv[-1]!r} failed "
                                 f"(status {outcome.exit_code}); its runs are kept")

    def _cleanup_all(self) -> None:
        try:
            for state in self.states:
                self._cleanup(state)
        except KeyboardInterrupt:
            self.interrupted = True

    def _decide(self, active: list[_State]) -> None:
        """Stop ``active`` together when precise enough, out of budget, or out of runs."""
        active = [s for s in active if not s.done]
        if not active:
            return
        s = self.settings
        runs = min(st.timed for st in active)
        limit = ("max-runs" if runs >= s.max_runs
                 else "budget" if any(st.spent_s >= s.budget_s for st in active) else None)
        reason = limit
        enough = min(len(st.ok_walls) for st in active) >= max(s.min_runs, 2)
        if not limit and enough and self.clock() >= self._next_check and self._precise(active):
            reason = "precision"
        for state in active:
            self.progress.update_case(state.bench.id, state.timed, state.spent_s, self._half)
            if reason:
                state.done, state.bench.stop_reason = True, reason
                self.progress.finish_case(state.bench.id, reason)

    def _precise(self, active: list[_State]) -> bool:
        """True when every median's and every ratio's CI is within the precision.

        The check costs a few bootstraps (real CPU time, whatever the injected
        clock says), so the next one waits until ``_CHECK_SHARE`` times that
        cost has been spent measuring.
        """
        began = time.perf_counter()
        self._half = max(self.half_widths(active))
        self._next_check = self.clock() + _CHECK_SHARE * (time.perf_counter() - began)
        return self._half <= self.settings.precision

    def half_widths(self, active: list[_State]) -> list[float]:
        """Relative CI half-widths of each median and of each ratio to the reference.

        Uses :func:`perflab.analyze.stats.median_ci` (each run is its own
        process, so one value per group: the ordinary bootstrap) and
        ``block_ratio_ci`` (interleaved runs paired by block), as the table does.
        """
        import numpy as np

        from perflab.analyze import stats

        self._checks += 1
        rng = np.random.default_rng(None if self.settings.seed is None
                                    else [self.settings.seed, self._checks])
        walls = {id(st): [np.asarray(st.ok_walls)] for st in active}
        widths = [stats.median_ci(walls[id(st)], self.settings.confidence, 1000, rng)
                  .relative_half_width for st in active]
        ref = self._reference(active, walls)
        for st in active:
            if st is not ref:
                widths.append(stats.block_ratio_ci(st.ok_walls, st.ok_blocks, ref.ok_walls,
                                                   ref.ok_blocks, self.settings.confidence,
                                                   1000, rng).relative_half_width)
        return widths

    def _reference(self, active: list[_State], walls: dict[int, Any]) -> _State:
        """The --reference command if it is active, else the one with the lowest median."""
        index = self.settings.reference
        if index is not None and self.states[index] in active:
            return self.states[index]
        import numpy as np

        return min(active, key=lambda st: float(np.median(walls[id(st)][0])))
