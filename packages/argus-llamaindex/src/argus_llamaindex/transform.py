"""The ingest step: :class:`ArgusTransform`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import (
    BaseNode,
    ImageNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)
from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    field_serializer,
    field_validator,
    model_validator,
)

from argus_ir import Argus
from argus_ir.lineage import KNOWLEDGE_KEYS
from argus_ir.runners.integration import (
    ARGUS_KEYS,
    TRUST_LINEAGE,
    AugmentResult,
    Record,
    aaugment_records,
    augment_records,
    original_lineage,
)
from argus_ir.settings import argus_settings, setting_docs
from argus_ir.vectors import indexed_string
from argus_llamaindex._chunk_ids import stable_chunk_ids
from argus_llamaindex.kb import is_store, store_kb

__all__ = ["ArgusTransform"]

_CORE: dict[str, Any] = argus_settings()  # the core owns every default and description
_DOCS: dict[str, str] = setting_docs()


class ArgusTransform(TransformComponent):
    """Add support views of nodes whose entities the retriever cannot reach.

    Use it in an ``IngestionPipeline`` before the embedding model. Every input node comes out first,
    as a copy carrying its lineage (``argus_source_id``: its own id, ``argus_view``:
    ``"original"``; both kept out of embeddings and LLM prompts, so it embeds the same text), then
    its views: ``TextNode`` objects whose ``argus_source_id`` names the original. The input nodes
    are not modified. A view copies its original's metadata (so metadata filters still match it),
    keeps the ``argus_*`` keys out of embeddings and LLM prompts, and belongs to its original's
    source document: the original's ``SOURCE`` relationship or, for a node without one (a document
    given without a splitter), the node itself, which its copy then names as its own source too.
    So ``index.delete_ref_doc(doc_id)`` and a pipeline's docstore upsert remove a document (or its
    chunks) with its views, with or without a splitter (see ``docs/llamaindex.md``). A view has
    no other relationship (no ``PARENT``, ``CHILD``, ``NEXT`` or ``PREVIOUS``), and a node with
    children (``HierarchicalNodeParser``'s upper levels) gets no views: its leaves do. At query
    time add :class:`~argus_llamaindex.ArgusPostprocessor` (under a retriever that merges or
    follows hits, :class:`~argus_llamaindex.ArgusRetriever`). Lineage is argus's to write:
    ``argus_*`` keys an input brings are replaced (counted in
    ``last_stats["lineage_rewritten"]``), unless ``trust_lineage=True`` and it is a consistent
    argus view, which passes through as it came.

    A splitter's chunks come out under ids of argus's. LlamaIndex's parsers name every chunk with
    a random UUID, and a view's id follows its original's, so the same document split again came
    out under new ids, chunks and views alike, and a store that replaces by id kept both runs' (a
    run whose docstore was lost, run again; two pipelines over one corpus). A chunk (a node whose
    ``SOURCE`` is another node) under a random id (a version-4 UUID) comes out under the UUIDv5 of
    its source's id, its text and its rank among that source's chunks of the same text; the
    ``PREVIOUS``, ``NEXT``, ``PARENT`` and ``CHILD`` relationships among the nodes of the call
    follow. Documents, nodes without a source, ids a splitter's ``id_func`` chose and argus's own
    originals given back keep theirs. An id depends on the chunk alone; a relationship to a chunk
    of another call keeps the splitter's id (``num_workers`` splits a run by document, so a
    document's chunks share a call).

    With ``embed=True`` every node it returns that has text (not an ``ImageNode``) carries its
    ``embedding``: the retriever's vector of exactly the string LlamaIndex embeds for it,
    ``node.get_content(metadata_mode=MetadataMode.EMBED)`` (metadata template, separator, text
    template and ``excluded_embed_metadata_keys`` honoured). A vector store or
    ``VectorStoreIndex`` then embeds none of them again; leave the embedding model out of the
    pipeline (an embedding transform re-embeds every node), keep it for queries. The vectors are
    the retriever's own, so ``retriever`` must name the model your queries are embedded with.

    Every setting that changes the output is a public field, including ``probe_checksum`` and
    ``kb_fingerprint`` (filled from the probe and KB files when left empty), so the pipeline's cache
    misses when a setting, a retrained probe or an edited KB changes. An unknown setting is
    refused. The transform pickles without its models, for ``num_workers > 1``.

    Example:
        >>> from argus_llamaindex import ArgusTransform
        >>> pipeline = IngestionPipeline(transformations=[ArgusTransform(), embed_model])  # doctest: +SKIP
        >>> once = IngestionPipeline(  # doctest: +SKIP
        ...     transformations=[ArgusTransform(embed=True)], vector_store=store
        ... )
    """

    model_config = ConfigDict(extra="forbid")  # a misspelt setting must not pass for a default

    retriever: str = Field(default=_CORE["retriever"], description=_DOCS["retriever"])
    probe: str | None = Field(default=_CORE["probe"], description=_DOCS["probe"])
    probe_checksum: str = Field(default="", description="Content hash of the probe folder.")
    k: int = Field(default=_CORE["k"], description=_DOCS["k"])
    tau: float | None = Field(default=_CORE["tau"], description=_DOCS["tau"])
    remedy: str = Field(default=_CORE["remedy"], description=_DOCS["remedy"])
    k_aug: int = Field(default=_CORE["k_aug"], description=_DOCS["k_aug"])
    kb: Any = Field(
        default=_CORE["kb"],
        description="A shipped KB by name (wikipedia, wikipedia+places, wikipedia+places+biomed), "
        "a KB folder, a passages file, or a LlamaIndex retriever or index holding your own "
        "knowledge (asked with each flagged mention; in the cache key as its kb_fingerprint).",
    )
    kb_match: str = Field(default=_CORE["kb_match"], description=_DOCS["kb_match"])
    kb_fingerprint: str = Field(default="", description="Identity of the KB's content.")
    context_threshold: float | None = Field(
        default=_CORE["context_threshold"], description=_DOCS["context_threshold"]
    )
    max_views: int | None = Field(default=_CORE["max_views"], description=_DOCS["max_views"])
    max_chars: int | None = Field(default=_CORE["max_chars"], description=_DOCS["max_chars"])
    targeting: str = Field(default=_CORE["targeting"], description=_DOCS["targeting"])
    llm: str | None = Field(default=_CORE["llm"], description=_DOCS["llm"])
    prompt_version: str = Field(
        default=_CORE["prompt_version"], description=_DOCS["prompt_version"]
    )
    ner_model: str | None = Field(default=_CORE["ner_model"], description=_DOCS["ner_model"])
    ner_processes: int | None = Field(
        default=_CORE["ner_processes"], description=_DOCS["ner_processes"]
    )
    backend: str = Field(default=_CORE["backend"], description=_DOCS["backend"])
    device: str | None = Field(default=_CORE["device"], description=_DOCS["device"])
    precision: str = Field(default=_CORE["precision"], description=_DOCS["precision"])
    encoder_batch_size: int = Field(
        default=_CORE["encoder_batch_size"], description=_DOCS["encoder_batch_size"]
    )
    batch_size: int = Field(default=_CORE["batch_size"], description=_DOCS["batch_size"])
    trust_lineage: bool = Field(
        default=TRUST_LINEAGE,
        description="Pass argus views among the inputs through as they came (re-ingesting argus's "
        "own output); by default an input's argus_* metadata keys are replaced and it is indexed "
        "as an original.",
    )
    embed: bool = Field(
        default=_CORE["embed"],
        description=_DOCS["embed"]
        + " Each returned node's embedding is the vector of its text as LlamaIndex embeds it "
        "(MetadataMode.EMBED).",
    )
    show_progress: bool = Field(
        default=_CORE["show_progress"],
        exclude=True,
        description=_DOCS["show_progress"] + " Not part of the cache key.",
    )

    _argus: Argus | None = PrivateAttr(default=None)
    _last_stats: dict[str, Any] = PrivateAttr(default_factory=dict)

    @field_validator("kb")
    @classmethod
    def _check_kb(cls, value: Any) -> Any:
        if value is None or isinstance(value, str) or is_store(value):
            return value
        raise ValueError(
            f"kb must be a KB name, folder or file, or a LlamaIndex retriever or index; got "
            f"{type(value).__name__}"
        )

    @field_serializer("kb")
    def _serialise_kb(self, value: Any) -> Any:
        # a retriever or index is not data: the cache key carries its fingerprint instead
        return f"store:{self.kb_fingerprint}" if is_store(value) else value

    @model_validator(mode="after")
    def _fingerprint(self) -> ArgusTransform:
        self._read_fingerprints(keep_given=True)  # validates the settings; reads files, no model
        return self

    def _read_fingerprints(self, *, keep_given: bool) -> None:
        card = self._facade().settings_card()
        for name, key in (("probe_checksum", "probe"), ("kb_fingerprint", "kb")):
            if not (keep_given and getattr(self, name)):
                object.__setattr__(self, name, card[key])

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name not in type(self).model_fields:
            return
        self._argus = None  # a changed setting rebuilds the facade
        if name in ("retriever", "probe", "k", "kb"):  # and re-reads the files they name
            self._read_fingerprints(keep_given=False)

    @classmethod
    def class_name(cls) -> str:
        return "ArgusTransform"

    def _facade(self) -> Argus:
        names = set(_CORE) & set(type(self).model_fields)
        settings = {name: getattr(self, name) for name in names}
        if is_store(self.kb):
            settings["kb"] = store_kb(self.kb, self.kb_fingerprint or None)
        return Argus(**settings)

    @property
    def argus(self) -> Argus:
        """The :class:`argus_ir.Argus` behind this step (built on first use)."""
        if self._argus is None:
            self._argus = self._facade()
        return self._argus

    @property
    def last_stats(self) -> dict[str, Any]:
        """What the last call in this process did (worker processes keep their own)."""
        return dict(self._last_stats)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Return every node followed by its views.

        ``show_progress`` (a keyword, else the field) shows a bar over documents; the pipeline
        passes its own extra keywords to every transform, not its ``show_progress``.
        """
        show = bool(kwargs.get("show_progress", self.show_progress))
        nodes = stable_chunk_ids(nodes)
        result = augment_records(
            self.argus, _records(nodes), show_progress=show, trust_lineage=self.trust_lineage
        )
        _name_parents(nodes, result)
        out = self._finish(nodes, result)
        return self._embed(nodes, out, result, show) if self.embed else out

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        """Async :meth:`__call__`: batches run in a worker thread, the event loop stays free."""
        show = bool(kwargs.get("show_progress", self.show_progress))
        nodes = stable_chunk_ids(nodes)
        result = await aaugment_records(
            self.argus, _records(nodes), show_progress=show, trust_lineage=self.trust_lineage
        )
        _name_parents(nodes, result)
        out = self._finish(nodes, result)
        if self.embed:
            out = await asyncio.to_thread(self._embed, nodes, out, result, show)
        return out

    def _embed(
        self, nodes: Sequence[BaseNode], out: list[BaseNode], result: AugmentResult, show: bool
    ) -> list[BaseNode]:
        """``out`` with each text node's embedding: the vector of the string LlamaIndex embeds
        for it, as the node is returned. A node passed through as it came is copied first, so
        the inputs are not modified; a media node gets none."""
        given = {id(node) for node in nodes}
        out = [node.model_copy() if id(node) in given else node for node in out]
        targets = [node for node in out if _embeds_text(node)]
        # an original enriched in place: LlamaIndex's string for it, then its knowledge
        texts = [
            indexed_string(node.get_content(metadata_mode=MetadataMode.EMBED), node.metadata)
            for node in targets
        ]
        ids = [node.node_id for node in targets]
        vectors = result.index_vectors(self.argus, texts, ids, show)
        for node, vector in zip(targets, vectors, strict=True):
            node.embedding = None if vector is None else vector.tolist()
        self._last_stats = result.stats_dict()  # with any text that could not be embedded
        return out

    def _finish(self, nodes: Sequence[BaseNode], result: AugmentResult) -> list[BaseNode]:
        out: list[BaseNode] = []
        failed: dict[int, str] = {}
        for entry in result.entries:
            original = nodes[entry.position]
            if entry.view is None:
                if entry.position in result.trusted:  # an argus view given back in: as it came
                    out.append(original)
                else:
                    meta = result.metadata[entry.position]
                    out.append(_with_lineage(original, result.ids[entry.position], meta))
                continue
            if entry.position in failed:
                continue
            view = entry.view
            hidden = [k for k in ARGUS_KEYS if k in view.metadata]
            try:
                source = original.source_node or original.as_related_node_info()
            except Exception as exc:  # LlamaIndex cannot hash the node (a lone surrogate): no views
                failed[entry.position] = f"{type(exc).__name__}: {exc}"
                result.stats.failures.append((view.source_id, failed[entry.position]))
                continue
            node = TextNode(
                id_=view.id,
                text=view.text,
                metadata=view.metadata,
                excluded_embed_metadata_keys=_merge(original.excluded_embed_metadata_keys, hidden),
                excluded_llm_metadata_keys=_merge(original.excluded_llm_metadata_keys, hidden),
                relationships={NodeRelationship.SOURCE: source},
            )
            node.metadata_template = original.metadata_template
            node.metadata_separator = original.metadata_separator
            node.text_template = getattr(original, "text_template", node.text_template)
            out.append(node)
        self._last_stats = result.stats_dict()
        return out


def _with_lineage(node: BaseNode, node_id: str, metadata: dict[str, Any]) -> BaseNode:
    """A copy of an original with ``metadata``, its own keys and its lineage (kept out of its
    embedding and LLM text; any ``argus_*`` keys it brought are already replaced).

    A node without a ``SOURCE`` relationship (a document given straight to the transform) becomes
    its own source, so stores record its ``ref_doc_id`` and ``delete_ref_doc`` removes it with the
    views that name it; the relationship carries its hash, as its views' does.
    """
    # its lineage and any knowledge written into its vector (which argus embeds after the text)
    lineage = [*original_lineage(node_id), *(k for k in KNOWLEDGE_KEYS if k in metadata)]
    copy = node.model_copy(deep=True)
    copy.metadata = dict(metadata)
    copy.excluded_embed_metadata_keys = _merge(copy.excluded_embed_metadata_keys, lineage)
    copy.excluded_llm_metadata_keys = _merge(copy.excluded_llm_metadata_keys, lineage)
    if NodeRelationship.SOURCE not in copy.relationships:
        copy.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
            node_id=node_id, node_type=node.get_type(), hash=_version(node)
        )
    return copy


def _version(node: BaseNode) -> str | None:
    """A document's hash, which its views' ``SOURCE`` carries too: a store tells the entries of
    one version of it from another's by it. ``None`` where LlamaIndex cannot hash the node."""
    try:
        return node.hash
    except Exception:  # a lone surrogate in its text or metadata
        return None


def _merge(keys: list[str], more: list[str]) -> list[str]:
    return list(keys) + [k for k in more if k not in keys]


def _text(node: BaseNode) -> str | None:
    """A node's text: a ``TextNode``'s, a ``Document``'s text resource; ``None`` for media."""
    if isinstance(node, TextNode):
        return node.text
    resource = getattr(node, "text_resource", None)
    return None if resource is None else resource.text


def _embeds_text(node: BaseNode) -> bool:
    """Whether a node's embedding is a text vector: it has text and is not an image node (whose
    ``embedding`` a multi-modal index fills with the image's vector)."""
    return _text(node) is not None and not isinstance(node, ImageNode)


_PARENT = "a parent node: its children carry its text, and their views its entities"


def _is_parent(node: BaseNode) -> bool:
    """Whether a node has children (``HierarchicalNodeParser``'s upper levels).

    Such a node gets no views: a view has no ``CHILD`` relationship, so ``get_leaf_nodes`` would
    take a view of a parent for a leaf and index it, and a hit on it would bring the parent in
    beside its own leaves (or beside the merge ``AutoMergingRetriever`` builds from them). The
    leaves are diagnosed, and their views fold into them.
    """
    return bool(node.relationships.get(NodeRelationship.CHILD))


def _records(nodes: Sequence[BaseNode]) -> list[Record]:
    """What argus reads of each node; a parent is read as having no text (no views)."""
    return [
        Record(node.node_id, None if _is_parent(node) else _text(node), node.metadata)
        for node in nodes
    ]


def _name_parents(nodes: Sequence[BaseNode], result: AugmentResult) -> None:
    """Say why a parent node with text passed through without views (``last_stats["skipped"]``)."""
    parents = {node.node_id for node in nodes if _is_parent(node) and _text(node)}
    if parents:
        result.skipped = [
            (doc_id, _PARENT if doc_id in parents else reason) for doc_id, reason in result.skipped
        ]
