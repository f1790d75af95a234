"""The remedy kinds and :class:`View`, one index entry: an original or one of its support views."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

from argus_ir.lineage import ORIGINAL, SOURCE_KEY, VIEW_KEY

__all__ = [
    "DEFAULT_REMEDY",
    "GENERATED_PREFIX",
    "IN_PLACE",
    "KINDS",
    "ORIGINAL",
    "WINDOW_ONLY",
    "View",
]

KINDS = ("expansion", "merged", "descriptor", "focus", "synthesis", "enrich", "auto")
"""The remedy kinds (the package docstring describes each)."""
IN_PLACE = frozenset({"enrich", "auto"})
"""Remedies that write knowledge into an original's vector (in-place enrichment): its stored text
stays the user's, its knowledge is kept in ``argus_knowledge`` and embedded after it."""
DEFAULT_REMEDY = "auto"
"""The remedy of :class:`~argus_ir.pipeline.Argus`, ``argus augment``, ``argus evaluate`` and the
adapters when none is named (``docs/benchmarks.md`` has the measurements behind it)."""
WINDOW_ONLY = frozenset({"descriptor", "enrich", "auto"})
"""Remedies whose views keep the document's own text first, so the retriever reads a view only as
far as it reads the original: a description inserted past that window can never change the view's
vector. Their diagnosis reads the retriever's window alone (``Diagnoser.diagnose(window_only=True)``),
which spares the encoder and NER the rest of a long document."""
GENERATED_PREFIX = "llm:"
"""Passage ids of generated knowledge (:mod:`argus_ir.kb.llm`); their views say so in lineage."""


@dataclass(frozen=True)
class View:
    """An index entry: an original document or one of its support views.

    Attributes:
        id: The original's id, or a stable hash for a view.
        text: The text to index.
        metadata: Lineage (``argus_source_id``, ``argus_view``, and for views ``argus_entity``,
            ``argus_kb_id``, ``argus_rps``; synthesis adds ``argus_prompt`` and ``argus_llm``, a
            fallback ``argus_fallback``).
        vector: The retriever's fp32 vector of what an index embeds of the entry (a view's
            ``text``; a document's title and text), where the stream was asked for vectors
            (``Argus(embed=True)``); ``None`` otherwise, or where it could not be embedded.
    """

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def source_id(self) -> str:
        return str(self.metadata.get(SOURCE_KEY, self.id))

    @property
    def is_original(self) -> bool:
        return self.metadata.get(VIEW_KEY) == ORIGINAL
