"""Issue 12 §3, property: any mutation of a valid results file of any kind (types, signs,
missing keys, truncation, huge numbers, bad base64) makes show, compare and fit exit 0 or 2,
never 1, never a traceback, within bounded memory.

The commands run in-process through ``perflab.cli.main`` (the real entry point without
the interpreter start), so a few hundred examples take seconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perflab import cli
from tests.reliability.samples import document

KINDS = ("run", "cmd", "http")
VALID = {kind: document(kind) for kind in KINDS}
#: Peak memory any mutated file may add to this process, KiB (ru_maxrss).
MEMORY_BOUND_KIB = 600 * 1024

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 2**53, 2**63, -(2**63), 2**64]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "!!!", "HISTFAAAAA==", "[/]", "\x1b[31m", "-1", "1e999"]),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a JSON document."""
    out = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            out += _paths(child, prefix + (key,))
    elif isinstance(node, list):
        for i, child in enumerate(node[:3]):
            out += _paths(child, prefix + (i,))
    return out


PATHS = {kind: _paths(VALID[kind]) for kind in KINDS}


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    """(kind, file text): a valid document with one to three mutations."""
    kind = draw(st.sampled_from(KINDS))
    doc = json.loads(json.dumps(VALID[kind]))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(PATHS[kind][1:]))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = draw(st.sampled_from(["replace", "delete", "negate", "huge", "base64"]))
            key = path[-1]
            if action == "delete" and isinstance(parent, dict):
                parent.pop(key, None)
            elif action == "negate" and isinstance(parent[key], (int, float)):
                parent[key] = -parent[key] - 1
            elif action == "huge" and isinstance(parent[key], (int, float)):
                parent[key] = parent[key] * 10 ** draw(st.integers(3, 40))
            elif action == "base64" and isinstance(parent[key], str) and len(parent[key]) > 8:
                text = parent[key]
                i = draw(st.integers(0, len(text) - 1))
                parent[key] = (
                    text[:i] + draw(st.sampled_from(["A", "!", "=", "", "AAAA"])) + text[i + 1 :]
                )
            else:
                parent[key] = draw(values)
        except (KeyError, IndexError, TypeError):
            continue
    text = json.dumps(doc)
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]  # truncated file
    return kind, text


def run_cli(*argv: str) -> tuple[int, str]:
    """perflab ARGV in-process: (exit code, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


@settings(
    max_examples=int(os.environ.get("PERFLAB_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(mutated())
def test_mutated_files_exit_0_or_2(tmp_path_factory: Any, case: tuple[str, str]) -> None:
    kind, text = case
    folder = Path(tmp_path_factory.mktemp("mut"))
    path, valid = folder / "m.json", folder / "v.json"
    path.write_text(text)
    valid.write_text(json.dumps(VALID[kind]))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for argv in (["show", str(path)], ["compare", str(valid), str(path)], ["fit", str(path)]):
        code, err = run_cli(*argv)
        assert code in (0, 2), (argv, code, err)
        assert "Traceback" not in err and "internal error" not in err, err
        if code == 2:
            assert [line[:6] for line in err.splitlines()] == ["error:"], err
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < MEMORY_BOUND_KIB
