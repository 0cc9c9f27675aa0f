"""The examples' servers (memcached, redis-server): present, or a skip that says why."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "examples"))


def need_server(binary: str) -> None:
    """Skip when ``binary`` is missing and can't be installed here (not root); as root the
    Makefile's system-deps installs it, so a missing one is a failure, not a skip."""
    if shutil.which(binary) or os.access(f"/usr/bin/{binary}", os.X_OK):
        return
    if os.geteuid() == 0:
        pytest.fail(
            f"{binary} is missing although this is root: `make system-deps` installs "
            "it (did the install fail?)"
        )
    pytest.skip(
        f"{binary} is not installed and this is not root, so it can't be installed "
        "(sudo apt-get install memcached redis-server)"
    )
