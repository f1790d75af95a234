"""Index vectors: the retriever's vector of every string an index embeds, computed once, by argus.

The diagnosis pass already runs the retriever over each document's first window, the part the
retriever reads, and pools it as the retriever does (:attr:`~argus_ir.diagnose.Diagnosis.doc_vector`).
With ``Argus(embed=True)`` that vector goes to the index instead of being computed a second time by
the store's embedder, and the views (and every record the pass does not read) are embedded by the
encoder argus already holds. Three rules keep those vectors the index's own:

- **Exactly the string the index embeds.** A diagnosis vector is reused only for the very string
  the pass read; any other string (an original whose framework prepends metadata, a text the pass
  reads with a zero-width space made a space, a record the pass skipped) is embedded on its own.
- **The retriever's own pooling and normalisation**, as :class:`~argus_ir.encoder.base.TokenEncoder`
  reproduces them (``SentenceTransformer.encode`` to cos 0.9999 and beyond; tested).
- **fp32.** Index vectors are never computed under bfloat16. With ``embed=True`` the pass runs in
  fp32 when its precision is ``"auto"`` (one fp32 pass then serves diagnosis and index: cheaper
  than a bf16 pass plus an fp32 embedding of every original, ``docs/benchmarks.md``); an explicit
  ``precision="bf16"`` keeps the bf16 pass for diagnosis and embeds every record again in fp32.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from argus_ir.diagnose import Diagnosis, readable_text
from argus_ir.documents import Document
from argus_ir.lineage import KNOWLEDGE_KEY
from argus_ir.remedy.view import View

if TYPE_CHECKING:
    from argus_ir.encoder.base import TokenEncoder

logger = logging.getLogger(__name__)

__all__ = [
    "VECTOR_PRECISION",
    "IndexEmbedder",
    "indexed_string",
    "pass_precision",
    "with_vectors",
]

Entries = list[tuple[Document, Diagnosis, list[View]]]

VECTOR_PRECISION = "fp32"
"""The precision of every vector argus hands an index."""


def pass_precision(precision: str, embed: bool) -> str:
    """The precision the diagnosis pass is asked for: ``precision``, but ``"auto"`` means fp32
    when the pass's vectors go to the index (``embed``)."""
    return VECTOR_PRECISION if embed and precision == "auto" else precision


class IndexEmbedder:
    """Vectors for the strings an index embeds, from an fp32 encoder, reusing the pass's.

    Args:
        encoder: The retriever, loaded at fp32 (:data:`VECTOR_PRECISION`).
        reuse: Whether the diagnosis pass's vectors may be reused (the pass ran in fp32 on this
            encoder's model).
    """

    def __init__(self, encoder: TokenEncoder, *, reuse: bool) -> None:
        if encoder.precision != VECTOR_PRECISION:
            raise ValueError(f"index vectors need an fp32 encoder, got {encoder.precision}")
        self.encoder = encoder
        self.reuse = reuse

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def known(self, text: str, diagnosis: Diagnosis) -> np.ndarray | None:
        """The pass's vector of ``text`` when it is exactly that string's index vector (the pass
        read ``text`` itself, in fp32), else ``None``."""
        vector = diagnosis.doc_vector
        if not self.reuse or vector.size != self.dim or readable_text(text) != text:
            return None
        return vector

    def embed(
        self,
        texts: Sequence[str],
        known: Mapping[str, np.ndarray] | None = None,
        *,
        failures: list[tuple[str, str]] | None = None,
        ids: Sequence[str] | None = None,
        show_progress: bool = False,
    ) -> list[np.ndarray | None]:
        """One float32 vector per text: ``known[text]`` where given, else the encoder's, each
        distinct string encoded once.

        A text the retriever's tokenizer refuses (a lone surrogate) gets ``None``; with
        ``failures`` its id (from ``ids``, else its position) and the error are appended there,
        without, the error is raised.
        """
        known = known or {}
        out: list[np.ndarray | None] = [None] * len(texts)
        todo: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            vector = known.get(text)
            if vector is not None:
                out[i] = np.asarray(vector, dtype=np.float32)
            else:
                todo.setdefault(text, []).append(i)
        if not todo:
            return out
        strings = list(todo)
        try:
            vectors: list[np.ndarray | None] = list(self._encode(strings, show_progress))
        except Exception:
            if failures is None:
                raise
            vectors = []
            for text in strings:  # find the text at fault, keep the rest
                try:
                    vectors += self._encode([text], False)
                except Exception as exc:
                    first = todo[text][0]
                    name = ids[first] if ids is not None else str(first)
                    failures.append((name, f"vector: {type(exc).__name__}: {exc}"))
                    logger.warning("could not embed record %r (%s); it has no vector", name, exc)
                    vectors.append(None)
        for text, vector in zip(strings, vectors, strict=True):
            for i in todo[text]:
                out[i] = vector
        return out

    def _encode(self, texts: list[str], show_progress: bool) -> list[np.ndarray]:
        encoded = self.encoder.encode(texts, first_window=True, show_progress=show_progress)
        return [np.asarray(enc.doc_vector, dtype=np.float32) for enc in encoded]


def indexed_string(text: str, metadata: Mapping[str, Any] | None) -> str:
    """What an index embeds for an entry whose own string is ``text``: ``text`` itself, or for an
    original enriched in place ``text`` followed by its knowledge (``argus_knowledge``,
    :func:`~argus_ir.remedy.texts.enriched_text`)."""
    from argus_ir.remedy.texts import enriched_text

    knowledge = (metadata or {}).get(KNOWLEDGE_KEY)
    return enriched_text(text, knowledge if isinstance(knowledge, str) else None)


def with_vectors(
    embedder: IndexEmbedder, done: Entries, failures: list[tuple[str, str]]
) -> Entries:
    """A streamed batch's entries (each document, its diagnosis, its original first and then its
    views), every entry with the vector of what an index embeds of it: a view's text, a
    document's title and text (:attr:`Document.index_text <argus_ir.documents.Document.index_text>`,
    also for a record of an earlier run passed through), followed by its knowledge where it was
    enriched in place (:func:`indexed_string`). The pass's vector for a document it read; the
    embedder's for the rest, in one batch."""
    known: dict[str, np.ndarray] = {}
    for doc, diagnosis, _ in done:
        vector = embedder.known(doc.index_text, diagnosis)
        if vector is not None:
            known[doc.index_text] = vector
    flat = [view for _, _, views in done for view in views]
    texts = [
        t
        for doc, _, views in done
        for t in (indexed_string(doc.index_text, views[0].metadata), *(v.text for v in views[1:]))
    ]
    vectors = iter(embedder.embed(texts, known, failures=failures, ids=[v.id for v in flat]))
    return [
        (doc, diagnosis, [replace(v, vector=next(vectors)) for v in views])
        for doc, diagnosis, views in done
    ]
