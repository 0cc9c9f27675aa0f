"""The architecture's rules, checked on the import graph (docs/architecture.md, "Layers").

Every ``import`` of a perflab module in python/perflab, at module level or inside a
function, is an edge of the graph (parsed with ``ast``; nothing is imported). The rules:

* layers: a module imports only from its own layer or a lower one; ``engines`` and
  ``report`` are side by side and never import each other (report only renders);
* one folder per engine: ``engines/run``, ``engines/cmd`` and ``engines/http`` never
  import each other (what they share sits at ``engines/`` top level);
* report only renders: from ``analyze`` a report module imports data types (classes)
  and constants, never a function that computes (the names in ``RENDER_HELPERS`` word
  or decode, they compute no statistic), and it calls no statistical reduction of its
  own (``np.median``, ``statistics.fmean``, ``values.mean()``: :data:`REDUCTIONS`);
* a command (``perflab.commands.X``) imports no other command (``commands/options.py``,
  the options they share, is no command);
* no cycle anywhere: no module reaches itself through imports;
* no room over :data:`MAX_LINES` lines: no Python or Rust source file outside the tests.

The package's ``__init__`` (the public authoring API, ``perflab.bench``) is exempt from
the layers: it stands above everything, as the door users come in by.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "perflab"
#: Layer of each top-level room; higher layers may import lower ones, never the reverse.
LAYERS = {
    "base": 0,
    "analyze": 1,
    "engines": 2,
    "report": 2,
    "history": 2,
    "commands": 3,
    "pytest_plugin": 3,
    "entry": 4,
    "api": 4,
}
#: Rooms of the same layer that must not import each other.
APART = {("engines", "report"), ("report", "engines")}
#: The engines' own folders under ``engines/``: none imports another.
ENGINES = ("run", "cmd", "http")
ENTRY = {"perflab.cli", "perflab.__main__"}
#: Edges still to be removed (each with the reason it is still there); empty when the
#: architecture holds everywhere.
PENDING: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every perflab module (and its native core, which has no source here) by name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str:
    """The module ``name`` refers to: itself, or the package holding a name imported
    from it (``from perflab.analyze import stats`` → perflab.analyze.stats)."""
    return name if name in known or name == "perflab._core" else name.rpartition(".")[0]


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported perflab module, line) for every import in the module's source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "perflab":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != "perflab":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                yield (full if full in known or full == "perflab._core" else base), node.lineno


def graph(pending: bool = False) -> dict[str, dict[str, int]]:
    """module → {imported module: first line}, less the :data:`PENDING` edges unless
    ``pending``."""
    known = modules()
    out: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        edges: dict[str, int] = {}
        for target, line in imports(name, path, known):
            target = _resolve(target, known)
            if target != name and (pending or (name, target) not in PENDING):
                edges.setdefault(target, line)
        out[name] = edges
    return out


def room(module: str) -> str:
    """analyze, engines, report, commands, entry, or base (everything else)."""
    if module in ENTRY:
        return "entry"
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in LAYERS else "base"


GRAPH = graph()


def test_the_graph_sees_the_rooms() -> None:
    """A guard on the parser: known edges are found, lazy imports included."""
    assert "perflab.analyze.stats" in GRAPH["perflab.analyze.run.summary"]
    assert "perflab.report.console" in GRAPH["perflab.commands.doctor"]  # inside a function
    assert {room(m) for m in GRAPH} == set(LAYERS)


def test_every_pending_edge_is_still_there() -> None:
    """PENDING only lists edges the code still has: one removed leaves the list."""
    everything = graph(pending=True)
    gone = [f"{a} → {b}" for a, b in sorted(PENDING) if b not in everything.get(a, {})]
    assert not gone, "remove from PENDING: " + ", ".join(gone)


def test_imports_never_run_up_a_layer() -> None:
    wrong = []
    for module, edges in GRAPH.items():
        if module == "perflab":
            continue
        for target, line in edges.items():
            if target == "perflab":  # __version__ and the like
                continue
            a, b = room(module), room(target)
            if LAYERS[b] > LAYERS[a] or (a, b) in APART:
                wrong.append(f"{module}:{line} ({a}) imports {target} ({b})")
    assert not wrong, "\n".join(wrong)


def test_report_imports_nothing_from_engines() -> None:
    wrong = [
        f"{m} imports {t}"
        for m, edges in GRAPH.items()
        if room(m) == "report"
        for t in edges
        if room(t) == "engines"
    ]
    assert not wrong


def engine(module: str) -> str | None:
    """run, cmd or http for a module of ``perflab.engines.<engine>``; None otherwise."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "engines" and parts[2] in ENGINES:
        return parts[2]
    return None


def test_no_arrow_between_engines() -> None:
    """engines/run, engines/cmd and engines/http import nothing from each other."""
    assert {engine(m) for m in GRAPH} >= set(ENGINES)  # a guard: the folders are found
    wrong = [
        f"{m}:{line} ({engine(m)}) imports {t} ({engine(t)})"
        for m, edges in GRAPH.items()
        if engine(m)
        for t, line in edges.items()
        if engine(t) and engine(t) != engine(m)
    ]
    assert not wrong, "move what two engines share to engines/:\n" + "\n".join(wrong)


#: What report/ may take from analyze besides data types (classes) and constants: helpers
#: that compute no statistic, each with the reason. A module named here is allowed whole.
RENDER_HELPERS = {
    "perflab.analyze.fit.models.words": "numbers and counts in words (the fit tables' format)",
    "perflab.analyze.hdr.decode_histogram": "reads a saved HdrHistogram's counts to draw them",
    "perflab.analyze.cmd.timed_runs": "which runs of a command are timed: the charts draw "
    "the runs the statistics counted",
    "perflab.analyze.run.summary.timing_groups": "the samples a benchmark's statistics counted, "
    "in seconds per op: the run charts draw them",
    "perflab.analyze.http_slo.slo_text": "the SLO in words",
    "perflab.analyze.compare.http.step_label": "a step's name in ids",
    "perflab.analyze.fit.fits.series_record": "a fitted series' JSON form, saved in the document",
}
#: report → analyze calls that still compute, each with the reason it is still there;
#: empty when report/ only renders everywhere.
PENDING_COMPUTING: dict[tuple[str, str], str] = {}


def _bound(module: str, name: str, known: dict[str, Path], depth: int = 0) -> str:
    """What ``name`` is in ``module``: "module", "class", "function", "value" (an
    assignment: a constant), following re-exports (``from x import name``); "unknown"
    when it cannot be found."""
    if f"{module}.{name}" in known:
        return "module"
    if module not in known or depth > 5:
        return "unknown"
    for node in ast.parse(known[module].read_text()).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return "class"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return "function"
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n for t in targets for n in ast.walk(t)]  # ``A, B = …`` too
            if any(isinstance(n, ast.Name) and n.id == name for n in names):
                return "value"
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _bound(node.module, alias.name, known, depth + 1)
    return "unknown"


def _report_takes_from_analyze() -> Iterator[tuple[str, int, str, str]]:
    """(report module, line, analyze name, what it is) for every name a report module
    imports from analyze (a whole module: the name is the module, "module")."""
    known = modules()
    for module, path in known.items():
        if room(module) != "report":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("perflab.analyze"):
                        yield module, node.lineno, alias.name, "module"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "perflab.analyze"
            ):
                for alias in node.names:
                    what = _bound(node.module, alias.name, known)  # type: ignore[arg-type]
                    yield module, node.lineno, f"{node.module}.{alias.name}", what


def test_report_takes_data_types_from_analyze_not_its_computations() -> None:
    """report/ only renders: from analyze it imports data types (classes) and constants;
    a function or a whole module only when :data:`RENDER_HELPERS` names it (it computes
    no statistic) or :data:`PENDING_COMPUTING` lists the call still to move. The figures a
    report shows are computed before it is called (perflab.analyze.results_figures)."""
    wrong, seen = [], set()
    for module, line, name, what in _report_takes_from_analyze():
        if what in ("class", "value"):
            continue
        allowed = name in RENDER_HELPERS or name.rpartition(".")[0] in RENDER_HELPERS
        seen.add((module, name))
        if not allowed and (module, name) not in PENDING_COMPUTING:
            wrong.append(f"{module}:{line} imports {name} ({what})")
    assert not wrong, "compute it in analyze and pass the result:\n" + "\n".join(wrong)
    gone = [f"{m} → {n}" for m, n in PENDING_COMPUTING if (m, n) not in seen]
    assert not gone, "remove from PENDING_COMPUTING: " + ", ".join(gone)


def test_the_rule_on_report_sees_what_it_checks() -> None:
    """A guard on the parser: a class, a constant, a function and a re-export are told
    apart."""
    known = modules()
    assert _bound("perflab.analyze.http", "Sweep", known) == "class"
    assert _bound("perflab.analyze.http", "ENGINE_BUSY", known) == "value"
    assert _bound("perflab.analyze.http", "SATURATED", known) == "value"  # A, B = …
    assert _bound("perflab.analyze.http", "summarize_results", known) == "function"
    assert _bound("perflab.analyze.fit.models", "BreakEven", known) == "class"
    assert _bound("perflab.analyze", "stats", known) == "module"


#: Reductions of many values to one figure (numpy's, the statistics module's, an array's
#: own method): report/ calls none of them, under any receiver or name. ``sqrt`` too: a
#: spread worked out by hand (the .hgrm's StdDeviation once was, in report/).
REDUCTIONS = {
    "median",
    "mean",
    "average",
    "percentile",
    "quantile",
    "std",
    "var",
    "nanmedian",
    "nanmean",
    "nanpercentile",
    "nanquantile",
    "nanstd",
    "nanvar",
    "fmean",
    "geometric_mean",
    "harmonic_mean",
    "median_low",
    "median_high",
    "stdev",
    "pstdev",
    "variance",
    "pvariance",
    "sqrt",
}


def reductions(source: str) -> list[str]:
    """ "line: call" for every call in ``source`` whose function is named in
    :data:`REDUCTIONS` (``np.median(x)``, ``x.std()``, ``fmean(x)`` after ``from
    statistics import fmean``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
            if name in REDUCTIONS:
                found.append(f"{node.lineno}: {ast.unparse(func)}")
    return found


def test_report_reduces_no_values_itself() -> None:
    """report/ only renders: a median, mean, percentile or spread it shows is computed in
    analyze (a summary's field) and passed in, as the run chart's per-process medians are
    (``Summary.process_medians_s``)."""
    wrong = [
        f"{module}:{call}"
        for module, path in modules().items()
        if room(module) == "report"
        for call in reductions(path.read_text())
    ]
    assert not wrong, "compute it in analyze and pass the result:\n" + "\n".join(wrong)


def test_the_reduction_rule_sees_what_it_checks() -> None:
    """A guard on the parser: a module's, an array's and a bare imported reduction are
    found; a median read from a summary is not a call."""
    source = (
        "import numpy as np\nfrom statistics import fmean\na = np.median(x)\n"
        "b = x.std(ddof=1)\nc = fmean(x)\nd = summary.median_s\ne = np.cumsum(x)\n"
        "f = np.sqrt(np.sum(c * (v - m) ** 2) / n)\n"
    )
    assert reductions(source) == ["3: np.median", "4: x.std", "5: fmean", "8: np.sqrt"]


#: Modules of ``commands/`` that are no command: the options and parsers they share.
COMMANDS_SHARED = {"perflab.commands", "perflab.commands.options", "perflab.commands.profiling"}


def test_commands_import_no_other_command() -> None:
    """A command imports the shared rooms and its own options (``<command>_args``) only."""
    wrong = [
        f"{m}:{line} imports {t}"
        for m, edges in GRAPH.items()
        if room(m) == "commands"
        for t, line in edges.items()
        if room(t) == "commands" and t not in COMMANDS_SHARED and t != f"{m}_args"
    ]
    assert not wrong, "\n".join(wrong)


def _cycle_from(start: str) -> list[str] | None:
    """A path start → … → start through the graph, or None (depth-first)."""
    stack: list[tuple[str, Iterator[str]]] = [(start, iter(GRAPH.get(start, ())))]
    path, seen = [start], {start}
    while stack:
        node, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            path.pop()
            continue
        if child == start:
            return [*path, start]
        if child not in seen and child in GRAPH:
            seen.add(child)
            path.append(child)
            stack.append((child, iter(GRAPH[child])))
    return None


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_import_cycle(module: str) -> None:
    cycle = _cycle_from(module)
    assert cycle is None, " → ".join(cycle or [])


ROOT = PACKAGE.parents[1]
#: The longest a source file may grow before it is split by concept.
MAX_LINES = 600


def _sources() -> Iterator[Path]:
    """Python and Rust sources outside tests: python/, rust/*/src, benchmarks/."""
    yield from PACKAGE.rglob("*.py")
    yield from (ROOT / "benchmarks").rglob("*.py")
    yield from (p for p in (ROOT / "rust").glob("*/src/**/*.rs") if "test" not in p.stem)


ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _holds_code(path: Path) -> bool:
    """False for a package's ``__init__.py`` that is only a docstring."""
    body = ast.parse(path.read_text()).body
    return not all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body)


def test_every_python_source_is_named_in_the_architecture() -> None:
    """docs/architecture.md names every Python source file by its path under
    python/perflab (``engines/run/worker.py``, in backquotes); a package's
    ``__init__.py`` too when it holds more than a docstring. A newcomer finds every
    room on the map, and a new room is added to it."""
    text = ARCHITECTURE.read_text()
    names = [
        str(p.relative_to(PACKAGE))
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.name != "__init__.py" or _holds_code(p)
    ]
    assert len(names) > 100  # a guard: the sources are found
    missing = [n for n in names if f"`{n}`" not in text]
    assert not missing, "name these in docs/architecture.md: " + ", ".join(missing)


def test_no_room_over_600_lines() -> None:
    assert sum(1 for _ in _sources()) > 50  # a guard: the sources are found
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in _sources()
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, "split by concept: " + ", ".join(long)
