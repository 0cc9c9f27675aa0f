"""The README's Python quick start runs as written: its bench.py, then every command of
the quick start that needs no other file than bench.py and the main.json it makes.

issue 14: the first example put the sizes 10 and 1,000 in one group and compared across
them; then `perflab fit main.json --model complexity` failed on it (2 sizes, 3 fit
parameters). Runs are short (--budget and few processes added): this checks that the
example works, not its figures.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from perflab import cli

README = Path(__file__).resolve().parents[2] / "README.md"
FAST = [
    "--budget",
    "0.2s",
    "--min-processes",
    "3",
    "--max-processes",
    "3",
    "--process-time",
    "0.02s",
    "--no-alloc",
    "--quiet",
    "--no-history",
]


def _bench_file(text: str) -> str:
    after = text[text.index("Write `bench.py`") :]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)  # type: ignore[union-attr]


def _commands(text: str) -> list[list[str]]:
    """The README's indented example lines that start with ``perflab``, comment cut."""
    lines = re.findall(r"^    (perflab .*)$", text, re.M)
    return [shlex.split(line.split("  #")[0]) for line in lines]


def test_the_python_quick_start_runs_as_written(
    tmp_path: Path, perflab_cli, capsys, monkeypatch
) -> None:
    text = README.read_text(encoding="utf-8")
    (tmp_path / "bench.py").write_text(_bench_file(text), encoding="utf-8")
    made = perflab_cli("run", "bench.py", "--json", "main.json", *FAST, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    monkeypatch.chdir(tmp_path)
    here = {"bench.py", "main.json"}
    tried = []
    for argv in _commands(text):
        files = {a for a in argv if a.endswith((".py", ".json", ".csv"))}
        if argv[1] == "run" or not files or not files <= here:
            continue
        code = cli.main(argv[1:])
        out = capsys.readouterr()
        assert code == 0, f"{shlex.join(argv)} → exit {code}: {out.err}"
        tried.append(argv[1])
    assert {"show", "fit"} <= set(tried) and tried.count("fit") >= 2
