"""The issue-2 workloads for perflab, the same statements timeit and pyperf time."""

import perflab

D = {i: i for i in range(1000)}
K = 500


@perflab.bench(group="workloads")
def sum_range():
    sum(range(1000))


@perflab.bench(group="workloads")
def dict_get():
    D.get(K)


@perflab.bench(group="workloads")
def empty():
    pass
