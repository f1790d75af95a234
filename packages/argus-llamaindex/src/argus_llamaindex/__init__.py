"""argus for LlamaIndex: flag retrieval blind spots at ingest, fold support views at query time.

- :class:`ArgusTransform`: a ``TransformComponent`` for ``IngestionPipeline`` that passes every
  node through and adds support views of those whose entities the retriever cannot reach.
- :class:`ArgusPostprocessor`: a node postprocessor that folds retrieved views into one original
  node per source.
- :class:`ArgusRetriever`: another retriever's hits, folded, for the retrievers that build on
  hits (``AutoMergingRetriever``, ``RecursiveRetriever``): they merge and follow originals only.
- :func:`persist_pipeline` / :func:`load_pipeline`: an ``IngestionPipeline``'s state kept between
  runs, each file replaced whole; an unreadable one refused by name.
- :class:`SiraEnricher`: SIRA's corpus side, LLM search vocabulary in each node's metadata for a
  lexical index.

``argus_llamaindex.pgvector.UpsertingPGVectorStore`` (extra ``[pgvector]``): a ``PGVectorStore``
whose ``add`` upserts by node id, the store of the crash-safe PostgreSQL recipe.
"""

from argus_llamaindex.pipeline_state import PipelineStateError, load_pipeline, persist_pipeline
from argus_llamaindex.postprocessor import ArgusPostprocessor
from argus_llamaindex.retriever import ArgusRetriever
from argus_llamaindex.sira import SiraEnricher
from argus_llamaindex.transform import ArgusTransform

__all__ = [
    "ArgusPostprocessor",
    "ArgusRetriever",
    "ArgusTransform",
    "PipelineStateError",
    "SiraEnricher",
    "load_pipeline",
    "persist_pipeline",
]
