"""The Rust crates' architecture, checked by parsing their sources (nothing is built).

For each crate under ``rust/`` (``perflab-engine``, ``perflab-core``) the module tree is
read from ``mod NAME;`` declarations, starting at ``src/lib.rs``; every source file is one
module (an inline ``mod NAME { ... }`` block, such as ``mod tests``, belongs to the file
it is written in). An edge A → B is any path in A that names B:

* ``use`` declarations, their ``{...}`` groups expanded (``use super::{codec::X, url}``);
* paths in code starting with ``crate::``, ``super::`` or ``self::``, also inside string
  literals that hold only a path (``#[serde(deserialize_with = "crate::duration::f")]``);
* paths whose first segment is a child module the file declares (``runner::run_thread``).

A path is resolved to the deepest module it names (``crate::load::schedule::SplitMix64``
→ ``load::schedule``); ``super`` inside an inline module first leaves that module.
Names from other crates (``std``, ``pyo3``, ``perflab_engine``) are not edges.

The rules:

* no cycle: no module reaches itself through edges. A module also depends on the
  children it declares (``mod frame;``), so a folder depends downward only: its ``mod.rs``
  is the top, and a child that used ``mod.rs``'s own items (``use super::Ctx``) would
  close a cycle; what a parent and its children share goes in a child below them
  (``load/thread.rs``, ``clock/read.rs``, ``server/config.rs``). The one exception is test
  code (a ``#[cfg(test)]`` module, in its own file or inline): Rust lets only a descendant
  see its parent's private items, so a test's ``use super::*`` is not an edge;
* every ``.rs`` file under ``src/`` is reached by a ``mod`` declaration (no dead file);
* every Rust source file (``rust/`` outside ``target/``) has at most :data:`MAX_LINES`
  lines;
* every Rust source file is named in docs/architecture.md: its path relative to its
  crate's ``src/`` in backticks in the crate's section (the paragraph starting
  ``**rust/CRATE/src/**``), or its path from the repository root in backticks anywhere;
  and every ``.rs`` path in a row of a crate's table exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUST = ROOT / "rust"
DOC = ROOT / "docs" / "architecture.md"
CRATES = ("engine", "core")
MAX_LINES = 600

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
#: A ``crate::``/``super::``/``self::`` path in code (segments joined by ``::``).
ROOTED_PATH = re.compile(rf"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:\s*::\s*{IDENT})+)")
#: A bare ``name::name`` path (checked against the file's child modules).
BARE_PATH = re.compile(rf"(?<![A-Za-z0-9_:.])({IDENT}(?:\s*::\s*{IDENT})+)")
#: ``mod name;`` (a file module) and ``mod name {`` (an inline one), any visibility.
MOD_DECL = re.compile(rf"\bmod\s+({IDENT})\s*([;{{])")
USE_DECL = re.compile(r"\buse\s+([^;]+);")


# ---------------------------------------------------------------- lexing


@dataclass
class Source:
    """A Rust file with comments and string/char literals blanked out (same length,
    so offsets still match), and the path-like strings found in its literals."""

    code: str
    string_paths: list[tuple[int, str]] = field(default_factory=list)


def strip(text: str) -> Source:
    """Blank comments (``//``, nested ``/* */``) and literals (strings, raw strings, byte
    strings, chars) out of ``text``, keeping lifetimes (``'a``) and offsets."""
    out = list(text)
    paths: list[tuple[int, str]] = []
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            end = '"' + m.group(1)
            j = text.find(end, m.end())
            j = n if j < 0 else j + len(end)
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            literal = text[i + 1 : j]
            if re.fullmatch(rf"(?:crate|super|self)(?:::{IDENT})+", literal):
                paths.append((i, literal))
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}') or a lifetime / label ('a).
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 2)
                j = n if j < 0 else j + 1
                blank(i, j)
                i = j
            elif i + 2 < n and text[i + 2] == "'":
                blank(i, i + 3)
                i += 3
            else:
                i += 1
        else:
            i += 1
    return Source("".join(out), paths)


Block = tuple[int, int, int, bool]


def is_test_decl(code: str, at: int) -> bool:
    """Whether the ``mod`` declaration at ``at`` is under ``#[cfg(test)]``."""
    before = re.sub(r"\s+", "", code[max(0, at - 80) : at])
    return re.search(r"#\[cfg\(test\)\](pub(\([a-z]+\))?)?$", before) is not None


def inline_depths(code: str) -> list[Block]:
    """(start, end, depth, under ``#[cfg(test)]``) of every inline ``mod NAME { ... }``
    block, by offset."""
    blocks = []
    opens = {
        m.end() - 1: is_test_decl(code, m.start())
        for m in MOD_DECL.finditer(code)
        if m.group(2) == "{"
    }
    stack: list[tuple[int, bool]] = []  # (offset of "{", is an inline module)
    for k, ch in enumerate(code):
        if ch == "{":
            stack.append((k, k in opens))
        elif ch == "}" and stack:
            start, is_mod = stack.pop()
            if is_mod:
                depth = 1 + sum(1 for _, m in stack if m)
                blocks.append((start, k, depth, opens[start]))
    return blocks


def depth_at(blocks: list[Block], offset: int) -> int:
    """How many inline modules enclose ``offset``."""
    return max((d for a, b, d, _ in blocks if a < offset < b), default=0)


def in_test(blocks: list[Block], offset: int) -> bool:
    """Whether ``offset`` is inside an inline ``#[cfg(test)]`` module."""
    return any(t for a, b, _, t in blocks if a < offset < b)


def use_paths(tree: str) -> list[list[str]]:
    """The paths one ``use`` tree names: ``a::{b, c::{self, D}}`` → a::b, a::c, a::c::D."""
    tree = re.sub(r"\s+", "", re.sub(rf"\s+as\s+{IDENT}", "", tree))

    def expand(prefix: list[str], text: str) -> list[list[str]]:
        paths: list[list[str]] = []
        for item in split_top(text):
            if "{" in item:
                head, _, rest = item.partition("{")
                segs = [s for s in head.split("::") if s]
                paths += expand(prefix + segs, rest[: rest.rfind("}")])
            else:
                segs = [s for s in item.split("::") if s and s != "*"]
                if segs == ["self"]:
                    paths.append(prefix)
                elif segs:
                    paths.append(prefix + segs)
                elif prefix:
                    paths.append(prefix)
        return paths

    return expand([], tree)


def split_top(text: str) -> list[str]:
    """``text`` split at commas outside braces."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += (ch == "{") - (ch == "}")
        cur += ch
    parts.append(cur)
    return [p for p in parts if p]


# ---------------------------------------------------------------- the module graph


@dataclass
class Crate:
    """One crate's modules (``crate::a::b`` as ``("a", "b")``, the root as ``()``)."""

    name: str
    src: Path
    files: dict[tuple[str, ...], Path]
    edges: dict[tuple[str, ...], set[tuple[str, ...]]]
    #: Modules declared under ``#[cfg(test)]`` (``mod e2e_tests;``).
    tests: set[tuple[str, ...]] = field(default_factory=set)


def child_dir(path: Path) -> Path:
    """Where a module file's own ``mod NAME;`` files are."""
    return path.parent if path.name in ("lib.rs", "main.rs", "mod.rs") else path.with_suffix("")


def load_crate(name: str) -> Crate:
    """Read a crate's module tree from ``src/lib.rs`` down, then its edges."""
    src = RUST / name / "src"
    files: dict[tuple[str, ...], Path] = {}
    sources: dict[tuple[str, ...], Source] = {}
    tests: set[tuple[str, ...]] = set()
    todo = [((), src / "lib.rs")]
    while todo:
        mod, path = todo.pop()
        files[mod] = path
        sources[mod] = s = strip(path.read_text(encoding="utf-8"))
        blocks = inline_depths(s.code)
        for m in MOD_DECL.finditer(s.code):
            if m.group(2) != ";" or depth_at(blocks, m.start()):
                continue
            base = child_dir(path)
            for cand in (base / f"{m.group(1)}.rs", base / m.group(1) / "mod.rs"):
                if cand.exists():
                    todo.append((mod + (m.group(1),), cand))
                    if is_test_decl(s.code, m.start()) or mod in tests:
                        tests.add(mod + (m.group(1),))
                    break
            else:
                raise AssertionError(f"{path}: `mod {m.group(1)};` has no file")
    edges = {
        mod: graph_edges(mod, module_edges(mod, sources[mod], files), files, tests) for mod in files
    }
    return Crate(name, src, files, edges, tests)


def graph_edges(
    mod: tuple[str, ...],
    named: set[tuple[tuple[str, ...], bool]],
    files: dict[tuple[str, ...], Path],
    tests: set[tuple[str, ...]],
) -> set[tuple[str, ...]]:
    """The edges from ``mod``: the children it declares and every module it names
    (``named``: (module, named from test code)), less an ancestor named from test code
    (see the module doc)."""
    out = {m for m in files if m[:-1] == mod and len(m) == len(mod) + 1}
    for target, from_test in named:
        ancestor = target == mod[: len(target)]
        if not (ancestor and (from_test or mod in tests)):
            out.add(target)
    return out


def resolve(
    mod: tuple[str, ...], segs: list[str], inline: int, files: dict[tuple[str, ...], Path]
) -> tuple[str, ...] | None:
    """The deepest module of the crate that path ``segs``, written in ``mod`` at
    ``inline`` levels of inline modules, names; None for another crate's name."""
    if not segs:
        return None
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("self", "super"):
        ups = 0
        while ups < len(segs) and segs[ups] == "super":
            ups += 1
        rest = segs[ups:] if ups else segs[1:]
        ups = max(0, ups - inline)  # leave the inline modules first
        base = mod[: len(mod) - ups] if ups else mod
    elif mod + (segs[0],) in files and not inline:
        base, rest = mod, segs
    else:
        return None
    target = base
    for seg in rest:
        if target + (seg,) not in files:
            break
        target = target + (seg,)
    return target


def module_edges(
    mod: tuple[str, ...], source: Source, files: dict[tuple[str, ...], Path]
) -> set[tuple[tuple[str, ...], bool]]:
    """(module, named from an inline test module) for every other module ``mod``
    names, its ancestors included."""
    code = source.code
    blocks = inline_depths(code)
    found: list[tuple[int, list[str]]] = []
    for m in USE_DECL.finditer(code):
        found += [(m.start(), p) for p in use_paths(m.group(1))]
    for m in ROOTED_PATH.finditer(code):
        found.append((m.start(), re.sub(r"\s+", "", m.group(1)).split("::")))
    for m in BARE_PATH.finditer(code):
        found.append((m.start(), re.sub(r"\s+", "", m.group(1)).split("::")))
    found += [(at, p.split("::")) for at, p in source.string_paths]
    out = set()
    for at, segs in found:
        target = resolve(mod, segs, depth_at(blocks, at), files)
        if target is not None and target != mod:
            out.add((target, in_test(blocks, at)))
    return out


def find_cycle(edges: dict[tuple[str, ...], set[tuple[str, ...]]]) -> list[tuple[str, ...]]:
    """One cycle of the graph as [a, b, ..., a], or [] when there is none."""
    state: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []

    def visit(node: tuple[str, ...]) -> list[tuple[str, ...]]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def show(mod: tuple[str, ...]) -> str:
    return "::".join(("crate",) + mod)


@pytest.fixture(scope="module", params=CRATES)
def crate(request: pytest.FixtureRequest) -> Crate:
    return load_crate(request.param)


def rust_sources() -> list[Path]:
    """Every Rust source file of the repository (``rust/`` outside ``target/``)."""
    return sorted(p for p in RUST.rglob("*.rs") if "target" not in p.relative_to(RUST).parts)


# ---------------------------------------------------------------- the parser's own checks


def test_parser_finds_known_edges() -> None:
    """Edges the sources are known to hold, one of each kind the parser reads."""
    engine, core = load_crate("engine"), load_crate("core")
    e = engine.edges
    assert ("load", "thread") in e["load", "dispatch"]  # use super::thread::{..}
    assert ("load", "schedule") in e["server", "conn"]  # use crate::load::schedule::X
    assert ("duration",) in e["server", "config"]  # a path in a string: serde(..)
    assert ("sys",) in e["load", "config"]  # crate::sys::f() in code
    assert ("load", "runner") in e["load",]  # a bare child path: use runner::run_thread
    assert ("server",) in e["load", "e2e_tests"]  # use crate::server::{self, ..}
    assert ("clock", "read") in e["clock", "bracket"]  # use super::read::{..}
    assert ("clock", "bracket") in e["clock",]  # a declared child: mod bracket;
    # test code's use of its parent is no edge: use super::* in e2e_tests.rs, and
    # use super::super::calibrate_tsc in bracket.rs's inline #[cfg(test)] mod tests
    assert ("load", "e2e_tests") in engine.tests  # #[cfg(test)] mod e2e_tests;
    assert ("load",) not in e["load", "e2e_tests"]
    assert ("clock",) not in e["clock", "bracket"]
    c = core.edges
    assert ("trace", "frame") in c["trace", "stack"]
    assert ("trace", "span") in c["trace", "block"]
    assert ("convert",) in c["trace",]
    assert ("trace", "call", "x") not in c["trace",]
    # super::super inside an inline `mod tests` climbs from the file, not the block
    assert resolve(("clock", "bracket"), ["super", "super", "calibrate_tsc"], 1, engine.files) == (
        "clock",
    )


def test_parser_expands_use_trees_and_skips_comments_and_strings() -> None:
    assert use_paths("super::{codec::RequestSpec, url::{self, Target as T}, *}") == [
        ["super", "codec", "RequestSpec"],
        ["super", "url"],
        ["super", "url", "Target"],
        ["super"],
    ]
    src = strip(
        'let s = "crate::a::b c"; // use crate::x;\n/* crate::y /* nested */ */ '
        "let c = '\"'; fn f<'a>(x: &'a str) { crate::z::w() }"
    )
    assert "crate::x" not in src.code and "crate::y" not in src.code
    assert "crate::a" not in src.code and "crate::z::w" in src.code and "'a" in src.code
    assert src.string_paths == []  # "crate::a::b c" is text, not a path


def test_a_cycle_is_found_and_named() -> None:
    """The check fails on a cycle, and says where it is."""
    a, b, c = ("load", "dispatch"), ("load", "runner"), ("load", "thread")
    assert find_cycle({a: {c}, b: {a, c}, c: set()}) == []
    assert find_cycle({a: {c}, b: {a, c}, c: {b}}) == [a, c, b, a]
    src = strip("use super::runner::{Ctx, TICK};\nfn f() { super::dispatch::open_loop(); }")
    files = {(): RUST, ("load",): RUST, a: RUST, b: RUST}
    assert module_edges(a, src, files) == {(b, False)}
    # a child using its parent's items closes a cycle with the parent's `mod` line
    up = strip("use super::Ctx;\n#[cfg(test)]\nmod tests {\n    use super::super::Shared;\n}")
    named = module_edges(a, up, files)
    assert named == {(("load",), False), (("load",), True)}
    assert graph_edges(a, named, files, set()) == {("load",)}
    assert graph_edges(a, {(("load",), True)}, files, set()) == set()
    assert graph_edges(a, named, files, {a}) == set()  # a #[cfg(test)] file module
    edges = {m: graph_edges(m, set(), files, set()) for m in files}
    edges[a] |= graph_edges(a, named, files, set())
    assert find_cycle(edges) == [("load",), a, ("load",)]


# ---------------------------------------------------------------- the rules


def test_no_module_cycle(crate: Crate) -> None:
    cycle = find_cycle(crate.edges)
    assert not cycle, (
        f"perflab-{crate.name} has a module cycle: {' -> '.join(map(show, cycle))}; "
        "move what the modules share into a module below both of them"
    )


def test_every_source_file_is_a_module(crate: Crate) -> None:
    reached = set(crate.files.values())
    dead = [p for p in sorted(crate.src.rglob("*.rs")) if p not in reached]
    assert not dead, f"no `mod` declaration reaches {[str(p.relative_to(ROOT)) for p in dead]}"


def test_rust_files_are_at_most_600_lines() -> None:
    sources = rust_sources()
    assert len(sources) > 20
    long = {
        str(p.relative_to(ROOT)): n
        for p in sources
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"split these Rust files (over {MAX_LINES} lines): {long}"


def doc_section(doc: str, crate: str) -> str:
    """The paragraph of docs/architecture.md about ``rust/CRATE/src/``: from its bold
    heading to the next bold heading or section."""
    start = doc.find(f"**rust/{crate}/src/**")
    if start < 0:
        return ""
    nxt = re.compile(r"^(\*\*|#)", re.M).search(doc, start + 2)
    return doc[start : nxt.start() if nxt else len(doc)]


def test_every_rust_file_is_named_in_the_architecture_doc() -> None:
    doc = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`([^`\s]+)`", doc))
    missing = []
    for path in rust_sources():
        rel = path.relative_to(ROOT).as_posix()
        parts = path.relative_to(RUST).parts
        in_section = (
            len(parts) > 2
            and parts[1] == "src"
            and f"`{'/'.join(parts[2:])}`" in doc_section(doc, parts[0])
        )
        if rel not in named and not in_section:
            missing.append(rel)
    assert not missing, (
        f"docs/architecture.md does not name {missing}: add a row with what each holds "
        "to its crate's table"
    )


def test_the_architecture_doc_names_no_missing_rust_file() -> None:
    doc = DOC.read_text(encoding="utf-8")
    stale = []
    for crate in CRATES:
        rows = "\n".join(
            line for line in doc_section(doc, crate).splitlines() if line.startswith("|")
        )
        for rel in re.findall(r"`([^`\s]+\.rs)`", rows):
            if not (RUST / crate / "src" / rel).exists() and not (ROOT / rel).exists():
                stale.append(f"rust/{crate}/src/{rel}")
    assert not stale, f"docs/architecture.md names Rust files that do not exist: {stale}"
