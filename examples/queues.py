"""Queue throughput in messages per second: in-process queues, multiprocessing and Redis.

Each timed call moves one batch of BATCH messages (Northwind rows as JSON bytes,
43–894 B) from P producers to one consumer and returns when the consumer has
them all, so a call is the end-to-end time of BATCH messages; ``ops=BATCH``
makes the tables show time per message and messages per second. The producers
are started by the setup and wait between calls; at the start of a call each
is released to send its share (BATCH / P). The calling thread is the consumer.

    queue          queue.Queue: producer threads put, the consumer blocks in get
    deque          collections.deque: producer threads append; the consumer pops and,
                   when it finds the deque empty, yields the GIL (time.sleep(0)), as a
                   deque cannot block
    asyncio        asyncio.Queue: P producer tasks and the consumer on one event loop
    multiprocessing  multiprocessing.Queue: producer processes (fork), messages pickled
                   through a pipe by a feeder thread
    redis-list     Redis LPUSH by producer threads, BRPOP by the consumer
    redis-list-tx  each LPUSH in a MULTI/EXEC transaction with an INCR of a sent-counter
                   (the message and the count commit together)
    redis-stream   XADD by the producers, XREAD by the consumer (no acknowledgement)
    redis-stream-ack  XREADGROUP in a consumer group, and XACK of each message (the
                   delivery is recorded; an unacknowledged message would be re-delivered)

Every Redis command is one round trip (no pipelining beyond the transaction), so the
Redis rows measure a message's round trips over loopback. P is 1 and 4 producers
(PERFLAB_QUEUE_PRODUCERS overrides, e.g. "1" for a quick run). Redis runs as a real
server on a free loopback port, started and stopped by this file (loopback_servers.py).

    python examples/queues.py --json queues.json
    PERFLAB_QUEUE_PRODUCERS=1 perflab run examples/queues.py --filter 'queue*'
"""

from __future__ import annotations

import asyncio
import collections
import multiprocessing
import os
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import perflab

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback_servers as servers  # noqa: E402
from northwind import json_rows  # noqa: E402

#: messages per call
BATCH = 100
PRODUCERS = [1, 4]
#: longest a consumer waits for one message before it calls the benchmark broken, s
WAIT_S = 10.0


def producer_counts() -> list[int]:
    """P values to run: PERFLAB_QUEUE_PRODUCERS (comma-separated) or PRODUCERS.

    Raises:
        ValueError: a count that is not a whole number from 1 to BATCH.
    """
    text = os.environ.get("PERFLAB_QUEUE_PRODUCERS")
    counts = [int(v) for v in text.split(",")] if text else PRODUCERS
    if any(not 1 <= c <= BATCH for c in counts):
        raise ValueError(f"PERFLAB_QUEUE_PRODUCERS={text!r}: counts must be 1…{BATCH}")
    return counts


def _shares(producers: int) -> list[int]:
    """BATCH split over the producers, as evenly as whole messages allow."""
    return [BATCH // producers + (i < BATCH % producers) for i in range(producers)]


class ThreadProducers:
    """P daemon threads; each waits for a go, sends its share with ``send``, and waits again.

    ``send(message)`` runs in the producer's thread; ``connect()`` (optional) makes
    per-thread state (e.g. a client) passed to ``send`` as its first argument.
    """

    def __init__(
        self, producers: int, send: Callable[..., None], connect: Callable[[], Any] | None = None
    ) -> None:
        json_rows()  # load the rows here, untimed, not in the first call
        self.goes = [threading.Semaphore(0) for _ in range(producers)]
        for go, share in zip(self.goes, _shares(producers)):
            threading.Thread(
                target=self._loop, args=(go, share, send, connect), daemon=True, name="producer"
            ).start()

    @staticmethod
    def _loop(
        go: threading.Semaphore,
        share: int,
        send: Callable[..., None],
        connect: Callable[[], Any] | None,
    ) -> None:
        rows = json_rows()
        args = (connect(),) if connect else ()
        i = 0
        while True:
            go.acquire()
            for _ in range(share):
                send(*args, rows[i % len(rows)])
                i += 1

    def start_batch(self) -> None:
        """Release every producer for one batch."""
        for go in self.goes:
            go.release()


def _receive_all(get: Callable[[], Any]) -> int:
    """Call ``get`` BATCH times (the consumer); returns the bytes received."""
    size = 0
    for _ in range(BATCH):
        size += len(get())
    return size


# --- in-process queues -----------------------------------------------------------------


def setup_queue(producers: int) -> tuple[queue.Queue[bytes], ThreadProducers]:
    """queue.Queue with P producer threads."""
    q: queue.Queue[bytes] = queue.Queue()
    return q, ThreadProducers(producers, q.put)


def run_queue(state: tuple[queue.Queue[bytes], ThreadProducers], producers: int) -> int:
    """One batch through queue.Queue."""
    q, prod = state
    prod.start_batch()
    return _receive_all(lambda: q.get(timeout=WAIT_S))


def setup_deque(producers: int) -> tuple[collections.deque[bytes], ThreadProducers]:
    """collections.deque with P producer threads."""
    d: collections.deque[bytes] = collections.deque()
    return d, ThreadProducers(producers, d.append)


def run_deque(state: tuple[collections.deque[bytes], ThreadProducers], producers: int) -> int:
    """One batch through a deque; the consumer yields the GIL while it is empty."""
    d, prod = state
    prod.start_batch()
    deadline = time.monotonic() + WAIT_S

    def get() -> bytes:
        while True:
            try:
                return d.popleft()
            except IndexError:
                if time.monotonic() > deadline:
                    raise TimeoutError("deque: no message within WAIT_S") from None
                time.sleep(0)

    return _receive_all(get)


def setup_asyncio(producers: int) -> tuple[asyncio.AbstractEventLoop, int]:
    """An event loop of its own (the producers are tasks made per call)."""
    json_rows()
    return asyncio.new_event_loop(), producers


def run_asyncio(state: tuple[asyncio.AbstractEventLoop, int], producers: int) -> int:
    """One batch through asyncio.Queue: P producer tasks, one consumer coroutine."""
    loop, _ = state
    rows = json_rows()

    async def batch() -> int:
        q: asyncio.Queue[bytes] = asyncio.Queue()

        async def produce(share: int) -> None:
            for i in range(share):
                await q.put(rows[i % len(rows)])

        tasks = [asyncio.ensure_future(produce(s)) for s in _shares(producers)]
        size = 0
        for _ in range(BATCH):
            size += len(await asyncio.wait_for(q.get(), WAIT_S))
        await asyncio.gather(*tasks)
        return size

    return loop.run_until_complete(batch())


def _mp_producer(go: Any, q: Any, share: int) -> None:
    """A producer process: one share per release of ``go``; it ends with its worker."""
    servers.die_with_parent()
    rows = json_rows()
    i = 0
    while True:
        go.acquire()
        for _ in range(share):
            q.put(rows[i % len(rows)])
            i += 1


def setup_multiprocessing(producers: int) -> tuple[Any, list[Any]]:
    """multiprocessing.Queue with P producer processes (fork; daemons end with the worker)."""
    json_rows()  # loaded before the fork: the producers inherit the rows
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    goes = []
    for share in _shares(producers):
        go = ctx.Semaphore(0)
        ctx.Process(target=_mp_producer, args=(go, q, share), daemon=True).start()
        goes.append(go)
    return q, goes


def run_multiprocessing(state: tuple[Any, list[Any]], producers: int) -> int:
    """One batch through multiprocessing.Queue."""
    q, goes = state
    for go in goes:
        go.release()
    return _receive_all(lambda: q.get(timeout=WAIT_S))


# --- Redis -----------------------------------------------------------------------------


class RedisQueue:
    """A Redis list or stream with its own key; ``mode`` picks the commands."""

    def __init__(self, mode: str, producers: int) -> None:
        import redis

        server = servers.ensure("redis")
        self.connect = lambda: redis.Redis(
            host=server.host, port=server.port, socket_timeout=WAIT_S + 5
        )
        self.mode = mode
        self.key = f"perflab:queue:{uuid.uuid4().hex}"
        self.client = self.connect()
        self.last_id = b"0-0"
        if mode == "stream-ack":
            self.client.xgroup_create(self.key, "consumers", id="0", mkstream=True)
        send = {
            "list": self._lpush,
            "list-tx": self._lpush_tx,
            "stream": self._xadd,
            "stream-ack": self._xadd,
        }[mode]
        self.producers = ThreadProducers(producers, send, self.connect)

    def _lpush(self, client: Any, message: bytes) -> None:
        client.lpush(self.key, message)

    def _lpush_tx(self, client: Any, message: bytes) -> None:
        pipe = client.pipeline(transaction=True)  # MULTI … EXEC: both or neither
        pipe.lpush(self.key, message)
        pipe.incr(self.key + ":sent")
        pipe.execute()

    def _xadd(self, client: Any, message: bytes) -> None:
        client.xadd(self.key, {b"m": message}, maxlen=10_000, approximate=True)

    def get(self) -> bytes:
        """One message by the mode's consumer command; TimeoutError after WAIT_S."""
        c = self.client
        if self.mode in ("list", "list-tx"):
            got = c.brpop([self.key], timeout=WAIT_S)
            if got is None:
                raise TimeoutError(f"redis {self.mode}: no message within {WAIT_S}s")
            return got[1]
        if self.mode == "stream":
            got = c.xread({self.key: self.last_id}, count=1, block=int(WAIT_S * 1000))
        else:
            got = c.xreadgroup(
                "consumers", "c1", {self.key: ">"}, count=1, block=int(WAIT_S * 1000)
            )
        if not got:
            raise TimeoutError(f"redis {self.mode}: no message within {WAIT_S}s")
        entry_id, fields = got[0][1][0]
        if self.mode == "stream":
            self.last_id = entry_id
        else:
            c.xack(self.key, "consumers", entry_id)
        return fields[b"m"]


def run_redis(rq: RedisQueue, producers: int) -> int:
    """One batch through a Redis list or stream."""
    rq.producers.start_batch()
    return _receive_all(rq.get)


# --- registration ----------------------------------------------------------------------

LOCAL = {
    "queue": (setup_queue, run_queue),
    "deque": (setup_deque, run_deque),
    "asyncio": (setup_asyncio, run_asyncio),
    "multiprocessing": (setup_multiprocessing, run_multiprocessing),
}
REDIS_MODES = ["list", "list-tx", "stream", "stream-ack"]


def _redis_ready() -> bool:
    try:
        import redis  # noqa: F401

        servers.ensure("redis")
    except ImportError:
        print("note: redis-py not installed (make bench-deps); Redis left out", file=sys.stderr)
        return False
    except servers.ServerError as exc:
        print(f"note: Redis left out: {exc}", file=sys.stderr)
        return False
    return True


def _register() -> None:
    """One group per producer count: the in-process queues, multiprocessing and Redis."""
    redis_ok = _redis_ready()
    for p in producer_counts():
        group = f"queues, {p} producer{'s' if p > 1 else ''}"
        for name, (setup, run) in LOCAL.items():
            perflab.bench(
                run,
                name=name,
                group=group,
                params={"producers": [p]},
                setup=setup,
                baseline=name == "queue",
                ops=BATCH,
            )
        for mode in REDIS_MODES if redis_ok else []:
            perflab.bench(
                run_redis,
                name=f"redis-{mode}",
                group=group,
                params={"producers": [p]},
                ops=BATCH,
                setup=lambda producers, mode=mode: RedisQueue(mode, producers),
            )


_register()


if __name__ == "__main__":
    from perflab.cli import main

    try:
        code = main(["run", __file__, *sys.argv[1:]])
    finally:
        servers.stop_all()
    sys.exit(code)
