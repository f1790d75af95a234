"""argus for LlamaIndex: flag retrieval blind spots at ingest, fold support views at query time.

- :class:`ArgusTransform`: a ``TransformComponent`` for ``IngestionPipeline`` that passes every
  node through and adds support views of those whose entities the retriever cannot reach.
- :class:`ArgusPostprocessor`: a node postprocessor that folds retrieved views into one original
  node per source.
- :class:`SiraEnricher`: SIRA's corpus side, LLM search vocabulary in each node's metadata for a
  lexical index.
"""

from argus_llamaindex.postprocessor import ArgusPostprocessor
from argus_llamaindex.sira import SiraEnricher
from argus_llamaindex.transform import ArgusTransform

__all__ = ["ArgusPostprocessor", "ArgusTransform", "SiraEnricher"]
