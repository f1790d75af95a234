"""argus-haystack: the shared adapter contract, the end-to-end scenario, YAML round trips."""

from __future__ import annotations

import asyncio
import copy
import inspect
import math
from dataclasses import replace
from typing import Any, ClassVar

import pytest
from haystack import Document, Pipeline
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore

from argus_ir import Argus
from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
from argus_ir.errors import ArgusInputError
from argus_ir.runners.integration import Record
from argus_ir.testing import (
    SCENARIO,
    STORE_KB_DOCUMENT,
    STORE_KB_ENTRIES,
    AdapterContract,
    minilm_path,
)
from haystack_integrations.components.augmenters.argus import ArgusAugmenter
from haystack_integrations.components.embedders.sentence_transformers import (
    SentenceTransformersDocumentEmbedder,
    SentenceTransformersTextEmbedder,
)
from haystack_integrations.components.rankers.argus import ArgusCollapser

MODEL = str(minilm_path())


class TestContract(AdapterContract):
    # Haystack's names and conventions: components take `progress_bar`, shown unless turned off
    renamed_settings: ClassVar[dict[str, str]] = {"show_progress": "progress_bar"}
    own_defaults: ClassVar[dict[str, Any]] = {"progress_bar": True}
    # and, for embed=True, SentenceTransformersDocumentEmbedder's text settings
    own_settings: ClassVar[frozenset[str]] = frozenset(
        {
            "kb_fingerprint",
            "meta_fields_to_embed",
            "embedding_separator",
            "prefix",
            "suffix",
            "normalize_embeddings",
        }
    )

    def settings_defaults(self) -> dict[str, Any]:
        params = inspect.signature(ArgusAugmenter.__init__).parameters
        return {name: p.default for name, p in params.items() if name != "self"}

    def make_adapter(self, **settings: Any) -> ArgusAugmenter:
        return ArgusAugmenter(progress_bar=False, **settings)

    def make_document(self, doc_id: str, text: str | None, metadata: dict[str, Any]) -> Document:
        return Document(id=doc_id, content=text, meta=metadata)

    def read_document(self, doc: Document) -> Record:
        return Record(doc.id, doc.content, doc.meta)

    def run(self, adapter: ArgusAugmenter, documents: list[Document]):
        out = adapter.run(documents=documents)
        return out["documents"], out["stats"]

    def use_argus(self, adapter: ArgusAugmenter, argus: Any) -> None:
        adapter._argus = argus
        adapter._warm = False

    def collapse(self, adapter, hits, top_k):
        scored = [Document(id=d.id, content=d.content, meta=d.meta, score=s) for d, s in hits]
        docs = ArgusCollapser(top_k=top_k).run(documents=scored)["documents"]
        return [(d.id, d.score) for d in docs]


def _corpus() -> list[Document]:
    return [Document(id=doc_id, content=text) for doc_id, text in SCENARIO.documents]


def _doc_embedder() -> SentenceTransformersDocumentEmbedder:
    return SentenceTransformersDocumentEmbedder(
        model=MODEL, local_files_only=True, progress_bar=False
    )


def _indexing(store: InMemoryDocumentStore, with_argus: bool) -> Pipeline:
    pipe = Pipeline()
    if with_argus:
        pipe.add_component("argus", ArgusAugmenter(progress_bar=False, **SCENARIO.settings))
    pipe.add_component("embedder", _doc_embedder())
    pipe.add_component("writer", DocumentWriter(document_store=store))
    if with_argus:
        pipe.connect("argus.documents", "embedder.documents")
    pipe.connect("embedder.documents", "writer.documents")
    return pipe


def _query(store: InMemoryDocumentStore, with_argus: bool, top_k: int) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component(
        "text_embedder",
        SentenceTransformersTextEmbedder(model=MODEL, local_files_only=True, progress_bar=False),
    )
    fetch = 20 if with_argus else top_k
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=fetch))
    pipe.connect("text_embedder.embedding", "retriever.query_embedding")
    if with_argus:
        pipe.add_component("collapser", ArgusCollapser(top_k=top_k, document_store=store))
        pipe.connect("retriever.documents", "collapser.documents")
    return pipe


def _index(pipe: Pipeline, with_argus: bool) -> dict[str, Any]:
    first = "argus" if with_argus else "embedder"
    return pipe.run({first: {"documents": _corpus()}}, include_outputs_from={first})


def _ask(pipe: Pipeline, with_argus: bool) -> list[Document]:
    out = pipe.run({"text_embedder": {"text": SCENARIO.query}})
    return out["collapser" if with_argus else "retriever"]["documents"]


def _as_given(doc: Document) -> Document:
    """An output original less the lineage the augmenter adds (its own id as its source)."""
    assert doc.meta["argus_source_id"] == doc.id and doc.meta["argus_view"] == "original"
    rest = {k: v for k, v in doc.meta.items() if k not in ("argus_source_id", "argus_view")}
    return replace(doc, meta=rest)


def test_end_to_end_the_query_finds_its_document_only_with_argus():
    plain = InMemoryDocumentStore()
    _index(_indexing(plain, False), False)
    missed = _ask(_query(plain, False, SCENARIO.top_k), False)
    assert SCENARIO.target not in [d.id for d in missed]

    store = InMemoryDocumentStore()
    out = _index(_indexing(store, True), True)
    assert out["argus"]["stats"]["views"] > 0 and out["argus"]["failed_documents"] == []
    assert store.count_documents() == len(SCENARIO.documents) + out["argus"]["stats"]["views"]
    found = _ask(_query(store, True, SCENARIO.top_k), True)
    assert [d.id for d in found] == [SCENARIO.target]
    assert found[0].content == dict(SCENARIO.documents)[SCENARIO.target]
    assert found[0].score is not None and found[0].meta["argus_view"] == "original"


def test_pipelines_round_trip_through_yaml_and_run():
    store = InMemoryDocumentStore()
    indexing = _indexing(store, True)
    loaded = Pipeline.loads(indexing.dumps())  # the default allowlist accepts our modules
    augmenter = loaded.get_component("argus")
    assert isinstance(augmenter, ArgusAugmenter)
    assert augmenter.to_dict() == indexing.get_component("argus").to_dict()
    _index(loaded, True)
    loaded_store = loaded.get_component("writer").document_store
    assert loaded_store.count_documents() > len(SCENARIO.documents)

    query = Pipeline.loads(_query(loaded_store, True, SCENARIO.top_k).dumps())
    collapser = query.get_component("collapser")
    assert isinstance(collapser, ArgusCollapser) and collapser.top_k == SCENARIO.top_k
    # a loaded InMemoryDocumentStore is a new, empty store: point both at the filled one
    query.get_component("retriever").document_store = loaded_store
    collapser.document_store = loaded_store
    assert [d.id for d in _ask(query, True)] == [SCENARIO.target]


def test_warm_up_is_idempotent_and_loads_once():
    augmenter = ArgusAugmenter(progress_bar=False)
    augmenter.warm_up()
    encoder = augmenter._argus._loaded["encoder"]
    augmenter.warm_up()
    assert augmenter._argus._loaded["encoder"] is encoder


def test_run_async_matches_run():
    augmenter = ArgusAugmenter(progress_bar=False, batch_size=5, **SCENARIO.settings)
    docs = _corpus()
    sync_out = augmenter.run(documents=docs)
    async_out = asyncio.run(augmenter.run_async(documents=docs))
    assert async_out["documents"] == sync_out["documents"]
    assert async_out["stats"] == sync_out["stats"]


def test_async_pipeline_run():
    store = InMemoryDocumentStore()
    pipe = _indexing(store, True)
    asyncio.run(pipe.run_async({"argus": {"documents": _corpus()}}))
    assert store.count_documents() > len(SCENARIO.documents)


def test_documents_are_never_mutated():
    docs = [
        Document(id="film-1", content=dict(SCENARIO.documents)["film-1"], meta={"n": [1, 2]}),
        Document(content=None, meta={"kind": "blob"}),
    ]
    before = copy.deepcopy(docs)
    out = ArgusAugmenter(progress_bar=False).run(documents=docs)
    assert docs == before
    assert _as_given(out["documents"][0]) == docs[0] and len(out["documents"]) > 2


def test_failed_documents_carry_the_error():
    from argus_ir import Argus
    from argus_ir.kb import ReferenceKB

    class Offline(ReferenceKB):
        def lookup(self, surface, k=2):
            raise RuntimeError("KB offline")

    kb = ReferenceKB.default()
    augmenter = ArgusAugmenter(progress_bar=False)
    augmenter._argus = Argus(kb=Offline(kb.passages, kb.index, kb.fingerprint))
    docs = _corpus()[:3]
    out = augmenter.run(documents=docs)
    assert [_as_given(d) for d in out["documents"]] == docs  # originals only
    failed_ids = [d.id for d in out["failed_documents"]]
    assert failed_ids == ["film-1", "sci-1"]  # the two with flagged entities (film-2 has none)
    assert all("KB offline" in d.meta["argus_error"] for d in out["failed_documents"])


def test_collapser_without_scores_uses_retriever_order():
    docs = [
        Document(id="v1", content="view", meta={"argus_source_id": "a", "argus_view": "expansion"}),
        Document(id="b", content="b"),
        Document(id="a", content="a"),
    ]
    out = ArgusCollapser().run(documents=docs)["documents"]
    assert [d.id for d in out] == ["a", "b"] and out[0].content == "a"


def test_collapser_rejects_bad_settings():
    with pytest.raises(ValueError, match="how"):
        ArgusCollapser(how="mean")
    with pytest.raises(ValueError, match="top_k"):
        ArgusCollapser(top_k=0)


# -- view_discount (query time) and max_views (ingest) ----------------------------------------


@pytest.fixture(scope="module")
def augmented_store() -> InMemoryDocumentStore:
    store = InMemoryDocumentStore()
    _index(_indexing(store, True), True)
    return store


def _retrieve(store: InMemoryDocumentStore) -> list[Document]:
    """The retriever's own scored hits (views and originals) for the scenario's query."""
    return _ask(_query(store, False, 20), False)


def _source(doc: Document) -> str:
    return doc.meta.get("argus_source_id") or doc.id


def test_view_discount_and_max_views_default_to_the_cores():
    params = inspect.signature(ArgusCollapser.__init__).parameters
    assert params["view_discount"].default is DEFAULT_VIEW_DISCOUNT
    assert ArgusCollapser().view_discount == DEFAULT_VIEW_DISCOUNT
    default = inspect.signature(ArgusAugmenter.__init__).parameters["max_views"].default
    assert default is Argus.__dataclass_fields__["max_views"].default


@pytest.mark.parametrize("bad", [-0.1, math.inf, -math.inf, math.nan])
def test_a_bad_view_discount_is_refused_when_built(bad):
    with pytest.raises(ArgusInputError, match="view_discount"):
        ArgusCollapser(view_discount=bad)


def test_collapser_lifts_a_source_only_by_more_than_the_discount(augmented_store):
    view = next(d for d in _retrieve(augmented_store) if _source(d) == SCENARIO.target != d.id)
    found = augmented_store.filter_documents(
        filters={"field": "id", "operator": "in", "value": [SCENARIO.target, "film-4"]}
    )
    originals = {d.id: d for d in found}
    # the view beats its original by 0.10; the rival sits between the two
    hits = [
        replace(view, score=0.60),
        replace(originals["film-4"], score=0.52),
        replace(originals[SCENARIO.target], score=0.50),
    ]

    lifted = ArgusCollapser(view_discount=0.05).run(documents=hits)["documents"]
    assert [(d.id, d.score) for d in lifted] == [
        (SCENARIO.target, pytest.approx(0.55)),
        ("film-4", pytest.approx(0.52)),
    ]
    held = ArgusCollapser(view_discount=0.15).run(documents=hits)["documents"]
    assert [(d.id, d.score) for d in held] == [
        ("film-4", pytest.approx(0.52)),
        (SCENARIO.target, pytest.approx(0.50)),  # scored by its original, not the view
    ]
    assert held[1].content == dict(SCENARIO.documents)[SCENARIO.target]
    plain = ArgusCollapser(view_discount=0.0).run(documents=hits)["documents"]  # the best score
    assert plain[0].id == SCENARIO.target and plain[0].score == pytest.approx(0.60)


def test_collapser_applies_the_view_discount_to_retrieved_hits(augmented_store):
    hits = _retrieve(augmented_store)
    best_view = max(d.score for d in hits if _source(d) == SCENARIO.target != d.id)
    own = next(d.score for d in hits if d.id == SCENARIO.target)
    rival = max(d.score for d in hits if _source(d) != SCENARIO.target)
    assert best_view - rival > 0.05  # the view is what puts the target first
    below = (best_view - rival) / 2  # the view still beats everything by more than this
    above = best_view - own + 0.05  # more than the view gains over its original

    def top(discount: float) -> str:
        collapser = ArgusCollapser(top_k=1, view_discount=discount, document_store=augmented_store)
        docs = collapser.run(documents=hits)["documents"]
        assert asyncio.run(collapser.run_async(documents=hits))["documents"] == docs
        return docs[0].id

    assert top(below) == SCENARIO.target
    best_original = max((d.score, d.id) for d in hits if d.id == _source(d))[1]
    assert best_original != SCENARIO.target
    assert top(above) == best_original


def test_max_views_reaches_argus_and_round_trips():
    doc = Document(id="sci-2", content=dict(SCENARIO.documents)["sci-2"])
    unbudgeted = ArgusAugmenter(progress_bar=False, **SCENARIO.settings).run(documents=[doc])
    assert unbudgeted["stats"]["views"] > 1  # several views without a budget

    augmenter = ArgusAugmenter(progress_bar=False, max_views=1, **SCENARIO.settings)
    assert augmenter._argus.max_views == 1
    out = augmenter.run(documents=[doc])
    assert _as_given(out["documents"][0]) == doc and len(out["documents"]) == 2
    assert out["stats"]["views"] == 1 and out["stats"]["over_budget"] >= 1

    data = augmenter.to_dict()
    assert data["init_parameters"]["max_views"] == 1
    loaded = ArgusAugmenter.from_dict(data)
    assert loaded.max_views == 1 and loaded._argus.max_views == 1
    assert loaded.to_dict() == data
    with pytest.raises(ValueError, match="max_views"):
        ArgusAugmenter(max_views=0)


def test_yaml_round_trip_keeps_view_discount_and_max_views():
    store = InMemoryDocumentStore()
    indexing = Pipeline()
    indexing.add_component("argus", ArgusAugmenter(progress_bar=False, max_views=3))
    indexing.add_component("writer", DocumentWriter(document_store=store))
    indexing.connect("argus.documents", "writer.documents")
    query = Pipeline()
    query.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=20))
    query.add_component(
        "collapser", ArgusCollapser(top_k=3, view_discount=0.125, document_store=store)
    )
    query.connect("retriever.documents", "collapser.documents")

    indexing_yaml, query_yaml = indexing.dumps(), query.dumps()
    assert "max_views: 3" in indexing_yaml and "view_discount: 0.125" in query_yaml
    augmenter = Pipeline.loads(indexing_yaml).get_component("argus")
    assert augmenter.max_views == 3 and augmenter._argus.max_views == 3
    collapser = Pipeline.loads(query_yaml).get_component("collapser")
    assert collapser.view_discount == 0.125 and collapser.how == "max" and collapser.top_k == 3
    assert collapser.to_dict() == query.get_component("collapser").to_dict()

    legacy = ArgusCollapser(top_k=3).to_dict()  # a YAML written before view_discount existed
    del legacy["init_parameters"]["view_discount"]
    assert ArgusCollapser.from_dict(legacy).view_discount == DEFAULT_VIEW_DISCOUNT


def test_corpus_targeting_reaches_argus_and_round_trips():
    default = inspect.signature(ArgusAugmenter.__init__).parameters["targeting"].default
    assert default is Argus.__dataclass_fields__["targeting"].default
    docs = [Document(id=doc_id, content=text) for doc_id, text in SCENARIO.documents]
    probe = ArgusAugmenter(progress_bar=False, **SCENARIO.settings).run(documents=docs)
    assert probe["stats"]["views"] > 0
    augmenter = ArgusAugmenter(progress_bar=False, targeting="corpus", **SCENARIO.settings)
    # fewer than eleven documents: each is in the top 10 for any name, so nothing is flagged
    out = augmenter.run(documents=docs)
    assert out["stats"]["views"] == 0 and len(out["documents"]) == len(docs)
    data = augmenter.to_dict()
    assert data["init_parameters"]["targeting"] == "corpus"
    assert ArgusAugmenter.from_dict(data)._argus.targeting == "corpus"
    with pytest.raises(ValueError, match="targeting"):
        ArgusAugmenter(targeting="oracle")


def test_a_lone_surrogate_in_one_document_keeps_every_document():
    bad = Document(id="bad", content="Humphrey Bogart filmed in Lucknow \ud800 once.")
    good = Document(id="sci-2", content=dict(SCENARIO.documents)["sci-2"])
    out = ArgusAugmenter(progress_bar=False, **SCENARIO.settings).run(documents=[bad, good])
    originals = [_as_given(d) for d in out["documents"] if d.meta["argus_view"] == "original"]
    assert originals == [bad, good]  # it used to raise TypeError


def _wiki() -> InMemoryDocumentStore:
    """A user's own knowledge: a product wiki in an in-memory document store."""
    store = InMemoryDocumentStore()
    store.write_documents(
        [Document(id=i, content=text, meta=meta) for i, text, meta in STORE_KB_ENTRIES]
    )
    return store


@pytest.mark.parametrize("as_retriever", [True, False])
def test_a_retriever_component_or_store_is_the_kb(as_retriever):
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

    store = _wiki()
    kb = InMemoryBM25Retriever(store) if as_retriever else store
    augmenter = ArgusAugmenter(
        kb=kb, kb_fingerprint="wiki-v1", kb_match="title", remedy="descriptor", tau=1.0
    )
    doc = Document(id=STORE_KB_DOCUMENT[0], content=STORE_KB_DOCUMENT[1])
    out = augmenter.run(documents=[doc])["documents"]
    assert _as_given(out[0]) == doc
    (view,) = [d for d in out if d.meta.get("argus_source_id") == "t1" and d.id != "t1"]
    assert "Quarkon (battery controller for e-bikes)" in view.content
    assert view.meta["argus_kb_id"] == "wiki-7"  # not the earlier view that repeats the name
    assert augmenter._argus.settings_card()["kb"] == "wiki-v1"


def test_a_retriever_kb_round_trips_through_yaml():
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

    pipe = Pipeline()
    pipe.add_component(
        "argus", ArgusAugmenter(kb=InMemoryBM25Retriever(_wiki(), top_k=3), kb_fingerprint="w1")
    )
    loaded = Pipeline.loads(pipe.dumps())
    augmenter = loaded.get_component("argus")
    assert isinstance(augmenter.kb, InMemoryBM25Retriever) and augmenter.kb.top_k == 3
    assert augmenter.kb_fingerprint == "w1"
    assert loaded.to_dict() == pipe.to_dict()
    with pytest.raises(TypeError, match="retriever component or an InMemoryDocumentStore"):
        from haystack_integrations.components.augmenters.argus.kb import store_kb

        store_kb(object())


@pytest.mark.parametrize("function", ["l2_distance", "cosine_similarity", "inner_product"])
def test_pgvector_scores_are_read_by_vector_function_in_subclasses_too(function):
    """A pgvector store's score kind follows its ``vector_function`` (``l2_distance`` is a plain
    distance: 1 - d²/2 for unit vectors); a subclass (a cloud connector's) reads the same.
    Nothing connects: the store opens its connection on first use."""
    from haystack.utils import Secret

    from haystack_integrations.components.rankers.argus._scores import relevance_of
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    class Connector(PgvectorDocumentStore):
        pass

    for cls in (PgvectorDocumentStore, Connector):
        store = cls(
            connection_string=Secret.from_token("postgresql://nobody@127.0.0.1:1/none"),
            vector_function=function,
            embedding_dimension=4,
        )
        for scores in ("auto", "distance"):
            read = relevance_of(scores, store)
            assert read(0.2) == pytest.approx(0.98 if function == "l2_distance" else 0.2)
