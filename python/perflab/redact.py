"""Secrets kept out of everything perflab saves or prints: credential headers and URL passwords.

``perflab http`` sends what the user gave, but the results file, the tables
and every message carry redacted copies: the values of Authorization,
Proxy-Authorization, Cookie (and Set-Cookie) and of any header named with
``--redact``, and the password of a ``user:password@`` URL, become
:data:`REDACTED`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

REDACTED = "<redacted>"
#: Headers whose values are credentials, lower case.
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token"}
)
#: ``scheme://user:password@`` (the password is anything up to the last ``@`` of the authority).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s]*(@)")


def url(text: str) -> str:
    """``http://user:secret@host/`` → ``http://user:<redacted>@host/``; other text unchanged."""
    return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)


def secret_names(extra: Iterable[str] = ()) -> frozenset[str]:
    """The lower-cased header names to redact: the credential headers plus ``extra``."""
    return CREDENTIAL_HEADERS | {name.strip().lower() for name in extra if name.strip()}


def headers(pairs: Sequence[Sequence[str]], extra: Iterable[str] = ()) -> list[list[str]]:
    """[[name, value], …] with the values of secret headers redacted."""
    names = secret_names(extra)
    return [[name, REDACTED if name.strip().lower() in names else value] for name, value in pairs]


def header_text(text: str, extra: Iterable[str] = ()) -> str:
    """One ``Name: value`` text with a secret value redacted."""
    name, colon, _ = text.partition(":")
    if colon and name.strip().lower() in secret_names(extra):
        return f"{name}: {REDACTED}"
    return url(text)


def argv(words: Sequence[str], extra: Iterable[str] = ()) -> list[str]:
    """A command line with secret header values (``-H``/``--header``) and URL passwords
    redacted, whether the value follows the option or is joined with ``=``."""
    out: list[str] = []
    after_header = False
    for word in words:
        if after_header:
            out.append(header_text(word, extra))
            after_header = False
        elif word in ("-H", "--header"):
            out.append(word)
            after_header = True
        elif word.startswith("--header="):
            out.append("--header=" + header_text(word[len("--header=") :], extra))
        elif word.startswith("-H") and len(word) > 2:
            out.append("-H" + header_text(word[2:], extra))
        else:
            out.append(url(word))
    return out
