"""The authoring API (``perflab.bench``, ``perflab.metric``) and benchmark discovery.

A benchmark file registers functions with decorators; :func:`load_file`
imports it in a fresh namespace and returns the registered specs, and
:func:`expand` turns specs into cases (one per parameter combination).
This module must stay light: worker processes import it at start-up.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import itertools
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import BenchFileError, UsageError

_JSON_SCALARS = (int, float, str, bool, type(None))


@dataclass
class BenchSpec:
    """A registered benchmark function.

    Attributes:
        func: the function to time; called as ``func(*setup_result, **params)``.
        name: display name (default: the function's name).
        group: benchmarks in one group are compared and run interleaved.
        stage: a column of a staged group (e.g. "serialize"/"deserialize").
        setup: called once per process, untimed; its return value is passed
            as the first positional argument (``None``: no argument).
        params: parameter name → list of values; every combination is a case.
        baseline: the group's reference for the "× baseline" column.
        threads: thread counts for threads mode, or None.
        ops: operations one call performs: a number, or the name of a param whose
            value is the number; None is 1.
    """

    func: Callable[..., Any]
    name: str
    group: str
    stage: str | None = None
    setup: Callable[..., Any] | None = None
    params: dict[str, list[Any]] = field(default_factory=dict)
    baseline: bool = False
    threads: list[int] | None = None
    ops: int | str | None = None


@dataclass
class MetricSpec:
    """An extra metric computed from a benchmark's return value.

    Attributes:
        func: ``func(result) -> number | None``; None means "not applicable".
        name: column name, e.g. "payload".
        unit: unit of the value, e.g. "B" for bytes.
        group: apply to benchmarks of this group ("" for all).
        stage: apply only to this stage, or to all when None.
        lower_is_better: direction used by the metric's "× best" column.
    """

    func: Callable[[Any], float | None]
    name: str
    unit: str = ""
    group: str = ""
    stage: str | None = None
    lower_is_better: bool = True


@dataclass
class Case:
    """One measurable case: a spec with fixed parameter values.

    Attributes:
        spec: the benchmark.
        params: this case's parameter values.
        threads: this case's thread count in threads mode, else None.
        index: position of the spec in the file (how workers find it again).
    """

    spec: BenchSpec
    params: dict[str, Any]
    index: int
    threads: int | None = None

    @property
    def id(self) -> str:
        """``group/name[stage](k=v)@Nt``: the same id as :attr:`perflab.model.Benchmark.id`."""
        return self.to_benchmark().id

    def to_benchmark(self) -> Any:
        """An empty :class:`perflab.model.Benchmark` describing this case."""
        from perflab.model import Benchmark

        return Benchmark(
            name=self.spec.name,
            group=self.spec.group,
            kind="python",
            params=dict(self.params),
            stage=self.spec.stage,
            baseline=self.spec.baseline,
            threads=self.threads,
            ops_per_call=self.ops_per_call,
        )

    @property
    def ops_per_call(self) -> int:
        """Operations one call performs: ``spec.ops``, or the value of the param it names."""
        ops = self.spec.ops
        return 1 if ops is None else int(self.params[ops] if isinstance(ops, str) else ops)


_BENCHES: list[BenchSpec] = []
_METRICS: list[MetricSpec] = []


def bench(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    group: str = "",
    stage: str | None = None,
    setup: Callable[..., Any] | None = None,
    params: dict[str, Iterable[Any]] | None = None,
    baseline: bool = False,
    threads: Iterable[int] | None = None,
    ops: int | str | None = None,
) -> Any:
    """Register a benchmark function; usable as ``@bench`` or ``@bench(...)``.

    Args:
        func: the function (when used without parentheses).
        name: display name; default the function's ``__name__``.
        group: benchmarks in a group run interleaved and share a table.
        stage: put this benchmark in column ``stage`` of a staged table, with
            the other benchmarks of the same group and name (e.g. "serialize").
        setup: untimed, once per process; receives the case's params it names
            as keywords; its return value becomes the first argument.
        params: name → values; one case per combination; values must be JSON
            scalars and the names must be parameters of ``func``.
        baseline: mark as the group's baseline.
        threads: thread counts for threads mode (e.g. [1, 2, 4, 8]).
        ops: the operations one call performs (e.g. 100 messages), or the name of a
            param that holds that number; tables, ``compare`` and ``fit`` then show
            time per operation and operations per second (a call's time / ops).

    Returns:
        The function unchanged (so it stays callable in tests).

    Raises:
        UsageError: a param value that isn't a JSON scalar; ``ops`` that is not a
            whole number ≥ 1 nor the name of one of ``params`` with such values.
    """
    counts = _thread_counts(threads)

    def register(f: Callable[..., Any]) -> Callable[..., Any]:
        # a functools.partial (Runner.bench_func) has no __name__; it comes with a name
        label = name or getattr(f, "__name__", None) or repr(f)
        plist = {k: list(v) for k, v in (params or {}).items()}
        for key, values in plist.items():
            bad = [v for v in values if not isinstance(v, _JSON_SCALARS)]
            if bad or not values:
                raise UsageError(
                    f"benchmark {label!r}: param {key!r} needs a non-empty "
                    f"list of numbers/strings/bools, got {bad or values!r}"
                )
        _check_ops(label, ops, plist)
        _BENCHES.append(BenchSpec(f, label, group, stage, setup, plist, baseline, counts, ops))
        return f

    return register(func) if func is not None else register


#: most threads a benchmark may ask for in threads mode
MAX_THREADS = 1024


def _thread_counts(threads: Iterable[int] | None) -> list[int] | None:
    """``threads`` as a list of thread counts, checked. Raises UsageError."""
    if threads is None:
        return None
    try:
        counts = list(threads)
    except TypeError:
        raise UsageError(
            f"threads={threads!r} must be a list of thread counts, e.g. threads=[1, 2, 4, 8]"
        ) from None
    bad = [
        n
        for n in counts
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_THREADS
    ]
    if bad or not counts:
        raise UsageError(
            f"threads={counts!r}: thread counts must be whole numbers from 1 to "
            f"{MAX_THREADS}, e.g. threads=[1, 2, 4, 8]"
        )
    return counts


def _check_ops(func_name: str, ops: int | str | None, params: dict[str, list[Any]]) -> None:
    """Raise UsageError unless ``ops`` is None, a whole number ≥ 1, or a param name whose
    values are all whole numbers ≥ 1."""

    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    if ops is None or whole(ops):
        return
    if isinstance(ops, str) and ops in params:
        bad = [v for v in params[ops] if not whole(v)]
        if not bad:
            return
        raise UsageError(
            f"benchmark {func_name!r}: ops={ops!r} names a param whose values must "
            f"be whole numbers ≥ 1 (operations per call), got {bad!r}"
        )
    raise UsageError(
        f"benchmark {func_name!r}: ops={ops!r} must be the number of operations "
        "one call performs (a whole number ≥ 1) or the name of a param holding it, "
        f"e.g. ops=100 or ops='batch'; params: {sorted(params)}"
    )


def metric(
    func: Callable[[Any], float | None] | None = None,
    *,
    name: str | None = None,
    unit: str = "",
    group: str = "",
    stage: str | None = None,
    lower_is_better: bool = True,
) -> Any:
    """Register an extra metric computed from each benchmark's return value.

    The metric runs once per worker process on the return value of the cold
    (first) call, outside any timing. Returning None means "not applicable".

    Args:
        func: ``func(result) -> number | None``.
        name: column name; default the function's name.
        unit: unit label ("B" formats as bytes).
        group: only benchmarks of this group ("" = all groups).
        stage: only benchmarks of this stage (None = all).
        lower_is_better: direction for the metric's "× best".

    Returns:
        The function unchanged.
    """

    def register(f: Callable[[Any], float | None]) -> Callable[[Any], float | None]:
        _METRICS.append(MetricSpec(f, name or f.__name__, unit, group, stage, lower_is_better))
        return f

    return register(func) if func is not None else register


@dataclass
class BenchFile:
    """What a benchmark file registered.

    Attributes:
        path: the file.
        benches: registered benchmarks, in file order.
        metrics: registered metrics.
    """

    path: Path
    benches: list[BenchSpec]
    metrics: list[MetricSpec]

    def metrics_for(self, spec: BenchSpec) -> list[MetricSpec]:
        """The metrics that apply to ``spec`` (by group and stage)."""
        return [
            m for m in self.metrics if m.group in ("", spec.group) and m.stage in (None, spec.stage)
        ]


def load_file(path: str | os.PathLike[str], resolve: bool = True) -> BenchFile:
    """Import a benchmark file and collect what it registered.

    The file's folder is put first on ``sys.path`` so it can import its
    neighbours, as ``python FILE`` would — except under the names of the standard
    library and of perflab's own dependencies (rich, numpy, …), which always come
    from the installation, so a ``rich.py`` beside the file can't break perflab.
    ``resolve`` False (the counted worker, whose ``path`` goes through an alias of
    fixed length: :func:`perflab.engines.run.counted.alias_paths`): the folder as given,
    symlinks kept, and the current folder (not on a ``-P`` worker's path) not protected.

    Raises:
        BenchFileError: missing file, syntax error, or an exception at import;
            the message names the file and line.
    """
    from perflab import files

    path = Path(path)
    try:  # a folder, a FIFO, a huge or binary file: one clear line, before importing
        source = files.read_bytes(path, str(path))
        source.decode("utf-8")
    except UsageError as exc:
        raise BenchFileError(str(exc)) from None
    except UnicodeDecodeError:
        raise BenchFileError(
            f"{path}: is not Python source (not UTF-8 text: a binary "
            "file?); pass the path of a .py benchmark file"
        ) from None
    if b"\0" in source:
        raise BenchFileError(
            f"{path}: is not Python source (it holds NUL bytes: a binary "
            "file?); pass the path of a .py benchmark file"
        )
    _BENCHES.clear()
    _METRICS.clear()
    folder = str(path.resolve().parent if resolve else path.absolute().parent)
    sys.path.insert(0, folder)
    _protect_own_imports(folder, os.getcwd() if resolve else folder)
    module_name = "perflab_benchfile_" + path.stem.replace("-", "_")
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise BenchFileError(f"{path}: can't be imported as Python; pass a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    handlers = _signal_handlers()
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise BenchFileError(
            f"{path}:{exc.lineno}: syntax error: {exc.msg}; fix the file and run again"
        ) from None
    except UsageError as exc:
        raise BenchFileError(f"{path}{_user_line(exc, path)}: {exc}") from None
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything at import
        if isinstance(exc, KeyboardInterrupt):
            raise
        line = _user_line(exc, path)
        if isinstance(exc, SystemExit):
            raise BenchFileError(
                f"{path}{line}: calls sys.exit({exc.code!r}) when imported; "
                "perflab imports the file to find its benchmarks, so move "
                "that call under if __name__ == '__main__':"
            ) from None
        raise BenchFileError(
            f"{path}{line}: importing it raised {type(exc).__name__}: {exc}; "
            "fix the file and run again"
        ) from None
    finally:  # a file that sets SIGINT to SIG_IGN must not take Ctrl-C from perflab
        for signum, handler in handlers.items():
            if handler is not None and signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)
    return BenchFile(path, list(_BENCHES), list(_METRICS))


def _signal_handlers() -> dict[int, Any]:
    """perflab's handlers of the stop signals (SIGINT, SIGTERM, SIGHUP), to restore after
    importing a user's file; empty outside the main thread (no handlers can be set)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


class _OwnImports(importlib.abc.MetaPathFinder):
    """Finds perflab's own dependencies (and the standard library) without the user's
    folders, so a ``rich.py`` or ``numpy.py`` beside a benchmark file can't shadow them."""

    def __init__(self) -> None:
        self.user_paths: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        """A spec for a protected top-level name from sys.path less the user's folders."""
        if path is not None or name not in _OWN_TOP_LEVEL and name not in sys.stdlib_module_names:
            return None
        clean = [p for p in sys.path if p not in self.user_paths and p not in ("", ".")]
        return importlib.machinery.PathFinder.find_spec(name, clean, target)


_OWN_TOP_LEVEL = frozenset(
    {
        "perflab",
        "rich",
        "numpy",
        "scipy",
        "matplotlib",
        "markdown_it",
        "mdurl",
        "pygments",
        "fastjsonschema",
    }
)
_OWN_IMPORTS = _OwnImports()


def _protect_own_imports(folder: str, cwd: str) -> None:
    """Keep ``folder`` (and the worker's current folder ``cwd``) from shadowing perflab's
    imports."""
    _OWN_IMPORTS.user_paths.update({folder, cwd})
    if _OWN_IMPORTS not in sys.meta_path:
        sys.meta_path.insert(0, _OWN_IMPORTS)


def _user_line(exc: BaseException, path: Path) -> str:
    """``:LINE`` of the deepest traceback frame inside ``path``, or ""."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if Path(f.filename).resolve() == path.resolve()
    ]
    return f":{frames[-1].lineno}" if frames else ""


def expand(bench_file: BenchFile) -> list[Case]:
    """Cases of every benchmark: one per params combination (and thread count).

    Raises:
        BenchFileError: no benchmarks, a param name the function does not
            take, or two cases with the same id.
    """
    if not bench_file.benches:
        raise BenchFileError(
            f"{bench_file.path}: no benchmarks found; decorate functions with @perflab.bench"
        )
    cases: list[Case] = []
    for index, spec in enumerate(bench_file.benches):
        _check_params(spec)
        names = list(spec.params)
        for values in itertools.product(*(spec.params[n] for n in names)):
            for threads in spec.threads or [None]:
                cases.append(Case(spec, dict(zip(names, values)), index, threads))
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise BenchFileError(
                f"{bench_file.path}: two benchmarks named {case.id!r}; give one of them name=..."
            )
        seen.add(case.id)
    return cases


def _check_params(spec: BenchSpec) -> None:
    """Raise BenchFileError when ``spec.params`` names a parameter ``spec.func`` lacks."""
    sig = inspect.signature(spec.func)
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    unknown = [k for k in spec.params if k not in sig.parameters and not takes_kwargs]
    if unknown:
        accepted = [p for p in sig.parameters]
        raise BenchFileError(
            f"benchmark {spec.name!r}: unknown params {unknown}; "
            f"{spec.func.__name__}() takes {accepted}. Rename the param "
            "or add it to the function's signature"
        )


def call_setup(spec: BenchSpec, params: dict[str, Any]) -> tuple[Any, ...]:
    """Run ``spec.setup`` with the params it names; return the positional args for the call.

    Raises:
        Whatever the setup raises.
    """
    if spec.setup is None:
        return ()
    sig = inspect.signature(spec.setup)
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    kwargs = {k: v for k, v in params.items() if takes_kwargs or k in sig.parameters}
    return (spec.setup(**kwargs),)
