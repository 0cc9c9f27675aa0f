"""The results model: raw data of every engine in one versioned JSON file.

Raw data, statistics and presentation are separate types (hyperfine's
TimingResult → BenchmarkResult → exporters; pyperf's Run → Benchmark → Suite):
this package holds only raw data and its (de)serialization. Summaries are
derived by :mod:`perflab.analyze.stats` and written beside the raw data for
convenience, but ignored on load and always recomputed. Files are untrusted input:
:func:`load` checks them against the published JSON Schema
(``perflab/schemas/results.schema.json``, described in docs/results-format.md).

Rooms: :mod:`~perflab.model.results` (the dataclasses; an HTTP step's in
:mod:`~perflab.model.http_step`), :mod:`~perflab.model.json_form`
(their JSON types), :mod:`~perflab.model.versions`
(schema versions and migrations), :mod:`~perflab.model.results_file` (save and load).
Everything public is importable from ``perflab.model`` itself.

model/ is the home of every document perflab persists, each module owning its format
(schema name, version where the file carries one, writing and reading back): results
files here (with :mod:`~perflab.model.cluster` for distributed runs, kind ``trace``
included), :mod:`~perflab.model.doctor`, :mod:`~perflab.model.comparison`,
:mod:`~perflab.model.fit` and :mod:`~perflab.model.history`;
:mod:`~perflab.model.estimate` is the value-with-CI type they share. Import those from
their modules.
"""

from perflab.model.counts import CommandCounts, Counts
from perflab.model.http_step import Histogram, HttpStep, ServerTiming
from perflab.model.json_form import json_types
from perflab.model.results import (
    Benchmark,
    CommandRun,
    Process,
    Results,
    Sample,
)
from perflab.model.results_file import (
    BENCHMARK_KIND,
    json_document,
    load,
    load_bytes,
    parse_json,
    save,
)
from perflab.model.trace_spans import SpanHistogram, TraceSpan
from perflab.model.versions import SCHEMA_HISTORY, SCHEMA_VERSION, migrate

__all__ = [
    "BENCHMARK_KIND",
    "SCHEMA_HISTORY",
    "SCHEMA_VERSION",
    "Benchmark",
    "CommandCounts",
    "CommandRun",
    "Counts",
    "Histogram",
    "HttpStep",
    "Process",
    "Results",
    "Sample",
    "ServerTiming",
    "SpanHistogram",
    "TraceSpan",
    "json_document",
    "json_types",
    "load",
    "load_bytes",
    "migrate",
    "parse_json",
    "save",
]
