"""The classic workloads as a pyperf Runner script (pyperf's default settings).

python classic_pyperf.py NAME -o OUT.json
"""

import sys
from pathlib import Path

import pyperf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classic import WORKLOADS  # noqa: E402


def _worker_args(cmd: list[str], args) -> None:  # noqa: ANN001 - pyperf's callback
    """pyperf starts its workers with its own options: pass the workload on."""
    cmd.append(args.workload)


if __name__ == "__main__":
    runner = pyperf.Runner(add_cmdline_args=_worker_args)
    runner.argparser.add_argument("workload", choices=sorted(WORKLOADS))
    args = runner.parse_args()
    runner.bench_func(args.workload, WORKLOADS[args.workload])
