"""perflab's pytest plugin: benchmarks that live in a test suite, measured by perflab's
harness (see docs/pytest.md).

Registered through the ``pytest11`` entry point as ``perflab`` (``-p no:perflab`` turns
it off): :mod:`.plugin` holds the options, hooks and fixtures, :mod:`.fixture` the
object the ``perflab_bench`` (and pytest-benchmark-style ``benchmark``) fixture returns,
:mod:`.session` what happens at the end of the session (tables, results file, gate).
"""
