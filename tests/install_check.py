"""Check an installed perflab from outside the repository (``make test-install``).

Run with the fresh venv's Python, in a folder outside the checkout, with the path of the
wheel ``pip wheel .`` built. Exits 1 with a message on the first thing that is wrong.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path


def fail(message: str) -> None:
    sys.stderr.write(f"install check: {message}\n")
    raise SystemExit(1)


def main() -> None:
    perflab = Path(sys.executable).parent / "perflab"
    import perflab as package

    if "site-packages" not in package.__file__:
        fail(f"perflab imported from {package.__file__}, not from the venv")
    version = subprocess.run([perflab, "--version"], capture_output=True, text=True)
    if version.returncode or not version.stdout.startswith("perflab "):
        fail(f"perflab --version: {version.stdout}{version.stderr}")
    run = subprocess.run(
        [perflab, "cmd", "true", "-r", "3", "--quiet", "--json", "r.json"],
        capture_output=True,
        text=True,
    )
    if run.returncode or "true" not in run.stdout:
        fail(f"perflab cmd: {run.stdout}{run.stderr}")
    if json.loads(Path("r.json").read_text())["kind"] != "cmd":
        fail("perflab cmd wrote no results file")
    shown = subprocess.run(
        [perflab, "show", "r.json", "--format", "csv"], capture_output=True, text=True
    )
    if shown.returncode or not shown.stdout.startswith("id,"):
        fail(f"perflab show: {shown.stdout}{shown.stderr}")
    wheels = sys.argv[1:]
    if len(wheels) != 1:
        fail(f"expected one wheel from pip wheel ., got {wheels}")
    names = zipfile.ZipFile(wheels[0]).namelist()
    for needed in ("perflab/_core", "perflab/cli.py", "perflab/schemas/"):
        if not any(n.startswith(needed) for n in names):
            fail(f"the wheel has no {needed}")
    cached = [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    if cached:  # the checkout's bytecode (make test compiles it) stays out of the wheel
        fail(f"the wheel holds bytecode: {cached[:3]}")
    print(f"install check: ok ({version.stdout.strip()}, wheel {Path(wheels[0]).name})")


if __name__ == "__main__":
    main()
