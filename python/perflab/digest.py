"""SHA-256 without loading OpenSSL: ``hashlib``'s import loads libcrypto and sets up
every algorithm it offers (≈ 3 ms of CPU), a start-up cost of each short
``perflab http`` process (issue 30) that two 16-digit keys don't need. CPython's
built-in SHA-256 gives the same digest (FIPS 180-4); ``hashlib`` is the fallback where
it is missing."""

from __future__ import annotations

from typing import Any


def sha256(data: bytes = b"") -> Any:
    """A SHA-256 hash object of ``data`` (``update``, ``digest``, ``hexdigest`` as
    :func:`hashlib.sha256`'s). Raises TypeError when ``data`` is not bytes-like."""
    try:
        from _sha2 import sha256 as new  # CPython 3.12+
    except ImportError:
        try:
            from _sha256 import sha256 as new  # CPython 3.11
        except ImportError:
            from hashlib import sha256 as new
    return new(data)
