"""LangChain's parent-document retrievers with the scope rule on every hit.

``MultiVectorRetriever`` and ``ParentDocumentRetriever`` (langchain-classic) read the value of
``metadata[id_key]`` on each hit and ask the docstore for that key; the docstore never sees the
hit. An entry written straight into the store with another document's id under ``id_key``
(``store.add_documents([Document("...", metadata={"tenant": "b", "doc_id": "<a's id>"})])``)
then brings tenant a's document into tenant b's filtered search, whatever the docstore checks.
:class:`ArgusMultiVectorRetriever` and :class:`ArgusParentDocumentRetriever` run the same search
and hand the hits, not their keys, to :meth:`ArgusDocstore.parents_of
<langchain_argus.docstore.ArgusDocstore.parents_of>`: a hit brings in its parent only when the
parent carries the hit's metadata.

Needs ``pip install langchain-classic``.
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_classic.retrievers import MultiVectorRetriever, ParentDocumentRetriever
    from langchain_classic.retrievers.multi_vector import SearchType
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "langchain_argus.parents needs langchain-classic: pip install langchain-classic"
    ) from exc
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from pydantic import model_validator

from argus_ir.errors import ArgusInputError
from langchain_argus.docstore import ArgusDocstore

__all__ = ["ArgusMultiVectorRetriever", "ArgusParentDocumentRetriever"]


class _HitsInScope:
    """The search of ``MultiVectorRetriever`` (each ``search_type``), then the parents through
    :meth:`ArgusDocstore.parents_of`; shared by both retrievers below."""

    vectorstore: Any
    docstore: Any
    id_key: str
    search_kwargs: dict[str, Any]
    search_type: SearchType

    def _hits(self, query: str) -> list[Document]:
        store = self.vectorstore
        if self.search_type == SearchType.mmr:
            return list(store.max_marginal_relevance_search(query, **self.search_kwargs))
        if self.search_type == SearchType.similarity_score_threshold:
            pairs = store.similarity_search_with_relevance_scores(query, **self.search_kwargs)
            return [doc for doc, _ in pairs]
        return list(store.similarity_search(query, **self.search_kwargs))

    async def _ahits(self, query: str) -> list[Document]:
        store = self.vectorstore
        if self.search_type == SearchType.mmr:
            return list(await store.amax_marginal_relevance_search(query, **self.search_kwargs))
        if self.search_type == SearchType.similarity_score_threshold:
            pairs = await store.asimilarity_search_with_relevance_scores(
                query, **self.search_kwargs
            )
            return [doc for doc, _ in pairs]
        return list(await store.asimilarity_search(query, **self.search_kwargs))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self.docstore.parents_of(self._hits(query), self.id_key)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return await self.docstore.aparents_of(await self._ahits(query), self.id_key)


def _needs_argus_docstore(retriever: Any) -> Any:
    if not isinstance(retriever.docstore, ArgusDocstore):
        raise ArgusInputError(
            f"{type(retriever).__name__} reads its parents through an ArgusDocstore over the "
            f"store it searches, got docstore={type(retriever.docstore).__name__}: pass "
            "docstore=ArgusDocstore(vectorstore)"
        )
    return retriever


class ArgusMultiVectorRetriever(_HitsInScope, MultiVectorRetriever):
    """``MultiVectorRetriever`` whose hits are put to the scope rule before their parents are
    read: a hit brings in the document its ``id_key`` names only when that document carries the
    hit's metadata (:meth:`ArgusDocstore.parents_of`). Same fields, same search; ``docstore``
    must be an :class:`~langchain_argus.ArgusDocstore`.

    Example:
        >>> docstore = ArgusDocstore(store)  # doctest: +SKIP
        >>> docstore.mset([(d.id, d) for d in argus.transform_documents(docs)])  # doctest: +SKIP
        >>> retriever = ArgusMultiVectorRetriever(  # doctest: +SKIP
        ...     vectorstore=store, docstore=docstore, search_kwargs={"filter": {"tenant": "b"}})
    """

    @model_validator(mode="after")
    def _check_docstore(self) -> ArgusMultiVectorRetriever:
        return _needs_argus_docstore(self)


class ArgusParentDocumentRetriever(_HitsInScope, ParentDocumentRetriever):
    """``ParentDocumentRetriever`` with the scope rule on every hit, as
    :class:`ArgusMultiVectorRetriever`. Its children copy their parent's metadata, so they pass;
    ``child_metadata_fields`` narrows what children carry, and a child that carries less than
    its parent is refused (logged): leave it unset with this retriever."""

    @model_validator(mode="after")
    def _check_docstore(self) -> ArgusParentDocumentRetriever:
        return _needs_argus_docstore(self)
