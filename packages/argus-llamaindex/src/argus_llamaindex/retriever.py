"""Fold before a retriever that builds on hits: :class:`ArgusRetriever`."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from argus_ir.errors import ArgusInputError
from argus_llamaindex.postprocessor import ArgusPostprocessor

__all__ = ["ArgusRetriever"]


class ArgusRetriever(BaseRetriever):
    """Another retriever's hits, folded by an :class:`ArgusPostprocessor`: one original per source.

    LlamaIndex's own parent-document patterns act on what a vector retriever returns:
    ``AutoMergingRetriever`` counts each hit as a child of its ``PARENT`` and merges the
    children into the parent when enough of them were hit; ``RecursiveRetriever`` follows each
    ``IndexNode`` hit to the node, retriever or query engine its ``index_id`` names. An argus
    view is neither: it has no ``PARENT`` (so it is never counted, and never merged) and is a
    ``TextNode`` (so it is never followed). A postprocessor after them comes too late: a view
    whose leaf was merged away brings the leaf back beside the parent that holds it, and a view
    of a reference folds into the reference, which nothing follows any more. Give them this
    retriever instead of the vector retriever: they see originals only, read from the hits or
    the store under the postprocessor's rule (a view folds into its original only when the
    original carries its metadata), each once, and merge or follow those.

    Its ``retrieve`` is the inner retriever's, then the postprocessor's fold (``aretrieve``: both
    async); ``top_k`` of the postprocessor counts sources. ``IndexNode`` references the inner
    retriever resolves itself (an index built with ``objects=``, an ``IndexNode`` carrying its
    ``obj``) are followed before the fold: let the outer retriever follow them
    (``RecursiveRetriever``'s ``node_dict``, ``retriever_dict``) or give them here as
    ``object_map``, which this retriever follows after the fold, as any LlamaIndex retriever does.

    Args:
        retriever: The retriever whose hits are folded (``index.as_retriever(...)``).
        postprocessor: The fold: an :class:`ArgusPostprocessor` with the store to read
            originals from (``index=`` or ``vector_store=``, and ``docstore=``).
        object_map: ``index_id`` to the object an ``IndexNode`` original leads to.
        callback_manager: LlamaIndex's callback manager.
        verbose: Print the references followed.

    Raises:
        ArgusInputError: ``retriever`` is not a LlamaIndex retriever, or ``postprocessor`` not
            an :class:`ArgusPostprocessor`.

    Example:
        >>> base = index.as_retriever(similarity_top_k=20)  # doctest: +SKIP
        >>> folded = ArgusRetriever(base, ArgusPostprocessor(index=index))  # doctest: +SKIP
        >>> AutoMergingRetriever(folded, storage_context).retrieve(query)  # doctest: +SKIP
    """

    def __init__(
        self,
        retriever: BaseRetriever,
        postprocessor: ArgusPostprocessor,
        *,
        object_map: dict[str, Any] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise ArgusInputError(
                f"retriever must be a LlamaIndex BaseRetriever, got {type(retriever).__name__}"
            )
        if not isinstance(postprocessor, ArgusPostprocessor):
            raise ArgusInputError(
                "postprocessor must be an ArgusPostprocessor (the fold), got "
                f"{type(postprocessor).__name__}"
            )
        self.retriever = retriever
        self.postprocessor = postprocessor
        super().__init__(callback_manager=callback_manager, object_map=object_map, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self.retriever.retrieve(query_bundle)
        return self.postprocessor.postprocess_nodes(hits, query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self.retriever.aretrieve(query_bundle)
        return await self.postprocessor.apostprocess_nodes(hits, query_bundle)
