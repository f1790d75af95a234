"""argus for Haystack 3: the query-time collapser (see :class:`ArgusCollapser`)."""

from haystack_integrations.components.rankers.argus._stores import DocumentStoreReadError
from haystack_integrations.components.rankers.argus.collapser import ArgusCollapser

__all__ = ["ArgusCollapser", "DocumentStoreReadError"]
