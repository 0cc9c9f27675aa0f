"""The run engine: Python functions timed in fresh worker processes (or in process)."""
