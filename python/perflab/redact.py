"""Secrets kept out of everything perflab saves or prints: credential headers, URL
passwords and secret-looking query parameters.

``perflab http`` sends what the user gave, but the results file, the history, the
tables (terminal, Markdown, CSV, HTML) and every message carry redacted copies: the
values of Authorization, Proxy-Authorization, Cookie (and Set-Cookie), perflab's own
Server-Timing token header, any header whose name looks like a credential
(``X-Api-Key``, ``X-Auth-Token``, ``X-Session-Id``, ``*-Secret``…) or is named with
``--redact``, the password of a ``user:password@`` URL and the value of a query
parameter whose name looks like a secret (``?token=``, ``api_key``, ``signature``…)
become :data:`REDACTED`. A ``Name: value`` word of a command line is redacted
wherever it stands (after ``-H``, ``--header``, an abbreviation of it, or inside a
``perflab cmd`` command), so no spelling of an option bypasses it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

REDACTED = "<redacted>"
#: Headers whose values are credentials, lower case.
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "x-auth-token",
        "x-perflab-token",  # perflab.trace.middleware.TOKEN_HEADER
    }
)
#: A header or query parameter name that looks like a credential (matched anywhere in
#: the lower-cased name): X-Api-Key, X-Goog-Api-Key, X-Auth-Token, X-CSRF-Token,
#: X-Session-Id, X-Client-Secret, X-Amz-Signature, access_token, apikey, passwd…
_SECRET_NAME = re.compile(
    r"(?i)(?:token|secret|passw|passwd|pwd|api[-_]?key|apikey|auth|session|cookie|"
    r"signature|credential|private[-_]?key|access[-_]?key|^key$|^sig$|^code$)"
)
#: ``scheme://user:password@`` (the password is anything up to the last ``@`` of the authority).
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]*:)[^/\s]*(@)")
#: ``name=value`` in a query string or fragment (after ``?``, ``&``, ``;`` or ``#``).
_QUERY_PAIR = re.compile(r"([?&;#])([^=&;#\s?]+)=([^&;#\s]*)")


def _query(match: re.Match[str]) -> str:
    lead, name, value = match.groups()
    return f"{lead}{name}={REDACTED}" if value and _SECRET_NAME.search(name) else match.group(0)


def url(text: str) -> str:
    """``http://user:secret@host/?token=x&page=2`` → ``http://user:<redacted>@host/?token=<redacted>&page=2``:
    the password of the authority and the values of secret-looking query parameters;
    other text unchanged."""
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    return _QUERY_PAIR.sub(_query, text) if "=" in text else text


def secret_names(extra: Iterable[str] = ()) -> frozenset[str]:
    """The lower-cased header names always redacted: the credential headers plus ``extra``
    (names that merely look like credentials are caught by :func:`is_secret`)."""
    return CREDENTIAL_HEADERS | {name.strip().lower() for name in extra if name.strip()}


def is_secret(name: str, extra: Iterable[str] = ()) -> bool:
    """True when a header named ``name`` carries a credential: a known one, one named
    with ``--redact``, or one whose name looks like a credential (:data:`_SECRET_NAME`)."""
    name = name.strip().lower()
    return name in secret_names(extra) or bool(_SECRET_NAME.search(name))


def headers(pairs: Sequence[Sequence[str]], extra: Iterable[str] = ()) -> list[list[str]]:
    """[[name, value], …] with the values of secret headers redacted."""
    return [[name, REDACTED if is_secret(name, extra) else url(value)] for name, value in pairs]


#: ``Name: value`` inside a longer text (a header in a cmd command or a quoted curl line).
_HEADER_IN_TEXT = re.compile(
    r"(?i)([A-Za-z0-9_-]+)(\s*:\s*)(?:(bearer|basic|token)\s+)?([^\s'\"]+)"
)


def header_text(text: str, extra: Iterable[str] = ()) -> str:
    """One ``Name: value`` text with a secret value redacted."""
    name, colon, _ = text.partition(":")
    if colon and is_secret(name, extra) and "//" not in name:
        return f"{name}: {REDACTED}"
    return url(text)


#: ``--password VALUE``, ``--token=VALUE``, ``-p=VALUE`` or ``API_KEY=VALUE`` (an option
#: or an environment assignment) inside a command's text.
_OPTION_IN_TEXT = re.compile(
    r"(?<![^\s'\"])(--?[A-Za-z][A-Za-z0-9_-]*(?:=|\s+)|[A-Za-z_][A-Za-z0-9_]*=)([^\s'\"-][^\s'\"]*)"
)


def text(words: str, extra: Iterable[str] = ()) -> str:
    """Any text (a ``perflab cmd`` command, a request line): URL secrets, the value of
    every ``Name: value`` whose name is secret, and the value of every option or
    environment assignment whose name is secret (``--password hunter2``,
    ``--api-key=…``, ``TOKEN=…``), redacted wherever they stand."""

    def one(match: re.Match[str]) -> str:
        name, sep, scheme, value = match.groups()
        if value.startswith("//") or not is_secret(name, extra):
            return match.group(0)
        return f"{name}{sep}{scheme + ' ' if scheme else ''}{REDACTED}"

    def option(match: re.Match[str]) -> str:
        lead, value = match.groups()
        name = lead.strip().rstrip("=").lstrip("-")
        return lead + REDACTED if is_secret(name, extra) else match.group(0)

    words = url(words)
    if "=" in words or "-" in words:
        words = _OPTION_IN_TEXT.sub(option, words)
    return _HEADER_IN_TEXT.sub(one, words) if ":" in words else words


def argv(words: Sequence[str], extra: Iterable[str] = ()) -> list[str]:
    """A command line with secret header values (``-H``/``--header``) and URL passwords
    redacted, whether the value follows the option or is joined with ``=``."""
    out: list[str] = []
    after_header = False
    for word in words:
        if after_header:
            out.append(header_text(word, extra))
            after_header = False
        elif word in ("-H", "--header") or (len(word) > 3 and "--header".startswith(word)):
            out.append(word)
            after_header = True
        elif word.startswith("--header="):
            out.append("--header=" + header_text(word[len("--header=") :], extra))
        elif word.startswith("-H") and len(word) > 2:
            out.append("-H" + header_text(word[2:], extra))
        else:
            out.append(text(word, extra))
    return out
