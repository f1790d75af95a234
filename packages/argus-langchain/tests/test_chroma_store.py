"""langchain-argus on a real Chroma store on disk: score convention, fetching, ids.

One ingest (the shared scenario corpus through the transformer) into a cosine Chroma collection
on a ``PersistentClient``; the target document is stored without metadata, as an original
indexed before argus was added would be (langchain-chroma stores an empty metadata as none).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import chromadb
import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from argus_ir.collapse import SOURCE_KEY
from argus_ir.lineage import VIEW_KEY
from argus_ir.testing import SCENARIO, cosine_reference
from langchain_argus import ArgusRetriever, StoreReadError, collapse_documents

# langchain-core warns about relevance scores below 0 (a negative cosine); they rank all the same
NEGATIVE_COSINE = "ignore:Relevance scores must be between"


@pytest.fixture(scope="module")
def bare(scenario_ids: dict[str, str]) -> str:
    """The original stored without metadata."""
    return scenario_ids[SCENARIO.target]


@pytest.fixture(scope="module")
def chroma(tmp_path_factory, embeddings: Embeddings, augmented: list[Document], bare) -> Chroma:
    path: Path = tmp_path_factory.mktemp("chroma")
    store = Chroma(
        collection_name="argus-scenario",
        client=chromadb.PersistentClient(path=str(path)),
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": "cosine"},
    )
    store.add_documents([_before_argus(d, bare) for d in augmented])
    return store


def _before_argus(doc: Document, bare: str) -> Document:
    """The bare original without metadata, its views with their lineage only: the metadata they
    copied from it is what it had when argus ran (none), as when argus is added to an index."""
    if doc.id == bare:
        return doc.model_copy(update={"metadata": {}})
    if doc.metadata.get(SOURCE_KEY) == bare:
        lineage = {k: v for k, v in doc.metadata.items() if k.startswith("argus_")}
        return doc.model_copy(update={"metadata": lineage})
    return doc


def _cosine_reference(store: Chroma, embeddings: Embeddings, query: str, k: int) -> list[tuple]:
    """Top-``k`` ``(source, score, best hit)``: numpy cosine over every stored entry, folded."""
    entries = store.get(include=["embeddings", "metadatas"])
    return cosine_reference(
        entries["ids"],
        entries["embeddings"],
        entries["metadatas"],
        embeddings.embed_query(query),
        top_k=k,
    )


@pytest.mark.filterwarnings(NEGATIVE_COSINE)
def test_defect_1_chroma_distances_rank_sources_as_the_cosine_reference(
    chroma, embeddings, augmented, queries
):
    """Distances folded as similarities (issue 32, 1): Chroma's scores are distances; the
    retriever must rank as cosine similarity does, all twelve queries."""
    originals = {d.id: d.page_content for d in augmented if d.metadata[VIEW_KEY] == "original"}
    retriever = ArgusRetriever(vectorstore=chroma, k=3, fetch_k=len(augmented))  # every entry
    lifted_by_a_view = 0
    for query in queries:
        reference = _cosine_reference(chroma, embeddings, query, k=3)
        lifted_by_a_view += reference[0][2] != reference[0][0]
        found = retriever.invoke(query)
        assert [d.id for d in found] == [src for src, _, _ in reference], query
        assert [d.page_content for d in found] == [originals[d.id] for d in found]
        again = asyncio.run(retriever.ainvoke(query))
        assert [d.id for d in again] == [d.id for d in found], query
    assert lifted_by_a_view >= 2  # views decide some rankings: the discount is exercised


@pytest.mark.filterwarnings(NEGATIVE_COSINE)
def test_defect_7_chroma_original_without_metadata_fails_the_query_not_served_by_a_view(
    chroma, bare, scenario_ids
):
    """LangChain + Chroma fetch path (issue 32, 7; issue 54, 5): langchain-chroma's get_by_ids
    raises pydantic's ValidationError for an entry stored without metadata. A view never stands
    in for its original, and a failed read is not an absent document: the query raises
    ``StoreReadError`` naming the store, the ids and the cause (it used to drop the source)."""
    sci = scenario_ids["sci-2"]
    query = "Bogie, the star of the 1942 film Casablanca, and the Bohr model of the atom"
    top = chroma.similarity_search(query, k=3)
    assert all(d.metadata.get(VIEW_KEY) not in (None, "original") for d in top)  # only views
    assert {d.metadata[SOURCE_KEY] for d in top} == {bare, sci}

    retriever = ArgusRetriever(vectorstore=chroma, k=2, fetch_k=3)
    for run in (retriever.invoke, lambda q: asyncio.run(retriever.ainvoke(q))):
        with pytest.raises(
            StoreReadError, match=r"Chroma\.get_by_ids failed \(ValidationError"
        ) as e:
            run(query)
        assert repr(bare) in str(e.value)


class IdsInMetadata(InMemoryVectorStore):
    """A store that returns ``Document.id=None`` with the id in ``metadata["_id"]``, as
    langchain-qdrant does."""

    @staticmethod
    def _strip(doc: Document) -> Document:
        return Document(page_content=doc.page_content, metadata={**doc.metadata, "_id": doc.id})

    def similarity_search_with_score(self, query, k=4, **kwargs):  # type: ignore[override]
        return [(self._strip(d), s) for d, s in super().similarity_search_with_score(query, k)]

    async def asimilarity_search_with_score(self, query, k=4, **kwargs):  # type: ignore[override]
        return self.similarity_search_with_score(query, k)

    def get_by_ids(self, ids):  # type: ignore[override]
        return [self._strip(d) for d in super().get_by_ids(ids)]


def test_ids_in_metadata_keep_sources_apart(embeddings, augmented, queries):
    plain = InMemoryVectorStore(embedding=embeddings)
    plain.add_documents(augmented)
    qdrant_like = IdsInMetadata(embedding=embeddings)
    qdrant_like.add_documents(augmented)
    for query in queries[:3]:
        want = [d.id for d in ArgusRetriever(vectorstore=plain, k=3).invoke(query)]
        got = ArgusRetriever(vectorstore=qdrant_like, k=3).invoke(query)
        assert [d.metadata["_id"] for d in got] == want, query
        # a store that returns no id: the retriever gives each original its source's
        assert all(d.id == d.metadata["_id"] and d.metadata[VIEW_KEY] == "original" for d in got)


def test_hits_without_any_id_stay_their_own_sources():
    hits = [
        (Document(page_content="a", metadata={"_id": "a"}), 0.9),
        (Document(page_content="anon 1"), 0.8),
        (
            Document(page_content="a, a view", metadata={SOURCE_KEY: "a", VIEW_KEY: "expansion"}),
            0.7,
        ),
        (Document(page_content="anon 2"), 0.6),
        (Document(page_content="b", id="b"), 0.5),
    ]
    folded = collapse_documents(hits)
    assert [f.source_id for f in folded] == ["a", "", "", "b"]
    assert [f.best.page_content for f in folded] == ["a", "anon 1", "anon 2", "b"]
    assert [len(f.hits) for f in folded] == [2, 1, 1, 1]
    assert all(f.original is f.best for f in folded)


def test_an_original_under_another_id_folds_with_its_views():
    """Originals carry their lineage: one stored under a record manager's hash still folds."""
    lineage = {SOURCE_KEY: "a", VIEW_KEY: "original"}
    hits = [
        (
            Document(page_content="a, a view", metadata={SOURCE_KEY: "a", VIEW_KEY: "expansion"}),
            0.9,
        ),
        (Document(page_content="a", id="3f0c-hash", metadata=lineage), 0.85),
        (Document(page_content="b", id="b"), 0.8),
    ]
    folded = collapse_documents(hits)
    assert [f.source_id for f in folded] == ["a", "b"]
    assert folded[0].original.page_content == "a"
    assert folded[0].score == pytest.approx(0.88)  # the view, less the discount
