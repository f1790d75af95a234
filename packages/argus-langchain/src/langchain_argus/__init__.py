"""argus for LangChain: flag retrieval blind spots at ingest, fold support views at query time.

- :class:`ArgusDocumentTransformer`: a ``BaseDocumentTransformer`` that passes every document
  through and adds support views of those whose entities the retriever cannot reach.
- :class:`ArgusRetriever`: searches a vector store holding those views and returns one original
  document per source.
- :class:`ArgusEmbeddings`: with ``ArgusDocumentTransformer(embed=True)``, the store's embeddings
  answered from the vectors argus computed (``transformer.embeddings(base)``): embed once.
- :class:`ArgusDocstore`: a ``BaseStore`` over the vector store's ``get_by_ids``, for
  ``MultiVectorRetriever`` and ``ParentDocumentRetriever``: no second copy of the originals, and a
  view maps to its original only when the original carries its metadata.
- :class:`ArgusMultiVectorRetriever` and :class:`ArgusParentDocumentRetriever` (needs
  ``langchain-classic``): LangChain's parent-document retrievers with that rule applied to every
  hit, not only to the key it names.
- :func:`collapse_documents`: the folding, for scored hits you already have.
- :func:`index_sources` and :func:`delete_sources` (async: :func:`aindex_sources`,
  :func:`adelete_sources`): LangChain's ``index()`` and a record manager, for argus output: a
  rerun is a no-op, and a delete stopped half-way is put right.
- :class:`SiraEnricher` and :class:`SiraRetriever`: lexical SIRA, LLM search vocabulary in the
  documents' metadata and a BM25 retriever that uses it plus a per-query sketch.
"""

from langchain_argus.docstore import ArgusDocstore
from langchain_argus.embeddings import ArgusEmbeddings
from langchain_argus.lifecycle import adelete_sources, aindex_sources, delete_sources, index_sources
from langchain_argus.retriever import ArgusRetriever, StoreReadError, collapse_documents
from langchain_argus.sira import SiraEnricher, SiraRetriever
from langchain_argus.transformer import ArgusDocumentTransformer

_PARENTS = ("ArgusMultiVectorRetriever", "ArgusParentDocumentRetriever")


def __getattr__(name: str) -> object:
    """The parent-document retrievers load langchain-classic, an optional dependency: only
    when asked for."""
    if name in _PARENTS:
        from langchain_argus import parents

        return getattr(parents, name)
    raise AttributeError(f"module 'langchain_argus' has no attribute {name!r}")


__all__ = [
    "ArgusDocstore",
    "ArgusDocumentTransformer",
    "ArgusEmbeddings",
    "ArgusMultiVectorRetriever",
    "ArgusParentDocumentRetriever",
    "ArgusRetriever",
    "SiraEnricher",
    "SiraRetriever",
    "StoreReadError",
    "adelete_sources",
    "aindex_sources",
    "collapse_documents",
    "delete_sources",
    "index_sources",
]
