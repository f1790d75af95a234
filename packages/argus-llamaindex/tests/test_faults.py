"""Faults against PostgreSQL + pgvector (issue 54): the ingest, update and delete recipes killed
with SIGKILL, two ingesters at once (item 1), and the server stopped between the search and the
postprocessor's read of the originals (item 5).

The outage test runs a server of its own (``private_postgres_server``), so it can stop it; the
recipe tests a database per case on the process's server. All use the session's one augment of
the shared scenario (``conftest.corpus``); the recipe's children replay it, loading no model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import runpy
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import Document, QueryBundle
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.docstore.utils import doc_to_json
from llama_index.vector_stores.postgres import PGVectorStore
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from argus_ir.errors import StoreReadError
from argus_ir.lineage import SOURCE_KEY, VIEW_KEY
from argus_ir.testing import SCENARIO
from argus_ir.testing.postgres import PostgresServer, postgres_server, private_postgres_server
from argus_llamaindex import ArgusPostprocessor
from argus_llamaindex.pgvector import UpsertingPGVectorStore
from argus_llamaindex.pipeline_state import PipelineStateError, load_pipeline, persist_pipeline

TABLE = "argus_faults"
EMBED_DIM = 384  # all-MiniLM-L6-v2


def _pgvector(server: PostgresServer) -> PGVectorStore:
    sync_url, async_url = server.sqlalchemy_url("psycopg2"), server.sqlalchemy_url("asyncpg")
    return PGVectorStore(
        connection_string=sync_url,
        async_connection_string=async_url,
        table_name=TABLE,
        embed_dim=EMBED_DIM,
        engine=create_engine(sync_url),
        async_engine=create_async_engine(async_url, poolclass=NullPool),
    )


def test_item_5_server_stopped_between_search_and_fetch_raises_naming_the_store(
    corpus, embed_model
):
    """Issue 54, item 5: the hits are views only, so the originals are read from the store; with
    the server stopped that read fails, and the postprocessor raises, naming the store and its
    table (it returned no node, with a warning that the originals may have been deleted). A read
    that succeeds and finds nothing still drops the source (``test_stores.py``); started again,
    the same hits fold to their originals."""
    query = SCENARIO.query
    bundle = QueryBundle(query, embedding=embed_model.get_text_embedding(query))
    with private_postgres_server() as pg:
        store = _pgvector(pg.server.database("faults"))
        context = StorageContext.from_defaults(vector_store=store)
        index = VectorStoreIndex(
            list(corpus.nodes), storage_context=context, embed_model=embed_model
        )
        hits = index.as_retriever(similarity_top_k=2).retrieve(bundle)
        assert all(h.node.metadata[VIEW_KEY] != "original" for h in hits)  # views only
        sources = list(dict.fromkeys(h.node.metadata[SOURCE_KEY] for h in hits))
        post = ArgusPostprocessor(top_k=2, index=index)

        pg.stop()
        with pytest.raises(StoreReadError, match=f"PGVectorStore.*{TABLE}") as raised:
            post.postprocess_nodes(hits)
        assert "retry" in str(raised.value)
        with pytest.raises(StoreReadError, match=f"PGVectorStore.*{TABLE}"):
            asyncio.run(post.apostprocess_nodes(hits))

        pg.start()
        store._engine.dispose()  # the pool's connections died with the server
        found = post.postprocess_nodes(hits)
        assert [n.node.node_id for n in found] == sources
        assert [n.node.get_content() for n in found] == [corpus.texts[s] for s in sources]
        store._engine.dispose()


# ---- item 1: the ingest, update and delete recipes killed with SIGKILL ----------------------
#
# The documented recipe for PostgreSQL: IngestionPipeline + UpsertingPGVectorStore + a
# SimpleDocumentStore kept with persist_pipeline / load_pipeline. RECIPE = "upstream" runs the
# recipe the docs gave before (PGVectorStore, pipeline.persist / pipeline.load): the same tests
# then fail (every row twice; a bare JSONDecodeError on load).
RECIPE = "argus"

# A child runs one step of the recipe. The transformation replays ArgusTransform's output,
# augmented and embedded once by the test (``conftest.corpus``): no model loads in a child.
# MOMENT kills the child with SIGKILL right after the store's write commits ("add", "delete"),
# after run() ("run"), or while the docstore file is being written ("persist"); BARRIER holds
# each of two children before its store write until both are there (two ingesters at once).
_INGESTER = """
import json, os, signal, sys, time
import llama_index.core.storage.kvstore.simple_kvstore as simple_kvstore
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.schema import TransformComponent
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.docstore.utils import json_to_doc
from llama_index.vector_stores.postgres import PGVectorStore
from argus_llamaindex.pgvector import UpsertingPGVectorStore
from argus_llamaindex.pgvector import UpsertingPGVectorStore
from argus_llamaindex.pipeline_state import load_pipeline, persist_pipeline


def ingest(config):
    with open(config["outputs"]) as f:
        outputs = json.load(f)

    class Replay(TransformComponent):
        def __call__(self, nodes, **kwargs):
            return [json_to_doc(d) for n in nodes for d in outputs[n.id_ + "|" + n.text]]

    argus = config["recipe"] == "argus"
    kind = UpsertingPGVectorStore if argus else PGVectorStore
    moment, barrier = config.get("moment"), config.get("barrier")
    if moment or barrier:  # a child: patch its own classes
        _hook(kind, "add", moment == "add", barrier)
        _hook(kind, "delete", moment == "delete", None)
        if moment == "persist":
            _kill_in_docstore_write()
    store = kind(
        connection_string=config["url"],
        async_connection_string=config["url"].replace("psycopg2", "asyncpg"),
        table_name=config["table"],
        embed_dim=config["dim"],
    )
    pipeline = IngestionPipeline(
        transformations=[Replay()],
        docstore=SimpleDocumentStore(),
        vector_store=store,
        docstore_strategy=DocstoreStrategy(config["strategy"]),
    )
    folder = config["folder"]
    if argus:
        load_pipeline(pipeline, folder)
    elif os.path.isdir(folder):
        pipeline.load(folder)
    documents = [json_to_doc(d) for d in config["documents"]]
    out = pipeline.run(documents=documents)
    if moment == "run":
        _kill()
    persist_pipeline(pipeline, folder) if argus else pipeline.persist(folder)
    store._engine.dispose()
    return len(out)


def _kill():
    os.kill(os.getpid(), signal.SIGKILL)


def _hook(kind, name, kill, barrier):
    original = getattr(kind, name)

    def hooked(self, *args, **kwargs):
        if barrier:
            open(barrier[0], "w").close()
            deadline = time.monotonic() + 120
            while not os.path.exists(barrier[1]):
                if time.monotonic() > deadline:
                    sys.exit("the other ingester never came")
                time.sleep(0.02)
        out = original(self, *args, **kwargs)
        if kill:
            _kill()
        return out

    setattr(kind, name, hooked)


def _kill_in_docstore_write():
    class Json:  # the file is open for writing (truncated) when its text is made
        def __getattr__(self, name):
            return getattr(json, name)

        @staticmethod
        def dumps(data, *args, **kwargs):
            if any(str(k).startswith("docstore/") for k in data):
                _kill()
            return json.dumps(data, *args, **kwargs)

    simple_kvstore.json = Json()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(ingest(json.load(f)))
"""


# the target's new text (another actor: other views), as in test_stores.py
NEW_TARGET = (
    "Marlon Brando once filmed a scene in Lucknow, and the crew still talks about the heat."
)


@dataclass(frozen=True)
class Recipe:
    """The child script, ArgusTransform's outputs for it, and its ``ingest`` run in this process
    (a rerun after a kill, and the uninterrupted references)."""

    folder: Path
    script: Path
    outputs: Path
    run: Callable[[dict[str, Any]], int]
    documents: dict[str, list[Document]]  # by step: what the step's run is given
    strategy: dict[str, str]

    def config(self, case: str, step: str, **more: Any) -> dict[str, Any]:
        return {
            "recipe": RECIPE,
            "url": postgres_server().database("li54_recipes").sqlalchemy_url("psycopg2"),
            "table": case.replace("-", "_"),  # a table per case: data_<case>
            "dim": EMBED_DIM,
            "outputs": str(self.outputs),
            "folder": str(self.folder / case),
            "strategy": self.strategy[step],
            "documents": [doc_to_json(d) for d in self.documents[step]],
            **more,
        }

    def child(self, config: dict[str, Any], name: str) -> subprocess.Popen[str]:
        path = self.folder / f"{name}.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        return subprocess.Popen(
            [sys.executable, str(self.script), str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def state(self, config: dict[str, Any]) -> tuple[list[tuple[str, ...]], dict[str, str]]:
        """Every row of the store's table (id, text, metadata, vector) in id order, and the
        document hashes of the persisted docstore."""
        docstore = SimpleDocumentStore.from_persist_path(config["folder"] + "/docstore.json")
        return _rows(config), docstore.get_all_document_hashes()


def _rows(config: dict[str, Any]) -> list[tuple[str, ...]]:
    with psycopg.connect(config["url"].replace("+psycopg2", "")) as conn:
        return conn.execute(
            f"SELECT node_id, text, metadata_::text, embedding::text "
            f"FROM data_{config['table']} ORDER BY node_id, id"
        ).fetchall()


@pytest.fixture(scope="module")
def recipe(tmp_path_factory, corpus, embed_model) -> Recipe:
    folder = tmp_path_factory.mktemp("recipe")
    target = corpus.id(SCENARIO.target)
    new = embed_model(corpus.transform([Document(id_=target, text=NEW_TARGET)]))
    outputs = {
        f"{doc_id}|{text}": [doc_to_json(n) for n in corpus.nodes if n.ref_doc_id == doc_id]
        for doc_id, text in corpus.texts.items()
    }
    outputs[f"{target}|{NEW_TARGET}"] = [doc_to_json(n) for n in new]
    (folder / "outputs.json").write_text(json.dumps(outputs), encoding="utf-8")
    script = folder / "ingester.py"
    script.write_text(_INGESTER, encoding="utf-8")
    first = [Document(id_=i, text=t) for i, t in corpus.texts.items()]
    return Recipe(
        folder=folder,
        script=script,
        outputs=folder / "outputs.json",
        run=runpy.run_path(str(script))["ingest"],
        documents={
            "ingest": first,
            "update": [
                Document(id_=d.id_, text=NEW_TARGET) if d.id_ == target else d for d in first
            ],
            "delete": [d for d in first if d.id_ != target],
        },
        strategy={"ingest": "upserts", "update": "upserts", "delete": "upserts_and_delete"},
    )


def _prepare(recipe: Recipe, case: str, step: str, strategy: str | None = None) -> None:
    """The state a step starts from: the first ingest done (none before an ingest)."""
    if step != "ingest":
        before = recipe.config(case, "ingest")
        recipe.run({**before, "strategy": strategy or before["strategy"]})


_REFERENCES: dict[tuple[str, str | None], Any] = {}


def _reference(recipe: Recipe, step: str, strategy: str | None = None) -> Any:
    """The state an uninterrupted run of the step ends in (computed once per module)."""
    if (step, strategy) not in _REFERENCES:
        case = f"ref-{step}-{strategy or 'default'}"
        _prepare(recipe, case, step, strategy)
        config = recipe.config(case, step)
        recipe.run({**config, "strategy": strategy or config["strategy"]})
        _REFERENCES[step, strategy] = recipe.state(config)
    return _REFERENCES[step, strategy]


KILLS = [
    ("ingest", "add"),
    ("ingest", "run"),
    ("ingest", "persist"),
    ("update", "add"),
    ("update", "run"),
    ("update", "persist"),
    ("delete", "delete"),
    ("delete", "run"),
    ("delete", "persist"),
]


def test_item_1_kill_9_in_the_ingest_update_and_delete_recipes_then_the_same_run(recipe):
    """Issue 54, item 1: the recipe for PostgreSQL killed with SIGKILL at three moments of each
    step, right after the store's write commits (the docstore not yet updated), between run()
    and persist, and while the docstore file is written; the same run again then ends equal to
    an uninterrupted run: the same rows (id, text, metadata, vector; each id once) and the same
    docstore. With the recipe the docs gave before, a kill after the write and before persist
    left every entry of the run twice, and a kill in persist an empty docstore file that failed
    to load with a bare JSONDecodeError."""
    cases = {f"{step}-{moment}": (step, moment) for step, moment in KILLS}
    children = {}
    for case, (step, moment) in cases.items():
        _prepare(recipe, case, step)
        children[case] = recipe.child(recipe.config(case, step, moment=moment), case)
    for case, child in children.items():
        out, err = child.communicate(timeout=300)
        assert child.returncode == -signal.SIGKILL, (case, out, err[-2000:])
    if RECIPE == "argus":  # a kill in persist_pipeline leaves its staging folder, and only that
        left = {c for c, (step, _) in cases.items() if _staging(recipe.config(c, step))}
        assert left == {c for c in cases if c.endswith("persist")}
    wrong = {}
    for case, (step, _) in cases.items():
        config = recipe.config(case, step)
        try:
            recipe.run(config)  # the same run again
        except Exception as exc:  # every case is reported
            wrong[case] = f"{type(exc).__name__}: {exc}"[:300]
            continue
        wrong[case] = _compare(recipe.state(config), _reference(recipe, step))
        if _staging(config):  # the rerun removes what the killed persist left
            wrong[case] += f" {_staging(config)} left"
    assert {c: w for c, w in wrong.items() if w} == {}


def _staging(config: dict[str, Any]) -> list[str]:
    """The staging folders of persist_pipeline in the case's state folder."""
    return sorted(p.name for p in Path(config["folder"]).glob(".persist-*"))


def _compare(state: Any, reference: Any) -> str:
    """What differs from the uninterrupted run ("" when nothing)."""
    (rows, hashes), (want, want_hashes) = state, reference
    if len(rows) != len({r[0] for r in rows}):
        return f"{len(rows)} rows for {len({r[0] for r in rows})} ids"
    if rows != want:
        return f"other rows: {len(rows)} rows, {len(want)} uninterrupted"
    return "" if hashes == want_hashes else "another docstore"


def test_item_1_two_ingesters_at_once(recipe, tmp_path):
    """Issue 54, item 1: two pipelines run the same step at once, each held before its store
    write until the other is there (both have found the documents new or changed): a first
    ingest into a database with no table yet, and an UPSERTS_AND_DELETE update of the target.
    Each ends equal to one uninterrupted run, every id once. With the recipe the docs gave before,
    both wrote every row (the ingest: every entry twice; the update: two originals of the target
    and two copies of each new view)."""
    _prepare(recipe, "both-update", "update", "upserts_and_delete")
    children = []
    for case, step in (("both-ingest", "ingest"), ("both-update", "update")):
        for me, other in (("a", "b"), ("b", "a")):
            barrier = [str(tmp_path / f"{case}-{me}"), str(tmp_path / f"{case}-{other}")]
            config = recipe.config(case, step, barrier=barrier)
            if step == "update":
                config["strategy"] = "upserts_and_delete"
            children.append((case, recipe.child(config, f"{case}-{me}")))
    for case, child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, (case, out, err[-2000:])
    wrong = {
        "both-ingest": _compare(
            recipe.state(recipe.config("both-ingest", "ingest")), _reference(recipe, "ingest")
        ),
        "both-update": _compare(
            recipe.state(recipe.config("both-update", "update")),
            _reference(recipe, "update", "upserts_and_delete"),
        ),
    }
    assert {c: w for c, w in wrong.items() if w} == {}


def test_item_1_an_empty_docstore_file_is_named_and_the_recovery_it_gives_holds(recipe):
    """Issue 54, item 1: ``pipeline.persist`` (upstream, not atomic) killed while it writes the
    docstore leaves ``docstore.json`` empty; ``load_pipeline`` refuses it by name and says to
    delete the folder and run again (``pipeline.load`` raised a bare ``JSONDecodeError``, naming
    no file), and that recovery ends equal to an uninterrupted ingest (it stored every row twice
    with PGVectorStore)."""
    config = recipe.config("empty-docstore", "ingest", moment="persist", recipe="upstream")
    child = recipe.child(config, "empty-docstore")
    out, err = child.communicate(timeout=300)
    assert child.returncode == -signal.SIGKILL, (out, err[-2000:])
    folder = Path(config["folder"])
    assert (folder / "docstore.json").stat().st_size == 0
    with pytest.raises(PipelineStateError, match=re.escape(str(folder / "docstore.json"))) as e:
        load_pipeline(IngestionPipeline(transformations=[]), folder)
    assert "delete" in str(e.value) and "run the pipeline again" in str(e.value)

    shutil.rmtree(folder)  # the recovery the message gives
    config = recipe.config("empty-docstore", "ingest")
    recipe.run(config)
    assert _compare(recipe.state(config), _reference(recipe, "ingest")) == ""


def test_persist_removes_only_abandoned_staging_folders(tmp_path):
    """A killed ``persist_pipeline`` leaves ``.persist-PID@HOST.RANDOM``; the next call removes
    the folders of this host's processes that run no longer, and of this process where no call
    is writing, and keeps those of a process still running and of another host."""
    host = socket.gethostname()
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "ended": f".persist-{ended.pid}@{host}.abc",
            "this process": f".persist-{os.getpid()}@{host}.def",
            "running": f".persist-{alive.pid}@{host}.ghi",
            "another host": f".persist-{ended.pid}@not-{host}.jkl",
        }
        for name in names.values():
            (tmp_path / name).mkdir()
            (tmp_path / name / "docstore.json").write_text("{", encoding="utf-8")
        persist_pipeline(
            IngestionPipeline(transformations=[], docstore=SimpleDocumentStore()), tmp_path
        )
        kept = {what for what, name in names.items() if (tmp_path / name).exists()}
        assert kept == {"running", "another host"}
        assert (tmp_path / "docstore.json").is_file() and len(list(tmp_path.iterdir())) == 4
    finally:
        alive.kill()
        alive.wait()


def test_item_1_remove_duplicates_repairs_a_table_plain_writes_doubled(recipe, corpus):
    """The repair of a table the earlier recipe left doubled: ``remove_duplicates`` keeps the
    last row of each id; the table then holds what one uninterrupted ingest writes."""
    config = recipe.config("doubled", "ingest")
    urls = {
        "connection_string": config["url"],
        "async_connection_string": config["url"].replace("psycopg2", "asyncpg"),
        "table_name": config["table"],
        "embed_dim": EMBED_DIM,
    }
    plain = PGVectorStore(**urls)
    plain.add(list(corpus.nodes))
    plain.add(list(corpus.nodes))  # upstream: appends every row again
    plain._engine.dispose()
    store = UpsertingPGVectorStore(**urls)
    assert store.remove_duplicates() == len(corpus.nodes)
    assert store.remove_duplicates() == 0
    store._engine.dispose()
    assert _rows(config) == _reference(recipe, "ingest")[0]
