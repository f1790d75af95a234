"""Issue 59, item 1: a splitter before ``ArgusTransform`` in the PostgreSQL recipe
(``UpsertingPGVectorStore``, a docstore kept with ``persist_pipeline``).

``SentenceSplitter`` names every chunk with a random UUID, and argus's view ids follow the ids of
their originals: a store that replaces rows by node id replaced nothing when the same document was
split again, so a run killed before its docstore was persisted, then run again, and two pipelines
over the same corpus, each stored every chunk and view twice. ``test_faults.py`` replays fixed
node ids, which hid it. Here the splitter is real; one transform (its models loaded once) serves
the module, and every case has a table of its own in one database of the process's server.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.node_parser import HierarchicalNodeParser, SentenceSplitter
from llama_index.core.schema import BaseNode, Document, NodeRelationship
from llama_index.core.storage.docstore import SimpleDocumentStore
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import SCENARIO
from argus_ir.testing.postgres import PostgresServer, postgres_server
from argus_llamaindex import ArgusTransform, load_pipeline, persist_pipeline
from argus_llamaindex.pgvector import UpsertingPGVectorStore

EMBED_DIM = 384  # all-MiniLM-L6-v2
# three documents of three scenario sentences each; the splitter cuts one chunk per sentence
DOCUMENTS = {
    "doc-films": ("film-1", "film-2", "sci-1"),
    "doc-science": ("sci-2", "geo-1", "music-2"),
    "doc-history": ("hist-1", "sport-1", "film-4"),
}
Row = tuple[str, str, str, str]  # node id, ref doc id, text, argus_* metadata (JSON)
_SENTENCES = dict(SCENARIO.documents)
# doc-films edited: its first sentence names another actor (other views); the rest only moves
NEW_FILM = "Marlon Brando once filmed a scene in Lucknow, and the crew still talks about the heat."
VERSIONS: dict[str, dict[str, str]] = {
    "v2": {},
    "v3": {"doc-films": " ".join([NEW_FILM, _SENTENCES["film-2"], _SENTENCES["sci-1"]])},
}


def _documents(**changed: str) -> list[Document]:
    return [
        Document(id_=doc_id, text=changed.get(doc_id, " ".join(_SENTENCES[n] for n in names)))
        for doc_id, names in DOCUMENTS.items()
    ]


@pytest.fixture(scope="module")
def transform() -> ArgusTransform:
    """The recipe's transform, vectors included (its models load once for the module)."""
    return ArgusTransform(**SCENARIO.settings, embed=True)


@pytest.fixture(scope="module")
def database() -> PostgresServer:
    return postgres_server().database("li59_splitter_ids")


class Recipe:
    """The documented PostgreSQL recipe, with a splitter or without, writing to one table (the
    async engine pools no connection: each ``asyncio.run`` brings a loop of its own)."""

    def __init__(
        self, database: PostgresServer, transform: ArgusTransform, table: str, splitter: bool
    ) -> None:
        self.database, self.transform, self.table = database, transform, table
        self.steps = [SentenceSplitter(chunk_size=32, chunk_overlap=0)] if splitter else []
        url, async_url = database.sqlalchemy_url("psycopg2"), database.sqlalchemy_url("asyncpg")
        self.store = UpsertingPGVectorStore(
            connection_string=url,
            async_connection_string=async_url,
            table_name=table,
            embed_dim=EMBED_DIM,
            engine=create_engine(url),
            async_engine=create_async_engine(async_url, poolclass=NullPool),
        )

    def run(self, folder: Path, documents: list[Document], *, persist: bool = True) -> None:
        """One run of the recipe, as a new process makes it (the docstore loaded from
        ``folder``); ``persist=False``: killed between ``run()`` and ``persist_pipeline`` (the
        rows are committed, the docstore's state is lost)."""
        pipeline = IngestionPipeline(
            transformations=[*self.steps, self.transform],
            docstore=SimpleDocumentStore(),
            vector_store=self.store,
        )
        load_pipeline(pipeline, folder)
        pipeline.run(documents=documents)
        if persist:
            persist_pipeline(pipeline, folder)

    def rows(self) -> list[Row]:
        """Every row of the table: its node id, ref doc id, text and ``argus_*`` metadata."""
        with psycopg.connect(self.database.url) as conn:
            rows = conn.execute(
                f"SELECT node_id, metadata_->>'ref_doc_id', text, metadata_::text "
                f"FROM data_{self.table} ORDER BY node_id, id"
            ).fetchall()
        return [(i, ref, text, _lineage(meta)) for i, ref, text, meta in rows]

    def close(self) -> None:
        self.store._engine.dispose()


def _lineage(metadata: str) -> str:
    meta = json.loads(metadata)
    return json.dumps({k: v for k, v in meta.items() if k.startswith("argus_")}, sort_keys=True)


@pytest.fixture
def recipe(database, transform, request):
    made: list[Recipe] = []

    def make(table: str, splitter: bool = True) -> Recipe:
        test = hashlib.sha1(request.node.nodeid.encode(), usedforsecurity=False).hexdigest()
        made.append(Recipe(database, transform, f"t{test[:12]}_{table}", splitter))
        return made[-1]

    yield make
    for each in made:
        each.close()


_REFERENCES: dict[tuple[str, bool], list[Row]] = {}


def _reference(
    database, transform, tmp_path_factory, version: str = "v2", splitter: bool = True
) -> list[Row]:
    """The rows one uninterrupted run of the recipe leaves over the corpus with ``doc-films`` at
    ``version`` (computed once per module)."""
    if (version, splitter) not in _REFERENCES:
        name = f"reference_{version}_{'chunks' if splitter else 'documents'}"
        reference = Recipe(database, transform, name, splitter)
        reference.run(tmp_path_factory.mktemp(name), _documents(**VERSIONS[version]))
        _REFERENCES[version, splitter] = reference.rows()
        reference.close()
    return _REFERENCES[version, splitter]


def _twice(rows: list[Row]) -> dict[str, int]:
    """Each text stored more than once, with its count (none: ``{}``)."""
    return {text: n for text, n in Counter(r[2] for r in rows).items() if n > 1}


def _content(rows: list[Row]) -> list[tuple[str, str, str]]:
    """What the rows hold, ids aside: (ref doc id, text, argus metadata) in order."""
    return sorted((ref, text, lineage) for _, ref, text, lineage in rows)


def test_a_run_killed_before_persist_then_run_again_stores_each_chunk_and_view_once(
    recipe, database, transform, tmp_path, tmp_path_factory
):
    """The recipe's first run killed between ``run()`` and ``persist_pipeline``: the rows are
    committed and the docstore never reaches disk, so the same run again finds every document
    new. It ends with the rows of an uninterrupted run: each chunk and view once, under the same
    ids and lineage. Before, every chunk came back under a new random id and with new views:
    every text twice."""
    want = _reference(database, transform, tmp_path_factory)
    assert len(want) > 9 and _twice(want) == {}  # 9 chunks and their views
    assert {json.loads(r[3])[VIEW_KEY] for r in want} > {"original"}  # chunks and views

    killed = recipe("killed")
    killed.run(tmp_path, _documents(), persist=False)  # SIGKILL before persist_pipeline
    killed.run(tmp_path, _documents())  # the recovery the docs give: the same run again
    rows = killed.rows()
    assert _twice(rows) == {}, f"{len(rows)} rows for {len(want)}"
    assert _content(rows) == _content(want)
    assert sorted(r[0] for r in rows) == sorted(r[0] for r in want)  # the same ids

    # and the folder deleted after a PipelineStateError (the state lost as above): the same
    killed.run(tmp_path_factory.mktemp("deleted"), _documents())
    assert killed.rows() == rows


def test_two_pipelines_over_the_same_corpus_with_a_splitter_store_each_chunk_and_view_once(
    recipe, database, transform, tmp_path, tmp_path_factory
):
    """Two pipelines, each with its own docstore, ingest the same documents into one table: each
    finds every document new and writes all of it. The table ends as one uninterrupted run
    leaves it. (The store's lock orders the two writes whatever their timing; what makes them two
    writers is that neither docstore knows the other's documents.) Before, each pipeline's
    chunks and views had ids of their own: every text twice."""
    want = _reference(database, transform, tmp_path_factory)
    both = recipe("both")
    both.run(tmp_path / "a", _documents())
    both.run(tmp_path / "b", _documents())
    rows = both.rows()
    assert _twice(rows) == {}, f"{len(rows)} rows for {len(want)}"
    assert _content(rows) == _content(want)


def _of(rows: list[Row], doc_id: str) -> list[tuple[str, str, str]]:
    return _content([r for r in rows if r[1] == doc_id])


@pytest.mark.parametrize(
    ("splitter", "order"),
    [(True, ("v2", "v3")), (True, ("v3", "v2")), (False, ("v2", "v3"))],
    ids=["chunks-v2-v3", "chunks-v3-v2", "documents-v2-v3"],
)
def test_two_pipelines_with_two_versions_of_a_document_leave_the_last_writers_version(
    recipe, database, transform, tmp_path, tmp_path_factory, splitter, order
):
    """Two pipelines, each with its own docstore, write two versions of one document (v3: its
    first sentence changed): neither docstore knows the other's version, so neither deletes it.
    The store's ``add`` drops the rows of the document written from another version (their
    ``SOURCE`` hash differs), so the table ends as one run of the last writer's version leaves
    it, the other documents untouched. The order decides, not the age: v3 then v2 leaves v2.
    Before, both versions' chunks and views stayed side by side (the changed sentence's chunk
    under each actor's views; without a splitter, the old actor's views beside the new text)."""
    case = recipe("versions", splitter)
    for version in order:
        case.run(tmp_path / version, _documents(**VERSIONS[version]))
    rows = case.rows()
    want = _reference(database, transform, tmp_path_factory, order[-1], splitter)
    assert _twice(rows) == {}
    assert _of(rows, "doc-films") == _of(want, "doc-films")
    assert _content(rows) == _content(want)


def test_the_state_lost_after_a_document_changed_then_run_again_leaves_the_new_version(
    recipe, database, transform, tmp_path, tmp_path_factory
):
    """The recovery ``PipelineStateError`` gives (delete the state folder, run again) after a
    document changed since the last complete run: the docstore that would have deleted the old
    version is gone, and the store's ``add`` drops it instead. The table ends as an uninterrupted
    run of the new version leaves it: no chunk or view of the old text."""
    case = recipe("changed")
    case.run(tmp_path / "state", _documents())
    case.run(tmp_path / "deleted", _documents(**VERSIONS["v3"]))  # a new, empty state folder
    want = _reference(database, transform, tmp_path_factory, "v3")
    assert _content(case.rows()) == _content(want)
    assert not [r for r in case.rows() if "Humphrey Bogart" in r[2]]


def test_a_documents_nodes_added_in_batches_keep_each_other(recipe, transform):
    """The version rule deletes by hash, not by batch: one version's nodes added in several
    ``add`` calls (``VectorStoreIndex.insert_nodes`` batches them) all stay, and adding them
    again replaces each. ``async_add`` (``arun``) drops another version as ``add`` does."""
    nodes = transform(_split())
    case = recipe("batches")
    for start in range(0, len(nodes), 5):
        case.store.add(nodes[start : start + 5])
    case.store.add(nodes)
    assert sorted(r[0] for r in case.rows()) == sorted(n.node_id for n in nodes)

    newer = transform(_split(_documents(**VERSIONS["v3"])))
    asyncio.run(case.store.async_add(newer))
    assert sorted(r[0] for r in case.rows()) == sorted(n.node_id for n in newer)


# the ids themselves, without a store --------------------------------------------------------


def _split(documents: list[Document] | None = None, **kw: object) -> list[BaseNode]:
    return SentenceSplitter(chunk_size=32, chunk_overlap=0, **kw)(documents or _documents())


def _originals(nodes: list[BaseNode]) -> list[BaseNode]:
    return [n for n in nodes if n.metadata[VIEW_KEY] == "original"]


def test_a_splitters_chunks_come_out_under_the_same_ids_on_every_run(transform):
    """Each split names the chunks anew; through ``ArgusTransform`` they come out under the same
    ids on every run (``__call__`` and ``acall``), their ``PREVIOUS`` and ``NEXT`` naming their
    neighbours' new ids, their views named after them. The nodes given are not modified."""
    first, second = _split(), _split()
    assert not {n.node_id for n in first} & {n.node_id for n in second}  # random upstream
    given = [n.model_copy(deep=True) for n in first]
    out = transform(first)
    assert [n.node_id for n in out] == [n.node_id for n in transform(second)]
    assert [n.node_id for n in out] == [n.node_id for n in asyncio.run(transform.acall(second))]
    assert [n.to_dict() for n in first] == [n.to_dict() for n in given]

    originals = _originals(out)
    assert len(originals) == len(first) and not {n.node_id for n in out} & {
        n.node_id for n in first
    }
    for before, after in itertools.pairwise(originals):
        if before.ref_doc_id == after.ref_doc_id:
            assert before.relationships[NodeRelationship.NEXT].node_id == after.node_id
            assert after.relationships[NodeRelationship.PREVIOUS].node_id == before.node_id
    ids = {n.node_id for n in originals}
    assert all(n.metadata[SOURCE_KEY] in ids for n in out)


def test_a_chunk_an_edit_elsewhere_only_moved_keeps_its_id(transform):
    """A chunk's id is its document's id and its text (not its place): the sentences after an
    edited one keep their ids, so their rows and views are replaced, not doubled."""
    ids = {
        version: {n.text: n.node_id for n in _originals(transform(_split(_documents(**edit))))}
        for version, edit in VERSIONS.items()
    }
    assert ids["v2"].keys() ^ ids["v3"].keys() == {_SENTENCES["film-1"], NEW_FILM}
    assert all(ids["v3"][text] == i for text, i in ids["v2"].items() if text in ids["v3"])


def test_documents_and_ids_a_caller_chose_keep_their_ids(transform):
    """Only a splitter's random ids are replaced: a document given straight (even under a random
    UUID), chunks named by the splitter's ``id_func``, and argus's own originals given back
    (stored under their ids by an earlier version) keep theirs."""
    documents = [Document(text=d.text) for d in _documents()]
    assert [n.node_id for n in _originals(transform(documents))] == [d.id_ for d in documents]

    named = _split(id_func=lambda i, doc: f"{doc.id_}#{i}")
    assert [n.node_id for n in _originals(transform(named))] == [n.node_id for n in named]

    stored = _split()
    for node in stored:
        node.metadata.update({SOURCE_KEY: node.node_id, VIEW_KEY: "original"})
    assert [n.node_id for n in _originals(transform(stored))] == [n.node_id for n in stored]


def test_chunk_ids_do_not_depend_on_how_the_chunks_are_batched(transform):
    """A chunk's id is computed from the chunk alone: the chunks given in two calls get the ids
    they get in one (``num_workers`` batches by document, so a document's chunks share a call;
    a ``PREVIOUS`` or ``NEXT`` across two calls keeps the splitter's id)."""
    chunks = _split()
    whole = [n.node_id for n in _originals(transform(chunks))]
    halves = _originals(transform(chunks[:4])) + _originals(transform(chunks[4:]))
    assert [n.node_id for n in halves] == whole


def test_chunks_of_one_text_get_ids_of_their_own_and_keep_their_links(transform):
    """Chunks of one document with the same text are told apart by their order: a repeated
    sentence (its ``NEXT``/``PREVIOUS`` chain intact), and the levels of a short document in
    ``HierarchicalNodeParser`` (each level the whole text, ``PARENT``/``CHILD`` intact)."""
    bohr = _SENTENCES["sci-2"]
    again = Document(id_="again", text=" ".join([bohr, _SENTENCES["geo-1"], bohr]))
    out = _originals(transform(_split([again])))
    assert len({n.node_id for n in out}) == 3 and out[0].text == out[2].text
    assert [n.relationships[NodeRelationship.NEXT].node_id for n in out[:2]] == [
        n.node_id for n in out[1:]
    ]
    assert out == _originals(transform(_split([again])))

    parser = HierarchicalNodeParser.from_defaults(chunk_sizes=[256, 128], chunk_overlap=0)
    short = Document(id_="short", text=bohr)
    top, leaf = _originals(transform(parser([short])))
    assert top.text == leaf.text and top.node_id != leaf.node_id
    assert leaf.relationships[NodeRelationship.PARENT].node_id == top.node_id
    assert [c.node_id for c in top.relationships[NodeRelationship.CHILD]] == [leaf.node_id]
    assert [n.node_id for n in _originals(transform(parser([short])))] == [
        top.node_id,
        leaf.node_id,
    ]
