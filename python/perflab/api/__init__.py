"""The Python API: :mod:`perflab.api.calls` (``perflab.measure``, ``perflab.Runner``,
``perflab.load``); docs/api.md. This package file imports nothing, so that importing
perflab stays cheap; ``perflab/__init__.py`` reaches the API lazily."""
