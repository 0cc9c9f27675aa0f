"""Northwind rows serialization: json, pickle and marshal against orjson, msgpack and cbor2.

Every serializer writes the whole Northwind database (3,362 rows in 12 tables,
examples/data/northwind.sql, Ms-PL) to bytes/str and reads it back. The table
that `perflab run` prints pivots the two stages: payload size and × best,
serialize time, deserialize time, total and × best.

    perflab run examples/serialization.py --quick   (what make demo runs: a first look)

The serializers differ by 2-16x, so a ±2% CI ranks them; at the default ±1% each of
the 12 benchmarks needs more processes than a demo should wait for.
"""

from __future__ import annotations

import json
import marshal
import pickle
import sys
from pathlib import Path

import perflab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from northwind import load_tables  # noqa: E402

GROUP = "northwind"


def rows():
    """The benchmark input: table name → list of row dicts."""
    return load_tables()


def _register(name, dumps, loads):
    """Register the serialize and deserialize stages of one serializer."""
    perflab.bench(
        lambda data: dumps(data),
        name=name,
        group=GROUP,
        stage="serialize",
        setup=rows,
        baseline=name == "json",
    )
    perflab.bench(
        lambda payload: loads(payload),
        name=name,
        group=GROUP,
        stage="deserialize",
        setup=lambda: dumps(rows()),
        baseline=name == "json",
    )


_register("json", json.dumps, json.loads)
_register("pickle", lambda d: pickle.dumps(d, protocol=pickle.HIGHEST_PROTOCOL), pickle.loads)
_register("marshal", marshal.dumps, marshal.loads)
try:
    import orjson

    _register("orjson", orjson.dumps, orjson.loads)
except ImportError:
    print("note: orjson not installed; pip install orjson to include it", file=sys.stderr)
try:
    import msgpack

    _register("msgpack", msgpack.packb, msgpack.unpackb)
except ImportError:
    print("note: msgpack not installed; pip install msgpack to include it", file=sys.stderr)
try:
    import cbor2

    _register("cbor2", cbor2.dumps, cbor2.loads)
except ImportError:
    print("note: cbor2 not installed; pip install cbor2 to include it", file=sys.stderr)


@perflab.metric(group=GROUP, stage="serialize", name="payload", unit="B")
def payload(result):
    """Size of the serialized payload, bytes (UTF-8 for str)."""
    return len(result.encode() if isinstance(result, str) else result)
