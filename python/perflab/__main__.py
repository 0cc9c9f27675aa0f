"""``python -m perflab``: the same entry point as the ``perflab`` console script."""

from perflab.cli import main

raise SystemExit(main())
