"""Every column perflab prints is described in plain words in docs/ (the guide's rule).

The columns are read from the code, not from a list kept by hand: every ``Table(...)``
built anywhere in python/perflab is found with ``ast``, and its columns argument is
followed through the names it is built from (``columns = [...]``, ``columns += [...]``,
``columns[i] = ...``, module constants such as ``COLUMNS``, conditional parts, a dict of
alternative headers). A header made by an f-string keeps its fixed words with ``{}`` for
the variable part (``{} × best`` for each metric's ratio), which matches any words in
the docs (``*metric* × best``). So a column added to any table fails this test until
its page says what it means.

A column counts as described when its page has a Markdown table row whose first cell
names it (``| p99 | ... |``; several names in one cell separated by commas or " / "), or
names it in bold in a sentence that says what it is (``Columns: **run** (the id …)``).
Each table-building module is documented on one page, :data:`PAGES`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "perflab"
#: The docs page describing the columns of the tables each module builds.
PAGES = {
    "report/run_table.py": "docs/run.md",  # run's group, staged and threads tables
    "report/cmd_table.py": "docs/cmd.md",
    "report/http_table.py": "docs/http.md",
    "report/http_timeline.py": "docs/http.md",
    "report/http_agents.py": "docs/distributed.md",
    "report/compare_table.py": "docs/compare.md",
    "report/doctor_table.py": "docs/doctor.md",
    "report/fit_table.py": "docs/fit.md",
    "report/history_table.py": "docs/history.md",
    "report/trace_table.py": "docs/trace.md",
    "report/html/sections.py": "docs/history.md",
    "report/html/run_section.py": "docs/history.md",  # perflab report (the HTML page)
    "report/imported.py": "docs/interop.md",  # a pytest-benchmark file without raw data
    "report/server_timing_table.py": "docs/trace.md",  # perflab http: Server-Timing
    "report/http_phases_table.py": "docs/http.md",  # perflab http: request phases
    "report/http_status.py": "docs/http.md",  # perflab http: responses by status
    "report/memory_table.py": "docs/run.md",  # run --memory
    "report/count_table.py": "docs/count.md",  # --count instructions (run, cmd)
    "report/compare_memory_table.py": "docs/compare.md",  # memory compared like time
    "report/profile_table.py": "docs/profile.md",  # --profile, show --profile
    "report/slow_table.py": "docs/profile.md",  # the slowest samples explained
}


def _names(
    node: ast.AST | None, scope: ast.AST, module: ast.AST, seen: frozenset[str] = frozenset()
) -> list[str]:
    """Every header an expression can produce; f-strings' variable parts become ``{}``."""
    if node is None:
        return []
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)]
    if isinstance(node, ast.Dict):  # {"time": "median time per op", …}.get(…): the values
        return [n for v in node.values for n in _names(v, scope, module, seen)]
    if isinstance(node, ast.Name):
        return _assigned(node.id, scope, module, seen)
    if isinstance(node, ast.Subscript):  # COLUMNS[:-1]
        return _names(node.value, scope, module, seen)
    if isinstance(node, ast.Call):  # list(COLUMNS), {…}.get(key, default)
        parts = [n for a in node.args for n in _names(a, scope, module, seen)]
        if isinstance(node.func, ast.Attribute):
            parts += _names(node.func.value, scope, module, seen)
        return parts
    return [
        n
        for child in ast.iter_child_nodes(node)
        if isinstance(child, ast.expr)
        for n in _names(child, scope, module, seen)
    ]


def _assigned(name: str, scope: ast.AST, module: ast.AST, seen: frozenset[str]) -> list[str]:
    """What ``name`` is assigned, added or set an item to, in the function, else the module
    (a loop variable, such as a metric's name, has no words of its own: nothing)."""
    if name in seen:
        return []
    seen = seen | {name}
    for tree in (scope, module):
        found = []
        for node in ast.walk(tree):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = [node.target]
            for target in targets:
                base = target.value if isinstance(target, ast.Subscript) else target
                if isinstance(base, ast.Name) and base.id == name:
                    found += _names(node.value, scope, module, seen)  # type: ignore[attr-defined]
        if found:
            return found
    return []


def printed_columns() -> Iterator[tuple[str, str, str]]:
    """(module path, function, column header) of every table perflab builds."""
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ast.parse(path.read_text())
        for function in ast.walk(module):
            if not isinstance(function, ast.FunctionDef):
                continue
            for call in ast.walk(function):
                if not (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id == "Table"
                ):
                    continue
                columns = (
                    call.args[1]
                    if len(call.args) > 1
                    else next((k.value for k in call.keywords if k.arg == "columns"), None)
                )
                for header in dict.fromkeys(_names(columns, function, module)):
                    yield path.relative_to(PACKAGE).as_posix(), function.name, header


def described(page: Path) -> list[str]:
    """The names in the first cell of every Markdown table row of ``page`` (backticks and
    emphasis dropped; a cell may name several, separated by commas or " / "), and every
    name in bold."""
    text = page.read_text()
    names = [" ".join(m.split()) for m in re.findall(r"\*\*([^*]+)\*\*", text)]
    for line in text.splitlines():
        if not line.startswith("|") or re.match(r"^\|\s*:?-", line):
            continue
        cell = re.sub(r"\*{1,2}([^*]+)\*{1,2}", r"\1", line.split("|")[1].replace("`", ""))
        cell = cell.strip()
        names += [cell, *(p.strip() for p in re.split(r",\s+|\s+/\s+", cell))]
    return names


def _pattern(header: str) -> re.Pattern[str]:
    """A header as a pattern: its ``{}`` parts match any words."""
    return re.compile(".*".join(re.escape(p.strip()) for p in header.split("{}")).strip())


COLUMNS = sorted(set(printed_columns()))


def test_the_code_scan_finds_the_tables() -> None:
    """A guard on the scan: known headers of several kinds are found, conditional and
    f-string ones included."""
    found = {(m, h) for m, _, h in COLUMNS}
    assert {
        ("report/run_table.py", "× baseline{}"),
        ("report/run_table.py", "verdict"),
        ("report/run_table.py", "{} × best"),
        ("report/http_table.py", "p99"),
        ("report/http_table.py", "server CPU/wall"),
        ("report/cmd_table.py", "× reference"),
        ("report/history_table.py", "median time per op"),
        ("report/trace_table.py", "self p99"),
    } <= found
    assert len(COLUMNS) > 100


@pytest.mark.parametrize("module", sorted({m for m, _, _ in COLUMNS}))
def test_every_printed_column_is_described_in_the_docs(module: str) -> None:
    assert module in PAGES, (
        f"python/perflab/{module} builds tables but no docs page is "
        "named for them: add its page to PAGES in "
        "tests/test_columns_documented.py"
    )
    page = ROOT / PAGES[module]
    names = described(page)
    missing = [
        (function, header)
        for m, function, header in COLUMNS
        if m == module and not any(_pattern(header).fullmatch(n) for n in names)
    ]
    assert not missing, "\n".join(
        f"column {header.replace('{}', '…')!r} of {function}() in python/perflab/{module} "
        f"is not described in {PAGES[module]}: add a row `| {header.replace('{}', '*name*')} "
        f"| what it means, in plain words |` to a table of that page"
        for function, header in missing
    )
