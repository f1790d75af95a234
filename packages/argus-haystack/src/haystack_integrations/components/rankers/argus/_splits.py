"""The meta keys Haystack's splitters write to place a piece within its document.

``HierarchicalDocumentSplitter`` links its blocks into a tree (:data:`TREE_KEYS`), which
``AutoMergingRetriever`` reads to count the matched children of a parent; ``DocumentSplitter``
numbers its splits within their source (:data:`WINDOW_KEYS`), which ``SentenceWindowRetriever``
reads to fetch a split's neighbours. An argus view is not a piece of its original's text: it
must not carry these keys, or those components count it as a child of the original's parent or
splice its text into the original's window. So the augmenter leaves them out of every view, and
the collapser's scope test, which compares a view's meta with its original's, leaves them out
too (with ``page_number``, which a view keeps): they say where a piece sits, not who may see it.
"""

from __future__ import annotations

__all__ = ["POSITION_KEYS", "SPLIT_KEYS", "TREE_KEYS", "WINDOW_KEYS"]

TREE_KEYS = ("__parent_id", "__children_ids", "__level", "__block_size")
"""``HierarchicalDocumentSplitter``'s tree: a block's parent, children, depth and size."""
WINDOW_KEYS = ("source_id", "split_id", "split_idx_start", "_split_overlap")
"""``DocumentSplitter``'s numbering: the split document's id, the split's position in it, where
its text starts and which neighbours its text overlaps."""
SPLIT_KEYS = TREE_KEYS + WINDOW_KEYS
"""What a view never carries: the keys a native component reads as structure."""
POSITION_KEYS = (*SPLIT_KEYS, "page_number")
"""What the collapser's scope test ignores: :data:`SPLIT_KEYS` and the page a split starts on
(kept on a view, so that a filter on pages still lets its view through; a view of a whole
document split later has one where the document has none)."""
