"""benchmarks/memory.py, part C: a function that builds 100 MB of bytes and drops them.

Run by ``perflab run --memory`` (as a benchmark) and by ``memray run`` (as a script: one
call), so both tools see the same allocations."""

import perflab


@perflab.bench()
def build_100mb():
    chunks = [b"x" * 1_000_000 for _ in range(100)]
    return len(chunks)


if __name__ == "__main__":
    build_100mb()
