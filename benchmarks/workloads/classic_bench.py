"""The classic workloads (benchmarks/workloads/classic.py) as a perflab benchmark file,
one group each, so that every workload stops on its own precision."""

import sys
from pathlib import Path

import perflab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classic import WORKLOADS  # noqa: E402

for _name, _fn in WORKLOADS.items():
    perflab.bench(_fn, name=_name, group=_name)
