"""argus for Haystack 3: the ingest-time augmenter.

:class:`ArgusAugmenter` passes documents through and adds support views of those whose entities
the retriever cannot reach; :class:`~haystack_integrations.components.rankers.argus.ArgusCollapser`
folds the views back into their source documents at query time.
"""

from haystack_integrations.components.augmenters.argus.augmenter import ArgusAugmenter

__all__ = ["ArgusAugmenter"]
