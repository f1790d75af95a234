"""The query-time step: :class:`ArgusPostprocessor`."""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from pydantic import Field, field_validator

from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT, SourceHits, fold_hits, rank_sources

__all__ = ["ArgusPostprocessor"]


class ArgusPostprocessor(BaseNodePostprocessor):
    """Fold retrieved argus views into their source nodes; one result per source.

    Retrieve more nodes than you need (``similarity_top_k``: views crowd the top ranks); each
    source scores as its best hit (or the sum, ``how="sum"``), every view's score less
    ``view_discount``, and comes out as the *original* node: from the hits when the original was
    retrieved itself, else from ``docstore`` (pass ``index.docstore``); without a docstore, the
    best view stands in.

    Example:
        >>> retriever = index.as_retriever(similarity_top_k=20)  # doctest: +SKIP
        >>> nodes = ArgusPostprocessor(top_k=4, docstore=index.docstore).postprocess_nodes(
        ...     retriever.retrieve("who starred in Casablanca?"))  # doctest: +SKIP
    """

    top_k: int | None = Field(default=None, description="Source nodes to return (None: all).")
    how: str = Field(default="max", description="max or sum of a source's hit scores.")
    view_discount: float = Field(
        default=DEFAULT_VIEW_DISCOUNT,
        description="Subtracted from every view's score before folding: a view lifts its source "
        "only when it beats the original by more than this.",
    )
    docstore: Any = Field(default=None, exclude=True, description="Where originals are read.")

    @field_validator("view_discount")
    @classmethod
    def _check_discount(cls, value: float) -> float:
        rank_sources((), view_discount=value)  # the core's check, run on no hits
        return value

    @classmethod
    def class_name(cls) -> str:
        return "ArgusPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        folded = fold_hits(
            nodes,
            id_of=lambda n: n.node.node_id,
            metadata_of=lambda n: n.node.metadata,
            score_of=lambda n: n.score,
            how=self.how,
            top_k=self.top_k,
            view_discount=self.view_discount,
        )
        missing = [f.source_id for f in folded if f.original is None]
        fetched = self._fetch(missing)
        return [_result(f, fetched) for f in folded]

    def _fetch(self, ids: list[str]) -> dict[str, BaseNode]:
        if not ids or self.docstore is None:
            return {}
        found = {}
        for node_id in ids:
            node = self.docstore.get_node(node_id, raise_error=False)
            if node is not None:
                found[node_id] = node
        return found


def _result(folded: SourceHits[NodeWithScore], fetched: dict[str, BaseNode]) -> NodeWithScore:
    if folded.original is not None:
        node = folded.original.node
    else:
        node = fetched.get(folded.source_id, folded.best.node)
    return NodeWithScore(node=node, score=folded.score)
