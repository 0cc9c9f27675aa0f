"""``python -m perflab``: the same entry point as the ``perflab`` console script.

``python -m`` puts the current folder first on ``sys.path``; perflab never imports
the user's modules from there (a bench file's folder is handled by ``load_file``),
so it is dropped, and a ``json.py`` or ``rich.py`` in the current folder can't
shadow what perflab imports later.
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from perflab.cli import run  # noqa: E402 - after the sys.path fix above

run()
