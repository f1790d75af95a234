"""langchain-argus under faults (issue 54): the recipes of docs/langchain.md killed, run twice at
once, and the store stopped mid-query, on PostgreSQL + pgvector (``PGVector`` with LangChain's
``SQLRecordManager`` in the same database).

The corpus is argus-shaped output written out by hand (twelve originals, twelve views, the
lineage argus writes) embedded by a word-hash embedding, so no test loads a model. A kill is a
real SIGKILL: the recipe runs in a child process (this file run as a script) whose store or
record manager kills its own process right after the call named by the case returns. After a
kill the same recipe is run again, and the database must then hold what an uninterrupted run
leaves: the same rows (ids, texts, metadata, vectors) and the same record-manager keys.

The same corpus also runs the recipes on stores that differ from PGVector where the recipes read
them: FAISS (its ``delete`` refuses ids it does not hold), Qdrant in local mode (its
``get_by_ids`` gives the id in ``metadata["_id"]`` only), and documents that never went through
the transformer.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.indexing import InMemoryRecordManager
from langchain_core.vectorstores import InMemoryVectorStore

from argus_ir.errors import ArgusInputError
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY, VIEW_NAME_KEY
from argus_ir.remedy.texts import view_id
from langchain_argus import (
    ArgusDocstore,
    ArgusRetriever,
    StoreReadError,
    adelete_sources,
    aindex_sources,
    delete_sources,
    index_sources,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:Using SHA-1 for document hashing"),
    pytest.mark.filterwarnings("ignore:Relevance scores must be between"),
    pytest.mark.filterwarnings("ignore:`langchain-community` is being sunset"),
]

DIM = 32
CHANGED = ("doc-05", "doc-07")  # the update recipe changes these (2 and 1 views)
GONE = ("doc-02", "doc-08")  # the delete recipe removes these (2 views each)


def _vector(text: str) -> list[float]:
    """A unit vector of the text's words hashed into ``DIM`` buckets (deterministic, no model)."""
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


def _original(src: str, text: str, **meta: Any) -> Document:
    return Document(text, id=src, metadata={**meta, SOURCE_KEY: src, VIEW_KEY: "original"})


def _view(src: str, text: str, **meta: Any) -> Document:
    key = f"{src}#argus-{hashlib.sha1(text.encode()).hexdigest()[:16]}"
    lineage = {SOURCE_KEY: src, VIEW_KEY: "expansion", VIEW_NAME_KEY: key}
    return Document(text, id=view_id(key), metadata={**meta, **lineage})


def corpus(changed: Sequence[str] = (), only: Sequence[str] | None = None) -> list[Document]:
    """The transformer's output shape: each original followed by its views (``i % 3`` of them);
    the sources in ``changed`` with new texts; ``only``: just those sources."""
    out = []
    for i in range(12):
        src = f"doc-{i:02d}"
        if only is not None and src not in only:
            continue
        text = f"document {i} on topic {i % 4}" + (" revised" if src in changed else "")
        out.append(_original(src, text, n=i))
        out += [_view(src, f"{text}, view {j}", n=i) for j in range(i % 3)]
    return out


# -- the recipes of docs/langchain.md -------------------------------------------------------------


def ingest(manager: Any, store: Any, batch_size: int = 5) -> dict[str, int]:
    return dict(index_sources(corpus(), manager, store, batch_size=batch_size))


def update(manager: Any, store: Any) -> dict[str, int]:
    return dict(index_sources(corpus(CHANGED, only=CHANGED), manager, store, batch_size=2))


def delete(manager: Any, store: Any) -> None:
    delete_sources(store, manager, GONE, batch_size=3)


def reconcile(manager: Any, store: Any) -> dict[str, int]:
    """Index the whole corpus with ``cleanup="full"`` (the docs' reconciliation)."""
    return dict(index_sources(corpus(), manager, store, cleanup="full"))


RECIPES = {"ingest": ingest, "update": update, "delete": delete, "reconcile": reconcile}


# -- PostgreSQL ---------------------------------------------------------------------------------


def _database(name: str) -> str:
    from argus_ir.testing.postgres import postgres_server

    db = "f_" + hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:20]
    return postgres_server().database(db).sqlalchemy_url("psycopg")


def _parts(url: str, kill_at: tuple[str, int] | None = None) -> tuple[Any, Any]:
    """The record manager and the store over ``url``; with ``kill_at`` (a call's name and its
    count), both kill this process right after that call returns."""
    from langchain_classic.indexes import SQLRecordManager
    from langchain_postgres import PGVector

    calls: Counter[str] = Counter()

    def tick(name: str) -> None:
        calls[name] += 1
        if kill_at == (name, calls[name]):
            os.kill(os.getpid(), signal.SIGKILL)

    class Store(PGVector):
        def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
            out = super().add_documents(documents, **kwargs)
            tick("store.add_documents")
            return out

        def delete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
            super().delete(ids, **kwargs)
            tick("store.delete")

    class Manager(SQLRecordManager):
        def update(self, keys: Sequence[str], **kwargs: Any) -> None:
            super().update(keys, **kwargs)
            tick("manager.update")

        def delete_keys(self, keys: Sequence[str]) -> None:
            super().delete_keys(keys)
            tick("manager.delete_keys")

    store = Store(embeddings=Hashed(), collection_name="argus", connection=url, use_jsonb=True)
    manager = Manager("argus/faults", db_url=url)
    manager.create_schema()
    return manager, store


def _state(url: str) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Every row of the collection (id, text, metadata, vector) and the record manager's keys."""
    import psycopg

    with psycopg.connect(url.replace("+psycopg", "")) as conn:
        rows = conn.execute(
            "SELECT e.id, e.document, e.cmetadata::text, e.embedding::text "
            "FROM langchain_pg_embedding e JOIN langchain_pg_collection c "
            "ON e.collection_id = c.uuid WHERE c.name = 'argus' ORDER BY e.id"
        ).fetchall()
        keys = conn.execute(
            "SELECT key FROM upsertion_record WHERE namespace = 'argus/faults' ORDER BY key"
        ).fetchall()
    return [tuple(r) for r in rows], [k[0] for k in keys]


def _run(url: str, *steps: str) -> None:
    manager, store = _parts(url)
    try:
        for step in steps:
            RECIPES[step](manager, store)
    finally:
        store._engine.dispose()
        manager.engine.dispose()


def _child(url: str, recipe: str, kill_at: tuple[str, int] | None = None) -> subprocess.Popen:
    args = [sys.executable, __file__, url, recipe, *(map(str, kill_at) if kill_at else ())]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def uninterrupted() -> dict[str, tuple[list[tuple[Any, ...]], list[str]]]:
    """What each recipe leaves when nothing interrupts it (after the ingest it starts from)."""
    out = {}
    for recipe, steps in {
        "ingest": ("ingest",),
        "update": ("ingest", "update"),
        "delete": ("ingest", "delete"),
    }.items():
        url = _database(f"uninterrupted/{recipe}/{os.getpid()}")
        _run(url, *steps)
        out[recipe] = _state(url)
    rows, keys = out["ingest"]
    assert len(rows) == 24 and [r[0] for r in rows] == keys
    return out


KILLS = [
    ("ingest", ("store.add_documents", 1)),  # a batch written, none of it recorded
    ("ingest", ("manager.update", 2)),  # two batches in, the rest not written
    ("ingest", ("store.add_documents", 5)),  # every entry written, the last batch unrecorded
    ("update", ("store.add_documents", 1)),  # some new versions written, unrecorded
    ("update", ("manager.update", 3)),  # every new version recorded, the old ones still there
    ("update", ("store.delete", 1)),  # old versions deleted, their records still there
    ("delete", ("store.delete", 1)),  # entries deleted, their records still there
    ("delete", ("manager.delete_keys", 1)),  # between the two sources' keys
    ("delete", ("store.delete", 2)),  # the last entries deleted, their records still there
]


@pytest.mark.parametrize(("recipe", "kill_at"), KILLS, ids=[f"{r}-{c}{n}" for r, (c, n) in KILLS])
def test_a_recipe_killed_then_run_again_ends_as_an_uninterrupted_run(
    recipe, kill_at, tmp_path, uninterrupted
):
    """kill -9 at three moments of the ingest, update and delete recipes; the same recipe run
    again leaves what an uninterrupted run leaves."""
    url = _database(str(tmp_path))
    if recipe != "ingest":
        _run(url, "ingest")
    else:
        _run(url)  # the tables, made once
    child = _child(url, recipe, kill_at)
    _, err = child.communicate(timeout=300)
    assert child.returncode == -signal.SIGKILL, err[-2000:]  # killed at that moment
    _run(url, recipe)
    assert _state(url) == uninterrupted[recipe]


def test_item_2_a_direct_delete_killed_between_its_steps_then_reconciled_restores_the_source(
    tmp_path, uninterrupted
):
    """Issue 54, 2: the documented delete killed after the store's delete, before the record
    manager's; the documented ``cleanup="full"`` reconciliation over the whole corpus then
    re-adds the source, as it does after an uninterrupted delete (today its records made
    ``index()`` skip it: two sources' entries never came back)."""
    url = _database(str(tmp_path))
    _run(url, "ingest")
    child = _child(url, "delete", ("store.delete", 1))
    _, err = child.communicate(timeout=300)
    assert child.returncode == -signal.SIGKILL, err[-2000:]
    _run(url, "reconcile")
    assert _state(url) == uninterrupted["ingest"]


@pytest.mark.parametrize("recipe", ["ingest", "update"])
def test_two_ingesters_at_once_end_as_one(recipe, tmp_path, uninterrupted):
    """Two processes run the same recipe at the same time (the store and the record manager's
    table made once before, as docs/langchain.md says): the end is what one run leaves."""
    url = _database(str(tmp_path))
    _run(url, *(["ingest"] if recipe != "ingest" else []))
    children = [_child(url, recipe) for _ in range(2)]
    outs = [c.communicate(timeout=300) for c in children]
    assert [c.returncode for c in children] == [0, 0], [err[-2000:] for _, err in outs]
    assert _state(url) == uninterrupted[recipe]


@pytest.mark.parametrize("batch_size", [1, 4, 5, 7, 100])
def test_item_3_indexing_twice_adds_and_deletes_nothing_at_any_batch_size(batch_size, tmp_path):
    """Issue 54, 3: the documented ingest run twice over the same output; the second run adds
    nothing and deletes nothing, whatever the batch size (today a source whose views straddled
    a batch was deleted and re-added: 1 and 1 at batch 100 on 272 entries)."""
    url = _database(str(tmp_path))
    manager, store = _parts(url)
    try:
        first = ingest(manager, store, batch_size)
        assert first["num_added"] == 24
        before = _state(url)
        again = ingest(manager, store, batch_size)
        assert (again["num_added"], again["num_deleted"], again["num_skipped"]) == (0, 0, 24)
        assert _state(url) == before
    finally:
        store._engine.dispose()
        manager.engine.dispose()


@pytest.mark.parametrize("batch_size", [1, 5, 100])
def test_the_async_recipes_end_as_the_sync_ones(batch_size, tmp_path, uninterrupted):
    """``aindex_sources`` / ``adelete_sources`` over an async ``PGVector`` and an async
    ``SQLRecordManager``: a second ingest adds and deletes nothing at any batch size; entries a
    stopped delete removed while their records stayed are indexed again; the delete and the
    update leave what the sync recipes leave."""
    from langchain_classic.indexes import SQLRecordManager
    from langchain_postgres import PGVector
    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlalchemy.pool import NullPool

    url = _database(str(tmp_path))
    _run(url)  # the tables, made once

    async def recipes() -> dict[str, Any]:
        engine = create_async_engine(url, poolclass=NullPool)
        store = PGVector(Hashed(), collection_name="argus", connection=engine, use_jsonb=True)
        manager = SQLRecordManager("argus/faults", engine=engine, async_mode=True)
        got: dict[str, Any] = {}
        try:
            got["first"] = dict(
                await aindex_sources(corpus(), manager, store, batch_size=batch_size)
            )
            got["again"] = dict(
                await aindex_sources(corpus(), manager, store, batch_size=batch_size)
            )
            got["ingest"] = _state(url)
            await store.adelete(await manager.alist_keys(group_ids=list(GONE)))  # records kept
            got["restored"] = dict(await aindex_sources(corpus(), manager, store))
            got["after restore"] = _state(url)
            got["deleted"] = await adelete_sources(store, manager, GONE, batch_size=3)
            got["delete"] = _state(url)
            await aindex_sources(corpus(), manager, store)
            await aindex_sources(corpus(CHANGED, only=CHANGED), manager, store, batch_size=2)
            got["update"] = _state(url)
        finally:
            await engine.dispose()
        return got

    got = asyncio.run(recipes())
    assert got["first"]["num_added"] == 24
    assert [got["again"][k] for k in ("num_added", "num_deleted", "num_skipped")] == [0, 0, 24]
    assert got["ingest"] == got["after restore"] == uninterrupted["ingest"]
    assert got["restored"]["num_added"] == 6  # GONE's two originals and four views
    assert got["deleted"] == 6 and got["delete"] == uninterrupted["delete"]
    assert got["update"] == uninterrupted["update"]


# -- query time ---------------------------------------------------------------------------------


def test_item_5_the_server_stopped_between_search_and_fetch_raises_naming_the_store(caplog):
    """Issue 54, 5: the search answers, then PostgreSQL stops before the originals are read;
    ``invoke`` and ``ainvoke`` raise an error naming the store (today: ``[]`` and a warning that
    the originals may have been deleted). A read that works and finds nothing still drops the
    source, with the warning."""
    from langchain_postgres import PGVector

    from argus_ir.testing.postgres import private_postgres_server

    docs = [_original("a", "alpha beta"), _view("a", "gamma delta epsilon")]

    with private_postgres_server() as pg:
        url = pg.server.database("outage").sqlalchemy_url("psycopg")

        class StopsAfterSearch(PGVector):
            def similarity_search_with_relevance_scores(self, *args: Any, **kwargs: Any):
                hits = super().similarity_search_with_relevance_scores(*args, **kwargs)
                pg.stop()
                return hits

        def retriever(store: Any) -> ArgusRetriever:
            return ArgusRetriever(vectorstore=store, k=1, fetch_k=1, relevance_per_cosine=1.0)

        plain = PGVector(embeddings=Hashed(), collection_name="c", connection=url, use_jsonb=True)
        plain.add_documents(docs)
        plain._engine.dispose()
        for call in (
            lambda r: r.invoke("gamma delta epsilon"),
            lambda r: asyncio.run(r.ainvoke("gamma delta epsilon")),
        ):
            pg.start()
            store = StopsAfterSearch(
                embeddings=Hashed(), collection_name="c", connection=url, use_jsonb=True
            )
            with pytest.raises(StoreReadError, match=r"StopsAfterSearch\.get_by_ids failed"):
                call(retriever(store))
            store._engine.dispose()

        pg.start()
        store = PGVector(embeddings=Hashed(), collection_name="c", connection=url, use_jsonb=True)
        store.delete(["a"])  # the original is gone: a read that finds nothing
        with caplog.at_level(logging.WARNING, logger="langchain_argus.retriever"):
            assert retriever(store).invoke("gamma delta epsilon") == []
        assert any("1 source(s) dropped" in r.getMessage() for r in caplog.records)
        store._engine.dispose()


def test_item_11_a_hit_without_an_id_gets_none_made_up(tmp_path):
    """Issue 54, 11: LanceDB returns its hits without ids. A plain document stays without one
    (today: ``"\\0argus-anonymous-hit-0"``), and one whose metadata claims to be the original of
    ``"victim"`` does not become ``"victim"``: anyone can write that key."""
    from langchain_community.vectorstores import LanceDB

    store = LanceDB(uri=str(tmp_path / "lance"), embedding=Hashed(), table_name="t")
    forged = {SOURCE_KEY: "victim", VIEW_KEY: "original", "n": 0}
    store.add_documents(
        [
            Document(
                "alpha beta gamma",
                id="plain-1",
                metadata={SOURCE_KEY: "", VIEW_KEY: "original", "n": 0},
            ),
            Document("alpha beta delta", id="mine", metadata=forged),
        ]
    )
    retriever = ArgusRetriever(
        vectorstore=store, k=2, fetch_k=2, view_discount=0, fetch_originals=lambda ids: []
    )
    found = retriever.invoke("alpha beta")
    assert sorted(d.page_content for d in found) == ["alpha beta delta", "alpha beta gamma"]
    assert [d.id for d in found] == [None, None]


def test_item_11_a_fetched_entry_is_the_original_of_its_own_id_only():
    """Issue 54, 11: ``get_by_ids(["a", "b"])`` returns the entry stored as ``"a"``, whose
    metadata claims it is the original of ``"b"``. It serves neither: ``"b"`` is served by its
    own entry (today: by ``"a"``'s text, keyed by the claim), and ``"a"``, whose only entry
    claims another source, is dropped."""
    store = InMemoryVectorStore(embedding=Hashed())
    claim = {SOURCE_KEY: "b", VIEW_KEY: "original", "n": 1}
    store.add_documents(
        [
            Document("an intruder text", id="a", metadata=claim),
            _original("b", "the original of b", n=1),
            _view("a", "alpha query words", n=1),
            _view("b", "alpha query words too", n=1),
        ]
    )
    found = ArgusRetriever(vectorstore=store, k=2, fetch_k=2).invoke("alpha query words")
    assert [(d.id, d.page_content) for d in found] == [("b", "the original of b")]


# -- other stores -------------------------------------------------------------------------------


def _memory_manager(name: str) -> InMemoryRecordManager:
    manager = InMemoryRecordManager(namespace=f"argus/{name}")
    manager.create_schema()
    return manager


def _faiss() -> Any:
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS

    return FAISS(
        embedding_function=Hashed(),
        index=faiss.IndexFlatL2(DIM),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )


@pytest.mark.parametrize("call", ["sync", "async"])
def test_a_stopped_delete_run_again_finishes_on_faiss(call, monkeypatch):
    """``delete_sources`` (``adelete_sources``) stopped after the store's delete of its first
    batch, before the record manager's, then run again: it forgets the records of the entries
    already gone, deletes the rest, and the store and the records end as after an uninterrupted
    delete (today FAISS's ``delete`` refused the gone ids on every rerun, ``ValueError: Some
    specified ids do not exist``, and the records stayed). An ingest after it restores the
    sources."""
    store, manager = _faiss(), _memory_manager("faiss")
    assert ingest(manager, store)["num_added"] == 24
    gone = manager.list_keys(group_ids=list(GONE))
    kept = sorted(set(manager.list_keys()) - set(gone))
    assert len(gone) == 6

    def delete_again() -> int:
        if call == "sync":
            return delete_sources(store, manager, GONE, batch_size=3)
        return asyncio.run(adelete_sources(store, manager, GONE, batch_size=3))

    def stop(*args: Any) -> None:
        raise RuntimeError("stopped between the store and the record manager")

    async def astop(*args: Any) -> None:
        stop()

    name = "delete_keys" if call == "sync" else "adelete_keys"
    with monkeypatch.context() as patched:
        patched.setattr(manager, name, stop if call == "sync" else astop)
        with pytest.raises(RuntimeError, match="stopped between"):
            delete_again()
    held = sorted(store.index_to_docstore_id.values())
    assert len(held) == 21 and len(manager.list_keys()) == 24  # 3 entries gone, records kept

    assert delete_again() == 3  # the entries the store still held
    assert sorted(store.index_to_docstore_id.values()) == kept == sorted(manager.list_keys())
    assert manager.list_keys(group_ids=list(GONE)) == []
    assert delete_again() == 0

    restored = ingest(manager, store)
    assert (restored["num_added"], restored["num_deleted"]) == (6, 0)
    assert sorted(store.index_to_docstore_id.values()) == sorted(manager.list_keys())


@pytest.mark.parametrize("call", ["sync", "async"])
def test_qdrant_local_mode_indexes_once_and_deletes_whole_sources(call):
    """langchain-qdrant's ``get_by_ids`` returns documents whose ``Document.id`` is ``None``, the
    point id in ``metadata["_id"]``. Every entry is recorded once, a second ingest adds and
    deletes nothing, and ``delete_sources`` removes a source's original and views (today each
    batch's check found none of its sources' entries and forgot their records: the second ingest
    added everything again, and doc-02, whose entries straddle a batch, lost the records of its
    original and first view, which a delete then left in the store)."""
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, VectorParams

    client = QdrantClient(":memory:")
    client.create_collection("argus", VectorParams(size=DIM, distance=Distance.COSINE))
    store = QdrantVectorStore(client=client, collection_name="argus", embedding=Hashed())
    manager = _memory_manager("qdrant")

    def run_index() -> dict[str, int]:
        if call == "sync":
            return dict(index_sources(corpus(), manager, store, batch_size=5))
        return dict(asyncio.run(aindex_sources(corpus(), manager, store, batch_size=5)))

    def run_delete() -> int:
        if call == "sync":
            return delete_sources(store, manager, GONE, batch_size=3)
        return asyncio.run(adelete_sources(store, manager, GONE, batch_size=3))

    def points() -> dict[str, dict[str, Any]]:
        got, _ = client.scroll("argus", limit=100)
        return {str(p.id): p.payload["metadata"] for p in got}

    try:
        first = run_index()
        assert first["num_added"] == 24
        assert sorted(points()) == sorted(manager.list_keys())  # every entry recorded
        assert store.get_by_ids(manager.list_keys()[:1])[0].id is None  # langchain-qdrant 1.1

        again = run_index()
        assert (again["num_added"], again["num_deleted"], again["num_skipped"]) == (0, 0, 24)
        assert sorted(points()) == sorted(manager.list_keys())

        assert run_delete() == 6  # GONE's two originals and four views
        held = points()
        assert len(held) == 18 and sorted(held) == sorted(manager.list_keys())
        assert not [m for m in held.values() if m[SOURCE_KEY] in GONE]
    finally:
        client.close()


@pytest.mark.parametrize("call", ["sync", "async"])
def test_a_document_not_through_the_transformer_is_named(call):
    """A document without ``argus_source_id`` raises ``ArgusInputError`` naming it (its id, else
    its position in the input) and what to do, before any document of its batch is written
    (today: a bare ``KeyError: 'argus_source_id'`` from inside ``index()``)."""
    plain = Document("a document argus never saw", id="plain-1", metadata={"n": 99})
    anonymous = Document("another one argus never saw, without an id")
    cases = [
        ([*corpus()[:7], plain, *corpus()[7:]], r"document 'plain-1' \(position 7\)", 5),
        ([*corpus(), anonymous], r"the document at position 24 \(it has no id\)", 20),
    ]
    for documents, named, written in cases:
        store, manager = InMemoryVectorStore(embedding=Hashed()), _memory_manager("plain")
        with pytest.raises(ArgusInputError, match=named) as raised:
            if call == "sync":
                index_sources(documents, manager, store, batch_size=5)
            else:
                asyncio.run(aindex_sources(documents, manager, store, batch_size=5))
        assert "argus_source_id" in str(raised.value)
        assert "through ArgusDocumentTransformer" in str(raised.value)
        assert len(store.store) == len(manager.list_keys()) == written  # the batches before it


def _main(url: str, recipe: str, *kill: str) -> None:
    manager, store = _parts(url, (kill[0], int(kill[1])) if kill else None)
    RECIPES[recipe](manager, store)


if __name__ == "__main__":  # a child of the tests above
    _main(*sys.argv[1:])


# issue 59, item 8: one id the store refuses fails no query --------------------------------------


def test_an_id_the_store_refuses_drops_that_source_and_answers_the_query(
    embeddings, augmented, scenario_ids, caplog
):
    """langchain-postgres's ``PGVectorStore`` keeps ids in a UUID column, and ``get_by_ids`` of
    a batch with one id not of that format fails as a whole (``DataError``). An entry written
    straight into the store whose ``argus_source_id`` is not a UUID used to fail every query that
    hit it ("the query fails rather than answer without them"); now that source is dropped,
    named in a warning, and the other sources of the query are read and served, through the
    retriever (sync and async) and the docstore. A stopped server still fails the query
    (``test_item_5_...``)."""
    from langchain_postgres import PGEngine, PGVectorStore

    engine = PGEngine.from_connection_string(_database("refused_ids"))
    engine.init_vectorstore_table(table_name="argus", vector_size=384, overwrite_existing=True)
    store = PGVectorStore.create_sync(
        engine=engine, table_name="argus", embedding_service=embeddings
    )
    query = "Bogie, the star of the 1942 film Casablanca, and the Bohr model of the atom"
    forged = Document(query, metadata={SOURCE_KEY: "not-a-uuid", VIEW_KEY: "expansion"})
    store.add_documents([*augmented, forged], ids=[*(d.id or "" for d in augmented), FORGED_ID])
    top = store.similarity_search(query, k=3)
    assert top[0].metadata[SOURCE_KEY] == "not-a-uuid"
    assert all(d.metadata.get(VIEW_KEY) not in (None, "original") for d in top)  # all fetched

    # PGVectorStore's relevance under its default cosine distance is 1 - distance: the cosine
    retriever = ArgusRetriever(vectorstore=store, k=2, fetch_k=3, relevance_per_cosine=1.0)
    caplog.set_level(logging.WARNING, logger="langchain_argus.retriever")
    found = retriever.invoke(query)
    assert asyncio.run(retriever.ainvoke(query)) == found
    wanted = list(dict.fromkeys(d.metadata[SOURCE_KEY] for d in top[1:]))
    assert wanted and [d.id for d in found] == wanted
    assert "PGVectorStore refused 1 id(s)" in caplog.text and "'not-a-uuid'" in caplog.text

    docstore = ArgusDocstore(store)
    sci = scenario_ids["sci-2"]
    got = docstore.mget([sci, "not-a-uuid"])
    assert [d.id if d else None for d in got] == [sci, None]


FORGED_ID = "00000000-0000-4000-8000-00000000f0f0"
