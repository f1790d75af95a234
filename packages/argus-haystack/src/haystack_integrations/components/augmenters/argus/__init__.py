"""argus for Haystack 3: the ingest-time augmenter.

:class:`ArgusAugmenter` passes documents through and adds support views of those whose entities
the retriever cannot reach; :class:`~haystack_integrations.components.rankers.argus.ArgusCollapser`
folds the views back into their source documents at query time. :class:`ArgusSourceCleaner` and
:func:`delete_sources` remove a document with its views, to replace or delete it.
:class:`SiraEnricher` is SIRA's corpus side: LLM search vocabulary in each document's meta, for a
lexical index.
"""

from haystack_integrations.components.augmenters.argus.augmenter import ArgusAugmenter
from haystack_integrations.components.augmenters.argus.lifecycle import (
    ArgusSourceCleaner,
    adelete_sources,
    delete_sources,
)
from haystack_integrations.components.augmenters.argus.sira import SiraEnricher

__all__ = [
    "ArgusAugmenter",
    "ArgusSourceCleaner",
    "SiraEnricher",
    "adelete_sources",
    "delete_sources",
]
