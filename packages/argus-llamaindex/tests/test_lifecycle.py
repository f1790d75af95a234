"""The lifecycle contract (``argus_ir.testing.lifecycle``) on LlamaIndex's recipe, every store the
docs support: ``UpsertingPGVectorStore`` (PostgreSQL + pgvector), Chroma on disk and Qdrant local
mode.

The recipe is docs/llamaindex.md's: an ``IngestionPipeline(transformations=[ArgusTransform(
embed=True)], docstore=SimpleDocumentStore(), vector_store=store)`` (a ``SentenceSplitter`` first
with a splitter), its state loaded with ``load_pipeline`` before each run and kept with
``persist_pipeline`` after; the whole corpus with ``DocstoreStrategy.UPSERTS_AND_DELETE``; a delete
is ``store.delete(ref_doc_id)`` per source, the docstore told, then persisted. Its boundaries are
each write of the store and the persist. A kill drops the pipeline (its docstore lived in memory);
the rerun loads the folder again. The real transform runs (MiniLM, spaCy, the contract's KB, with
vectors), loaded once for the module.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.schema import Document, TransformComponent
from llama_index.core.storage.docstore import SimpleDocumentStore

from argus_ir.testing.faults import Step, watch
from argus_ir.testing.lifecycle import Input, LifecycleContract, Row, lineage_of
from argus_llamaindex import ArgusTransform, load_pipeline, persist_pipeline

EMBED_DIM = 384  # all-MiniLM-L6-v2


_MEMO: dict[str, list[Any]] = {}


class _Memo(TransformComponent):
    """The module's ArgusTransform, its output kept per input nodes (ids, texts, metadata)."""

    def __call__(self, nodes: Any, **kwargs: Any) -> Any:
        key = json.dumps(
            [[n.node_id, n.get_content(), n.metadata, n.ref_doc_id] for n in nodes],
            sort_keys=True,
            default=str,
        )
        if key not in _MEMO:
            transform = TestLlamaIndexLifecycle._transform
            assert transform is not None
            _MEMO[key] = [n.model_copy(deep=True) for n in transform(nodes, **kwargs)]
        return [n.model_copy(deep=True) for n in _MEMO[key]]


@dataclass
class Handle:
    kind: str
    name: str
    store: Any
    folder: Path
    closers: list[Any] = field(default_factory=list)


class TestLlamaIndexLifecycle(LifecycleContract):
    stores: ClassVar[tuple[str, ...]] = ("pgvector", "chroma", "qdrant")
    every_fault_by_default: ClassVar[tuple[str, ...]] = ("pgvector",)
    compare_by: ClassVar[str] = "id"
    writes: ClassVar[tuple[str, ...]] = ("store.add",)
    exceptions: ClassVar[dict[tuple[str, str], str]] = {
        (store, "two writers, two versions"): (
            f"{store} keeps no versions: two pipelines, each with its own docstore, writing two "
            "versions of one document at once both delete the old version first, then both add "
            "theirs; both stay (UpsertingPGVectorStore deletes a document's other versions as "
            "it writes). Give each document one writer"
        )
        for store in ("chroma", "qdrant")
    }

    _transform: ClassVar[ArgusTransform | None] = None
    _shared: ClassVar[dict[str, Any]] = {}

    # -- the recipe -------------------------------------------------------------------------------

    def _pipeline(self, handle: Handle, splitter: bool, full: bool = False) -> IngestionPipeline:
        if TestLlamaIndexLifecycle._transform is None:
            TestLlamaIndexLifecycle._transform = ArgusTransform(**self._settings, embed=True)
        # without a splitter the transform's output is kept per input (ids are the user's), so
        # each corpus version is diagnosed once; with one, every run transforms anew: the
        # chunks' ids are what the splitter cases test
        steps: list[Any] = [self._transform if splitter else _Memo()]
        if splitter:
            from llama_index.core.node_parser import SentenceSplitter

            steps.insert(0, SentenceSplitter(chunk_size=24, chunk_overlap=0))
        pipeline = IngestionPipeline(
            transformations=steps,
            docstore=SimpleDocumentStore(),
            vector_store=handle.store,
            docstore_strategy=(
                DocstoreStrategy.UPSERTS_AND_DELETE if full else DocstoreStrategy.UPSERTS
            ),
        )
        load_pipeline(pipeline, handle.folder)
        return pipeline

    def ingest(
        self, handle: Handle, docs: list[Input], *, full: bool, splitter: bool, step: Step
    ) -> None:
        pipeline = self._pipeline(handle, splitter, full)
        given = [Document(id_=d.id, text=d.text, metadata=dict(d.metadata)) for d in docs]
        pipeline.run(documents=given)
        persist_pipeline(pipeline, handle.folder)
        step("persisted")

    def delete(self, handle: Handle, sources: list[str], *, step: Step) -> None:
        pipeline = self._pipeline(handle, splitter=False)
        for source in sources:
            handle.store.delete(source)
            pipeline.docstore.delete_ref_doc(source, raise_error=False)
            pipeline.docstore.delete_document(source, raise_error=False)
        persist_pipeline(pipeline, handle.folder)
        step("persisted")

    # -- stores ---------------------------------------------------------------------------------

    _settings: ClassVar[dict[str, Any]] = {}

    def open_store(self, store: str, name: str, settings: Any) -> Handle:
        TestLlamaIndexLifecycle._settings = dict(settings)
        folder = self.scratch() / name
        folder.mkdir(parents=True, exist_ok=True)
        return self._watched(getattr(self, f"_open_{store}")(name, folder))

    def reopen(self, handle: Handle) -> Handle:
        return self.open_store(handle.kind, handle.name, self._settings)

    @staticmethod
    def _watched(handle: Handle) -> Handle:
        """The store's writes are the recipe's boundaries."""
        watch(handle.store, ("add", "delete"), "store")
        return handle

    def _open_pgvector(self, name: str, folder: Path) -> Handle:
        from argus_ir.testing.postgres import postgres_server
        from argus_llamaindex.pgvector import UpsertingPGVectorStore

        database = postgres_server().database("li_lifecycle")
        table = "t" + hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:16]
        store = UpsertingPGVectorStore(
            connection_string=database.sqlalchemy_url("psycopg2"),
            async_connection_string=database.sqlalchemy_url("asyncpg"),
            table_name=table,
            embed_dim=EMBED_DIM,
        )
        handle = Handle("pgvector", name, store, folder)
        handle.closers.append(lambda: store._engine.dispose() if store._engine else None)
        self._shared[f"pg:{name}"] = (database, table)
        return handle

    def _open_chroma(self, name: str, folder: Path) -> Handle:
        import chromadb
        from llama_index.vector_stores.chroma import ChromaVectorStore

        if "chroma" not in self._shared:
            self._shared["chroma"] = chromadb.PersistentClient(path=str(self.scratch() / "chroma"))
        collection = self._shared["chroma"].get_or_create_collection(name)
        return Handle("chroma", name, ChromaVectorStore(chroma_collection=collection), folder)

    def _open_qdrant(self, name: str, folder: Path) -> Handle:
        from llama_index.vector_stores.qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient

        if "qdrant" not in self._shared:
            self._shared["qdrant"] = QdrantClient(path=str(self.scratch() / "qdrant"))
        store = QdrantVectorStore(collection_name=name, client=self._shared["qdrant"])
        return Handle("qdrant", name, store, folder)

    # -- reading --------------------------------------------------------------------------------

    def rows(self, handle: Handle) -> list[Row]:
        return [Row(i, text, lineage_of(meta)) for i, text, meta in self._entries(handle)]

    def _entries(self, handle: Handle) -> list[tuple[str, str, dict[str, Any]]]:
        if handle.kind == "pgvector":
            import psycopg

            database, table = self._shared[f"pg:{handle.name}"]
            with psycopg.connect(database.url) as conn:
                exists = conn.execute("SELECT to_regclass(%s)", (f"data_{table}",)).fetchone()
                if exists is None or exists[0] is None:
                    return []
                found = conn.execute(
                    f"SELECT node_id, text, metadata_ FROM data_{table}"
                ).fetchall()
            return [(str(i), t, m or {}) for i, t, m in found]
        if handle.kind == "chroma":
            got = handle.store._collection.get()
            return list(zip(got["ids"], got["documents"], got["metadatas"], strict=True))
        client = self._shared["qdrant"]
        if not client.collection_exists(handle.name):
            return []
        points, _ = client.scroll(handle.name, limit=10_000, with_payload=True)
        out = []
        for p in points:
            payload = dict(p.payload or {})
            text = _qdrant_text(payload)
            out.append((str(p.id), text, payload))
        return out


def _qdrant_text(payload: dict[str, Any]) -> str:
    """The node's text from LlamaIndex's Qdrant payload (``_node_content`` JSON)."""
    content = payload.get("_node_content")
    if isinstance(content, str):
        return str(json.loads(content).get("text", ""))
    return str(payload.get("text", ""))


pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning")]
