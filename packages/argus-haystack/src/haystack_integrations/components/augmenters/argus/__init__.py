"""argus for Haystack 3: the ingest-time augmenter.

:class:`ArgusAugmenter` passes documents through and adds support views of those whose entities
the retriever cannot reach; :class:`~haystack_integrations.components.rankers.argus.ArgusCollapser`
folds the views back into their source documents at query time. :class:`SiraEnricher` is SIRA's
corpus side: LLM search vocabulary in each document's meta, for a lexical index.
"""

from haystack_integrations.components.augmenters.argus.augmenter import ArgusAugmenter
from haystack_integrations.components.augmenters.argus.sira import SiraEnricher

__all__ = ["ArgusAugmenter", "SiraEnricher"]
