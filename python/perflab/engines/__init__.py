"""Measurement engines: the Python harness, whole commands and HTTP load."""
