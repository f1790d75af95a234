"""The lifecycle contract (``argus_ir.testing.lifecycle``) on LangChain's recipe, every store the
docs support: PGVector (with ``SQLRecordManager`` in the same database), Chroma on disk, Qdrant
local mode and FAISS (each with a ``SQLRecordManager`` in SQLite).

The recipe is docs/langchain.md's: ``index_sources(argus.transform_documents(docs), manager,
store)``, ``cleanup="full"`` for the whole corpus, ``delete_sources(store, manager, ids)``; with a
splitter, ``RecursiveCharacterTextSplitter.split_documents`` before argus. Its boundaries are the
transform and every write of the store and of the record manager. The real transformer runs
(MiniLM, spaCy, the contract's KB), its output kept per input so each corpus version is
transformed once; the stores embed with a word-hash embedding (no model).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from argus_ir.testing.faults import Step, watch
from argus_ir.testing.lifecycle import Input, LifecycleContract, Row, lineage_of
from langchain_argus import ArgusDocumentTransformer, delete_sources, index_sources

pytestmark = [
    pytest.mark.filterwarnings("ignore:Using SHA-1 for document hashing"),
    pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset"),
]

DIM = 32


def _vector(text: str) -> list[float]:
    out = [0.0] * DIM
    for word in text.lower().split():
        out[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    norm = math.sqrt(sum(x * x for x in out)) or 1.0
    return [x / norm for x in out]


class Hashed(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [_vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return _vector(text)


_FAISS_STOPPED = (
    "FAISS lives in memory: a real kill loses the whole index (keep it with save_local after "
    "each completed call). A call stopped after its store write, the process alive, leaves "
    "entries no record lists; the rerun adds them again and FAISS refuses ids it holds "
    "('Tried to add ids that already exist')"
)


_TWO_VERSIONS = (
    "index() deletes what was recorded before its own start: two index_sources runs updating "
    "one source at once to two versions, in lockstep, each start before the other records, so "
    "neither deletes the other's entries and both versions stay. Give each source one writer, "
    "or run index_sources(cleanup='full') over the corpus afterwards"
)
_FAISS_TWO = (
    "FAISS is one process's memory, and its add refuses ids it holds: two writers in lockstep "
    "in one process meet 'Tried to add ids that already exist'"
)


@dataclass
class Handle:
    kind: str
    name: str
    store: Any
    manager: Any
    closers: list[Any] = field(default_factory=list)


_TRANSFORMED: dict[str, list[Document]] = {}


class TestLangChainLifecycle(LifecycleContract):
    stores: ClassVar[tuple[str, ...]] = ("pgvector", "chroma", "qdrant", "faiss")
    writes: ClassVar[tuple[str, ...]] = (
        "PGVector.add_documents",
        "Chroma.add_documents",
        "QdrantVectorStore.add_documents",
        "FAISS.add_documents",
    )
    exceptions: ClassVar[dict[tuple[str, str], str]] = (
        {
            ("faiss", name): _FAISS_STOPPED
            for name in (
                "ingest killed",
                "update killed",
                "full cleanup killed",
                "splitter: ingest killed",
                "splitter: update killed",
            )
        }
        | {
            (store, "two writers, two versions"): _TWO_VERSIONS
            for store in ("pgvector", "chroma", "qdrant", "faiss")
        }
        | {("faiss", "two writers, one version"): _FAISS_TWO}
    )

    _transformer: ClassVar[ArgusDocumentTransformer | None] = None
    _shared: ClassVar[dict[str, Any]] = {}

    # -- the recipe -------------------------------------------------------------------------------

    def _transform(self, docs: list[Document], settings: dict[str, Any]) -> list[Document]:
        key = json.dumps(
            [[d.id, d.page_content, d.metadata] for d in docs], sort_keys=True, default=str
        )
        if key not in _TRANSFORMED:
            if TestLangChainLifecycle._transformer is None:
                TestLangChainLifecycle._transformer = ArgusDocumentTransformer(**settings)
            _TRANSFORMED[key] = list(self._transformer.transform_documents(docs))  # type: ignore[union-attr]
        return [d.model_copy(deep=True) for d in _TRANSFORMED[key]]

    def ingest(
        self, handle: Handle, docs: list[Input], *, full: bool, splitter: bool, step: Step
    ) -> None:
        given = [Document(d.text, id=d.id, metadata=dict(d.metadata)) for d in docs]
        if splitter:
            from langchain_text_splitters import RecursiveCharacterTextSplitter

            given = RecursiveCharacterTextSplitter(chunk_size=60, chunk_overlap=0).split_documents(
                given
            )
        out = self._transform(given, self._settings)
        step("transformed")
        index_sources(
            out,
            handle.manager,
            handle.store,
            cleanup="full" if full else "incremental",
            batch_size=4,
        )

    def delete(self, handle: Handle, sources: list[str], *, step: Step) -> None:
        delete_sources(handle.store, handle.manager, sources, batch_size=4)

    # -- stores ---------------------------------------------------------------------------------

    _settings: ClassVar[dict[str, Any]] = {}

    def open_store(self, store: str, name: str, settings: Any) -> Handle:
        TestLangChainLifecycle._settings = dict(settings)
        opened = getattr(self, f"_open_{store}")(name)
        return self._watched(opened)

    def reopen(self, handle: Handle) -> Handle:
        if handle.kind == "faiss":  # held in memory: nothing outlives the process but the object
            return Handle(handle.kind, handle.name, handle.store, handle.manager)
        return self.open_store(handle.kind, handle.name, self._settings)

    @staticmethod
    def _watched(handle: Handle) -> Handle:
        """The store's and the record manager's writes are the recipe's boundaries."""
        watch(handle.store, ("add_documents", "delete"))
        watch(handle.manager, ("update", "delete_keys"))
        return handle

    def _sqlite_manager(self, name: str) -> Any:
        from langchain_classic.indexes import SQLRecordManager

        folder = self.scratch()
        manager = SQLRecordManager(f"argus/{name}", db_url=f"sqlite:///{folder / 'records.db'}")
        manager.create_schema()
        return manager

    def _open_pgvector(self, name: str) -> Handle:
        from langchain_classic.indexes import SQLRecordManager
        from langchain_postgres import PGVector

        from argus_ir.testing.postgres import postgres_server

        # a database per store: PGVector's ids are one key space across its collections
        db = "lc_" + hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:16]
        url = postgres_server().database(db).sqlalchemy_url("psycopg")
        store = PGVector(embeddings=Hashed(), collection_name=name, connection=url, use_jsonb=True)
        manager = SQLRecordManager(f"argus/{name}", db_url=url)
        manager.create_schema()
        return Handle(
            "pgvector",
            name,
            store,
            manager,
            closers=[store._engine.dispose, manager.engine.dispose],
        )

    def _open_chroma(self, name: str) -> Handle:
        import chromadb
        from langchain_chroma import Chroma

        if "chroma" not in self._shared:
            self._shared["chroma"] = chromadb.PersistentClient(path=str(self.scratch() / "chroma"))
        store = Chroma(
            collection_name=name, client=self._shared["chroma"], embedding_function=Hashed()
        )
        manager = self._sqlite_manager(name)
        return Handle("chroma", name, store, manager, closers=[manager.engine.dispose])

    def _open_qdrant(self, name: str) -> Handle:
        from langchain_qdrant import QdrantVectorStore
        from qdrant_client import QdrantClient
        from qdrant_client.models import Distance, VectorParams

        if "qdrant" not in self._shared:
            self._shared["qdrant"] = QdrantClient(path=str(self.scratch() / "qdrant"))
        client = self._shared["qdrant"]
        if not client.collection_exists(name):
            client.create_collection(name, VectorParams(size=DIM, distance=Distance.COSINE))
        store = QdrantVectorStore(client=client, collection_name=name, embedding=Hashed())
        manager = self._sqlite_manager(name)
        return Handle("qdrant", name, store, manager, closers=[manager.engine.dispose])

    def _open_faiss(self, name: str) -> Handle:
        import faiss
        from langchain_community.docstore.in_memory import InMemoryDocstore
        from langchain_community.vectorstores import FAISS

        store = FAISS(Hashed(), faiss.IndexFlatIP(DIM), InMemoryDocstore(), {})
        manager = self._sqlite_manager(name)
        return Handle("faiss", name, store, manager, closers=[manager.engine.dispose])

    # -- reading --------------------------------------------------------------------------------

    def rows(self, handle: Handle) -> list[Row]:
        return [Row(i, text, lineage_of(meta)) for i, text, meta in self._entries(handle)]

    def _entries(self, handle: Handle) -> list[tuple[str, str, dict[str, Any]]]:
        store = handle.store
        if handle.kind == "pgvector":
            import psycopg

            url = store._engine.url.render_as_string(hide_password=False)
            with psycopg.connect(url.replace("+psycopg", "")) as conn:
                found = conn.execute(
                    "SELECT e.id, e.document, e.cmetadata FROM langchain_pg_embedding e JOIN "
                    "langchain_pg_collection c ON e.collection_id = c.uuid WHERE c.name = %s",
                    (handle.name,),
                ).fetchall()
            return [(str(i), t, m or {}) for i, t, m in found]
        if handle.kind == "chroma":
            got = store.get()
            return list(zip(got["ids"], got["documents"], got["metadatas"], strict=True))
        if handle.kind == "qdrant":
            points, _ = store.client.scroll(handle.name, limit=10_000, with_payload=True)
            return [
                (str(p.id), p.payload["page_content"], p.payload.get("metadata") or {})
                for p in points
            ]
        docs = store.docstore._dict  # FAISS's in-memory docstore, by id
        return [(str(i), d.page_content, d.metadata) for i, d in docs.items()]
