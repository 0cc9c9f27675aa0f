"""The self-contained HTML report of ``perflab report``: :mod:`.page` (the document and
its HTML primitives), :mod:`.sections` (content by kind), :mod:`.charts` (inline SVG)."""
