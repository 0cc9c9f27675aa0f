"""The ``perflab fit --json`` document: the fits, the tables as printed, and the fitted
series, so that ``perflab show`` fits them again to the same tables.

Schema ``fit`` (``perflab/schemas/fit.schema.json``): ``tool``, ``kind``, ``fit`` (the
model: "usl", "complexity" or "breakeven"), ``sources`` (the files fitted),
``command_line``, ``created``, ``perflab_version``, ``fits`` (one record per fitted
series; a single fit's keys also at top level, for tools that read one fit), ``tables``
(title, columns, rows, align, footnotes of each table printed), ``growth`` (the
``--growth`` class or null) and ``inputs`` (the fitted series as records,
:func:`perflab.analyze.fit.fits.series_record`; absent in documents of older perflab
versions). Written by :meth:`FitDocument.to_dict`, read by :meth:`FitDocument.from_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The document's schema (``perflab/schemas/fit.schema.json``) and ``kind``.
SCHEMA = "fit"


@dataclass
class FitDocument:
    """One ``perflab fit`` as saved.

    Attributes:
        fit: the model fitted: "usl", "complexity" or "breakeven".
        sources: the input files, as given.
        fits: one JSON-ready record per fitted series.
        tables: the tables as printed (dicts: title, columns, rows, align, footnotes).
        growth: the ``--growth`` class the fit was limited to, or None.
        inputs: the fitted series as records, or None (a document that kept none).
        command_line: the ``perflab fit`` argv.
        created: ISO-8601 UTC time the document was written ("" when unknown).
        perflab_version: the perflab that wrote it ("" when unknown).
    """

    fit: str
    sources: list[str]
    fits: list[dict[str, Any]]
    tables: list[dict[str, Any]]
    growth: str | None
    inputs: list[dict[str, Any]] | None
    command_line: list[str]
    created: str = ""
    perflab_version: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The document as JSON types, in the key order perflab writes (a single fit's
        own keys first, then the document's; ``tool`` before everything)."""
        doc: dict[str, Any] = {
            "kind": SCHEMA,
            "fit": self.fit,
            "sources": list(self.sources),
            "command_line": list(self.command_line),
            "created": self.created,
            "perflab_version": self.perflab_version,
            "fits": self.fits,
            "tables": self.tables,
            "growth": self.growth,
            "inputs": self.inputs,
        }
        if len(self.fits) == 1:
            doc = {**self.fits[0], **doc}
        return {"tool": "perflab", **doc}

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> FitDocument:
        """The fit a document holds (checked against the ``fit`` schema first:
        ``perflab.schema.validate(document, "fit")``); keys an older perflab did not
        write read as empty (``inputs`` as None).

        Raises:
            KeyError: no ``fit`` key (not a fit document).
        """
        return cls(
            document["fit"],
            list(document.get("sources", [])),
            list(document.get("fits", [])),
            list(document.get("tables") or []),
            document.get("growth"),
            document.get("inputs"),
            list(document.get("command_line", [])),
            str(document.get("created", "")),
            str(document.get("perflab_version", "")),
        )
