"""SIRA's corpus side for Haystack: :class:`SiraEnricher`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from argus_ir.sira import SIRA_KEY, TASKS
from argus_ir.sira import SiraEnricher as _Enricher

__all__ = ["SiraEnricher"]


@component
class SiraEnricher:
    """Add LLM-proposed search vocabulary to each document's ``meta["sira_terms"]``.

    SIRA's corpus side (offline, once per corpus): the LLM lists search terms a document lacks
    (synonyms, abbreviations, alternate names). ``content`` is never edited; documents come out as
    copies with the phrases in their meta, for a lexical index such as argus's
    :class:`argus_ir.sira.SiraIndex` (``argus sira index``). Documents without content pass
    through unchanged. Replies are cached by prompt version, model and text in ``cache``.

    Usage:
        >>> from haystack_integrations.components.augmenters.argus import SiraEnricher
        >>> SiraEnricher(llm="transformers", cache="sira-cache").run(documents=docs)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        llm: str = "transformers",
        task: str = "fact",
        cache: str | None = None,
        progress_bar: bool = True,
    ) -> None:
        """Create the component.

        :param llm: The backend spec (``"transformers"``, ``"openai:URL[@MODEL]"``, ``"vllm:M"``).
        :param task: Prompt variant: ``"fact"``, ``"argument"``, ``"duplicate"`` or ``"qa"``.
        :param cache: Folder of the LLM reply cache.
        :param progress_bar: Show a progress bar over LLM calls.
        """
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r} (one of {', '.join(TASKS)})")
        self.llm = llm
        self.task = task
        self.cache = cache
        self.progress_bar = progress_bar
        self._enricher: _Enricher | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component (its init parameters)."""
        return default_to_dict(
            self, llm=self.llm, task=self.task, cache=self.cache, progress_bar=self.progress_bar
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SiraEnricher:
        """Deserialise the component."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], stats=dict[str, Any])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Enrich each document with text.

        :param documents: The documents (not modified).
        :returns: ``documents`` (copies with ``meta["sira_terms"]``) and ``stats`` (LLM calls,
            cache hits and what the reply filters dropped).
        """
        if self._enricher is None:
            self._enricher = _Enricher(self.llm, task=self.task, cache=self.cache)
        todo = [i for i, d in enumerate(documents) if d.content and d.content.strip()]
        phrases, stats = self._enricher(
            [documents[i].content or "" for i in todo], show_progress=self.progress_bar
        )
        out = list(documents)
        for i, found in zip(todo, phrases):
            out[i] = replace(documents[i], meta={**documents[i].meta, SIRA_KEY: found})
        return {"documents": out, "stats": stats.as_dict()}
