"""The ingest step: :class:`ArgusAugmenter`."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging

from argus_ir import Argus
from argus_ir.runners.integration import (
    TRUST_LINEAGE,
    AugmentResult,
    Record,
    aaugment_records,
    augment_records,
)
from argus_ir.settings import argus_settings
from argus_ir.vectors import indexed_string
from haystack_integrations.components.augmenters.argus.kb import (
    is_store,
    kb_from_dict,
    kb_to_dict,
    store_kb,
)
from haystack_integrations.components.rankers.argus._splits import SPLIT_KEYS

__all__ = ["ArgusAugmenter"]

logger = logging.getLogger(__name__)

_CORE: dict[str, Any] = argus_settings()  # the core owns every default


@component
class ArgusAugmenter:
    """Add support views of documents whose entities the retriever cannot reach.

    Place it before the document embedder. Every input document comes out in ``documents`` as a
    copy whose meta gains its lineage (``argus_source_id``: its own id, ``argus_view``:
    ``"original"``), followed by its views (new documents whose ``meta["argus_source_id"]`` names
    their source). Folding then reads lineage, never how a store reports ids. A view has its
    original's meta but for the keys Haystack's splitters write to place a piece of a document
    (``__parent_id``, ``__children_ids``, ``__level``, ``__block_size``, ``source_id``,
    ``split_id``, ``split_idx_start``, ``_split_overlap``): a view is no piece of its original,
    and ``AutoMergingRetriever`` or ``SentenceWindowRetriever`` would read it as one. The lineage
    keys are not embedded (``SentenceTransformersDocumentEmbedder`` embeds only the meta fields
    you name). Documents without text pass through with their lineage and no views. Lineage is
    argus's to write: ``argus_*`` meta keys an input brings are replaced (it is an original like
    any other, counted in ``stats["lineage_rewritten"]``), unless ``trust_lineage=True`` and it
    is a consistent argus view, which then passes through as it came. A document whose views
    could not be built is still passed through and also listed in ``failed_documents`` (a copy
    whose meta holds ``argus_error``). ``stats`` counts what was done. At query time, put
    :class:`ArgusCollapser` after the retriever; to replace or delete a document with its views,
    see :class:`ArgusSourceCleaner`.

    With ``embed=True`` the document embedder is not needed: every document that comes out
    carries its ``embedding``, the retriever's vector of exactly the string
    ``SentenceTransformersDocumentEmbedder`` embeds with the same ``meta_fields_to_embed``,
    ``embedding_separator``, ``prefix``, ``suffix`` and ``normalize_embeddings``; connect it
    straight to the ``DocumentWriter`` and embed queries with the same model as ``retriever``.

    The init parameters are :class:`argus_ir.Argus` settings and the embedder's text settings
    (plain values, so the component serialises); models load in :meth:`warm_up`.

    Usage:
        >>> from haystack_integrations.components.augmenters.argus import ArgusAugmenter
        >>> augmenter = ArgusAugmenter(remedy="expansion", k_aug=2)
        >>> augmenter.run(documents=docs)["documents"]  # doctest: +SKIP
        >>> once = ArgusAugmenter(embed=True, meta_fields_to_embed=["title"])  # doctest: +SKIP
        >>> pipe.add_component("argus", once)  # doctest: +SKIP
        >>> pipe.connect("argus.documents", "writer.documents")  # no embedder  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        retriever: str = _CORE["retriever"],
        probe: str | None = _CORE["probe"],
        k: int = _CORE["k"],
        tau: float | None = _CORE["tau"],
        remedy: str = _CORE["remedy"],
        k_aug: int = _CORE["k_aug"],
        kb: Any = _CORE["kb"],
        kb_fingerprint: str | None = None,
        kb_match: str = _CORE["kb_match"],
        context_threshold: float | None = _CORE["context_threshold"],
        max_views: int | None = _CORE["max_views"],
        max_chars: int | None = _CORE["max_chars"],
        targeting: str = _CORE["targeting"],
        llm: str | None = _CORE["llm"],
        prompt_version: str = _CORE["prompt_version"],
        ner_model: str | None = _CORE["ner_model"],
        ner_processes: int | None = _CORE["ner_processes"],
        backend: str = _CORE["backend"],
        device: str | None = _CORE["device"],
        precision: str = _CORE["precision"],
        encoder_batch_size: int = _CORE["encoder_batch_size"],
        batch_size: int = _CORE["batch_size"],
        progress_bar: bool = True,
        trust_lineage: bool = TRUST_LINEAGE,
        embed: bool = _CORE["embed"],
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
        prefix: str = "",
        suffix: str = "",
        normalize_embeddings: bool = False,
    ) -> None:
        """Create the component.

        :param retriever: The retriever your index uses: ``"minilm"``, ``"mpnet"``, a
            sentence-transformers model id or folder.
        :param probe: A probe folder (default: the probe shipped for ``retriever`` at ``k``).
        :param k: Retrieval budget of the shipped probe (10 or 50).
        :param tau: Flagging threshold (default: the probe's, 0.3).
        :param remedy: ``"expansion"``, ``"merged"``, ``"descriptor"``, ``"focus"`` or
            ``"synthesis"``.
        :param k_aug: KB passages per flagged entity.
        :param kb: A shipped KB by name (``"wikipedia"``, ``"wikipedia+places"``), a saved KB
            folder, a passages file, or your own knowledge as a retriever component or an
            ``InMemoryDocumentStore`` (asked with each flagged mention; serialised with the
            component). Default: ``argus_ir.kb.places.DEFAULT_KB``.
        :param kb_fingerprint: With a component or store as ``kb``: its content's identity in view
            ids (default: its class); give a new one when the store's content changes.
        :param kb_match: ``"checked"`` (the default: only answers about the mentioned entity,
            see ``argus_ir.kb.shipped.KB_MATCHES``), ``"bm25"`` (a passage titled with the
            mention, then BM25 word matches) or ``"title"`` (one passage, the one known by the
            mention's exact name).
        :param context_threshold: Drop KB passages less similar than this to the document.
        :param max_views: At most this many views per document, riskiest entities first (``None``:
            no budget).
        :param max_chars: The longest document diagnosed, in characters; a longer one is passed
            through without views and listed in ``failed_documents`` (``None``: no limit).
        :param targeting: Which entities get views: ``"probe"`` (predicted RPS below ``tau``) or
            ``"corpus"`` (the document is not in the top 10 for the entity's name among the first
            800 documents of the run).
        :param llm: The synthesis backend spec (``"transformers"``, ``"openai:URL[@MODEL]"``...).
        :param prompt_version: The synthesis prompt.
        :param ner_model: spaCy pipeline for mentions.
        :param ner_processes: Processes NER runs in (default: the core's, from the retriever's
            device: on a GPU all cores but one, at most 8, NER a batch ahead of the pass).
        :param backend: Retriever backend, ``"st"`` or ``"transformers"``.
        :param device: Torch device (default: automatic).
        :param precision: The diagnosis pass: ``"auto"`` (bf16 where the device has it
            natively, else fp32), ``"fp32"`` or ``"bf16"``.
        :param encoder_batch_size: Windows per retriever forward pass.
        :param batch_size: Documents per batch.
        :param progress_bar: Show a progress bar over documents.
        :param trust_lineage: Pass argus views among the inputs through as they came (re-ingesting
            argus's own output); by default an input's ``argus_*`` meta keys are replaced and it
            is indexed as an original.
        :param embed: Give every document that comes out its ``embedding`` (fp32), as the document
            embedder would (one without content too: its meta fields and affixes):
            originals take the diagnosis pass's vector where it read the very string embedded,
            everything else is embedded by the retriever argus holds, so no document embedder is
            needed. The next five parameters are ``SentenceTransformersDocumentEmbedder``'s, and
            must be the values you would give it.
        :param meta_fields_to_embed: Meta fields embedded with the content (values as ``str``,
            fields absent or ``None`` skipped).
        :param embedding_separator: Joins the meta values and the content.
        :param prefix: Put before the embedded string (an instruction such as ``"passage: "``).
        :param suffix: Put after it.
        :param normalize_embeddings: L2-normalise each vector.
        :raises ValueError: A setting is out of range, or ``meta_fields_to_embed`` is not a list of
            field names.
        """
        self.retriever = retriever
        self.probe = probe
        self.k = k
        self.tau = tau
        self.remedy = remedy
        self.k_aug = k_aug
        self.kb = kb
        self.kb_fingerprint = kb_fingerprint
        self.kb_match = kb_match
        self.context_threshold = context_threshold
        self.max_views = max_views
        self.max_chars = max_chars
        self.targeting = targeting
        self.llm = llm
        self.prompt_version = prompt_version
        self.ner_model = ner_model
        self.ner_processes = ner_processes
        self.backend = backend
        self.device = device
        self.precision = precision
        self.encoder_batch_size = encoder_batch_size
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.trust_lineage = trust_lineage
        if isinstance(meta_fields_to_embed, str) or not all(
            isinstance(name, str) for name in meta_fields_to_embed or []
        ):
            raise ValueError(
                f"meta_fields_to_embed must be a list of meta field names, got "
                f"{meta_fields_to_embed!r}"
            )
        self.embed = embed
        self.meta_fields_to_embed = list(meta_fields_to_embed or [])
        self.embedding_separator = embedding_separator
        self.prefix = prefix
        self.suffix = suffix
        self.normalize_embeddings = normalize_embeddings
        self._argus = Argus(**self._settings())  # checks the settings now; loads nothing
        self._warm = False

    def _settings(self) -> dict[str, Any]:
        return {
            "retriever": self.retriever,
            "probe": self.probe,
            "k": self.k,
            "tau": self.tau,
            "remedy": self.remedy,
            "k_aug": self.k_aug,
            "kb": store_kb(self.kb, self.kb_fingerprint) if is_store(self.kb) else self.kb,
            "kb_match": self.kb_match,
            "context_threshold": self.context_threshold,
            "max_views": self.max_views,
            "max_chars": self.max_chars,
            "targeting": self.targeting,
            "llm": self.llm,
            "prompt_version": self.prompt_version,
            "ner_model": self.ner_model,
            "ner_processes": self.ner_processes,
            "backend": self.backend,
            "device": self.device,
            "precision": self.precision,
            "encoder_batch_size": self.encoder_batch_size,
            "batch_size": self.batch_size,
            "show_progress": self.progress_bar,
            "embed": self.embed,
        }

    def warm_up(self) -> None:
        """Load the retriever, probe, NER model, KB (and LLM for synthesis; with ``embed`` an fp32
        retriever where the pass is bf16); idempotent."""
        if not self._warm:
            self._argus.load()
            if self.embed:
                self._argus.embedder  # noqa: B018 (loads it)
            self._warm = True

    def to_dict(self) -> dict[str, Any]:
        """Serialise the component (its init parameters)."""
        settings = self._settings()
        settings["progress_bar"] = settings.pop("show_progress")
        settings["kb"] = kb_to_dict(self.kb)
        settings["kb_fingerprint"] = self.kb_fingerprint
        settings["trust_lineage"] = self.trust_lineage
        settings["meta_fields_to_embed"] = list(self.meta_fields_to_embed)
        settings["embedding_separator"] = self.embedding_separator
        settings["prefix"] = self.prefix
        settings["suffix"] = self.suffix
        settings["normalize_embeddings"] = self.normalize_embeddings
        return default_to_dict(self, **settings)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArgusAugmenter:
        """Deserialise the component (a retriever or store given as ``kb`` included)."""
        init = data.get("init_parameters", {})
        if "kb" in init:
            init["kb"] = kb_from_dict(init["kb"])
        return default_from_dict(cls, data)

    @component.output_types(
        documents=list[Document], failed_documents=list[Document], stats=dict[str, Any]
    )
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Pass every document through and add the views of those with blind-spot entities.

        :param documents: The documents to augment (not modified).
        :returns: ``documents`` (originals with their lineage, each followed by its views; with
            ``embed``, each with its embedding), ``failed_documents`` (originals whose views or
            vector could not be built) and ``stats``.
        """
        self.warm_up()
        result = augment_records(self._argus, _records(documents), trust_lineage=self.trust_lineage)
        out = self._documents(documents, result)
        if self.embed:
            out = self._embed(out, result)
        return self._outputs(documents, out, result)

    @component.output_types(
        documents=list[Document], failed_documents=list[Document], stats=dict[str, Any]
    )
    async def run_async(self, documents: list[Document]) -> dict[str, Any]:
        """Async :meth:`run`: the work runs batch by batch in a worker thread.

        :param documents: The documents to augment (not modified).
        :returns: As :meth:`run`.
        """
        self.warm_up()
        result = await aaugment_records(
            self._argus, _records(documents), trust_lineage=self.trust_lineage
        )
        out = self._documents(documents, result)
        if self.embed:
            out = await asyncio.to_thread(self._embed, out, result)
        return self._outputs(documents, out, result)

    def _text_to_embed(self, document: Document) -> str:
        """The string ``SentenceTransformersDocumentEmbedder`` embeds for ``document`` with this
        component's settings: ``prefix``, then the values of ``meta_fields_to_embed`` (as
        ``str``; absent or ``None`` skipped) and the content joined by ``embedding_separator``,
        then ``suffix``; an original enriched in place has its knowledge
        (``argus_knowledge``) after the content, on a line of its own, before ``suffix``."""
        meta = document.meta
        values = [
            str(meta[name]) for name in self.meta_fields_to_embed if meta.get(name) is not None
        ]
        joined = self.embedding_separator.join([*values, document.content or ""])
        # an original enriched in place: its knowledge after the content, inside the affixes
        return self.prefix + indexed_string(joined, meta) + self.suffix

    def _embed(self, out: list[Document], result: AugmentResult) -> list[Document]:
        """Copies of ``out``, each with the vector of the string it embeds (a document without
        content too, as the document embedder embeds its meta fields and affixes); one whose
        string cannot be embedded gets none."""
        texts = [self._text_to_embed(doc) for doc in out]
        ids = [doc.id for doc in out]
        vectors = result.index_vectors(self._argus, texts, ids, self.progress_bar)
        embedded = list(out)
        for i, vector in enumerate(vectors):
            if vector is not None and self.normalize_embeddings:
                vector = vector / max(float(np.linalg.norm(vector)), 1e-12)
            embedding = None if vector is None else vector.tolist()
            embedded[i] = replace(out[i], embedding=embedding)
        return embedded

    def _documents(self, documents: list[Document], result: AugmentResult) -> list[Document]:
        out: list[Document] = []
        for entry in result.entries:
            if entry.view is None:
                doc = documents[entry.position]
                if entry.position not in result.trusted:  # lineage is argus's to write
                    doc = replace(doc, meta=result.metadata[entry.position])
                out.append(doc)
            else:
                view = entry.view
                meta = {k: v for k, v in view.metadata.items() if k not in SPLIT_KEYS}
                out.append(Document(id=view.id, content=view.text, meta=meta))
        return out

    def _outputs(
        self, documents: list[Document], out: list[Document], result: AugmentResult
    ) -> dict[str, Any]:
        reasons = dict(result.stats.failures)
        failed = []
        for pos in result.failed_positions:
            doc = documents[pos]
            failed.append(replace(doc, meta={**doc.meta, "argus_error": reasons[result.ids[pos]]}))
            logger.warning(
                "argus could not build the views or vector of document {doc_id}: {reason}",
                doc_id=result.ids[pos],
                reason=reasons[result.ids[pos]],
            )
        return {"documents": out, "failed_documents": failed, "stats": result.stats_dict()}


def _records(documents: list[Document]) -> list[Record]:
    return [Record(doc.id, doc.content, doc.meta) for doc in documents]
