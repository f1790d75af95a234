"""argus-llamaindex: the shared adapter contract, the end-to-end scenario, caching, pickling."""

from __future__ import annotations

import asyncio
import math
import pickle
from typing import Any, ClassVar

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.ingestion import IngestionCache, IngestionPipeline
from llama_index.core.ingestion.pipeline import get_transformation_hash
from llama_index.core.schema import (
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    TextNode,
)
from pydantic import PrivateAttr

from argus_ir import Argus
from argus_ir.collapse import DEFAULT_VIEW_DISCOUNT
from argus_ir.runners.integration import Record
from argus_ir.testing import (
    SCENARIO,
    STORE_KB_DOCUMENT,
    STORE_KB_ENTRIES,
    AdapterContract,
)
from argus_llamaindex import ArgusPostprocessor, ArgusTransform


class TestContract(AdapterContract):
    own_settings: ClassVar[frozenset[str]] = frozenset({"kb_fingerprint", "probe_checksum"})

    def settings_defaults(self) -> dict[str, Any]:
        return {n: f.default for n, f in ArgusTransform.model_fields.items()}

    def make_adapter(self, **settings: Any) -> ArgusTransform:
        return ArgusTransform(**settings)

    def make_document(self, doc_id: str, text: str | None, metadata: dict[str, Any]) -> Document:
        if text is None:  # a document with no text resource (an image, say)
            return Document(id_=doc_id, metadata=metadata)
        return Document(id_=doc_id, text=text, metadata=metadata)

    def read_document(self, doc: Any) -> Record:
        resource = getattr(doc, "text_resource", None)
        text = doc.text if isinstance(doc, TextNode) else resource and resource.text
        return Record(doc.node_id, text, doc.metadata)

    def run(self, adapter: ArgusTransform, documents: list[Any]):
        return list(adapter(documents)), adapter.last_stats

    def use_argus(self, adapter: ArgusTransform, argus: Any) -> None:
        adapter._argus = argus

    def collapse(self, adapter, hits, top_k):
        nodes = [NodeWithScore(node=n, score=s) for n, s in hits]
        out = ArgusPostprocessor(top_k=top_k).postprocess_nodes(nodes)
        return [(n.node.node_id, n.score) for n in out]


def _as_given(out: Any, given: Any) -> bool:
    """Whether ``out`` is a copy of ``given`` that adds only the original's lineage."""
    lineage = {"argus_source_id": given.node_id, "argus_view": "original"}
    return (
        out is not given
        and out.node_id == given.node_id
        and out.metadata == {**given.metadata, **lineage}
        and set(lineage) <= set(out.excluded_embed_metadata_keys)
        and set(lineage) <= set(out.excluded_llm_metadata_keys)
        and out.get_content(metadata_mode=MetadataMode.NONE)
        == given.get_content(metadata_mode=MetadataMode.NONE)
    )


def _corpus() -> list[Document]:
    return [Document(id_=doc_id, text=text) for doc_id, text in SCENARIO.documents]


class Counting(ArgusTransform):
    """Counts real calls (a cache hit makes none)."""

    _calls: int = PrivateAttr(default=0)

    @property
    def calls(self) -> int:
        return self._calls

    def __call__(self, nodes, **kwargs):
        self._calls += 1
        return super().__call__(nodes, **kwargs)


def test_end_to_end_the_query_finds_its_document_only_with_argus(embed_model):
    plain = VectorStoreIndex(_corpus(), embed_model=embed_model)
    missed = plain.as_retriever(similarity_top_k=SCENARIO.top_k).retrieve(SCENARIO.query)
    assert SCENARIO.target not in [n.node.node_id for n in missed]

    pipeline = IngestionPipeline(transformations=[ArgusTransform(**SCENARIO.settings), embed_model])
    nodes = pipeline.run(documents=_corpus())
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    hits = index.as_retriever(similarity_top_k=20).retrieve(SCENARIO.query)
    post = ArgusPostprocessor(top_k=SCENARIO.top_k, docstore=index.docstore)
    found = post.postprocess_nodes(hits, query_str=SCENARIO.query)
    assert [n.node.node_id for n in found] == [SCENARIO.target]
    assert found[0].node.get_content() == dict(SCENARIO.documents)[SCENARIO.target]


def test_query_engine_uses_the_postprocessor(embed_model, monkeypatch):
    from llama_index.core import Settings
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.response_synthesizers import get_response_synthesizer

    nodes = IngestionPipeline(transformations=[ArgusTransform(**SCENARIO.settings)]).run(
        documents=_corpus()
    )
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    monkeypatch.setattr(Settings, "_llm", MockLLM())  # no OpenAI key here; never prompted
    engine = RetrieverQueryEngine(
        retriever=index.as_retriever(similarity_top_k=20),
        node_postprocessors=[ArgusPostprocessor(top_k=3, docstore=index.docstore)],
        # no_text: the engine retrieves and postprocesses but never prompts the (stand-in) LLM
        response_synthesizer=get_response_synthesizer(response_mode="no_text", llm=MockLLM()),
    )
    response = engine.query(SCENARIO.query)
    ids = [n.node.node_id for n in response.source_nodes]
    assert ids[0] == SCENARIO.target and len(ids) == len(set(ids)) == 3


def test_cache_hits_on_rerun_and_misses_when_tau_changes():
    cache = IngestionCache()
    first = Counting(**SCENARIO.settings)
    out1 = IngestionPipeline(transformations=[first], cache=cache).run(documents=_corpus())
    again = Counting(**SCENARIO.settings)
    out2 = IngestionPipeline(transformations=[again], cache=cache).run(documents=_corpus())
    assert (first.calls, again.calls) == (1, 0)  # the rerun came from the cache
    assert [n.node_id for n in out2] == [n.node_id for n in out1]
    assert again._argus is None  # not even a model loaded
    other = Counting(**{**SCENARIO.settings, "tau": 0.2})
    out3 = IngestionPipeline(transformations=[other], cache=cache).run(documents=_corpus())
    assert other.calls == 1 and len(out3) < len(out1)  # fewer flagged at a lower tau


def test_cache_key_follows_every_output_setting(tmp_path):
    base = ArgusTransform().to_dict()
    changes = ({"tau": 0.2}, {"k_aug": 1}, {"remedy": "merged"}, {"k": 50}, {"max_views": 1})
    for change in changes:
        assert ArgusTransform(**change).to_dict() != base, change
    assert base["probe_checksum"] and base["kb_fingerprint"].startswith("default:")
    assert ArgusTransform(show_progress=True).to_dict() == base  # a progress bar is not output
    kb = tmp_path / "kb.jsonl"
    kb.write_text('{"id": "a", "title": "A", "text": "Alpha."}\n', encoding="utf-8")
    t = ArgusTransform(kb=str(kb))
    before = t.to_dict()["kb_fingerprint"]
    kb.write_text('{"id": "a", "title": "A", "text": "Beta."}\n', encoding="utf-8")
    assert ArgusTransform(kb=str(kb)).to_dict()["kb_fingerprint"] != before  # edited file


def test_views_keep_lineage_relationships_and_hidden_keys():
    doc = Document(
        id_="film-1",
        text=dict(SCENARIO.documents)["film-1"],
        metadata={"file_name": "films.txt"},
        excluded_embed_metadata_keys=["file_name"],
    )
    out = ArgusTransform(**SCENARIO.settings)([doc])
    assert _as_given(out[0], doc) and len(out) == 3
    assert doc.metadata == {"file_name": "films.txt"}  # the input is not modified
    assert out[0].get_content(metadata_mode=MetadataMode.EMBED) == doc.get_content(
        metadata_mode=MetadataMode.EMBED
    )  # the lineage stays out of the embedding
    assert out[0].ref_doc_id == "film-1"  # its own source: delete_ref_doc removes it too
    for view in out[1:]:
        assert view.relationships[NodeRelationship.SOURCE].node_id == "film-1"
        assert view.ref_doc_id == "film-1"
        assert "argus_source_id" in view.excluded_embed_metadata_keys
        assert "argus_rps" in view.excluded_llm_metadata_keys
        assert "file_name" in view.excluded_embed_metadata_keys
        embedded = view.get_content(metadata_mode=MetadataMode.EMBED)
        assert "argus" not in embedded and view.text in embedded


def test_views_of_chunks_belong_to_the_chunks_document():
    from llama_index.core.node_parser import SentenceSplitter

    doc = Document(id_="doc-1", text=dict(SCENARIO.documents)["film-1"] + " " + "Filler. " * 5)
    pipeline = IngestionPipeline(
        transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), ArgusTransform()]
    )
    nodes = pipeline.run(documents=[doc])
    views = [n for n in nodes if n.metadata["argus_view"] != "original"]
    chunk_ids = {n.node_id for n in nodes if n.metadata["argus_view"] == "original"}
    assert views and all(v.metadata["argus_source_id"] in chunk_ids for v in views)
    assert all(v.ref_doc_id == "doc-1" for v in views)  # delete_ref_doc removes them too


def test_non_text_nodes_pass_through():
    from llama_index.core.schema import ImageNode

    image = ImageNode(id_="img", image_url="file:///tmp/x.png")
    out = ArgusTransform()([image])
    assert len(out) == 1 and _as_given(out[0], image)


def test_pickles_without_models_and_runs_in_worker_processes():
    transform = ArgusTransform(**SCENARIO.settings)
    local = transform(_corpus())
    clone = pickle.loads(pickle.dumps(transform))
    assert clone.to_dict() == transform.to_dict()
    pipeline = IngestionPipeline(transformations=[ArgusTransform(**SCENARIO.settings)])
    nodes = pipeline.run(documents=_corpus(), num_workers=2)
    assert sorted(n.node_id for n in nodes) == sorted(n.node_id for n in local)


def test_async_path_matches_sync():
    transform = ArgusTransform(**SCENARIO.settings, batch_size=4)
    sync_ids = [n.node_id for n in transform(_corpus())]
    pipeline = IngestionPipeline(transformations=[transform])
    async_nodes = asyncio.run(pipeline.arun(documents=_corpus()))
    assert [n.node_id for n in async_nodes] == sync_ids


def test_a_changed_setting_rebuilds_and_refingerprints(tmp_path):
    t = ArgusTransform()
    first = t.argus
    t.tau = 0.1
    assert t.argus is not first and t.argus.tau == 0.1
    kb = tmp_path / "kb.jsonl"
    kb.write_text('{"id": "a", "title": "A", "text": "Alpha."}\n', encoding="utf-8")
    before = t.kb_fingerprint
    t.kb = str(kb)
    assert t.kb_fingerprint != before and t.kb_fingerprint.startswith("file:")


# -- view_discount (query time) and max_views (ingest) ----------------------------------------


@pytest.fixture(scope="module")
def augmented_index(embed_model) -> VectorStoreIndex:
    pipeline = IngestionPipeline(transformations=[ArgusTransform(**SCENARIO.settings)])
    return VectorStoreIndex(pipeline.run(documents=_corpus()), embed_model=embed_model)


def _source(hit: NodeWithScore) -> str:
    return hit.node.metadata.get("argus_source_id") or hit.node.node_id


def test_view_discount_and_max_views_default_to_the_cores():
    default = ArgusPostprocessor.model_fields["view_discount"].default
    assert default == DEFAULT_VIEW_DISCOUNT and default is DEFAULT_VIEW_DISCOUNT
    assert ArgusPostprocessor().view_discount == DEFAULT_VIEW_DISCOUNT
    budget = ArgusTransform.model_fields["max_views"].default
    assert budget is Argus.__dataclass_fields__["max_views"].default


@pytest.mark.parametrize("bad", [-0.1, math.inf, -math.inf, math.nan])
def test_a_bad_view_discount_is_refused_when_built(bad):
    with pytest.raises(ValueError, match="view_discount"):
        ArgusPostprocessor(view_discount=bad)


def test_postprocessor_lifts_a_source_only_by_more_than_the_discount(augmented_index):
    hits = augmented_index.as_retriever(similarity_top_k=20).retrieve(SCENARIO.query)
    view = next(h.node for h in hits if _source(h) == SCENARIO.target != h.node.node_id)
    docstore = augmented_index.docstore
    original, rival = docstore.get_node(SCENARIO.target), docstore.get_node("film-4")
    # the view beats its original by 0.10; the rival sits between the two
    scored = [
        NodeWithScore(node=view, score=0.60),
        NodeWithScore(node=rival, score=0.52),
        NodeWithScore(node=original, score=0.50),
    ]

    def fold(**kwargs: Any) -> list[tuple[str, float | None]]:
        out = ArgusPostprocessor(**kwargs).postprocess_nodes(scored)
        return [(n.node.node_id, n.score) for n in out]

    assert fold(view_discount=0.05) == [
        (SCENARIO.target, pytest.approx(0.55)),
        ("film-4", pytest.approx(0.52)),
    ]
    assert fold(view_discount=0.15) == [
        ("film-4", pytest.approx(0.52)),
        (SCENARIO.target, pytest.approx(0.50)),  # scored by its original, not the view
    ]
    assert fold(view_discount=0.0)[0] == (SCENARIO.target, pytest.approx(0.60))  # the best score


def test_postprocessor_applies_the_view_discount_to_retrieved_hits(augmented_index):
    hits = augmented_index.as_retriever(similarity_top_k=20).retrieve(SCENARIO.query)
    best_view = max(h.score for h in hits if _source(h) == SCENARIO.target != h.node.node_id)
    own = next(h.score for h in hits if h.node.node_id == SCENARIO.target)
    rival = max(h.score for h in hits if _source(h) != SCENARIO.target)
    assert best_view - rival > 0.05  # the view is what puts the target first
    below = (best_view - rival) / 2  # the view still beats everything by more than this
    above = best_view - own + 0.05  # more than the view gains over its original

    def top(discount: float) -> str:
        post = ArgusPostprocessor(
            top_k=1, view_discount=discount, docstore=augmented_index.docstore
        )
        return post.postprocess_nodes(hits)[0].node.node_id

    assert top(below) == SCENARIO.target
    best_original = max((h.score, h.node.node_id) for h in hits if _source(h) == h.node.node_id)
    assert best_original[1] != SCENARIO.target
    assert top(above) == best_original[1]


def test_view_discount_round_trips_through_to_dict():
    post = ArgusPostprocessor(top_k=3, view_discount=0.125)
    data = post.to_dict()
    assert data["view_discount"] == 0.125
    assert ArgusPostprocessor.from_dict(data).view_discount == 0.125


def test_max_views_reaches_argus_and_the_cache_key():
    doc = Document(id_="sci-2", text=dict(SCENARIO.documents)["sci-2"])
    assert len(ArgusTransform(**SCENARIO.settings)([doc])) > 2  # several views without a budget

    transform = ArgusTransform(**SCENARIO.settings, max_views=1)
    assert transform.argus.max_views == 1
    out = transform([doc])
    assert _as_given(out[0], doc) and len(out) == 2
    assert transform.last_stats["views"] == 1 and transform.last_stats["over_budget"] >= 1

    data = transform.to_dict()
    assert data["max_views"] == 1
    assert data != ArgusTransform(**SCENARIO.settings).to_dict()  # the cache key follows it
    clone = ArgusTransform.from_dict(data)
    assert clone.max_views == 1 and clone.argus.max_views == 1
    assert pickle.loads(pickle.dumps(transform)).argus.max_views == 1
    with pytest.raises(ValueError, match="max_views"):
        ArgusTransform(max_views=0)


def test_the_ingestion_cache_misses_when_max_views_changes():
    cache = IngestionCache()
    docs = [Document(id_="sci-2", text=dict(SCENARIO.documents)["sci-2"])]
    first = Counting(**SCENARIO.settings)
    full = IngestionPipeline(transformations=[first], cache=cache).run(documents=docs)
    budgeted = Counting(**SCENARIO.settings, max_views=1)
    out = IngestionPipeline(transformations=[budgeted], cache=cache).run(documents=docs)
    assert (first.calls, budgeted.calls) == (1, 1) and len(out) == 2 < len(full)


def test_corpus_targeting_reaches_argus_and_the_cache_key():
    assert (
        ArgusTransform.model_fields["targeting"].default
        is Argus.__dataclass_fields__["targeting"].default
    )
    nodes = [Document(id_=doc_id, text=text) for doc_id, text in SCENARIO.documents]
    assert len(ArgusTransform(**SCENARIO.settings)(list(nodes))) > len(nodes)
    transform = ArgusTransform(**SCENARIO.settings, targeting="corpus")
    assert transform.argus.targeting == "corpus"
    # fewer than eleven nodes: each is in the top 10 for any name, so nothing is flagged
    assert [n.id_ for n in transform(list(nodes))] == [n.id_ for n in nodes]
    assert transform.to_dict()["targeting"] == "corpus"
    with pytest.raises(ValueError, match="targeting"):
        ArgusTransform(targeting="oracle")


def test_a_lone_surrogate_in_one_node_keeps_every_node():
    bad = Document(id_="bad", text="Humphrey Bogart filmed in Lucknow \ud800 once.")
    good = Document(id_="sci-2", text=dict(SCENARIO.documents)["sci-2"])
    transform = ArgusTransform(**SCENARIO.settings)
    out = transform([bad, good])
    # originals as they came, plus their lineage (it used to raise TypeError)
    assert _as_given(out[0], bad) and any(_as_given(n, good) for n in out)
    # LlamaIndex cannot hash a node with a lone surrogate, so its views cannot point at it: the
    # node passes through alone and the reason is reported
    assert not [n for n in out[1:] if n.metadata.get("argus_source_id") == "bad"]
    assert [f[0] for f in transform.last_stats["failures"]] == ["bad"]


def _wiki_index(embed_model) -> VectorStoreIndex:
    """A user's own knowledge: a product wiki in a LlamaIndex vector index."""
    nodes = [TextNode(id_=i, text=text, metadata=meta) for i, text, meta in STORE_KB_ENTRIES]
    return VectorStoreIndex(nodes, embed_model=embed_model)


@pytest.mark.parametrize("as_retriever", [True, False])
def test_an_index_or_retriever_is_the_kb(embed_model, as_retriever):
    index = _wiki_index(embed_model)
    kb = index.as_retriever(similarity_top_k=3) if as_retriever else index
    transform = ArgusTransform(
        kb=kb, kb_fingerprint="wiki-v1", kb_match="title", remedy="descriptor", tau=1.0
    )
    doc = TextNode(id_=STORE_KB_DOCUMENT[0], text=STORE_KB_DOCUMENT[1])
    out = transform([doc])
    assert _as_given(out[0], doc)
    (view,) = out[1:]
    assert "Quarkon (battery controller for e-bikes)" in view.text
    assert view.metadata["argus_kb_id"] == "wiki-7"
    assert transform.argus.settings_card()["kb"] == "wiki-v1"
    # the cache key carries the fingerprint, not the object
    assert transform.to_dict()["kb"] == "store:wiki-v1"
    other = ArgusTransform(
        kb=kb, kb_fingerprint="wiki-v2", kb_match="title", remedy="descriptor", tau=1.0
    )
    assert get_transformation_hash([doc], transform) != get_transformation_hash([doc], other)
    with pytest.raises(ValueError, match="LlamaIndex retriever or index"):
        ArgusTransform(kb=42)
