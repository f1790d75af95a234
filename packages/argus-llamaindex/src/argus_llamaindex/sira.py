"""SIRA's corpus side for LlamaIndex: :class:`SiraEnricher`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, TransformComponent
from pydantic import Field, PrivateAttr

from argus_ir.sira import SIRA_KEY
from argus_ir.sira import SiraEnricher as _Enricher
from argus_llamaindex.transform import _merge, _text

__all__ = ["SiraEnricher"]


class SiraEnricher(TransformComponent):
    """Add LLM-proposed search vocabulary to each node's ``metadata["sira_terms"]``.

    The node text is not edited. Nodes come out as copies (the inputs stay as they are); the key
    is excluded from the embedding and LLM views of the metadata, since the terms are meant for a
    lexical index (``argus sira index`` or :class:`argus_ir.sira.SiraIndex`). Nodes without text
    pass through unchanged. Replies are cached by prompt version, model and text in ``cache``.

    Example:
        >>> from llama_index.core.ingestion import IngestionPipeline
        >>> from argus_llamaindex import SiraEnricher
        >>> pipeline = IngestionPipeline(transformations=[SiraEnricher(cache="sira-cache")])
        >>> nodes = pipeline.run(documents=documents)  # doctest: +SKIP
    """

    llm: str = Field(default="transformers", description="argus --llm spec of the backend.")
    task: str = Field(default="fact", description="Prompt variant: fact, argument, duplicate, qa.")
    cache: str | None = Field(default=None, description="Folder of the LLM reply cache.")
    show_progress: bool = Field(default=False, description="A progress bar over LLM calls.")

    _enricher: Any = PrivateAttr(default=None)
    _last_stats: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        return "ArgusSiraEnricher"

    @property
    def last_stats(self) -> dict[str, Any]:
        """The reply filters' counts of the last call."""
        return dict(self._last_stats)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        if self._enricher is None:
            self._enricher = _Enricher(self.llm, task=self.task, cache=self.cache)
        texts = [_text(n) for n in nodes]
        todo = [i for i, t in enumerate(texts) if t and t.strip()]
        phrases, stats = self._enricher(
            [texts[i] or "" for i in todo],
            show_progress=bool(kwargs.get("show_progress", self.show_progress)),
        )
        self._last_stats = stats.as_dict()
        out = list(nodes)
        for i, found in zip(todo, phrases):
            node = nodes[i].model_copy(deep=True)
            node.metadata[SIRA_KEY] = found
            node.excluded_embed_metadata_keys = _merge(
                node.excluded_embed_metadata_keys, [SIRA_KEY]
            )
            node.excluded_llm_metadata_keys = _merge(node.excluded_llm_metadata_keys, [SIRA_KEY])
            out[i] = node
        return out
