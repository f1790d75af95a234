"""The lifecycle contract (``argus_ir.testing.lifecycle``) on Haystack's recipe, every store the
docs support: ``InMemoryDocumentStore``, ``PgvectorDocumentStore`` (PostgreSQL + pgvector),
Chroma on disk and Qdrant local mode.

The recipe is docs/haystack.md's: ``ArgusAugmenter`` and an embedder, then ``ArgusSourceCleaner``
→ ``DocumentWriter(policy=OVERWRITE)`` → ``ArgusSourceSweeper``; ``delete_sources(store, ids)``.
Its boundaries are the augment step and every write and delete of the store. The real augmenter
runs (MiniLM, spaCy, the contract's KB), its output kept per input so each corpus version is
augmented once; the embedder is a word-hash embedding (no second model).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret

from argus_ir.testing.faults import Step, watch
from argus_ir.testing.lifecycle import Input, LifecycleContract, Row, lineage_of
from haystack_integrations.components.augmenters.argus import (
    ArgusAugmenter,
    ArgusSourceCleaner,
    ArgusSourceSweeper,
    delete_sources,
)

DIM = 32


def _vector(text: str) -> list[float]:
    out = [0.0] * DIM
    for word in (text or "").lower().split():
        out[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norm = math.sqrt(sum(x * x for x in out)) or 1.0
    return [x / norm for x in out]


@dataclass
class Handle:
    kind: str
    name: str
    store: Any
    closers: list[Any] = field(default_factory=list)


_AUGMENTED: dict[str, list[Document]] = {}
_NO_FULL = (
    "Haystack's recipe has no whole-corpus cleanup: the cleaner replaces the entries of the "
    "sources it is given and keeps the others; remove a source with delete_sources"
)


class TestHaystackLifecycle(LifecycleContract):
    stores: ClassVar[tuple[str, ...]] = ("in-memory", "pgvector", "chroma", "qdrant")
    writes: ClassVar[tuple[str, ...]] = ("store.write_documents",)
    exceptions: ClassVar[dict[tuple[str, str], str]] = {
        ("*", "whole corpus, full cleanup"): _NO_FULL,
        ("*", "full cleanup killed"): _NO_FULL,
        ("*", "rerun adds nothing"): (
            "Haystack's recipe keeps no record of what it wrote: a rerun writes every entry "
            "again in place (DuplicatePolicy.OVERWRITE), the same rows; nothing is added"
        ),
    }

    _augmenter: ClassVar[ArgusAugmenter | None] = None
    _settings: ClassVar[dict[str, Any]] = {}
    _shared: ClassVar[dict[str, Any]] = {}

    # -- the recipe -------------------------------------------------------------------------------

    def _augment(self, docs: list[Document]) -> list[Document]:
        key = json.dumps([[d.id, d.content, d.meta] for d in docs], sort_keys=True, default=str)
        if key not in _AUGMENTED:
            if TestHaystackLifecycle._augmenter is None:
                TestHaystackLifecycle._augmenter = ArgusAugmenter(
                    progress_bar=False, **self._settings
                )
            out = self._augmenter.run(documents=docs)["documents"]  # type: ignore[union-attr]
            for doc in out:
                doc.embedding = _vector(doc.content or "")
            _AUGMENTED[key] = out
        return [Document.from_dict(d.to_dict()) for d in _AUGMENTED[key]]

    def ingest(
        self, handle: Handle, docs: list[Input], *, full: bool, splitter: bool, step: Step
    ) -> None:
        given = [Document(id=d.id, content=d.text, meta=dict(d.metadata)) for d in docs]
        if splitter:
            from haystack.components.preprocessors import DocumentSplitter

            splitter_ = DocumentSplitter(split_by="word", split_length=8)
            given = splitter_.run(documents=given)["documents"]
        out = self._augment(given)
        step("augmented")
        pipe = Pipeline()
        pipe.add_component("cleaner", ArgusSourceCleaner(document_store=handle.store))
        pipe.add_component(
            "writer", DocumentWriter(document_store=handle.store, policy=DuplicatePolicy.OVERWRITE)
        )
        pipe.add_component("sweeper", ArgusSourceSweeper(document_store=handle.store))
        pipe.connect("cleaner.documents", "writer.documents")
        pipe.connect("cleaner.documents", "sweeper.documents")
        pipe.connect("writer.documents_written", "sweeper.documents_written")
        pipe.run({"cleaner": {"documents": out}})

    def delete(self, handle: Handle, sources: list[str], *, step: Step) -> None:
        delete_sources(handle.store, sources)

    # -- stores ---------------------------------------------------------------------------------

    def open_store(self, store: str, name: str, settings: Any) -> Handle:
        TestHaystackLifecycle._settings = dict(settings)
        return self._watched(getattr(self, "_open_" + store.replace("-", "_"))(name))

    def reopen(self, handle: Handle) -> Handle:
        if handle.kind == "in-memory":  # held in memory: the object is the store
            return Handle(handle.kind, handle.name, handle.store)
        return self.open_store(handle.kind, handle.name, self._settings)

    @staticmethod
    def _watched(handle: Handle) -> Handle:
        """The store's writes and deletes are the recipe's boundaries."""
        watch(handle.store, ("write_documents", "delete_documents"), "store")
        return handle

    def _open_in_memory(self, name: str) -> Handle:
        return Handle("in-memory", name, InMemoryDocumentStore(index=name))

    def _open_pgvector(self, name: str) -> Handle:
        from argus_ir.testing.postgres import postgres_server
        from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

        url = postgres_server().database("hs_lifecycle").url
        table = "t" + hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:16]
        store = PgvectorDocumentStore(
            connection_string=Secret.from_token(url),
            table_name=table,
            keyword_index_name=f"{table}_keywords",  # the index's name is the schema's
            embedding_dimension=DIM,
            search_strategy="exact_nearest_neighbor",
        )
        store.count_documents()  # the table, made before any writer starts (the docs' advice)
        return Handle("pgvector", name, store, closers=[store.close])

    def _open_chroma(self, name: str) -> Handle:
        from haystack_integrations.document_stores.chroma import ChromaDocumentStore

        key = f"chroma:{name}"
        if key not in self._shared:  # its folder takes one client
            self._shared[key] = ChromaDocumentStore(
                collection_name="argus",
                persist_path=str(self.scratch() / name / "chroma"),
                distance_function="cosine",
                client_settings={"anonymized_telemetry": False},
            )
        return Handle("chroma", name, self._shared[key])

    def _open_qdrant(self, name: str) -> Handle:
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        key = f"qdrant:{name}"
        if key not in self._shared:  # its folder takes one client
            self._shared[key] = QdrantDocumentStore(
                path=str(self.scratch() / name / "qdrant"),
                index="argus",
                embedding_dim=DIM,
                progress_bar=False,
            )
        return Handle("qdrant", name, self._shared[key])

    # -- reading --------------------------------------------------------------------------------

    def rows(self, handle: Handle) -> list[Row]:
        return [
            Row(str(d.id), d.content or "", lineage_of(d.meta))
            for d in handle.store.filter_documents()
        ]
