"""SIRA for LangChain: :class:`SiraEnricher` (ingest) and :class:`SiraRetriever` (query time).

The enricher adds LLM-proposed search vocabulary to each document's metadata
(``metadata["sira_terms"]``; ``page_content`` is never edited). The retriever builds argus's
BM25 index over the documents with those phrases injected as extra postings, and answers a query
with one weighted BM25 call over the query and its LLM sketch (SIRA eq. 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.retrievers import BaseRetriever
from pydantic import BaseModel, ConfigDict, PrivateAttr

from argus_ir.sira import (
    DEFAULT_TAU,
    DEFAULT_WEIGHT,
    SIRA_KEY,
    CallCache,
    SiraIndex,
    expand_queries,
)
from argus_ir.sira import (
    SiraEnricher as _Enricher,
)

__all__ = ["SiraEnricher", "SiraRetriever"]


class SiraEnricher(BaseDocumentTransformer, BaseModel):
    """Corpus-side SIRA: search terms each document lacks, stored in its metadata.

    Every document comes out as a copy with ``metadata["sira_terms"]`` (a list of phrases,
    empty when the LLM gave nothing usable); ``page_content`` and the input objects are left as
    they are. Replies are cached by prompt version, model and text in ``cache``.

    Example:
        >>> from langchain_argus import SiraEnricher, SiraRetriever
        >>> docs = SiraEnricher(llm="transformers", cache="sira-cache").transform_documents(docs)
        >>> retriever = SiraRetriever.from_documents(docs, llm="transformers")  # doctest: +SKIP
    """

    model_config = ConfigDict(extra="forbid")

    llm: str = "transformers"
    """An ``argus --llm`` spec: ``"transformers"`` (offline SmolLM2), ``"openai:URL[@MODEL]"``..."""
    task: str = "fact"
    """Prompt variant: ``"fact"``, ``"argument"``, ``"duplicate"`` or ``"qa"``."""
    cache: str | None = None
    """Folder of the LLM reply cache."""
    show_progress: bool = False

    _enricher: _Enricher | None = PrivateAttr(default=None)
    _last_stats: dict[str, Any] = PrivateAttr(default_factory=dict)

    @property
    def last_stats(self) -> dict[str, Any]:
        """The reply filters' counts of the last call (calls, cache hits, dropped replies...)."""
        return dict(self._last_stats)

    def transform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        if self._enricher is None:
            self._enricher = _Enricher(self.llm, task=self.task, cache=self.cache)
        phrases, stats = self._enricher(
            [d.page_content for d in documents],
            show_progress=kwargs.get("show_progress", self.show_progress),
        )
        self._last_stats = stats.as_dict()
        return [
            d.model_copy(update={"metadata": {**d.metadata, SIRA_KEY: p}})
            for d, p in zip(documents, phrases)
        ]


class SiraRetriever(BaseRetriever):
    """Query-side SIRA over a BM25 index that holds the documents' enrichment.

    Build with :meth:`from_documents`. Each query is sent to the LLM for its expected-response
    sketch (cached), the sketch is DF-filtered against the index, and the documents are ranked by
    ``BM25(query) + weight * BM25(sketch)``. With ``llm=None`` it is plain BM25 over the enriched
    index. Results are the stored documents with ``metadata["sira_score"]``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SiraIndex
    documents: dict[str, Document]
    llm: str | None = "transformers"
    task: str = "fact"
    weight: float = DEFAULT_WEIGHT
    k: int = 4
    cache: str | None = None

    _llm: Any = PrivateAttr(default=None)
    _cache: CallCache | None = PrivateAttr(default=None)

    @classmethod
    def from_documents(
        cls, documents: Sequence[Document], *, tau: float = DEFAULT_TAU, **kwargs: Any
    ) -> SiraRetriever:
        """Index ``documents`` with the phrases in their ``metadata["sira_terms"]`` injected.

        Documents without an ``id`` are keyed by position (``"0"``, ``"1"``...).
        """
        keyed = {(d.id or str(i)): d for i, d in enumerate(documents)}
        enrichment = {k: list(d.metadata.get(SIRA_KEY) or []) for k, d in keyed.items()}
        index = SiraIndex.build(
            ((k, d.page_content) for k, d in keyed.items()), enrichment=enrichment, tau=tau
        )
        return cls(index=index, documents=keyed, **kwargs)

    def _sketch(self, query: str) -> list[str]:
        if self.llm is None:
            return []
        if self._llm is None:
            from argus_ir.llm import load_llm

            self._llm = load_llm(self.llm)
            self._cache = None if self.cache is None else CallCache(self.cache)
        result = expand_queries({"q": query}, self._llm, task=self.task, cache=self._cache)
        return result.phrases.get("q", [])

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.index.search(query, expansion=self._sketch(query), weight=self.weight, k=self.k)
        return [
            self.documents[doc_id].model_copy(
                update={"metadata": {**self.documents[doc_id].metadata, "sira_score": score}}
            )
            for doc_id, score in hits
        ]
