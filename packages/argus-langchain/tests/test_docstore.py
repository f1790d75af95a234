"""ArgusDocstore on its own: what ``mget`` maps each key to, what ``mset`` writes, its refusals.

No model: ``DeterministicFakeEmbedding`` vectors (nothing here ranks). The real retrievers on
real stores are in ``test_parent_documents.py``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from argus_ir.errors import ArgusInputError, StoreReadError
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY, VIEW_NAME_KEY
from argus_ir.remedy.texts import view_id
from langchain_argus import ArgusDocstore


def _original(src: str, text: str, **meta: Any) -> Document:
    return Document(text, id=src, metadata={**meta, SOURCE_KEY: src, VIEW_KEY: "original"})


def _view(src: str, text: str, n: int = 0, **meta: Any) -> Document:
    key = f"{src}#argus-{n:016x}"
    lineage = {SOURCE_KEY: src, VIEW_KEY: "expansion", VIEW_NAME_KEY: key}
    return Document(text, id=view_id(key), metadata={**meta, **lineage})


def _store(*docs: Document) -> tuple[InMemoryVectorStore, ArgusDocstore]:
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=16))
    docstore = ArgusDocstore(store)
    docstore.mset([(d.id or "", d) for d in docs])
    return store, docstore


def _both(docstore: ArgusDocstore, keys: list[str]) -> list[Document | None]:
    got = docstore.mget(keys)
    assert asyncio.run(docstore.amget(keys)) == got
    return got


def test_a_view_maps_to_its_original_and_an_original_to_itself():
    a, b = _original("a", "alpha", team="x"), _original("b", "beta", team="x")
    va, vb = _view("a", "alpha and more", team="x"), _view("b", "beta and more", team="x")
    _, docstore = _store(a, b, va, vb)
    got = _both(docstore, [vb.id, "a", "nope"])
    assert got == [b, a, None]  # as given to mset: the doc_id it wrote is not shown


def test_mset_writes_each_key_under_id_key_in_the_store():
    store, docstore = _store(_original("a", "alpha"))
    stored = store.get_by_ids(["a"])[0]
    assert stored.metadata["doc_id"] == "a"
    assert docstore.mget(["a"])[0].metadata == {SOURCE_KEY: "a", VIEW_KEY: "original"}
    bare = ArgusDocstore(store, id_key=None)
    bare.mset([("p", Document("plain", metadata={"k": 1}))])
    assert store.get_by_ids(["p"])[0].metadata == {"k": 1}


def test_a_source_reached_twice_is_returned_once_at_its_first_key():
    a = _original("a", "alpha")
    v1, v2 = _view("a", "alpha one", 1), _view("a", "alpha two", 2)
    b = _original("b", "beta")
    _, docstore = _store(a, v1, v2, b)
    assert _both(docstore, [v2.id, "b", v1.id, "a"]) == [a, b, None, None]


def test_a_view_whose_original_has_other_metadata_maps_to_nothing(caplog):
    """The scope rule of resolve_sources: tenant b's view naming tenant a's document (forged or
    outdated lineage) brings nothing in; b's own document is still served."""
    victim = _original("victim", "payroll of team a", tenant="a")
    forged = _view("victim", "cheap flights to Lisbon", tenant="b")
    mine = _original("mine", "my own notes", tenant="b")
    _, docstore = _store(victim, forged, mine)
    with caplog.at_level(logging.WARNING, logger="langchain_argus.docstore"):
        assert _both(docstore, [forged.id, "mine"]) == [None, mine]
    assert any("1 view(s) not folded" in r.getMessage() for r in caplog.records)


def test_a_refused_view_does_not_hide_the_original_reached_directly():
    victim = _original("victim", "payroll of team a", tenant="a")
    forged = _view("victim", "cheap flights to Lisbon", tenant="b")
    _, docstore = _store(victim, forged)
    assert _both(docstore, [forged.id, "victim"]) == [None, victim]


def test_an_entry_claiming_another_documents_lineage_serves_neither():
    """Stored under "a" but claiming to be "b"'s original: "a" maps to nothing, "b"'s view to
    "b"'s own entry."""
    intruder = Document("intruder", id="a", metadata={SOURCE_KEY: "b", VIEW_KEY: "original"})
    b, vb = _original("b", "the original of b"), _view("b", "b again")
    _, docstore = _store(intruder, b)
    docstore.mset([(vb.id or "", vb)])
    assert _both(docstore, ["a", vb.id]) == [None, b]
    assert _both(docstore, ["a"]) == [None]


def test_a_view_whose_original_is_gone_maps_to_nothing(caplog):
    a, va = _original("a", "alpha"), _view("a", "alpha and more")
    _, docstore = _store(a, va)
    docstore.mdelete(["a"])
    with caplog.at_level(logging.WARNING, logger="langchain_argus.docstore"):
        assert _both(docstore, [va.id]) == [None]
    assert any("1 view(s) map to no document" in r.getMessage() for r in caplog.records)
    asyncio.run(docstore.amdelete([va.id or ""]))
    assert docstore.mget([va.id]) == [None]


def test_documents_without_lineage_are_plain_parents():
    """ParentDocumentRetriever's parents written by a user, no argus anywhere."""
    _, docstore = _store()
    parent = Document("a parent", metadata={"topic": "t"})
    asyncio.run(docstore.amset([("p1", parent)]))
    assert _both(docstore, ["p1"]) == [parent.model_copy(update={"id": "p1"})]


class _NoIds(VectorStore):
    """A store without get_by_ids (LanceDB's case)."""

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        return []

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return []

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kwargs: Any) -> Any:
        return cls()


class _Down(InMemoryVectorStore):
    def get_by_ids(self, ids: Any, /) -> list[Document]:
        raise ConnectionError("server closed the connection")

    async def aget_by_ids(self, ids: Any, /) -> list[Document]:
        raise ConnectionError("server closed the connection")


def test_refusals_and_failures():
    with pytest.raises(ArgusInputError, match="_NoIds cannot read documents by id"):
        ArgusDocstore(_NoIds())
    store = InMemoryVectorStore(embedding=DeterministicFakeEmbedding(size=4))
    with pytest.raises(ArgusInputError, match="id_key must be"):
        ArgusDocstore(store, id_key="")
    with pytest.raises(ArgusInputError, match="keys are entry ids"):
        ArgusDocstore(store).mset([("", Document("x"))])
    with pytest.raises(NotImplementedError, match="cannot list keys"):
        list(ArgusDocstore(store).yield_keys())
    down = ArgusDocstore(_Down(embedding=DeterministicFakeEmbedding(size=4)))
    with pytest.raises(StoreReadError, match=r"_Down\.get_by_ids failed \(ConnectionError"):
        down.mget(["a"])
    with pytest.raises(StoreReadError, match="reading 1 document"):
        asyncio.run(down.amget(["a"]))
    assert down.mget([]) == []
