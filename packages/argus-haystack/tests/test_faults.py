"""Issue 54: the documented Haystack recipes under faults, against PostgreSQL + pgvector.

Each recipe of ``docs/haystack.md`` (ingest: ``DocumentWriter`` with ``OVERWRITE``; update:
``ArgusSourceCleaner`` before that writer; delete: ``delete_sources``) runs in a forked process
that stops at a named moment and is killed there with SIGKILL (no cleanup of any kind); the same
recipe is then run again, and the store must hold exactly what an uninterrupted run leaves. The
children load no model: they get the session's augmented and embedded documents.

The killed child's store is the real ``PgvectorDocumentStore``, with a pause at each moment; its
writes are made in two halves so a kill can fall between them (the store commits row by row
anyway: its connection is in autocommit).
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
import re
import signal
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret

from argus_ir.errors import StoreReadError
from argus_ir.testing import SCENARIO
from argus_ir.testing.postgres import postgres_server, private_postgres_server
from haystack_integrations.components.augmenters.argus import (
    ArgusSourceCleaner,
    ArgusSourceSweeper,
    delete_sources,
)
from haystack_integrations.components.rankers.argus import ArgusCollapser
from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

TARGET = SCENARIO.target
NEW_TEXT = "Marie Curie once lectured in Lucknow, and the students still talk about it."
MOMENTS = {
    "ingest": ("before-write", "mid-write", "after-write"),
    "update": ("after-read", "after-delete", "mid-write"),  # after-delete: cleaner ran, writer not
    "delete": ("after-read", "before-delete", "after-delete"),
}
FORK = multiprocessing.get_context("fork")
Row = tuple[Any, ...]


class _Paused(PgvectorDocumentStore):
    """The real store; ``pause(moment)`` is called at each moment a child may be killed at."""

    def __init__(self, pause: Callable[[str], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._pause = pause
        self._reads = 0

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        found = super().filter_documents(filters)
        self._reads += 1
        if self._reads == 1:
            self._pause("after-read")
        return found

    def write_documents(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        self._pause("before-write")
        first, second = documents[: len(documents) // 2], documents[len(documents) // 2 :]
        written = super().write_documents(first, policy) if first else 0  # [] fails in the store
        self._pause("mid-write")
        written += super().write_documents(second, policy) if second else 0
        self._pause("after-write")
        return written

    def delete_documents(self, document_ids: list[str]) -> None:
        self._pause("before-delete")
        super().delete_documents(document_ids)
        self._pause("after-delete")


def _settings(url: str) -> dict[str, Any]:
    return {
        "connection_string": Secret.from_token(url),
        "table_name": "argus",
        "keyword_index_name": "argus_keyword_index",
        "embedding_dimension": 384,
        "search_strategy": "exact_nearest_neighbor",
    }


def _run(url: str, recipe: str, documents: list[Document], pause: Callable[[str], None]) -> None:
    """One documented recipe, as docs/haystack.md gives it."""
    store = _Paused(pause, **_settings(url))
    try:
        if recipe == "delete":
            delete_sources(store, [TARGET])
            return
        pipe = Pipeline()
        writer = DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE)
        pipe.add_component("writer", writer)
        if recipe == "ingest":
            pipe.run({"writer": {"documents": documents}})
            return
        pipe.add_component("cleaner", ArgusSourceCleaner(document_store=store))
        pipe.add_component("sweeper", ArgusSourceSweeper(document_store=store))
        pipe.connect("cleaner.documents", "writer.documents")
        pipe.connect("cleaner.documents", "sweeper.documents")
        pipe.connect("writer.documents_written", "sweeper.documents_written")
        pipe.run({"cleaner": {"documents": documents}})
    finally:
        store.close()


def _never(_: str) -> None:
    return None


def _child(url: str, recipe: str, documents: list[Document], moment: str, conn: Any) -> None:
    def pause(at: str) -> None:
        if at == moment:
            conn.send(at)
            conn.recv()  # waits here to be killed

    _run(url, recipe, documents, pause)
    conn.send("done")


def _kill_at(url: str, recipe: str, documents: list[Document], moment: str) -> None:
    """Run the recipe in a forked process and SIGKILL it once it stops at ``moment``."""
    ours, theirs = FORK.Pipe()
    proc = FORK.Process(target=_child, args=(url, recipe, documents, moment, theirs))
    proc.start()
    try:
        assert ours.poll(120), "the child never reached its moment"
        assert ours.recv() == moment
        os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        assert proc.exitcode == -signal.SIGKILL
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()


def _database(tag: str) -> str:
    name = "f_" + hashlib.sha1(tag.encode(), usedforsecurity=False).hexdigest()[:20]
    url = postgres_server().database(name).url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS argus")  # a rerun of the tests starts empty
    store = PgvectorDocumentStore(**_settings(url))
    assert store.count_documents() == 0  # the table, made before any recipe runs
    store.close()
    return url


def _seed(url: str, documents: list[Document]) -> None:
    """The store as an earlier update wrote it: the update recipe over an empty table (its
    entries stamped with their versions, as the recipe under test rewrites them)."""
    _run(url, "update", documents, _never)


def _rows(url: str) -> dict[str, Row]:
    """Every stored row, read with plain SQL: id -> (content, meta, embedding)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT id, content, meta, embedding::text FROM argus").fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}


def _source(meta: dict[str, Any], entry_id: str) -> str:
    return str(meta.get("argus_source_id") or entry_id)


@pytest.fixture(scope="module")
def corpora(augmented) -> dict[str, list[Document]]:
    """What each recipe is given and what the store holds before it."""
    old = augmented.documents
    changed = augmented.embed([Document(id=TARGET, content=NEW_TEXT)])
    new = [d for d in old if _source(d.meta, d.id) != TARGET] + changed
    return {"old": old, "new": new}


def _before_and_input(recipe: str, corpora: dict[str, list[Document]]) -> tuple[list, list]:
    if recipe == "ingest":
        return [], corpora["old"]
    if recipe == "update":  # a re-ingest of the whole corpus, one document changed
        return corpora["old"], corpora["new"]
    return corpora["old"], []


@pytest.fixture(scope="module")
def uninterrupted(corpora) -> dict[str, dict[str, Row]]:
    """Each recipe's store after an uninterrupted run, and before it."""
    out = {}
    for recipe in MOMENTS:
        before, given = _before_and_input(recipe, corpora)
        url = _database(f"uninterrupted-{recipe}")
        if before:
            _seed(url, before)
        out[f"{recipe}:before"] = _rows(url) if before else {}
        _run(url, recipe, given, _never)
        out[recipe] = _rows(url)
    assert set(out["ingest"]) == {d.id for d in corpora["old"]}
    assert set(out["update"]) == {d.id for d in corpora["new"]}
    assert TARGET not in {_source(r[1], i) for i, r in out["delete"].items()}
    return out


def _killed_then_rerun(recipe: str, moment: str, corpora, uninterrupted) -> dict[str, Row]:
    """The store right after the kill; asserts the rerun ends as the uninterrupted run."""
    before, given = _before_and_input(recipe, corpora)
    url = _database(f"{recipe}-{moment}")
    if before:
        _seed(url, before)
    _kill_at(url, recipe, given, moment)
    killed = _rows(url)
    _run(url, recipe, given, _never)
    assert _rows(url) == uninterrupted[recipe]
    return killed


@pytest.mark.parametrize(
    ("recipe", "moment"),
    [
        (r, m)
        for r, moments in MOMENTS.items()
        for m in moments
        if (r, m) != ("update", "after-delete")
    ],
)
def test_kill_9_then_rerun_ends_as_an_uninterrupted_run(recipe, moment, corpora, uninterrupted):
    """Killed at the moment, the store holds each entry as it was before or as the recipe leaves
    it, never another, and no unchanged entry of an update is missing; the rerun ends equal."""
    killed = _killed_then_rerun(recipe, moment, corpora, uninterrupted)
    before, after = uninterrupted[f"{recipe}:before"], uninterrupted[recipe]
    assert all(row in (before.get(i), after.get(i)) for i, row in killed.items())
    unchanged = {i: r for i, r in after.items() if before.get(i) == r}
    assert {i: killed.get(i) for i in unchanged} == unchanged
    if recipe == "delete":  # one DELETE: all of the source or none of it
        assert killed in (before, after)


def test_item_4_a_reingest_killed_between_cleaner_and_writer_keeps_every_unchanged_entry(
    corpora, uninterrupted
):
    """Issue 54, item 4: a re-ingest of the whole corpus (one document changed) through the
    cleaner, killed after the cleaner ran and before the writer wrote: the cleaner deleted every
    incoming source's entries, unchanged ones too, so the store held only what no incoming
    document names. It now deletes only the changed document's old views: every other entry is
    there as it was (the changed document's original too, with its old text); the rerun ends as an
    uninterrupted run."""
    killed = _killed_then_rerun("update", "after-delete", corpora, uninterrupted)
    before, after = uninterrupted["update:before"], uninterrupted["update"]
    unchanged = {i: r for i, r in after.items() if before.get(i) == r}
    assert len(unchanged) == len(before) - len(_entries(before, TARGET)) > 0
    assert {i: killed.get(i) for i in unchanged} == unchanged
    assert killed[TARGET] == before[TARGET]
    assert set(killed) == set(unchanged) | {TARGET}


def _entries(rows: dict[str, Row], source: str) -> list[str]:
    return [i for i, r in rows.items() if _source(r[1], i) == source]


def _ingester(url: str, documents: list[Document], reverse: bool, start: Any) -> None:
    by_source: dict[str, list[Document]] = {}
    for doc in documents:
        by_source.setdefault(_source(doc.meta, doc.id), []).append(doc)
    start.wait(60)
    for source in sorted(by_source, reverse=reverse):  # one pipeline run per source
        _run(url, "update", by_source[source], _never)


def test_two_ingesters_at_once_end_as_one(corpora, uninterrupted):
    """Two processes re-ingest the corpus (one document changed) through the cleaner at the same
    time, source by source, in opposite orders: the store ends as one uninterrupted run."""
    url = _database("two-ingesters")
    _seed(url, corpora["old"])  # the table exists before they start
    start = FORK.Event()
    procs = [
        FORK.Process(target=_ingester, args=(url, corpora["new"], reverse, start))
        for reverse in (False, True)
    ]
    for proc in procs:
        proc.start()
    start.set()
    for proc in procs:
        proc.join(300)
    assert [p.exitcode for p in procs] == [0, 0]
    assert _rows(url) == uninterrupted["update"]


def test_server_stopped_between_search_and_fetch_raises_naming_the_store(augmented):
    """The search succeeds, then the server stops before the collapser reads the originals it
    did not retrieve: ``run``, ``run_async`` and ``delete_sources`` raise an error naming
    ``PgvectorDocumentStore``, never fewer results; once the server is back, the same hits collapse
    as before and the store lost nothing."""
    with private_postgres_server() as pg:
        url = pg.server.database("argus").url
        _seed(url, augmented.documents)
        rows = _rows(url)
        store = PgvectorDocumentStore(**_settings(url))
        try:
            retriever = PgvectorEmbeddingRetriever(document_store=store, top_k=3)
            hits = retriever.run(query_embedding=augmented.queries[SCENARIO.query])["documents"]
            assert {_source(d.meta, d.id) for d in hits} - {d.id for d in hits}  # read needed
            collapser = ArgusCollapser(top_k=3, document_store=store)
            want = [(d.id, d.content, d.score) for d in collapser.run(documents=hits)["documents"]]
            pg.stop()
            for failing in (
                lambda: collapser.run(documents=hits),
                lambda: asyncio.run(collapser.run_async(documents=hits)),
                lambda: delete_sources(store, [TARGET]),
            ):
                with pytest.raises(DocumentStoreError, match="PgvectorDocumentStore") as failed:
                    failing()
                assert isinstance(failed.value, StoreReadError)  # as LangChain and LlamaIndex
            pg.start()
            got = collapser.run(documents=hits)["documents"]
            assert [(d.id, d.content, d.score) for d in got] == want
            assert _rows(url) == rows
        finally:
            store.close()


def test_the_cleaner_deletes_only_stale_entries_and_wants_an_overwriting_writer():
    """The cleaner (``run`` and ``run_async``) deletes a source's stored entries that the incoming
    documents do not write again, and nothing else; before a writer that would skip or refuse the
    entries it keeps, it refuses to run and deletes nothing."""
    from haystack.core.errors import PipelineRuntimeError
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    def lineage(view: str) -> dict[str, str]:
        return {"argus_source_id": "a", "argus_view": view}

    stored = [
        Document(id="a", content="old", meta=lineage("original")),
        Document(id="a-v1", content="old view", meta=lineage("expansion")),
        Document(id="b", content="other", meta={"argus_source_id": "b", "argus_view": "original"}),
    ]
    incoming = [
        Document(id="a", content="new", meta=lineage("original")),
        Document(id="a-v2", content="new view", meta=lineage("expansion")),
    ]
    for run in ("sync", "async"):
        store = InMemoryDocumentStore()
        store.write_documents(stored)
        cleaner = ArgusSourceCleaner(document_store=store)
        if run == "sync":
            out = cleaner.run(documents=incoming)
        else:
            out = asyncio.run(cleaner.run_async(documents=incoming))
        assert out["deleted"] == 1
        assert [(d.id, d.content) for d in out["documents"]] == [
            (d.id, d.content) for d in incoming
        ]
        assert sorted(d.id for d in store.filter_documents()) == ["a", "b"]
    pipe = Pipeline()
    pipe.add_component("cleaner", ArgusSourceCleaner(document_store=store))
    pipe.add_component("writer", DocumentWriter(document_store=store))  # policy: the store's
    pipe.connect("cleaner.documents", "writer.documents")
    store.write_documents([stored[1]])
    with pytest.raises(PipelineRuntimeError, match=re.escape("policy=DuplicatePolicy.OVERWRITE")):
        pipe.run({"cleaner": {"documents": incoming}})
    assert sorted(d.id for d in store.filter_documents()) == ["a", "a-v1", "b"]
