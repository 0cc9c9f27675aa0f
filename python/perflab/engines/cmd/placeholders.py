"""The ``{name}`` placeholders of ``perflab cmd``'s commands, hooks and ``-n`` names.

The rule (hyperfine's ``{name}``, made strict): ``{NAME}`` — a word of letters, digits
and ``_`` in braces — is a placeholder, replaced by the value of the ``-P``/``-L``
parameter NAME. A placeholder whose name is no parameter is refused (a typo would
otherwise run the command with the braces left in), and so is a malformed one around a
parameter's name (``{n:03d}``, ``{n-1}``, ``{ n }``, an unclosed ``{n``): placeholders
take no format or arithmetic. Other braces are left alone: ``awk '{print $1}'``,
``find -exec rm {} +``, ``{a,b}``, ``{1..5}``, JSON bodies, and a shell's ``${NAME}``.
``{{NAME}}`` is the literal text ``{NAME}``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from perflab.errors import UsageError

_WORD = r"[A-Za-z_][A-Za-z0-9_]*"
#: ``{{NAME}}`` (group 1, the literal ``{NAME}``) or ``{NAME}`` (group 2).
_TOKEN = re.compile(r"\{\{(" + _WORD + r")\}\}|\{(" + _WORD + r")\}")


def substitute(text: str, params: Mapping[str, Any]) -> str:
    """Replace each ``{name}`` of ``params`` in ``text`` by its value and each
    ``{{name}}`` by the literal ``{name}``; other braces are left alone (so ``awk
    '{print $1}'`` keeps working, unlike ``str.format``).

    Args:
        text: a command, hook or display name.
        params: parameter name → value (``str()`` is substituted).
    """

    def one(match: re.Match[str]) -> str:
        literal, name = match.groups()
        if literal is not None:
            return "{" + literal + "}"
        return str(params[name]) if name in params else match.group(0)

    return _TOKEN.sub(one, text)


def check(texts: Iterable[tuple[str, str]], names: Iterable[str]) -> None:
    """Refuse an unknown or malformed placeholder in any of ``texts``.

    Args:
        texts: (what, text) pairs: what names the text in the message ("command
            'make -j{n}'", "--prepare", "-n"), text is checked.
        names: the parameters' names (``-P``/``-L``).

    Raises:
        UsageError: one line naming the placeholder, the text and what to write.
    """
    known = sorted(set(names))
    have = f"the parameters are {', '.join(known)}" if known else "no -P/-L parameter is given"
    for what, text in texts:
        for match in _TOKEN.finditer(text):
            name = match.group(2)
            if name is None or name in known or text[: match.start()].endswith("$"):
                continue
            raise UsageError(
                f"{what}: {{{name}}} is no parameter ({have}); define it with -P {name} LO "
                f"HI or -L {name} A,B, write ${{{name}}} for a shell variable, or "
                f"{{{{{name}}}}} for the literal text {{{name}}}"
            )
        for name in known:
            word = re.escape(name)
            bad = re.search(
                r"(?<![{$])\{(?:\s+"
                + word
                + r"\s*\}|"
                + word
                + r"\s+\}|"
                + word
                + r"[^\s{}A-Za-z0-9_][^\s{}]*\}|"
                + word
                + r"$)",
                text,
            )
            if bad:
                raise UsageError(
                    f"{what}: {bad.group(0)!r} is not a placeholder: write {{{name}}} "
                    "alone (placeholders take no format, arithmetic or spaces; compute "
                    "such values with -L, or in a --shell command)"
                )
