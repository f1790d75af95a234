"""langchain-argus on a real Chroma store on disk: score convention, fetching, ids.

One ingest (the shared scenario corpus through the transformer) into a cosine Chroma collection
on a ``PersistentClient``; ``film-1`` is stored without metadata, as an original indexed before
argus was added would be (langchain-chroma stores an empty metadata as none).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import chromadb
import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from argus_ir.collapse import SOURCE_KEY
from argus_ir.testing import SCENARIO, cosine_reference
from langchain_argus import ArgusDocumentTransformer, ArgusRetriever, collapse_documents

QUERIES = (
    SCENARIO.query,
    "a physicist whose notebooks are still radioactive",
    "the debate about quantum mechanics between two physicists",
    "a German baroque composer of church cantatas",
    "the Egyptian queen and the Roman general",
    "a city in a Himalayan valley with cool spring air",
)
BARE = "film-1"  # the original stored without metadata
# langchain-core warns about relevance scores below 0 (a negative cosine); they rank all the same
NEGATIVE_COSINE = "ignore:Relevance scores must be between"


def _corpus() -> list[Document]:
    return [
        Document(page_content=text, id=doc_id, metadata={} if doc_id == BARE else {"lang": "en"})
        for doc_id, text in SCENARIO.documents
    ]


@pytest.fixture(scope="module")
def augmented() -> list[Document]:
    return list(ArgusDocumentTransformer(**SCENARIO.settings).transform_documents(_corpus()))


@pytest.fixture(scope="module")
def chroma(tmp_path_factory, embeddings: Embeddings, augmented: list[Document]) -> Chroma:
    path: Path = tmp_path_factory.mktemp("chroma")
    store = Chroma(
        collection_name="argus-scenario",
        client=chromadb.PersistentClient(path=str(path)),
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": "cosine"},
    )
    store.add_documents(augmented)
    return store


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
def test_chroma_distances_rank_sources_as_the_cosine_reference(chroma, embeddings, augmented):
    """Chroma's scores are distances; the retriever must rank as cosine similarity does."""
    originals = {d.id: d.page_content for d in augmented if SOURCE_KEY not in d.metadata}
    retriever = ArgusRetriever(vectorstore=chroma, k=3, fetch_k=len(augmented))  # every entry
    lifted_by_a_view = 0
    for query in QUERIES:
        reference = _cosine_reference(chroma, embeddings, query, k=3)
        lifted_by_a_view += reference[0][2] != reference[0][0]
        found = retriever.invoke(query)
        assert [d.id for d in found] == [src for src, _, _ in reference], query
        assert [d.page_content for d in found] == [originals[d.id] for d in found]
        again = asyncio.run(retriever.ainvoke(query))
        assert [d.id for d in again] == [d.id for d in found], query
    assert lifted_by_a_view >= 2  # views decide some rankings: the discount is exercised


@pytest.mark.filterwarnings(NEGATIVE_COSINE)
def test_chroma_original_without_metadata_gives_way_to_its_best_view(chroma, caplog):
    """langchain-chroma's get_by_ids raises pydantic's ValidationError for an entry stored
    without metadata; the retriever retries id by id, logs it and returns the best view."""
    query = "Bogie, the star of the 1942 film Casablanca, and the Bohr model of the atom"
    top = chroma.similarity_search(query, k=3)
    assert all(SOURCE_KEY in d.metadata for d in top)  # only views: both originals are fetched
    assert {d.metadata[SOURCE_KEY] for d in top} == {BARE, "sci-2"}

    retriever = ArgusRetriever(vectorstore=chroma, k=2, fetch_k=3)
    for run in (retriever.invoke, lambda q: asyncio.run(retriever.ainvoke(q))):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="langchain_argus.retriever"):
            found = {(d.metadata.get(SOURCE_KEY) or d.id): d for d in run(query)}
        assert set(found) == {BARE, "sci-2"}
        assert found["sci-2"].id == "sci-2" and found["sci-2"].metadata == {"lang": "en"}
        assert found[BARE].id.startswith(f"{BARE}#argus-")  # the best view stands in
        failures = [r.getMessage() for r in caplog.records]
        assert any("ValidationError" in m and repr(BARE) in m for m in failures), failures


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


def test_ids_in_metadata_keep_sources_apart(embeddings, augmented):
    plain = InMemoryVectorStore(embedding=embeddings)
    plain.add_documents(augmented)
    qdrant_like = IdsInMetadata(embedding=embeddings)
    qdrant_like.add_documents(augmented)
    for query in QUERIES[:3]:
        want = [d.id for d in ArgusRetriever(vectorstore=plain, k=3).invoke(query)]
        got = ArgusRetriever(vectorstore=qdrant_like, k=3).invoke(query)
        assert [d.metadata["_id"] for d in got] == want, query
        assert all(d.id is None and SOURCE_KEY not in d.metadata for d in got)  # originals


def test_hits_without_any_id_stay_their_own_sources():
    hits = [
        (Document(page_content="a", metadata={"_id": "a"}), 0.9),
        (Document(page_content="anon 1"), 0.8),
        (Document(page_content="a, a view", metadata={SOURCE_KEY: "a"}), 0.7),
        (Document(page_content="anon 2"), 0.6),
        (Document(page_content="b", id="b"), 0.5),
    ]
    folded = collapse_documents(hits)
    assert [f.source_id for f in folded] == ["a", "", "", "b"]
    assert [f.best.page_content for f in folded] == ["a", "anon 1", "anon 2", "b"]
    assert [len(f.hits) for f in folded] == [2, 1, 1, 1]
    assert all(f.original is f.best for f in folded)
