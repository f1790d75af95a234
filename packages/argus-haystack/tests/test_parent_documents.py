"""argus beside Haystack's own parent-document patterns, with the real components on real stores.

``AutoMergingRetriever`` over ``HierarchicalDocumentSplitter``'s trees (leaves searched, parents
read from a second store), and ``SentenceWindowRetriever`` over ``DocumentSplitter``'s numbered
splits, on PostgreSQL + pgvector and Qdrant in local mode (chroma-haystack cannot serve
``SentenceWindowRetriever``: Chroma refuses the one-condition ``$or`` it sends). Two orders for
each:

- argus after splitting: the augmenter runs over the leaves (or the splits), so each view names a
  leaf as its source. The collapser folds views into their leaf *before* the native step, which
  then sees originals only. Views carry none of the splitters' keys, so a view that reaches the
  native step is refused there (``ValueError``) instead of counting as a matched child or having
  a window built around it;
- argus before splitting: the augmenter runs over the whole documents and the splitter over
  originals and views alike; every piece of a view keeps the view's lineage and so names the
  whole document. The collapser folds the pieces into that document's original (a piece of it
  that was hit, else the whole document, read from a store that holds it).

For each query of the film/city set, the document it is about must be first where the pipeline
ranks (the collapser), no returned context may hold a view's text (each is a piece of its own
document's text), and no merge or window may be built from a view.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline
from haystack.components.preprocessors import DocumentSplitter, HierarchicalDocumentSplitter
from haystack.components.retrievers import AutoMergingRetriever, SentenceWindowRetriever
from haystack.utils import Secret

from argus_ir.lineage import ARGUS_KEYS
from argus_ir.testing import SCENARIO, SCENARIO_QUERIES
from argus_ir.testing.postgres import postgres_server
from haystack_integrations.components.rankers.argus import ArgusCollapser
from haystack_integrations.components.rankers.argus._splits import SPLIT_KEYS
from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever
from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever
from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

BLOCKS = {10, 5}  # HierarchicalDocumentSplitter's block sizes, in words: three levels
WINDOW = 5  # DocumentSplitter's split length, in words
FETCH = 10  # hits the retriever returns
TOP_K = 5  # sources the collapser returns
PG_ENV = "PG_CONN_STR"

EXPECTED = SCENARIO_QUERIES  # the film/city query set, each with the document it is about
TEXTS = dict(SCENARIO.documents)


def _is_view(doc: Document) -> bool:
    return doc.meta.get("argus_view", "original") != "original"


def _name(doc: Document) -> str:
    return str(doc.meta["doc"])  # every piece and view keeps its document's name


# corpora: split and augmented once per module ---------------------------------------------------


@dataclass
class Corpus:
    """What the retriever searches (embedded) and what is read aside by id (parents, or the whole
    originals; not embedded), with the augmenter's views."""

    searched: list[Document]
    aside: list[Document]
    views: list[Document]


def _documents() -> list[Document]:
    return [Document(id=i, content=text, meta={"doc": i}) for i, text in SCENARIO.documents]


def _tree(documents: list[Document]) -> tuple[list[Document], list[Document]]:
    """The leaves and the parents (root included) of every document's tree."""
    splitter = HierarchicalDocumentSplitter(block_sizes=BLOCKS, split_by="word")
    nodes = splitter.run(documents)["documents"]
    leaves = [n for n in nodes if not n.meta["__children_ids"]]
    return leaves, [n for n in nodes if n.meta["__children_ids"]]


def _splits(documents: list[Document]) -> list[Document]:
    return DocumentSplitter(split_by="word", split_length=WINDOW).run(documents)["documents"]


@pytest.fixture(scope="module")
def corpora(augmented) -> dict[str, Corpus]:
    """The scenario's documents split for each pattern, with argus after the split (over the
    leaves or splits) and before it (over the whole documents, then split with their views)."""
    augment, embed = augmented.augmenter, augmented.embedder

    def argus(docs: list[Document]) -> list[Document]:
        return augment.run(documents=docs)["documents"]

    vectors: dict[str, list[float]] = {}

    def embedded(docs: list[Document]) -> list[Document]:
        """As the embedder gives them: its vector depends on the text alone (no meta field is
        embedded), so a text the corpora share is embedded once."""
        texts = list(dict.fromkeys(d.content or "" for d in docs if d.content not in vectors))
        for done in embed.run(documents=[Document(content=t) for t in texts])["documents"]:
            vectors[done.content or ""] = done.embedding
        return [replace(d, embedding=vectors[d.content or ""]) for d in docs]

    def views(docs: list[Document]) -> list[Document]:
        return [d for d in docs if _is_view(d)]

    leaves, parents = _tree(_documents())
    after = argus(leaves)
    whole = argus(_documents())
    split_leaves, split_parents = _tree(whole)
    after_w = argus(_splits(_documents()))
    return {
        "tree-after": Corpus(embedded(after), parents, views(after)),
        "tree-before": Corpus(embedded(split_leaves), split_parents, views(whole)),
        "window-after": Corpus(embedded(after_w), [], views(after_w)),
        "window-before": Corpus(
            embedded(_splits(whole)), [d for d in whole if not _is_view(d)], views(whole)
        ),
    }


@pytest.fixture(scope="module")
def queries(augmented) -> dict[str, list[float]]:
    return {q: augmented.embed_query(q) for q in EXPECTED}


# stores: fresh ones per test ---------------------------------------------------------------------


@pytest.fixture(params=["qdrant", "pgvector"])
def store(request, tmp_path: Path, monkeypatch) -> Iterator[Callable[[str], Any]]:
    """Opens a store of the parametrised kind by name (a Qdrant collection in a folder of the
    test's, or a pgvector table in the test's own database)."""
    if request.param == "pgvector":
        name = "pd_" + hashlib.sha1(str(tmp_path).encode(), usedforsecurity=False).hexdigest()[:20]
        monkeypatch.setenv(PG_ENV, postgres_server().database(name).url)
    opened: list[Any] = []

    def open_store(name: str) -> Any:
        if request.param == "pgvector":
            store: Any = PgvectorDocumentStore(
                connection_string=Secret.from_env_var(PG_ENV),
                table_name=name,
                keyword_index_name=f"{name}_keyword_index",
                embedding_dimension=384,
                vector_function="cosine_similarity",
                search_strategy="exact_nearest_neighbor",
            )
        else:  # local mode: one client per folder, so a folder per store
            store = QdrantDocumentStore(
                path=str(tmp_path / name),
                index=name,
                embedding_dim=384,
                similarity="cosine",
                progress_bar=False,
            )
        opened.append(store)
        return store

    yield open_store
    for opened_store in opened:
        opened_store.close()


def _written(open_store: Callable[[str], Any], name: str, docs: list[Document]) -> Any:
    store = open_store(name)
    if docs:
        store.write_documents(docs)
    return store


def _retriever(store: Any) -> Any:
    if isinstance(store, PgvectorDocumentStore):
        return PgvectorEmbeddingRetriever(document_store=store, top_k=FETCH)
    return QdrantEmbeddingRetriever(document_store=store, top_k=FETCH)


# checks ------------------------------------------------------------------------------------------


def _check_contexts(query: str, docs: list[Document]) -> None:
    """Originals only, each a piece of its own document's text (a view's text is not)."""
    assert docs, query
    for doc in docs:
        assert not _is_view(doc), query
        assert doc.content and doc.content in TEXTS[_name(doc)], query


def _check_windows(query: str, out: dict[str, Any]) -> None:
    """Every window built from originals only, its text a piece of its document's text."""
    _check_contexts(query, out["context_documents"])
    assert all(any(w in text for text in TEXTS.values()) for w in out["context_windows"]), query


# AutoMergingRetriever + HierarchicalDocumentSplitter ---------------------------------------------


def test_auto_merging_over_argus_leaves(store, corpora, queries):
    """argus after splitting: the collapser folds views into their leaves before
    AutoMergingRetriever, so a parent merges on its original leaves only; the collapser ranks
    the right document first for all twelve queries. A view reaching AutoMergingRetriever has no
    ``__parent_id`` and is refused: before the fix it counted as a matched child of its
    original's parent, and one leaf with its view merged that parent alone."""
    corpus = corpora["tree-after"]
    leaves = _written(store, "leaves", corpus.searched)
    parents = _written(store, "parents", corpus.aside)
    pipe = Pipeline()
    pipe.add_component("retriever", _retriever(leaves))
    pipe.add_component("collapser", ArgusCollapser(top_k=TOP_K, document_store=leaves))
    pipe.add_component("merger", AutoMergingRetriever(parents, threshold=0.5))
    pipe.connect("retriever.documents", "collapser.documents")
    pipe.connect("collapser.documents", "merger.documents")
    first = merges = 0
    for query, embedding in queries.items():
        out = pipe.run(
            {"retriever": {"query_embedding": embedding}}, include_outputs_from={"collapser"}
        )
        ranked, merged = out["collapser"]["documents"], out["merger"]["documents"]
        _check_contexts(query, ranked)
        _check_contexts(query, merged)
        first += _name(ranked[0]) == EXPECTED[query]
        # the merger keeps the first leaf, or a parent above it (merged parents lose the order)
        assert any(ranked[0].content in d.content for d in merged), query
        merges += sum(bool(d.meta.get("__children_ids")) for d in merged)
    assert first == len(EXPECTED)
    assert merges > 0  # parents did merge: the merge ratios were put to the test

    # the other order: one original leaf with its view, straight into AutoMergingRetriever
    view = next(v for v in corpus.views if _name(v) == SCENARIO.target)
    leaf = next(d for d in corpus.searched if d.id == view.meta["argus_source_id"])
    with pytest.raises(ValueError, match="__parent_id"):
        AutoMergingRetriever(parents, threshold=0.5).run([leaf, view])


def test_auto_merging_then_collapse_over_split_argus_output(store, corpora, queries, caplog):
    """argus before splitting: the leaves of a view carry the view's lineage and the splitter's
    keys, which its original's nodes carry with other values. The collapser, after
    AutoMergingRetriever, folds every node of a view into its document's original (a node of it
    that was returned, else the whole document from the parents' store): the right document is
    among the results for all twelve queries. AutoMergingRetriever's order is not a ranking
    (merged parents come unscored, after the leaves it keeps), so the first place is checked on
    the collapser over the retriever's hits. Before the fix the scope test compared the
    splitter's keys too and refused every view, and the film query missed ``film-1``."""
    corpus = corpora["tree-before"]
    leaves = _written(store, "leaves", corpus.searched)
    parents = _written(store, "parents", corpus.aside)
    pipe = Pipeline()
    pipe.add_component("retriever", _retriever(leaves))
    pipe.add_component("merger", AutoMergingRetriever(parents, threshold=0.5))
    pipe.add_component("collapser", ArgusCollapser(top_k=TOP_K, document_store=parents))
    pipe.connect("retriever.documents", "merger.documents")
    pipe.connect("merger.documents", "collapser.documents")
    alone = ArgusCollapser(top_k=TOP_K, document_store=parents)  # the hits' own ranking
    found = first = 0
    with caplog.at_level(logging.WARNING):
        for query, embedding in queries.items():
            out = pipe.run(
                {"retriever": {"query_embedding": embedding}}, include_outputs_from={"retriever"}
            )
            results = out["collapser"]["documents"]
            _check_contexts(query, results)
            assert len({_name(d) for d in results}) == len(results), query  # one per document
            found += EXPECTED[query] in [_name(d) for d in results]
            ranked = alone.run(documents=out["retriever"]["documents"])["documents"]
            _check_contexts(query, ranked)
            first += _name(ranked[0]) == EXPECTED[query]
    assert (found, first) == (len(EXPECTED), len(EXPECTED))
    assert "not folded" not in caplog.text  # no view refused


# SentenceWindowRetriever + DocumentSplitter ------------------------------------------------------


def _windows_ranked_first(splits: Any, originals: Any, windows: Any, queries) -> int:
    """Retriever over ``splits``, collapser reading ``originals``, then ``windows``: each query's
    contexts and windows checked, its first window within its document's text; returns how many
    queries the collapser ranks their document first for."""
    pipe = Pipeline()
    pipe.add_component("retriever", _retriever(splits))
    pipe.add_component("collapser", ArgusCollapser(top_k=TOP_K, document_store=originals))
    pipe.add_component("windows", windows)
    pipe.connect("retriever.documents", "collapser.documents")
    pipe.connect("collapser.documents", "windows.retrieved_documents")
    first = 0
    for query, embedding in queries.items():
        out = pipe.run(
            {"retriever": {"query_embedding": embedding}}, include_outputs_from={"collapser"}
        )
        ranked = out["collapser"]["documents"]
        _check_contexts(query, ranked)
        _check_windows(query, out["windows"])
        first += _name(ranked[0]) == EXPECTED[query]
        assert out["windows"]["context_windows"][0] in TEXTS[EXPECTED[query]], query
    return first


def test_sentence_window_over_argus_splits(store, corpora, queries):
    """argus after splitting: the collapser folds views into their split before
    SentenceWindowRetriever, whose windows are then made of original splits only: before the fix
    a view kept its split's ``source_id`` and ``split_id``, so the window of its original
    fetched the view too and spliced its text in. A view reaching SentenceWindowRetriever has no
    ``split_id`` and is refused."""
    corpus = corpora["window-after"]
    splits = _written(store, "splits", corpus.searched)
    windows = SentenceWindowRetriever(splits, window_size=2)
    assert _windows_ranked_first(splits, splits, windows, queries) == len(EXPECTED)

    view = next(v for v in corpus.views if _name(v) == SCENARIO.target)
    with pytest.raises(ValueError, match="split_id"):
        SentenceWindowRetriever(splits, window_size=2).run([view])


def test_sentence_window_over_split_argus_output(store, corpora, queries, caplog):
    """argus before splitting: the splits of a view name the view as ``source_id`` and the whole
    document as their source. The collapser folds them into a split of the original that was
    hit, else into the whole original (read from a store of the originals), which
    SentenceWindowRetriever passes through as its own window; no window is a view's. Before the
    fix the scope test compared the splitter's keys and refused every view."""
    corpus = corpora["window-before"]
    splits = _written(store, "splits", corpus.searched)
    originals = _written(store, "originals", corpus.aside)
    windows = SentenceWindowRetriever(splits, window_size=2, raise_on_missing_meta_fields=False)
    with caplog.at_level(logging.WARNING):
        first = _windows_ranked_first(splits, originals, windows, queries)
    assert first == len(EXPECTED)
    assert "not folded" not in caplog.text


# what a view carries -----------------------------------------------------------------------------


def test_views_carry_no_split_keys(corpora):
    """A view of a leaf or split has its original's meta and lineage but none of the keys the
    splitters write to place a piece (``page_number`` aside); a view of a whole document, which
    has none of them, keeps everything its original has."""
    by_id = {d.id: d for c in corpora.values() for d in c.searched}
    for kind in ("tree-after", "window-after"):
        for view in corpora[kind].views:
            original = by_id[view.meta["argus_source_id"]]
            assert not set(SPLIT_KEYS) & set(view.meta), kind
            kept = {k: v for k, v in original.meta.items() if k not in (*SPLIT_KEYS, *ARGUS_KEYS)}
            assert {k: view.meta[k] for k in kept} == kept, kind
    for view in corpora["tree-before"].views:
        assert view.meta["doc"] == view.meta["argus_source_id"]
        assert not set(SPLIT_KEYS) & set(view.meta)
