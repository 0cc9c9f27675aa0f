"""A cache put/get workload: dict, functools.lru_cache, cachetools, memcached and Redis.

Every cache first holds n keys (the setup fills it, untimed); then each timed
call does one put and one get (ops=2, so tables show time per operation):

    put   overwrite key i mod n with a Northwind row (JSON bytes, 43–894 B, mean 173 B)
    get   read key (i × 2654435761) mod n: a scattered key, so large caches miss the
          CPU caches as a real lookup would

functools.lru_cache has no put: its "put" calls the cached function with a key it
has never seen (a miss that loads the row and evicts the least recently used
entry) and its "get" a key among the last n loaded (a hit unless a get moved an
older key ahead of it).

memcached (through pymemcache) and Redis (through redis-py) run as real servers
on free loopback ports: importing this file starts them unless PERFLAB_MEMCACHED /
PERFLAB_REDIS already name running ones (perflab's worker processes inherit
those), and they stop when the process that started them exits, also on Ctrl-C,
a failure or SIGKILL (see loopback_servers.py). `make bench-deps` installs them.

Columns beyond time: "memory/key" is the cache's resident memory per key: the
growth of this process's RSS while the setup filled the cache (in-process
caches), or of the server's RSS (memcached, Redis), divided by n. Each case runs
serially (1 thread) and from 8 threads (threads mode).

    python examples/cache.py --quick          # n = 1,000 only; starts and stops the servers
    python examples/cache.py --json cache.json --budget 20s
    PERFLAB_CACHE_SIZES=1000,100000 perflab run examples/cache.py

examples/cache.md reads the results.
"""

from __future__ import annotations

import abc
import functools
import gc
import itertools
import os
import sys
import threading
from pathlib import Path
from typing import Any

import perflab

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback_servers as servers  # noqa: E402
from northwind import json_rows as payloads  # noqa: E402

#: the full set of sizes; PERFLAB_CACHE_SIZES overrides it (--quick: 1,000 only)
SIZES = [1_000, 10_000, 100_000, 1_000_000]
QUICK_SIZES = [1_000]
THREADS = [1, 8]
#: Knuth's multiplicative hash constant: scatters the get keys over the key space
SCATTER = 2654435761
#: keys per round trip while a network cache is filled
FILL_BATCH = 1_000


def sizes() -> list[int]:
    """Cache sizes to run: PERFLAB_CACHE_SIZES (comma-separated) or SIZES.

    Raises:
        ValueError: a size that is not a positive whole number.
    """
    text = os.environ.get("PERFLAB_CACHE_SIZES")
    values = [int(v) for v in text.split(",")] if text else SIZES
    if any(v < 1 for v in values):
        raise ValueError(f"PERFLAB_CACHE_SIZES={text!r}: sizes must be positive")
    return values


def _key(n: int, k: int) -> bytes:
    """Key k of the n-key cache; the n prefix keeps each size's keys apart on a server."""
    return b"%d:%d" % (n, k)


class Cache(abc.ABC):
    """A cache holding n keys, with one put and one get per call of :func:`put_get`.

    Attributes:
        n: keys held.
        memory_bytes: RSS growth while the setup filled the cache, bytes (None if
            not measured).
        counter: call counter shared by the threads (``next`` on it is atomic).
    """

    name = ""

    def __init__(self, n: int) -> None:
        self.n = n
        self.values = payloads()
        self.counter = itertools.count()
        self.memory_bytes: float | None = None

    @abc.abstractmethod
    def put(self, i: int) -> None:
        """The i-th call's put. Subclasses implement it."""

    @abc.abstractmethod
    def get(self, i: int) -> Any:
        """The i-th call's get. Subclasses implement it."""

    @abc.abstractmethod
    def fill(self) -> None:
        """Put keys 0…n-1 with distinct value objects (what a real cache holds)."""

    def filled(self) -> Cache:
        """Fill the cache, measuring this process's RSS growth; returns self."""
        gc.collect()
        before = servers.rss_bytes(os.getpid())
        self.fill()
        gc.collect()
        after = servers.rss_bytes(os.getpid())
        if before is not None and after is not None:
            self.memory_bytes = float(after - before)
        return self


class DictCache(Cache):
    """A plain dict: no eviction, no locking (dict operations are atomic under the GIL)."""

    name = "dict"

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.data: dict[bytes, bytes] = {}

    def fill(self) -> None:  # noqa: D102
        r = len(self.values)
        for k in range(self.n):
            self.data[_key(self.n, k)] = b"%d|" % k + self.values[k % r]

    def put(self, i: int) -> None:  # noqa: D102
        self.data[_key(self.n, i % self.n)] = self.values[i % len(self.values)]

    def get(self, i: int) -> Any:  # noqa: D102
        return self.data.get(_key(self.n, i * SCATTER % self.n))


class LruCacheCache(Cache):
    """functools.lru_cache(maxsize=n) around a loader: put = a miss, get = a hit (mostly)."""

    name = "lru_cache"

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.load = functools.lru_cache(maxsize=n)(self._load)

    def _load(self, key: bytes) -> bytes:
        k = int(key.split(b":")[1])
        return b"%d|" % k + self.values[k % len(self.values)]

    def fill(self) -> None:  # noqa: D102
        for k in range(self.n):
            self.load(_key(self.n, k))

    def put(self, i: int) -> None:  # noqa: D102
        self.load(_key(self.n, self.n + i))  # never seen: a miss that evicts the LRU key

    def get(self, i: int) -> Any:  # noqa: D102
        # the last n keys loaded are i+1 … n+i; pick one of them, scattered
        return self.load(_key(self.n, i + 1 + i * SCATTER % self.n))


class CachetoolsCache(Cache):
    """cachetools.LRUCache(maxsize=n) behind a lock (cachetools' caches are not
    thread-safe; its documentation asks for a lock when threads share one)."""

    name = "cachetools"

    def __init__(self, n: int) -> None:
        import cachetools

        super().__init__(n)
        self.data = cachetools.LRUCache(maxsize=n)
        self.lock = threading.Lock()

    def fill(self) -> None:  # noqa: D102
        r = len(self.values)
        for k in range(self.n):
            self.data[_key(self.n, k)] = b"%d|" % k + self.values[k % r]

    def put(self, i: int) -> None:  # noqa: D102
        with self.lock:
            self.data[_key(self.n, i % self.n)] = self.values[i % len(self.values)]

    def get(self, i: int) -> Any:  # noqa: D102
        with self.lock:
            return self.data.get(_key(self.n, i * SCATTER % self.n))


class ServerCache(Cache, abc.ABC):
    """A cache server: filled once per server and size (a marker key says so), its memory
    the server's RSS growth during that fill (kept on the server for later processes)."""

    kind = ""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.server = servers.ensure(self.kind)
        self.client = self._connect()

    @abc.abstractmethod
    def _connect(self) -> Any:
        """A client connected to this kind's loopback server."""

    @abc.abstractmethod
    def _set_many(self, items: dict[bytes, bytes]) -> None:
        """Store every key → value of ``items`` on the server (one batch)."""

    @abc.abstractmethod
    def _read(self, key: bytes) -> bytes | None:
        """The value stored under ``key``, None when it is missing."""

    def filled(self) -> Cache:
        """Fill the server unless this size is there already; memory from its RSS."""
        marker = b"filled:%d" % self.n
        known = self._read(marker)
        if known is None:
            before = servers.rss_bytes(self.server.pid)
            self.fill()
            after = servers.rss_bytes(self.server.pid)
            grown = after - before if before is not None and after is not None else -1
            self._set_many({marker: b"%d" % grown})
            known = b"%d" % grown
        self.memory_bytes = float(known) if int(known) >= 0 else None
        return self

    def fill(self) -> None:  # noqa: D102
        r = len(self.values)
        for start in range(0, self.n, FILL_BATCH):
            self._set_many(
                {
                    _key(self.n, k): b"%d|" % k + self.values[k % r]
                    for k in range(start, min(start + FILL_BATCH, self.n))
                }
            )


class MemcachedCache(ServerCache):
    """memcached through pymemcache's PooledClient (one connection per thread)."""

    name = kind = "memcached"

    def _connect(self) -> Any:
        from pymemcache.client.base import PooledClient

        return PooledClient(
            (self.server.host, self.server.port),
            max_pool_size=max(THREADS),
            connect_timeout=5,
            timeout=10,
            no_delay=True,
        )

    def _set_many(self, items: dict[bytes, bytes]) -> None:
        failed = self.client.set_many(items, noreply=False)
        if failed:
            raise RuntimeError(f"memcached refused {len(failed)} keys (out of memory?)")

    def _read(self, key: bytes) -> bytes | None:
        return self.client.get(key)

    def put(self, i: int) -> None:  # noqa: D102
        self.client.set(_key(self.n, i % self.n), self.values[i % len(self.values)], noreply=False)

    def get(self, i: int) -> Any:  # noqa: D102
        return self.client.get(_key(self.n, i * SCATTER % self.n))


class RedisCache(ServerCache):
    """Redis through redis-py (a thread-safe connection pool)."""

    name = kind = "redis"

    def _connect(self) -> Any:
        import redis

        return redis.Redis(host=self.server.host, port=self.server.port, socket_timeout=10)

    def _set_many(self, items: dict[bytes, bytes]) -> None:
        self.client.mset(items)

    def _read(self, key: bytes) -> bytes | None:
        return self.client.get(key)

    def put(self, i: int) -> None:  # noqa: D102
        self.client.set(_key(self.n, i % self.n), self.values[i % len(self.values)])

    def get(self, i: int) -> Any:  # noqa: D102
        return self.client.get(_key(self.n, i * SCATTER % self.n))


def put_get(cache: Cache, n: int) -> Cache:
    """The timed call: one put and one get (2 operations); returns the cache for the metrics."""
    i = next(cache.counter)
    cache.put(i)
    cache.get(i)
    return cache


def _installed(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        print(
            f"note: {module} not installed; pip install {module} (make bench-deps) to include it",
            file=sys.stderr,
        )
        return False
    return True


def _register() -> None:
    """One group per size, five caches each, serial and on 8 threads."""
    impls: list[type[Cache]] = [DictCache, LruCacheCache]
    impls += [CachetoolsCache] if _installed("cachetools") else []
    for cls, module in ((MemcachedCache, "pymemcache"), (RedisCache, "redis")):
        if not _installed(module):
            continue
        try:
            servers.ensure(cls.kind)
        except servers.ServerError as exc:
            print(f"note: {cls.kind} left out: {exc}", file=sys.stderr)
            continue
        impls.append(cls)
    for n in sizes():
        for cls in impls:
            perflab.bench(
                put_get,
                name=cls.name,
                group=f"cache n={n:,}",
                params={"n": [n]},
                setup=functools.partial(_setup, cls),
                threads=THREADS,
                baseline=cls is DictCache,
                ops=2,
            )


def _setup(cls: type[Cache], n: int) -> Cache:
    return cls(n).filled()


_register()


@perflab.metric(name="memory/key", unit="B")
def memory_per_key(cache: Any) -> float | None:
    """Resident memory per key: RSS growth while the cache was filled / n, bytes."""
    if not isinstance(cache, Cache) or cache.memory_bytes is None:
        return None
    return cache.memory_bytes / cache.n


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--quick" in argv:
        argv.remove("--quick")
        os.environ["PERFLAB_CACHE_SIZES"] = ",".join(map(str, QUICK_SIZES))
    from perflab.cli import main

    try:
        code = main(["run", __file__, *argv])
    finally:
        servers.stop_all()
    sys.exit(code)
