"""The classic workloads as a pyperf Runner script (pyperf's default settings).

    python classic_pyperf.py NAME -o OUT.json
"""

import sys
from pathlib import Path

import pyperf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classic import WORKLOADS  # noqa: E402

if __name__ == "__main__":
    runner = pyperf.Runner()
    runner.argparser.add_argument("workload", choices=sorted(WORKLOADS))
    args = runner.parse_args()
    runner.bench_func(args.workload, WORKLOADS[args.workload])
