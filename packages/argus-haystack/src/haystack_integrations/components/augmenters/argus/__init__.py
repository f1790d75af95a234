"""argus for Haystack 3: the ingest-time augmenter.

:class:`ArgusAugmenter` passes documents through and adds support views of those whose entities
the retriever cannot reach; :class:`~haystack_integrations.components.rankers.argus.ArgusCollapser`
folds the views back into their source documents at query time. :class:`ArgusSourceCleaner` and
:class:`ArgusSourceSweeper` (around the writer) replace a document with its views, also when two
updates of it run at once; :func:`delete_sources` removes a document with its views.
:class:`SiraEnricher` is SIRA's corpus side: LLM search vocabulary in each document's meta, for a
lexical index.
"""

from haystack_integrations.components.augmenters.argus.augmenter import ArgusAugmenter
from haystack_integrations.components.augmenters.argus.lifecycle import (
    VERSION_KEY,
    ArgusSourceCleaner,
    ArgusSourceSweeper,
    adelete_sources,
    delete_sources,
)
from haystack_integrations.components.augmenters.argus.sira import SiraEnricher

__all__ = [
    "VERSION_KEY",
    "ArgusAugmenter",
    "ArgusSourceCleaner",
    "ArgusSourceSweeper",
    "SiraEnricher",
    "adelete_sources",
    "delete_sources",
]
