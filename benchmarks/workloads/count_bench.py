"""Workloads of benchmarks/count.py: a loop whose work is set by a parameter (for the A/A
and the +1% comparisons: ``work=100`` against ``work=101`` does 1% more iterations of the
same body), and a call of about 10 ms on perflab's VM (the cost of counting)."""

import perflab


def _body(i: int) -> int:
    return (i * 7 + 3) % 11


@perflab.bench(params={"work": [100, 101]})
def loop(work: int) -> int:
    """``work`` × 100 iterations of a small arithmetic body."""
    total = 0
    for i in range(work * 100):
        total += _body(i)
    return total


@perflab.bench()
def ten_ms() -> int:
    """About 10 ms of pure Python on perflab's VM (sorting and summing)."""
    total = 0
    for k in range(18):
        data = sorted((i * 7919 + k) % 10007 for i in range(4000))
        total += sum(data[::7])
    return total
