"""The ingest step: :class:`ArgusDocumentTransformer`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.documents import BaseDocumentTransformer, Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from argus_ir import Argus
from argus_ir.errors import ArgusInputError
from argus_ir.runners.integration import (
    TRUST_LINEAGE,
    AugmentResult,
    Record,
    aaugment_records,
    augment_records,
)
from argus_ir.settings import argus_settings
from argus_ir.vectors import indexed_string
from langchain_argus.embeddings import DEFAULT_MAX_PENDING, ArgusEmbeddings, PendingVectors
from langchain_argus.kb import store_kb

__all__ = ["ArgusDocumentTransformer"]

_CORE: dict[str, Any] = argus_settings()  # the core owns every default


class ArgusDocumentTransformer(BaseDocumentTransformer, BaseModel):
    """Add support views of documents whose entities the retriever cannot reach.

    Every input document comes out first, followed by its views (more
    :class:`~langchain_core.documents.Document` objects whose metadata names their source in
    ``argus_source_id``). Index them all in the same vector store; retrieve through
    :class:`~langchain_argus.ArgusRetriever`, which folds views back into their source.

    An original comes out as a copy, unchanged but for two lineage keys in its metadata
    (``argus_source_id``: its own id; ``argus_view``: ``"original"``), so it folds with its views
    however the store reports or re-keys ids. A document without an ``id`` gets a content-derived
    one, because its views must be able to point at it. Lineage is argus's to write: ``argus_*``
    keys an input brings are replaced (it is an original like any other, counted in
    ``last_stats["lineage_rewritten"]``), unless ``trust_lineage=True`` and it is a consistent argus
    view, which then passes through untouched (``docs/adapters.md``, "Boundaries").

    The fields are :class:`argus_ir.Argus` settings, checked when set; models load on first use.

    Example:
        >>> from langchain_argus import ArgusDocumentTransformer
        >>> argus = ArgusDocumentTransformer(remedy="expansion", k_aug=2)
        >>> docs = argus.transform_documents(documents)  # doctest: +SKIP
    """

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, arbitrary_types_allowed=True
    )

    retriever: str = _CORE["retriever"]
    """The retriever your index uses (alias, model id or folder): ``"minilm"``, ``"mpnet"``..."""
    probe: str | None = _CORE["probe"]
    """A probe folder (default: the probe shipped for ``retriever`` at ``k``)."""
    k: int = _CORE["k"]
    tau: float | None = _CORE["tau"]
    remedy: str = _CORE["remedy"]
    k_aug: int = _CORE["k_aug"]
    kb: str | VectorStore | BaseRetriever | None = _CORE["kb"]
    """A shipped KB by name (``"wikipedia"``, ``"wikipedia+places"``), a KB folder, a passages
    file, or your own knowledge as a LangChain ``VectorStore`` or ``BaseRetriever`` (asked with
    each flagged mention; see :func:`langchain_argus.kb.store_kb`). Default:
    ``argus_ir.kb.places.DEFAULT_KB``."""
    kb_fingerprint: str | None = None
    """With a store as ``kb``: its content's identity in view ids (default: the store's class);
    give a new one when the store's content changes."""
    kb_match: str = _CORE["kb_match"]
    """``"bm25"`` (a passage titled with the mention, then BM25 word matches) or ``"title"``
    (one passage, the one known by the mention's exact name)."""
    context_threshold: float | None = _CORE["context_threshold"]
    max_views: int | None = _CORE["max_views"]
    """At most this many views per document, riskiest entities first (``None``: no budget)."""
    max_chars: int | None = _CORE["max_chars"]
    """The longest document diagnosed, in characters; a longer one is passed through without
    views and listed in ``last_stats["failures"]`` (``None``: no limit)."""
    targeting: str = _CORE["targeting"]
    """Which entities get views: ``"probe"`` (predicted RPS below ``tau``) or ``"corpus"`` (the
    document is not in the top 10 for the entity's name among the first 800 documents given)."""
    llm: str | None = _CORE["llm"]
    prompt_version: str = _CORE["prompt_version"]
    ner_model: str | None = _CORE["ner_model"]
    ner_processes: int | None = _CORE["ner_processes"]
    """Processes NER runs in (default: the core's, from the retriever's device)."""
    backend: str = _CORE["backend"]
    device: str | None = _CORE["device"]
    precision: str = _CORE["precision"]
    encoder_batch_size: int = _CORE["encoder_batch_size"]
    batch_size: int = _CORE["batch_size"]
    show_progress: bool = _CORE["show_progress"]
    trust_lineage: bool = TRUST_LINEAGE
    """Pass argus views among the inputs through untouched (re-ingesting argus's own output);
    by default an input's ``argus_*`` keys are replaced and it is indexed as an original."""
    embed: bool = _CORE["embed"]
    """Compute every returned document's retriever vector (originals from the diagnosis pass,
    views with the retriever argus holds), for the store's :meth:`embeddings` to hand out, so the
    store embeds nothing a second time."""
    max_pending: int = DEFAULT_MAX_PENDING
    """With ``embed``: the most vectors held for documents the store has not embedded yet."""

    _argus: Argus | None = PrivateAttr(default=None)
    _last_stats: dict[str, Any] = PrivateAttr(default_factory=dict)
    _pending: PendingVectors | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self) -> ArgusDocumentTransformer:
        Argus(**self._settings())  # the facade checks its settings; it loads nothing
        return self

    def embeddings(self, base: Embeddings, *, verify: bool = True) -> ArgusEmbeddings:
        """The embeddings to build your vector store with: ``embed_documents`` answers from the
        vectors this transformer computed for exactly those texts; queries, and any text it did
        not return, go to ``base``, your model (the same as ``retriever``).

        ``base`` is checked here, not at search time: the model it names (through wrappers
        such as ``CacheBackedEmbeddings``), settings that change its document vectors
        (``truncate_dim``, prompts, precision) and, unless ``verify=False``, one test sentence
        embedded by ``base`` and by argus (loads the retriever): the same length and a cosine
        of at least 0.999. ``verify=False`` is for an embedder you know to be the retriever
        that cannot embed before the store exists.

        Example:
            >>> argus = ArgusDocumentTransformer(embed=True)  # doctest: +SKIP
            >>> store = InMemoryVectorStore(argus.embeddings(HuggingFaceEmbeddings(model_name=path)))  # doctest: +SKIP
            >>> store.add_documents(argus.transform_documents(docs))  # doctest: +SKIP

        Raises:
            ArgusInputError: ``embed`` is off, or ``base`` declares another model than
                ``retriever`` (the message names both), a setting that changes its vectors, or
                embeds the test sentence differently from argus.
        """
        if not self.embed:
            raise ArgusInputError(
                "embeddings() hands out the vectors an ArgusDocumentTransformer(embed=True) "
                "computes; this one has embed=False"
            )

        def probe(text: str) -> np.ndarray:
            (vector,) = self.argus.embedder.embed([text])
            if vector is None:  # the test sentence is plain ASCII: no tokenizer refuses it
                raise ArgusInputError(f"argus could not embed the test sentence {text!r}")
            return vector

        return ArgusEmbeddings(
            base, self._vectors_pending(), self.retriever, probe=probe if verify else None
        )

    def _vectors_pending(self) -> PendingVectors:
        if self._pending is None or self._pending.max_pending != self.max_pending:
            self._pending = PendingVectors(self.max_pending)
        return self._pending

    def _settings(self) -> dict[str, Any]:
        """The :class:`argus_ir.Argus` settings (a store as ``kb`` wrapped as a KB)."""
        out = {n: getattr(self, n) for n in type(self).model_fields if n in _CORE}
        if isinstance(self.kb, VectorStore | BaseRetriever):
            out["kb"] = store_kb(self.kb, self.kb_fingerprint)
        return out

    @classmethod
    def from_argus(cls, argus: Argus) -> ArgusDocumentTransformer:
        """Wrap a configured :class:`argus_ir.Argus` (its KB or LLM may be objects)."""
        settings = {
            name: getattr(argus, name)
            for name in cls.model_fields
            if hasattr(argus, name)
            and isinstance(getattr(argus, name), str | int | float | bool | type(None))
        }
        transformer = cls(**settings)
        transformer._argus = argus
        return transformer

    @property
    def argus(self) -> Argus:
        """The :class:`argus_ir.Argus` behind this step (built from the fields on first use)."""
        if self._argus is None:
            self._argus = Argus(**self._settings())
        return self._argus

    @property
    def last_stats(self) -> dict[str, Any]:
        """What the last call did: documents, flagged entities, views, skipped inputs, failures."""
        return dict(self._last_stats)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in type(self).model_fields:
            super().__setattr__(name, value)
            return
        before = getattr(self, name)
        try:
            super().__setattr__(name, value)
        except ValueError:
            self.__dict__[name] = before  # pydantic keeps a value its model check rejected
            raise
        self._argus = None  # a changed setting rebuilds the facade

    def transform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        """Return every document (a copy with its lineage keys) followed by its views.

        Args:
            documents: The documents (not modified).
            show_progress: Override the field for this call.
        """
        records = _records(documents)
        result = augment_records(
            self.argus,
            records,
            show_progress=kwargs.get("show_progress"),
            trust_lineage=self.trust_lineage,
        )
        out = self._finish(documents, result)
        if self.embed:
            self._embed(out, result, kwargs.get("show_progress"))
        return out

    async def atransform_documents(
        self, documents: Sequence[Document], **kwargs: Any
    ) -> Sequence[Document]:
        """Async :meth:`transform_documents`: the work runs batch by batch in a worker thread, so
        the event loop stays responsive and a cancellation stops at the next batch."""
        records = _records(documents)
        result = await aaugment_records(
            self.argus,
            records,
            show_progress=kwargs.get("show_progress"),
            trust_lineage=self.trust_lineage,
        )
        out = self._finish(documents, result)
        if self.embed:
            await asyncio.to_thread(self._embed, out, result, kwargs.get("show_progress"))
        return out

    def _embed(
        self, out: list[Document], result: AugmentResult, show_progress: bool | None
    ) -> None:
        """Compute every returned document's vector and hold it for :meth:`embeddings`."""
        show = self.show_progress if show_progress is None else show_progress
        texts = [doc.page_content for doc in out]
        ids = [str(doc.id) for doc in out]
        # an original enriched in place: the vector of its text and then its knowledge, held for
        # the text the store will ask about (its page_content, the user's)
        strings = [indexed_string(doc.page_content, doc.metadata) for doc in out]
        self._vectors_pending().put(texts, result.index_vectors(self.argus, strings, ids, show))
        self._last_stats = result.stats_dict()  # with any text that could not be embedded

    def _finish(self, documents: Sequence[Document], result: AugmentResult) -> list[Document]:
        out: list[Document] = []
        for entry in result.entries:
            source = documents[entry.position]
            if entry.view is None:
                if entry.position in result.trusted:  # an argus view given back in: as it is
                    out.append(source)
                    continue
                doc_id = result.ids[entry.position]
                metadata = result.metadata[entry.position]
                out.append(source.model_copy(update={"id": doc_id, "metadata": metadata}))
            else:
                view = entry.view
                out.append(Document(page_content=view.text, metadata=view.metadata, id=view.id))
        self._last_stats = result.stats_dict()
        return out


def _records(documents: Sequence[Document]) -> list[Record]:
    return [Record(doc.id, doc.page_content, doc.metadata) for doc in documents]
