"""Issue 59, item 2: two updates of one source at once, through the documented recipe.

Two ingesters update ``film-1`` at the same time, one to a v2 and one to a v3 whose views have
other ids. Each runs the recipe of ``docs/haystack.md`` (``ArgusSourceCleaner``, the writer with
``DuplicatePolicy.OVERWRITE``, ``ArgusSourceSweeper``); the test steps their components' ``run``
one at a time, in the order the two processes' steps interleave, the data passed along the
pipeline's own connections. Whatever the interleaving, the store must end with the original the
last writer wrote and that version's views only: no view of another version beside it.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import Iterator
from typing import Any

import networkx as nx
import pytest
from haystack import Document, Pipeline
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils import Secret

from argus_ir.testing import SCENARIO
from argus_ir.testing.postgres import postgres_server
from haystack_integrations.components.augmenters.argus import (
    VERSION_KEY,
    ArgusSourceCleaner,
    ArgusSourceSweeper,
)
from haystack_integrations.document_stores.chroma import ChromaDocumentStore
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

TARGET = SCENARIO.target
V2 = "Marie Curie once lectured in Lucknow, and the students still talk about it."
V3 = "Niels Bohr once lectured in Lucknow, and the students still talk about it."
STORES = ("in-memory", "pgvector", "qdrant", "chroma")


def _recipe(store: Any) -> Pipeline:
    """The update recipe of docs/haystack.md, after the embedder."""
    pipe = Pipeline()
    pipe.add_component("cleaner", ArgusSourceCleaner(document_store=store))
    pipe.add_component(
        "writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE)
    )
    pipe.add_component("sweeper", ArgusSourceSweeper(document_store=store))
    pipe.connect("cleaner.documents", "writer.documents")
    pipe.connect("cleaner.documents", "sweeper.documents")
    pipe.connect("writer.documents_written", "sweeper.documents_written")
    return pipe


def _steps(pipe: Pipeline, documents: list[Document], asynchronous: bool = False) -> Iterator[str]:
    """Run the recipe one component at a time, in the pipeline's order, each given its inputs
    along the pipeline's connections; yields after each (one process's steps). ``asynchronous``:
    argus's components through ``run_async``."""
    outputs: dict[str, dict[str, Any]] = {}
    for name in nx.topological_sort(pipe.graph):
        inputs: dict[str, Any] = {"documents": documents} if name == "cleaner" else {}
        for sender, _, edge in pipe.graph.in_edges(name, data=True):
            inputs[edge["to_socket"].name] = outputs[sender][edge["from_socket"].name]
        step = pipe.get_component(name)
        if asynchronous and name != "writer":
            outputs[name] = asyncio.run(step.run_async(**inputs))
        else:
            outputs[name] = step.run(**inputs)
        yield name


def _interleave(a: Iterator[str], b: Iterator[str], order: str) -> list[str]:
    """Step ``a`` and ``b`` in ``order`` (``"ABAB"``: a, b, a, b), then each to its end."""
    done = [f"{who}:{next(a if who == 'A' else b)}" for who in order]
    done += [f"A:{step}" for step in a] + [f"B:{step}" for step in b]
    return done


@pytest.fixture
def stores(request, tmp_path, monkeypatch) -> Iterator[tuple[Any, Any]]:
    """The two ingesters' stores: two clients of one pgvector database, one in-memory index
    (in-memory stores of one index share it), one object of an on-disk store (its folder takes
    one client)."""
    kind = request.param
    opened: list[Any] = []
    if kind == "in-memory":
        index = f"race-{tmp_path.name}"
        opened = [InMemoryDocumentStore(index=index), InMemoryDocumentStore(index=index)]
    elif kind == "pgvector":
        name = "r_" + hashlib.sha1(str(tmp_path).encode(), usedforsecurity=False).hexdigest()[:20]
        url = postgres_server().database(name).url
        settings = {
            "connection_string": Secret.from_token(url),
            "table_name": "argus",
            "embedding_dimension": 384,
            "search_strategy": "exact_nearest_neighbor",
        }
        opened = [PgvectorDocumentStore(**settings), PgvectorDocumentStore(**settings)]
        opened[0].count_documents()  # the table, made once before the two ingesters start
    elif kind == "qdrant":
        store = QdrantDocumentStore(
            path=str(tmp_path), index="argus", embedding_dim=384, progress_bar=False
        )
        opened = [store, store]
    else:
        store = ChromaDocumentStore(
            collection_name="argus",
            persist_path=str(tmp_path),
            distance_function="cosine",
            client_settings={"anonymized_telemetry": False},
        )
        opened = [store, store]
    yield opened[0], opened[1]
    for store in {id(s): s for s in opened}.values():
        if hasattr(store, "close") and kind in ("pgvector", "qdrant"):
            store.close()


@pytest.fixture(scope="module")
def versions(augmented) -> dict[str, list[Document]]:
    """v2 and v3 of the target, augmented and embedded: each with views, none shared."""
    v2 = augmented.embed([Document(id=TARGET, content=V2)])
    v3 = augmented.embed([Document(id=TARGET, content=V3)])
    views = [{d.id for d in v[1:]} for v in (v2, v3)]
    assert all(views) and not views[0] & views[1]
    return {"v2": v2, "v3": v3}


def _held(store: Any, source: str) -> list[tuple[str, str | None]]:
    entries = store.filter_documents()
    return sorted(
        (e.id, e.content) for e in entries if (e.meta.get("argus_source_id") or e.id) == source
    )


def _others(store: Any) -> list[tuple[str, str | None]]:
    entries = store.filter_documents()
    return sorted((e.id, e.content) for e in entries if e.meta.get("argus_source_id") != TARGET)


def _interleavings(steps: int) -> list[str]:
    """Every order of two processes' ``steps`` steps each (``"AABB"``, ``"ABAB"``, ...)."""
    out = []
    for places in itertools.combinations(range(2 * steps), steps):
        out.append("".join("A" if i in places else "B" for i in range(2 * steps)))
    return out


def _race(
    stores: tuple[Any, Any], augmented, versions, order: str, asynchronous: bool = False
) -> tuple[list, str]:
    """Seed the store with the corpus through the recipe, then run the two updates in ``order``;
    returns the interleaving and which version was written last."""
    a, b = stores
    list(_steps(_recipe(a), augmented.documents))
    done = _interleave(
        _steps(_recipe(a), versions["v2"], asynchronous),
        _steps(_recipe(b), versions["v3"], asynchronous),
        order,
    )
    last = [step for step in done if step.endswith(":writer")][-1]
    return done, "v2" if last.startswith("A") else "v3"


@pytest.mark.parametrize(
    ("stores", "asynchronous"),
    [*((kind, False) for kind in STORES), *((kind, True) for kind in STORES if kind != "qdrant")],
    indirect=["stores"],
)
def test_item_2_two_updates_at_once_leave_only_the_version_written_last(
    stores, augmented, versions, asynchronous
):
    """Issue 59, item 2: cleaner A (v2), cleaner B (v3), writer A, writer B. Each cleaner read the
    store before either wrote, so neither deleted the other's views: the store held v3's original
    with v2's views and v3's beside it. It now holds v3's original and views, and nothing else of
    the source; the other sources are as the seed left them."""
    store = stores[0]
    done, last = _race(stores, augmented, versions, "ABAB")
    assert done[:4] == ["A:cleaner", "B:cleaner", "A:writer", "B:writer"]
    assert last == "v3"
    others = _others(store)
    want = sorted((d.id, d.content) for d in versions["v3"])
    assert _held(store, TARGET) == want
    assert others == sorted(
        (d.id, d.content) for d in augmented.documents if d.meta.get("argus_source_id") != TARGET
    )


@pytest.mark.parametrize(
    "stores",
    # all twenty orders on the stores of the default run; Chroma's and Qdrant's take 40 s more
    [
        k if k in ("in-memory", "pgvector") else pytest.param(k, marks=pytest.mark.slow)
        for k in STORES
    ],
    indirect=True,
)
def test_every_interleaving_of_two_updates_leaves_only_the_version_written_last(
    stores, augmented, versions
):
    """All twenty orders of two processes' three steps (cleaner, writer, sweeper), each after a
    fresh seed through the recipe: the source ends as the version whose writer ran last, its
    entries stamped with one version, the original's."""
    store = stores[0]
    others = sorted(
        (d.id, d.content) for d in augmented.documents if d.meta.get("argus_source_id") != TARGET
    )
    orders = _interleavings(3)
    assert len(orders) == 20
    for order in orders:
        done, last = _race(stores, augmented, versions, order)
        want = sorted((d.id, d.content) for d in versions[last])
        assert _held(store, TARGET) == want, done
        entries = [e for e in store.filter_documents() if e.meta.get("argus_source_id") == TARGET]
        assert len({e.meta[VERSION_KEY] for e in entries}) == 1, done
        assert _others(store) == others, done


def test_the_sweeper_deletes_views_of_other_versions_than_the_stored_originals():
    """The sweeper (``run`` and ``run_async``) deletes the views whose version is not their stored
    original's (stamped with another, or with none), keeps the original and its own version's
    views, leaves a source whose original is not stored alone, and touches no other source. The
    cleaner it follows puts originals before views, so none is written before its original."""

    def entry(doc_id: str, source: str, version: str | None) -> Document:
        meta = {"argus_source_id": source, "argus_view": "original" if doc_id == source else "x"}
        return Document(id=doc_id, content=doc_id, meta={**meta, VERSION_KEY: version})

    stored = [
        entry("a", "a", "v3"),
        entry("a-3", "a", "v3"),
        entry("a-2", "a", "v2"),
        entry("a-1", "a", None),
        entry("b-2", "b", "v2"),  # b's original is gone (deleted, or not written yet)
        entry("c", "c", "v1"),
        entry("c-0", "c", "v0"),  # not among the written sources
    ]
    written = [Document(id="a", content="a"), Document(id="b", content="b")]
    for run in ("sync", "async"):
        store = InMemoryDocumentStore()
        store.write_documents(stored)
        sweeper = ArgusSourceSweeper(document_store=store)
        if run == "sync":
            out = sweeper.run(documents=written, documents_written=2)
        else:
            out = asyncio.run(sweeper.run_async(documents=written, documents_written=2))
        assert out["deleted"] == 2
        assert sorted(d.id for d in store.filter_documents()) == ["a", "a-3", "b-2", "c", "c-0"]
    views_first = [entry("a-3", "a", None), entry("a", "a", None), entry("b", "b", None)]
    passed = ArgusSourceCleaner(document_store=store).run(documents=views_first)["documents"]
    assert [d.id for d in passed] == ["a", "b", "a-3"]
    assert passed[0].meta[VERSION_KEY] == passed[2].meta[VERSION_KEY] != passed[1].meta[VERSION_KEY]
