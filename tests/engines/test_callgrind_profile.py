"""The per-function instruction profile read from Callgrind's files: name compression,
inclusive call costs skipped, every exclusive cost summed to the file's own total."""

from __future__ import annotations

import subprocess
from pathlib import Path

from perflab.engines.callgrind_profile import function_costs, instruction_stacks
from tests.conftest import debian_tool

SYNTHETIC = """# callgrind format
version: 1
cmd:  ./app --fast
positions: line
events: Ir Dr
ob=(1) /usr/lib/libapp.so
fl=(1) app.c
fn=(1) main
10 5 1
+1 7 0
cfn=(2) work
calls=3 20
11 1000 40
fn=(2)
20 300 4
* 2 0
ob=(2) /lib/libc.so.6
fn=(3) memcpy
0 40 10
ob=(1)
fn=(1)
12 3 0
totals: 357
"""


def test_exclusive_costs_with_compressed_names_and_calls_skipped() -> None:
    command, costs = function_costs(SYNTHETIC)
    assert command == "./app --fast"
    assert costs == {
        ("/usr/lib/libapp.so", "main"): 5 + 7 + 3,
        ("/usr/lib/libapp.so", "work"): 302,
        ("/lib/libc.so.6", "memcpy"): 40,
    }
    assert sum(costs.values()) == 357
    assert function_costs(SYNTHETIC, "Dr")[1][("/usr/lib/libapp.so", "work")] == 4


def test_a_real_programs_functions_add_up_to_callgrinds_total(tmp_path: Path) -> None:
    valgrind = debian_tool("valgrind")
    true = debian_tool("true")
    subprocess.run(
        [valgrind, "--tool=callgrind", f"--callgrind-out-file={tmp_path}/callgrind.out.%p", true],
        capture_output=True,
        check=True,
        timeout=120,
    )
    (path,) = tmp_path.glob("callgrind.out.*")
    text = path.read_text()
    total = int(next(line for line in text.splitlines() if line.startswith("totals:")).split()[1])
    stacks = instruction_stacks(tmp_path)
    assert sum(stacks.values()) == total
    assert all(s.startswith("process: ") and s.count(";") == 1 for s in stacks)
    assert any("(ld-linux" in s for s in stacks)
